#!/bin/bash
# Issue 18, items 2-3: the GRPO policy vs the frozen prior at CPU-miniature size, every step
# resumable (finished (task, method, seed) results are kept; rerun the same command to go on).
#   scripts/grpo_compare.sh train     # amc grpo -> $R/policy (MLflow: $R/mlflow.db)
#   scripts/grpo_compare.sh value     # V_theta on the frozen prior's own rollouts -> $R/value
#   VALUE=$R/value/model scripts/grpo_compare.sh frozen   # ReAct, Best-of-4, AMC@4 (frozen)
#   scripts/grpo_compare.sh policy    # ReAct, Best-of-4 of the GRPO policy (after train)
#   scripts/grpo_compare.sh doc       # docs/results.md with the Table-11 section
# Both evaluations: TextCraft depth 1 without distractors (the training env), test split, the
# same first $TASKS tasks and seeds $SEEDS, the same hf runtime (the policy adds the adapter).
# VALUE=none: SMC@4 weights by the prior only (not AMC); VALUE=<model folder> makes it AMC.
# The value's rollouts: Best-of-4 of the frozen hf prior on the first $VTASKS *train* tasks
# (the same sampling options), never the evaluation's test tasks.
set -euo pipefail
R=${R:-runs/grpo-cmp}
TASKS=${TASKS:-4}
SEEDS=${SEEDS:-0,1}
VALUE=${VALUE:-none}
VTASKS=${VTASKS:-12}
export MLFLOW_TRACKING_URI=${MLFLOW_TRACKING_URI:-sqlite:///$PWD/$R/mlflow.db}
ENV=(-S env.name=textcraft -S 'env.options={reward: dense, max_depth: 1, n_distractors: 0}')
HF=(--prior hf -S prior.options.max_new_tokens=6 -S prior.options.top_k=0
    -S prior.options.top_p=1.0 -S smc.max_steps=4 -S 'smc.resample_steps=[2]'
    -S smc.resample=fixed --split test --max-tasks "$TASKS" --seeds "$SEEDS" --quiet)
mkdir -p "$R"
case "${1:-}" in
  train) amc grpo --out "$R/policy" "${@:2}" ;;
  value)
    amc run --prior hf -S prior.options.max_new_tokens=6 -S prior.options.top_k=0 \
      -S prior.options.top_p=1.0 -S smc.max_steps=4 "${ENV[@]}" --split train \
      --max-tasks "$VTASKS" --seeds 0 --quiet -m bon@4 --out "$R/value-rollouts"
    amc dataset "$R"/value-rollouts/bon@4__seed0.jsonl --env textcraft --out "$R/value-data"
    amc train "$R/value-data" --env textcraft --out "$R/value" --epochs 3 --no-track ;;
  frozen) amc run "${HF[@]}" "${ENV[@]}" -m react,bon@4,smc@4 --value "$VALUE" --out "$R/frozen" ;;
  policy) amc run "${HF[@]}" "${ENV[@]}" -m react,bon@4 --value "$VALUE" \
            -S "prior.options.adapter=$PWD/$R/policy/adapter" --out "$R/policy-eval" ;;
  doc)
    A=docs/results-assets/grpo
    mkdir -p "$A"
    cp "$R/frozen/summary.json" "$A/frozen-summary.json"
    cp "$R/policy-eval/summary.json" "$A/policy-summary.json"
    cp "$R/policy/metrics.json" "$R/policy/curve.jsonl" "$A/"
    bash scripts/results_doc.sh ;;   # every section of docs/results.md, GRPO included
  *) echo "usage: $0 train [amc grpo flags] | value | frozen | policy | doc" >&2; exit 2 ;;
esac
