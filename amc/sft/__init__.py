"""Behaviour cloning (SFT): teach the embedded model a benchmark from its planner, then freeze it.

AMC needs a prior of middling skill: one that sometimes succeeds and sometimes fails for
reasons visible in the state. The base embedded model is too weak to leave any room
(TextCraft depth 2: 0 successes in 160 rollouts). Fine-tuning it with LoRA on the planner's
demonstrations (:mod:`.demos`), stopped at a chosen checkpoint (:mod:`.loop`), makes such a
prior; from then on it is a black box like any API model (the ``hf`` prior with ``adapter=``).
It is also the usual start of GRPO (``amc grpo`` with ``init_adapter``).

Pieces: :mod:`.config` (options), :mod:`.demos` (planner demonstrations on train tasks only,
rendered with the prior's own prompt, recovery states included), :mod:`.trainer` (tokenising,
batching, the loss on the action tokens only), :mod:`.loop` (the resumable run with kept
checkpoints), :mod:`.registry` (MLflow run and ``amc-policy-<env>`` versions), :mod:`.stage`
(``amc sft``, the DVC stage and the Prefect flow's steps).
"""
