"""GRPO: the white-box reference that fine-tunes the agent itself (the paper's comparison).

Group Relative Policy Optimisation samples G multi-turn rollouts per training task with the
policy, scores each rollout by its environment reward, and pushes up the log-probability of
every action token of a rollout in proportion to its *group-relative* advantage (reward minus
the group mean, over the group's standard deviation), with a clipped importance ratio and a KL
penalty to the frozen reference model. Only LoRA adapters are trained, so the reference model is
the same network with the adapter switched off.

- :mod:`.config` -- the run's options (sizes, optimiser, LoRA, seed).
- :mod:`.loss` -- advantages and the loss, pure tensor maths.
- :mod:`.rollout` -- multi-turn episodes through the project's environments with the same
  action-menu prompt as the ``hf``/``embedded`` priors, keeping the sampled token ids.
- :mod:`.trainer` -- the loop, cost accounting, the adapter on disk and the MLflow run.
- :mod:`.stage` -- the optional DVC stage (``grpo/dvc.yaml``, flow ``flows/grpo.py``): the
  policy trained, then evaluated beside the frozen prior.

TRL's ``GRPOTrainer`` drives single-prompt completions or chat tool-calling environments; our
episodes are completion-style transcripts re-rendered at each turn with a fresh action menu,
so the loop and the loss are written here and TRL supplies the per-token log-probability
helper (``selective_log_softmax``) and ``disable_dropout_in_model``.
"""
