#!/usr/bin/env bash
# Queue the declared WebShop / SciWorld cells (studies/sweeps/grid.py) as DVC experiments, one per
# cell; validation cells first, then the test twins the choice rule picks from the harvested
# validation records. Run from sweeps/ (in a clone, so the workspace stays free to commit):
#   bash queue_bench.sh validation webshop && dvc queue start -j 1
#   python -m studies.sweeps.harvest --repo .. --out ../evidence      # records -> evidence/runs
#   bash queue_bench.sh test webshop && dvc queue start -j 1       # after the harvest
#   bash queue_bench.sh ceiling sciworld && dvc queue start -j 1   # declared ceilings (grid.CEILINGS)
# Cells whose record is already under ../evidence/runs are skipped (resumable). Learned cells
# need models/value-<bench>: run `dvc repro value_<bench>` once and commit dvc.lock first;
# they are queued with both targets, so the up-to-date value stage is checked out, not rerun.
# A fresh clone has no models/value-<bench> (no DVC remote): its kept copy (sweeps/kept/, see
# studies/sweeps/kept.py) is restored into the DVC cache first, so the cells use the value that ran.
set -euo pipefail
split=${1:?usage: queue_bench.sh validation|test|ceiling webshop|sciworld}
bench=${2:?usage: queue_bench.sh validation|test|ceiling webshop|sciworld}
if [ -d "kept/value-$bench" ]; then PYTHONPATH=.. python -m studies.sweeps.kept restore --section "value_$bench"; fi
PYTHONPATH=.. python -m studies.sweeps.grid "$split" "$bench" --runs ../evidence --skip-done |
  while read -r o; do
    targets=cell
    if [[ $o == *"cell.value=learned"* ]]; then targets="value_$bench cell"; fi
    eval dvc exp run --queue "$targets" "$o" >/dev/null && echo "queued: $targets $o"
  done
