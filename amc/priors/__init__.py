"""Black-box priors: the agents AMC steers, all sampled through one OpenAI-compatible path.

- :mod:`amc.priors.openai` -- :class:`OpenAIPrior` (prior ``openai``): any OpenAI-compatible
  endpoint (OpenAI, vLLM, llama.cpp, Ollama), chat or completions, with a shared client, a
  global limiter, one retry layer, a cost ledger and a response cache.
- :mod:`amc.priors.embedded` -- prior ``embedded``: the bundled Gemma-3-270M served by
  llama.cpp on loopback and driven by the same :class:`OpenAIPrior` code.
- :mod:`amc.priors.hf` -- prior ``hf``: an in-process transformers model, batched across
  particles (GPU users).
- :mod:`amc.priors.prompts` and :mod:`amc.priors.parsing` -- ReAct prompts per environment and
  the one action parser.
"""
