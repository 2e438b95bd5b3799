"""llama-cpp-python's server, with completions that do not depend on the requests before them.

``python -m amc.priors.llama_app <llama_cpp.server arguments>`` is the embedded prior's
``python`` backend (:mod:`amc.priors.llama_server`): llama-cpp-python's own OpenAI-compatible
server with one change to how a prompt is evaluated.

**Why.** ``Llama.generate`` keeps the KV cache of the previous request and evaluates only the
part of the new prompt it does not share with it (down to one token when the prompt is the
same). The logits of a token are not bitwise the same when it is computed in another batch:
the CPU kernels treat a batch's rows in groups (a matrix kernel for full groups, a vector
kernel for the rest), so a token's row position and the batch's size change the last bits.
A sample drawn with the request's own seed could then come out differently: the answer to a
request depended on which request the one-slot server had served just before it, that is on
the arrival order of concurrent particles (measured: the same prompt and seed sent right after
itself gave another completion than sent after a shorter prompt). Two runs of the same
collect stage with the same seeds differed.

**What.** A prompt is always evaluated as from an empty cache would: in blocks of ``n_batch``
tokens aligned at position 0. Only whole blocks that an earlier request evaluated that way are
reused (:func:`canonical_prefix`): the block and every token before it equal, the block inside
that request's prompt (not its completion, which was decoded one token at a time), and at least
one token of the new prompt left to evaluate. A request's logits, and so its seeded sample, are
then a function of its own prompt. Particles of a task still share the few-shot transcript's
whole blocks (``n_batch`` = 512 tokens by default).

The server's prompt-state cache (``--cache true``, prior option ``prompt_cache``) restores
states this rule does not know; it is off by default and not reproducible.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

CANONICAL = "_amc_canonical_tokens"
"""Attribute of the ``Llama`` object: how many leading tokens of its cache were evaluated in
whole aligned blocks of the last prompt (the most a next prompt may reuse)."""
RESET_ARG = 6
"""Position of ``reset`` among ``Llama.generate``'s arguments after ``tokens`` (0.3.x)."""


def canonical_prefix(cached: Sequence[int], canonical: int, prompt: Sequence[int],
                     block: int) -> int:
    """How many leading tokens of ``prompt`` to keep from a cache holding ``cached``, of which
    the first ``canonical`` were evaluated in whole blocks of ``block`` tokens from position 0:
    the shared prefix, cut to whole blocks, never the whole prompt."""
    shared = 0
    for a, b in zip(cached, prompt, strict=False):
        if a != b:
            break
        shared += 1
    return min(shared, canonical, len(prompt) - 1) // block * block


def patch_llama() -> None:
    """Make ``llama_cpp.Llama.generate`` reuse only :func:`canonical_prefix` of its cache."""
    import llama_cpp

    original = llama_cpp.Llama.generate
    if getattr(original, "_amc_canonical", False):
        return

    def generate(self: Any, tokens: Sequence[int], *args: Any, **kw: Any) -> Iterator[int]:
        reset = kw.get("reset", args[RESET_ARG] if len(args) > RESET_ARG else True)
        if reset:
            keep = canonical_prefix(self._input_ids.tolist(), getattr(self, CANONICAL, 0),
                                    tokens, self.n_batch)
            self.n_tokens = min(self.n_tokens, keep)  # generate() drops the KV cache past it
            setattr(self, CANONICAL, len(tokens) // self.n_batch * self.n_batch)
        return original(self, tokens, *args, **kw)

    generate._amc_canonical = True  # type: ignore[attr-defined]
    llama_cpp.Llama.generate = generate  # type: ignore[assignment]


def main() -> None:
    """Run llama-cpp-python's server (its own command line) with :func:`patch_llama`."""
    patch_llama()
    from llama_cpp.server.__main__ import main as serve

    serve()


if __name__ == "__main__":
    main()
