#!/bin/bash
# Issue 13, item 9: the LLM regime with the embedded prior, every step resumable (finished
# (task, method, seed) results are kept, cached prior calls replay; rerun to go on). Run from the
# repository root with the venv's bin on PATH; settings in configs/llm-regime/params.yaml.
#   studies/llm_regime/run.sh collect     # Best-of-15 on 24 train tasks (360 rollouts; resumes)
#   studies/llm_regime/run.sh calibrate   # Best-of-4 vs Best-of-15 at budgets 2..B (train tasks)
#   studies/llm_regime/run.sh value       # dataset + train (MiniLM value, MLflow in runs/llm-regime)
#   studies/llm_regime/run.sh evaluate    # ReAct, Best-of-N, zero-shot SMC, AMC; N in {4, 8, 15}
#   studies/llm_regime/run.sh report      # plots + summary; copies to docs/results-assets/
#   studies/llm_regime/run.sh keep        # a running evaluation's finished results, kept now
#   studies/llm_regime/run.sh rounds [K]  # rounds 0..K-1 (default 4) of the Prefect retraining
#                                     # flow + each challenger on the declared 60-task set
#   studies/llm_regime/run.sh rounds-keep # a running `rounds`' finished results, kept now
#   studies/llm_regime/run.sh rounds-registry  # only the fresh sitting's restore (rounds does it)
# The budget is chosen on the calibration (train tasks) before any test task runs: collect
# with smc.max_steps = B, pick b <= B, set smc.max_steps = b in the params file, rerun collect
# (the shorter rollouts are the longer ones' first b steps: replayed from the response cache).
set -euo pipefail
P=${P:-configs/llm-regime/params.yaml}
R=runs/llm-regime
A=docs/results-assets/llm-regime
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1}
export MLFLOW_DISABLE_TELEMETRY=true DO_NOT_TRACK=true PREFECT_SERVER_ANALYTICS_ENABLED=false
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
# --- rounds (issue 31, item 3) ---------------------------------------------------------------
# RP: the rounds' params (the flow's); T: the declared set's params (the template of each
# round's evaluation); KR: what is kept in the repository (gzipped results, ledgers), restored
# first, so a rerun -- also in a later sitting -- continues. The last round (K-1) is evaluated
# at every N of GRID. Not kept: the MLflow store (the values' weights); a fresh sitting retrains
# them from the kept rollouts and checks each against its ledger (studies.llm_regime.round_restore).
RP=${RP:-configs/llm-regime/rounds.yaml}
T=${T:-configs/llm-regime/testset60.yaml}
KR=${KR:-evidence/llm-regime/rounds}
KT=${KT:-evidence/llm-regime/testset60/eval}
GRID=${GRID:-4,8,15}
pget() { python -c "from amc.pipeline.params import load_params as l; p=l('$1'); print($2)"; }
unkeep() {  # unkeep SRC DEST: gunzip every kept results file that DEST lacks
  mkdir -p "$2"
  for f in "$1"/*.jsonl.gz; do
    t="$2/$(basename "$f" .gz)"
    [ -e "$f" ] && [ ! -e "$t" ] && gunzip -c "$f" > "$t"
  done
  true
}
rounds_keep() {  # the ledgers, every round's rollouts and the frozen set's file, into KR
  local L; L=$(pget "$RP" p.rounds.ledger_dir); mkdir -p "$KR/ledger" "$KR/frozen"
  cp "$L"/round-*.json "$KR/ledger/" 2>/dev/null || true
  [ -e "$L/restores.jsonl" ] && cp "$L/restores.jsonl" "$KR/ledger/"
  local C; C=$(pget "$RP" p.collect.out_dir)
  for d in "$C"/round-*; do
    [ -d "$d" ] || continue
    keep "$d" "$KR/trajectories/$(basename "$d")"
    [ -e "$d/manifest.json" ] && cp "$d/manifest.json" "$KR/trajectories/$(basename "$d")/"
    rm -rf "$KR/trajectories/$(basename "$d")/shards"  # merged since, or kept again below
    for s in "$d"/shards/*-of-*; do  # a collection still in its shards (the flow's fan-out)
      [ -d "$s" ] && keep "$s" "$KR/trajectories/$(basename "$d")/shards/$(basename "$s")"
    done
  done
  local F; F=$(pget "$RP" p.promote.frozen_set); [ -e "$F" ] && cp "$F" "$KR/frozen/" || true
  # the gate's evaluation so far (a sitting may end inside it): restored next time, where the
  # stage drops any file whose configuration hash (challenger, champion URIs) is not the plan's
  local G; G=$(pget "$RP" p.evaluate.out_dir); [ -d "$G" ] && keep "$G" "$KR/gate-eval"
  true
}
rounds_restore() {  # KR back into runs/ (what a fresh sitting lacks)
  local L C F; L=$(pget "$RP" p.rounds.ledger_dir); C=$(pget "$RP" p.collect.out_dir)
  F=$(pget "$RP" p.promote.frozen_set); mkdir -p "$L" "$(dirname "$F")"
  for f in "$KR"/ledger/round-*.json "$KR"/ledger/restores.jsonl; do
    [ -e "$f" ] && [ ! -e "$L/$(basename "$f")" ] && cp "$f" "$L/"
  done
  for d in "$KR"/trajectories/round-*; do
    [ -d "$d" ] || continue
    unkeep "$d" "$C/$(basename "$d")"
    for s in "$d"/shards/*-of-*; do  # resumed by the shard's collect (finished ids skipped)
      [ -d "$s" ] && unkeep "$s" "$C/$(basename "$d")/shards/$(basename "$s")"
    done
    [ -e "$d/manifest.json" ] && [ ! -e "$C/$(basename "$d")/manifest.json" ] && cp "$d/manifest.json" "$C/$(basename "$d")/"
  done
  [ -e "$KR/frozen/$(basename "$F")" ] && [ ! -e "$F" ] && cp "$KR/frozen/$(basename "$F")" "$F"
  [ -d "$KR/gate-eval" ] && unkeep "$KR/gate-eval" "$(pget "$RP" p.evaluate.out_dir)"
  true
}
round_eval() {  # round_eval R [N_GRID]: round R's challenger on the declared set (resumable)
  local r=$1 tag; tag=$(printf 'round-%04d' "$1")
  local RX; RX=$(dirname "$(pget "$RP" p.rounds.ledger_dir)")/declared/$tag.yaml
  python -m studies.llm_regime.round_eval params "$RP" "$T" "$r" "$RX" ${2:+--n-grid "$2"} >/dev/null
  local E; E=$(pget "$RX" p.evaluate.out_dir)
  unkeep "$KR/$tag/eval" "$E"
  for f in "$KT"/*.jsonl.gz; do  # the kept baselines: re-selected by this value, not re-sampled
    case "$(basename "$f")" in *+challenger__*|*+champion__*) continue ;; esac
    t="$E/$(basename "$f" .gz)"; [ -e "$t" ] || gunzip -c "$f" > "$t"
  done
  local rc=0; amc evaluate -p "$RX" || rc=$?
  keep "$E" "$KR/$tag/eval"
  [ $rc -eq 0 ] || return $rc
  amc report -p "$RX" && cp "$(pget "$RX" p.report.summary_file)" "$KR/$tag/evaluation.json"
}
has_grid() {  # has_grid EVALUATION: it holds AMC with the challenger at every N of GRID
  python -c "import json,sys; m=json.load(open(sys.argv[1]))['methods']; sys.exit(any(f'smc@{n}+challenger' not in m for n in sys.argv[2].split(',')))" "$1" "$GRID"
}
rounds_registry() {  # a fresh sitting: kept files back, round 0 seeded, values retrained (checked)
  # evaluate opens models:/ URIs in mlflow_uri's store; the flow's other MLflow clients too
  MLFLOW_TRACKING_URI=$(pget "$RP" p.mlflow_uri); export MLFLOW_TRACKING_URI
  rounds_restore
  python -m studies.llm_regime.round_eval seed0 "$RP" "${KTRAJ:-evidence/llm-regime/trajectories}"
  python -m studies.llm_regime.round_eval restore "$RP" --kept "$KR"
  rounds_keep  # the restore's record
}
rounds_main() {  # rounds 0..K-1: seed round 0, then flow + declared evaluation per round
  local K=$1 r closed ev
  rounds_registry
  while :; do
    closed=$(python -m studies.llm_regime.round_eval closed "$RP")
    for r in $closed; do  # every closed round is measured on the declared set at the
      # template's N (its row); the last one then at every N of GRID too (the same files plus
      # the other N's: hours, resumable), which rewrites its evaluation with the superset
      ev=$KR/$(printf 'round-%04d' "$r")/evaluation.json
      [ -e "$ev" ] || round_eval "$r"
      [ "$r" -eq $((K - 1)) ] && ! has_grid "$ev" && round_eval "$r" "$GRID"
    done
    # each trained round's value on one fixed held-out set (the declared set's kept Best-of-4
    # prior rollouts); resumable: only rounds not yet in the file are scored
    python -m studies.llm_regime.round_values "$RP" "$KT" "$KR/heldout-values.json"
    [ "$(echo "$closed" | wc -w)" -ge "$K" ] && break
    local rc=0
    python -c "from flows.retrain_and_promote import retrain_and_promote as f; f(params_path='$RP')" || rc=$?
    rounds_keep
    [ $rc -eq 0 ] || exit $rc
    # the round just closed: its gate's evaluation also under its own folder (the live copy
    # in $KR/gate-eval is the next round's once that starts)
    r=$(python -m studies.llm_regime.round_eval closed "$RP" | tr ' ' '\n' | sort -n | tail -1)
    keep "$(pget "$RP" p.evaluate.out_dir)" "$KR/$(printf 'round-%04d' "$r")/gate-eval"
  done
  rounds_keep
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
  rounds) shift; rounds_main "${1:-4}" ;;
  rounds-registry) rounds_registry ;;
  rounds-keep)  # a running `rounds`' finished results, kept now (safe while it appends): the
    # ledgers, rollouts, the gate's evaluation and each round's declared-set evaluation so far
    rounds_keep
    D=$(dirname "$(pget "$RP" p.rounds.ledger_dir)")/declared
    for RX in "$D"/round-*.yaml; do
      [ -e "$RX" ] || continue
      keep "$(pget "$RX" p.evaluate.out_dir)" "$KR/$(basename "$RX" .yaml)/eval"
    done ;;
  report)
    amc report -p "$P"
    cp "$R/report/summary.json" "$A/summary.json"
    cp "$R"/plots/*.png "$A/" ;;
  *) echo "usage: $0 collect|calibrate|value|evaluate|keep|rounds [K]|rounds-keep|report" >&2
     exit 2 ;;
esac
