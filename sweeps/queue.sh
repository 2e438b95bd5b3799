#!/usr/bin/env bash
# Queue the one-factor-at-a-time sweep as DVC experiments, in priority order; then run them
# one at a time (2 shared cores) and look at them. Run from sweeps/:
#   bash queue.sh rollout            # the upper bound and no value: every axis (no model needed)
#   dvc repro value && bash queue.sh learned   # the learned V_theta's cells
#   bash queue.sh protocol30         # issue 30's declared value-method candidates (validation)
#   dvc queue start -j 1 && dvc exp show
# Every cell: 54 depth-2 tasks x 6 seeds = 324 (task, seed) pairs (sweeps/params.yaml).
set -euo pipefail
q() { dvc exp run --queue cell "$@" >/dev/null && echo "queued: $*"; }
# learned cells: targets value and cell (value is up to date and skipped, but its models/value
# is checked out into the experiment's workspace, which a `cell`-only run does not do; without
# targets a fresh clone would also rerun the other benchmarks' value stages)
# A fresh clone has no models/value (no DVC remote): its kept copy goes into the DVC cache
# first (studies/sweeps/kept.py), so the learned cells use the value that ran, not a retrain.
ql() {
  if [ ! -d models/value ] && [ -d kept/value ]; then
    PYTHONPATH=.. python -m studies.sweeps.kept restore --section value
  fi
  dvc exp run --queue value cell "$@" >/dev/null && echo "queued: $*"
}
rollout() {
  q -S cell.value=rollout
  q -S cell.value=none
  for x in 0.2 0.6 0.8 0.9; do q -S cell.value=rollout -S cell.q=$x; done
  for b in 0.05 0.1 0.5 1.0; do q -S cell.value=rollout -S cell.beta=$b; done
  q -S cell.value=rollout -S cell.schedule=fixed -S 'cell.steps=[2]'
  for r in 0.3 0.5 0.7; do q -S cell.value=rollout -S cell.schedule=ess -S cell.rho=$r; done
  for n in 8 15; do q -S cell.value=rollout -S cell.n=$n; done
  for s in 0 3; do q -S cell.value=rollout -S cell.slack=$s; done
}
learned() {  # settings are chosen on validation cells, reported on their test twins
  for b in 0.25 0.1 0.05 0.5 1.0; do
    ql -S cell.value=learned -S cell.beta=$b -S cell.split=validation
    ql -S cell.value=learned -S cell.beta=$b
  done
  for split in validation test; do
    ql -S cell.value=learned -S cell.beta=0.1 -S cell.schedule=ess -S cell.rho=0.7 -S cell.split=$split
    ql -S cell.value=learned -S cell.schedule=ess -S cell.rho=0.7 -S cell.split=$split
    ql -S cell.value=learned -S cell.n=8 -S cell.split=$split
    ql -S cell.value=learned -S cell.beta=0.05 -S cell.n=8 -S cell.split=$split
  done
  # the exponent k of p^k (cell.sharpen) at the validation-best beta, at N = 4, 8, 15
  for split in validation test; do
    b="-S cell.value=learned -S cell.beta=0.05 -S cell.split=$split"
    for k in 2 4 8 16 32; do ql $b -S cell.sharpen=$k; done
    ql $b -S cell.n=8 -S cell.sharpen=4
    ql $b -S cell.n=8 -S cell.sharpen=16
    ql $b -S cell.n=15
    ql $b -S cell.n=15 -S cell.sharpen=4
    ql $b -S cell.schedule=ess -S cell.rho=0.7 -S cell.sharpen=4
    ql -S cell.value=learned -S cell.beta=0.25 -S cell.sharpen=4 -S cell.split=$split
  done
  for x in 0.2 0.6 0.8; do ql -S cell.value=learned -S cell.q=$x; done
  ql -S cell.value=learned -S cell.schedule=fixed -S 'cell.steps=[2]'
}
protocol30() {  # issue 30's declared candidates (protocol-issue30.yaml): validation cells only;
  # after the choice rule: python -m studies.sweeps.protocol protocol-issue30.yaml test --chosen NAME
  PYTHONPATH=.. python -m studies.sweeps.protocol protocol-issue30.yaml validation | while read -r c; do
    eval "$c" >/dev/null && echo "queued: $c"
  done
}
case "${1:-all}" in
  rollout) rollout ;;
  learned) learned ;;
  protocol30) protocol30 ;;
  all) rollout; learned ;;
  *) echo "usage: queue.sh [rollout|learned|protocol30|all]" >&2; exit 2 ;;
esac
