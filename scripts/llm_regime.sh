#!/bin/bash
# Issue 13, item 9: the LLM regime with the embedded prior, every step resumable (finished
# (task, method, seed) results are kept, cached prior calls replay; rerun to go on). Run from the
# repository root with the venv's bin on PATH; settings in configs/llm-regime/params.yaml.
#   scripts/llm_regime.sh collect     # Best-of-15 on 24 train tasks (360 rollouts; resumes)
#   scripts/llm_regime.sh calibrate   # Best-of-4 vs Best-of-15 at budgets 2..B (train tasks)
#   scripts/llm_regime.sh value       # dataset + train (MiniLM value, MLflow in runs/llm-regime)
#   scripts/llm_regime.sh evaluate    # ReAct, Best-of-N, zero-shot SMC, AMC; N in {4, 8, 15}
#   scripts/llm_regime.sh report      # plots + summary; copies to docs/results-assets/
#   scripts/llm_regime.sh keep        # a running evaluation's finished results, kept now
# The budget is chosen on the calibration (train tasks) before any test task runs: collect
# with smc.max_steps = B, pick b <= B, set smc.max_steps = b in the params file, rerun collect
# (the shorter rollouts are the longer ones' first b steps: replayed from the response cache).
set -euo pipefail
P=${P:-configs/llm-regime/params.yaml}
R=runs/llm-regime
A=docs/results-assets/llm-regime
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1}
export MLFLOW_DISABLE_TELEMETRY=true DO_NOT_TRACK=true
mkdir -p "$R" "$A"
eval_dir() { python -c "from amc.pipeline.params import load_params as l; print(l('$P').evaluate.out_dir)"; }
keep() {  # keep SRC DEST: gzip the complete lines of every (method, seed) results file
  mkdir -p "$2"
  for f in "$1"/*__seed*.jsonl; do
    [ -s "$f" ] || continue
    python -c "import json,sys; [json.loads(l) and sys.stdout.write(l) for l in open(sys.argv[1]) if l.endswith('\\n')]" "$f" \
      | gzip -n > "$2/$(basename "$f").gz.tmp" && mv "$2/$(basename "$f").gz.tmp" "$2/$(basename "$f").gz"
  done
}
case "${1:-}" in
  collect)
    # runs/ does not outlive a sitting: the finished tasks' rollouts are kept in the repository
    # (evidence/llm-regime/trajectories, ~30 KB a task) and restored first, so a later sitting
    # resumes where this one stopped (collect skips finished task ids).
    K=evidence/llm-regime/trajectories
    mkdir -p "$R/trajectories" "$K"
    for f in "$K"/*.jsonl; do
      [ -e "$f" ] && [ ! -e "$R/trajectories/$(basename "$f")" ] && cp "$f" "$R/trajectories/"
    done
    rc=0; amc collect -p "$P" || rc=$?
    cp "$R"/trajectories/*.jsonl "$K/" 2>/dev/null || true
    exit $rc ;;
  calibrate)
    B=$(python -c "from amc.pipeline.params import load_params as l; print(l('$P').smc.max_steps)")
    for b in $(seq 2 "$B"); do
      amc calibrate "$R/trajectories" --budget "$b" --out "$A/calibration-budget$b.json"
    done ;;
  value) python -m amc.pipeline.dataset "$P" && python -m amc.pipeline.train "$P" ;;
  evaluate)
    # As collect: every (method, seed) results file is kept gzipped in the repository
    # (evidence/llm-regime/eval) and restored first, so the evaluation spans sittings. A restored
    # file whose configuration hash (prior, method, value model URI) differs is dropped and re-run
    # by the stage itself. Extra arguments go to `amc evaluate`; note that -S overrides isolate
    # the run under runs/overrides-<hash>/ (params.py), outside what is restored and kept here.
    # KEEP names the kept folder of another params file (e.g. the declared test set:
    # P=configs/llm-regime/testset60.yaml KEEP=evidence/llm-regime/testset60/eval).
    shift; K=${KEEP:-evidence/llm-regime/eval}; E=$(eval_dir)
    mkdir -p "$E" "$K"
    for f in "$K"/*.jsonl.gz; do
      t="$E/$(basename "$f" .gz)"
      [ -e "$f" ] && [ ! -e "$t" ] && gunzip -c "$f" > "$t"
    done
    rc=0; amc evaluate -p "$P" "$@" || rc=$?
    keep "$E" "$K"
    exit $rc ;;
  keep)
    # A running evaluation's finished lines, kept now (every complete JSON line; safe while
    # the evaluation appends): commit them as they land.
    keep "$(eval_dir)" "${KEEP:-evidence/llm-regime/eval}" ;;
  report)
    amc report -p "$P"
    cp "$R/report/summary.json" "$A/summary.json"
    cp "$R"/plots/*.png "$A/" ;;
  *) echo "usage: $0 collect|calibrate|value|evaluate|keep|report" >&2; exit 2 ;;
esac
