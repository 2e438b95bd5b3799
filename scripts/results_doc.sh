#!/bin/bash
# docs/results.md from the copies kept in docs/results-assets/ (a fresh clone regenerates it).
# The declared 60-task test set comes first (its declaration and evaluation are committed),
# then the retraining rounds kept in evidence/llm-regime/rounds (studies/llm_regime/run.sh
# rounds); then the LLM regime's first 12-task run (studies/llm_regime/run.sh report writes its
# summary and plots to docs/results-assets/llm-regime/); the earlier embedded configurations
# and the GRPO comparison (scripts/grpo_compare.sh) follow as their own sections. The product's
# `amc results-doc` renders the document; the study's entry (studies/llm_regime/results_doc.py)
# adds the declared test set's and the rounds' sections. Run from the repository root with the
# venv's bin on PATH.
set -euo pipefail
A=docs/results-assets
D=studies/llm_regime/declared/llm-regime-testset60.json
# The regime search, its test-set sizing and the zero-shot value's ranking (issue 49) come first,
# as generated tables, once their studies have written them (studies/llm_regime/regime_search,
# studies/llm_regime/zero_shot_auc.py).
S=()
R=evidence/llm-regime/regime-search/room.md
T=evidence/llm-regime/regime-search/test-sizing.md
Z=evidence/llm-regime/zero-shot-yesno-auc.md
[ -f "$R" ] && S+=(--section "Where could a value matter? The regime search's room (declared in studies/llm_regime/regime_search/protocol.json)=$R")
[ -f "$T" ] && S+=(--section "A test set for the chosen regime=$T")
[ -f "$Z" ] && S+=(--section "Does the zero-shot value rank siblings? (studies/llm_regime/zero_shot_auc.py)=$Z")
# The fine-tuned prior (issue 61, studies/sft_prior): its SFT run's held-out skill by checkpoint,
# then its declared regime search's skill by depth and room, once their studies have written them.
F1=evidence/sft-prior/sft-run.md
F2=evidence/sft-prior/regime-search/room.md
[ -f "$F1" ] && S+=(--section "The embedded model taught TextCraft by the planner's demonstrations (SFT, LoRA): held-out skill by checkpoint (amc sft; studies/sft_prior)=$F1")
[ -f "$F2" ] && S+=(--section "The fine-tuned prior's declared regime search: success by depth and checkpoint, room per regime (studies/sft_prior/regime_search/protocol.json)=$F2")
F4=evidence/sft-prior/failure-modes.md
[ -f "$F4" ] && S+=(--section "How the fine-tuned prior fails in the search's rollouts (studies/sft_prior/failure_modes.py)=$F4")
F3=evidence/sft-prior/test-sizing.md
[ -f "$F3" ] && S+=(--section "A test set for the fine-tuned prior's chosen regime: sized from its own rollouts (studies/sft_prior/declare_test.py)=$F3")
F5=evidence/sft-prior/dagger/sft-run.md
F6=evidence/sft-prior/dagger/room.md
[ -f "$F5" ] && S+=(--section "One DAgger round: the planner labels the fine-tuned prior's own states; held-out accuracy there (studies/sft_prior/dagger/protocol.json)=$F5")
[ -f "$F6" ] && S+=(--section "The DAgger round's search: checkpoint 244 against the DAgger checkpoint at depth 2, room per regime=$F6")
F7=evidence/sft-prior/dagger/test-sizing.md
F8=evidence/sft-prior/dagger/sampling.md
[ -f "$F8" ] && S+=(--section "Exploratory: how often the prior, sampling, writes the planner's action, by temperature (studies/sft_prior/dagger/sampling.py)=$F8")
[ -f "$F7" ] && S+=(--section "A test set for the DAgger round's chosen regime: the same sizing (studies/sft_prior/declare_test.py --dagger)=$F7")
F9=evidence/sft-prior/multistep/result.md
[ -f "$F9" ] && S+=(--section "Several resampling steps: SMC with the Monte-Carlo rollout value against Best-of-4, the DAgger prior served in bfloat16 (studies/sft_prior/multistep/protocol.json)=$F9")
F10=evidence/sft-prior/multistep/fidelity.md
[ -f "$F10" ] && S+=(--section "Exploratory: the DAgger checkpoint served in bfloat16 against float32 (studies/sft_prior/multistep/fidelity.py)=$F10")
F11=evidence/sft-prior/progress/result.md
[ -f "$F11" ] && S+=(--section "Resampling after every step with a hand-made progress value against Best-of-4, the DAgger prior in bfloat16: the regime's room (studies/sft_prior/progress/protocol.json)=$F11")
F12=studies/sft_prior/progress/test.md
[ -f "$F12" ] && S+=(--section "The declared test set of the progress-value regime (studies/sft_prior/progress/test.json)=$F12")
F15=evidence/sft-prior/progress/by-plan-length.md
[ -f "$F15" ] && S+=(--section "Exploratory: both progress-value cells' success by the length of the task's menu-form plan (studies/sft_prior/progress/by_plan.py)=$F15")
F13=evidence/sft-prior/band/result.md
[ -f "$F13" ] && S+=(--section "The progress value on tasks whose plans take 6-10 menu steps, H 12, against Best-of-4 (studies/sft_prior/band/protocol.json)=$F13")
F14=studies/sft_prior/band/test.md
[ -f "$F14" ] && S+=(--section "The declared test set of the plan-band regime (studies/sft_prior/band/test.json)=$F14")
F16=evidence/sft-prior/dagger2/sft-run.md
[ -f "$F16" ] && S+=(--section "A second DAgger round: the round-1 prior's own states labelled (studies/sft_prior/dagger2/protocol.json)=$F16")
F17=evidence/sft-prior/dagger2/band/result.md
[ -f "$F17" ] && S+=(--section "The round-2 prior in the plan-band cell's design: the progress value against Best-of-4 (studies/sft_prior/dagger2/protocol.json)=$F17")
F18=evidence/sft-prior/dagger3/sft-run.md
[ -f "$F18" ] && S+=(--section "A third DAgger round: the round-2 prior's own states labelled (studies/sft_prior/dagger3/protocol.json)=$F18")
F19=evidence/sft-prior/dagger3/band/result.md
[ -f "$F19" ] && S+=(--section "The round-3 prior in the plan-band cell's design with four seeds per task: the progress value against Best-of-4 (studies/sft_prior/dagger3/protocol.json)=$F19")
F20=evidence/sft-prior/late/result.md
[ -f "$F20" ] && S+=(--section "The round-3 prior, resampling only after steps 4-11 (where the value ranks) against Best-of-4 (studies/sft_prior/late/protocol.json)=$F20")
F21=evidence/sft-prior/horizon/result.md
[ -f "$F21" ] && S+=(--section "The round-3 prior with horizon 16: the progress value against Best-of-4 (studies/sft_prior/horizon/protocol.json)=$F21")
F22=evidence/sft-prior/refusals/result.md
[ -f "$F22" ] && S+=(--section "The round-3 prior, the progress value charging refused actions against Best-of-4 (studies/sft_prior/refusals/protocol.json)=$F22")
F23=evidence/sft-prior/plan67/result.md
[ -f "$F23" ] && S+=(--section "The round-3 prior on fresh 6-7-step plans: the progress value against Best-of-4 (studies/sft_prior/plan67/protocol.json)=$F23")
F24=evidence/sft-prior/plan67/by-task.md
[ -f "$F24" ] && S+=(--section "The fresh 6-7-step plans task by task (exploratory: studies/sft_prior/plan67/by_task.py)=$F24")
# The value options' offline figures (issue 50, studies/value_options): the chosen regime's step 1,
# then the old regime's steps 2 and 4; their own title line is dropped (the section names them).
for V in chosen:results-chosen.md old:results.md; do
  F=studies/value_options/${V#*:}
  [ -f "$F" ] && tail -n +2 "$F" > "$A/value-options-${V%%:*}.md"
done
[ -f "$A/value-options-chosen.md" ] && S+=(--section "Which value options rank the chosen regime's siblings? Offline and exploratory (studies/value_options, --regime chosen)=$A/value-options-chosen.md")
[ -f "$A/value-options-old.md" ] && S+=(--section "The value options in the old regime (steps 2 and 4), offline and exploratory (studies/value_options)=$A/value-options-old.md")
# The simulation's TextCraft value re-chosen with the same options under a declared protocol
# (issue 50 item 4, studies/sim_value_options), once it has reported.
if [ -f evidence/sim-value-options/result.md ]; then
  tail -n +2 evidence/sim-value-options/result.md > "$A/sim-value-options.md"
fi
[ -f "$A/sim-value-options.md" ] && S+=(--section "The simulation's value re-chosen with those options: declared, test cells once (studies/sim_value_options)=$A/sim-value-options.md")
# the paragraph under the title: a template whose numbers are read from the committed records
INTRO=$(python -m studies.llm_regime.intro docs/results-intro.txt "$A/llm-regime/summary.json" \
  "$D" docs/evidence.md)
python -m studies.llm_regime.results_doc \
  --summary "$A/llm-regime/summary.json" --plots-dir "$A/llm-regime" \
  --title "Results: TextCraft with the embedded Gemma-3-270M prior" "${S[@]}" \
  --intro "$INTRO" \
  --declared "Declared 60-task test set: the primary comparison=$D,evidence/llm-regime/testset60/evaluation.json" \
  --rounds evidence/llm-regime/rounds \
  --summary-title "First LLM-regime run: 12 test tasks (before the declaration)" \
  --extra "First configuration: 12 steps, 1 seed=$A/first-configuration-12-steps-1-seed.json" \
  --extra "Second configuration: 6-step budget=$A/second-configuration-6-step-budget.json" \
  --extra "Benchmark-faithful configuration (paper split, depths 3-4, 20 steps)=$A/benchmark-faithful-configuration-paper-s.json" \
  --grpo "$A/grpo/frozen-summary.json,$A/grpo/policy-summary.json,$A/grpo/metrics.json"
