# Quick start: `make run` (install + the main job), `make test` (install + the test suite).
VENV := .venv
PY := $(VENV)/bin/python
export MLFLOW_DISABLE_TELEMETRY ?= true
export DO_NOT_TRACK ?= true
export DVC_NO_ANALYTICS ?= 1
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false

.PHONY: setup run test lint bench demo exp

setup:  ## install everything into .venv (idempotent)
	bash scripts/setup.sh

run: setup  ## the main job: `dvc repro` of the whole pipeline with the default params.yaml
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/dvc repro
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/dvc metrics show

demo: setup  ## seconds: ReAct, Best-of-N and SMC with the exact value on the synthetic MDP
	COLUMNS=100 $(PY) -m amc run --env synthetic --value exact -n 16 --steps 3 --beta 0.5 \
		--resample-steps 1,2 --max-tasks 20 --out runs/demo --quiet \
		-S smc.success_threshold=0.8 -S selection_value=exact

test: setup lint  ## the full test suite (slow tests included)
	$(PY) -m pytest -q

lint: setup  ## ruff over the tree, mypy over amc/ (pyproject's [tool.mypy])
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: setup  ## every CPU benchmark; results in docs/benchmarks.md (GPU: benchmarks.bench_value_gpu)
	for b in benchmarks/bench_*.py; do n=$$(basename $$b .py); \
	  case $$n in *_gpu) continue;; esac; $(PY) -m benchmarks.$$n || exit 1; done

exp:  ## the experiments table, readable at 120 columns: params and metrics that differ, no file hashes
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/dvc exp show --only-changed --drop '^(amc|data|models)/'
	@test -n "$$(PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/dvc exp ls 2>/dev/null)" || \
		echo "no experiment yet (the rows are the workspace and the branch): run one first, e.g. dvc exp run -S train.lr=1e-4"
