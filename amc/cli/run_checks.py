"""``amc run``'s input checks: typed flag values and every refusal made before any work.

Flags become typed values for their config keys (:data:`FLAG_KEYS`; never ``key=value`` text
re-read as YAML, so ``--out '#x'`` is the folder ``#x`` and ``--model yes`` the model ``yes``).
:func:`check_run` then refuses, each as one :class:`FlagError` naming the flag to fix, what
would otherwise fail later or silently run something else: a method or seed given twice (two
writers of one results file), a method spec or component name that does not resolve,
component options their model rejects, a split or explicit task id the environment does not
have, an unreachable environment server, fixed resampling steps past the environment's
horizon (SMC would silently equal Best-of-N), a run past its size limits (``limits.*``: N,
tasks x N x steps), an output path that cannot be a folder (proved by creating it and removing
it again), a results file to resume that cannot be read, and a response cache that cannot be
a database. Nothing is written before these checks pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amc.config import ConfigError, RunConfig, ValueConfig
from amc.errors import LimitExceeded, ServiceUnavailable, user_message
from amc.priors.cache import cache_problem, default_cache_dir
from amc.protocols import BoundedEpisodes
from amc.registry import ENVIRONMENTS, PRIORS, VALUES
from amc.results import failures_path, folder_problem, iter_task_records, results_path
from amc.run_hash import selection_config
from amc.runner import check_limits, resolve_methods, task_list
from amc.tracking import tracking_uri

FLAG_KEYS: dict[str, str] = {
    "--env": "env.name", "--prior": "prior.name", "--model": "prior.options.model",
    "--particles": "smc.n_particles", "--steps": "smc.max_steps", "--beta": "smc.beta",
    "--resample": "smc.resample", "--resample-steps": "smc.resample_steps",
    "--ess-threshold": "smc.ess_threshold", "--resampler": "smc.resampler",
    "--split": "split", "--max-tasks": "max_tasks", "--seeds": "seeds", "--out": "out_dir",
    "--methods": "methods", "--value": "value",
}
"""The config key each flag sets (``--value``: ``value.name`` and ``value.options``)."""


class FlagError(ValueError):
    """Bad input attributed to one flag: ``"<flag>: <why>"``."""

    def __init__(self, flag: str, why: str | BaseException) -> None:
        text = user_message(why) if isinstance(why, BaseException) else why
        super().__init__(f"{flag}: {text}")


def text(flag: str, value: str | None) -> str | None:
    """A string flag's value; an empty one is refused (it never means the default)."""
    if value is not None and not value.strip():
        raise FlagError(flag, "empty value")
    return value


def items(flag: str, value: str | None) -> list[str] | None:
    """A comma list: at least one item, none given twice."""
    if value is None:
        return None
    out = [x.strip() for x in value.split(",") if x.strip()]
    if not out:
        raise FlagError(flag, f"no items in {value!r} (give a comma list)")
    twice = sorted({x for x in out if out.count(x) > 1})
    if twice:
        raise FlagError(flag, f"{', '.join(twice)} given twice")
    return out


def integers(flag: str, value: str | None, least: int) -> list[int] | None:
    """A comma list of distinct integers >= ``least``."""
    out = items(flag, value)
    if out is None:
        return None
    nums = []
    for x in out:
        try:
            nums.append(int(x))
        except ValueError:
            raise FlagError(flag, f"{x!r} is not an integer") from None
    if any(n < least for n in nums):
        raise FlagError(flag, f"values must be >= {least}, got {value!r}")
    if len(set(nums)) < len(nums):
        raise FlagError(flag, f"a value is given twice in {value!r}")
    return nums


def value_settings(value: str | None) -> dict[str, Any]:
    """``--value``: a registry name, a model URI (``models:/``, ``runs:/``...) or folder (the
    in-process ``learned`` value), or a served head's ``http(s)://.../invocations`` (the
    ``remote`` value)."""
    if value is None:
        return {}
    if value.startswith(("http://", "https://")):
        return {"value.name": "remote", "value.options": {"url": value}}
    if re.match(r"^[A-Za-z][\w+.-]+:/", value) or Path(value).exists():  # models:/, runs:/...
        return {"value.name": "learned", "value.options": {"model": value}}
    if "/" in value or value.startswith("."):
        raise FlagError("--value", f"no model folder {value} (and not a value name, models:/ "
                                   "URI or http(s) URL)")
    return {"value.name": value}


def name_config_error(err: ConfigError, given: Mapping[str, Any]) -> ValueError:
    """The flag that set the first failing key, if a flag set it (else the error as is)."""
    for field in err.fields:
        for flag, key in FLAG_KEYS.items():
            if flag in given and (field == key or field.startswith(key + ".")):
                return FlagError(flag, err)
    return err


def check_out(out: Path) -> None:
    """The output folder can be created and written (tried, then undone); the results files
    it already holds, which the run resumes, can be read."""
    if not str(out).strip():
        raise FlagError("--out", "empty path")
    why = folder_problem(out)
    if why is not None:
        raise FlagError("--out", f"cannot write results to {out}: {why}")


def check_resumable(cfg: RunConfig) -> None:
    """Every (method, seed) results and failures file already in ``--out`` reads cleanly (a
    damaged one, or one recording a task twice, is named with what to do, before any other
    unit runs)."""
    for m in resolve_methods(cfg):
        for seed in cfg.seeds:
            for path in (results_path(cfg.out_dir, m.name, seed),
                         failures_path(cfg.out_dir, m.name, seed)):
                try:
                    for _ in iter_task_records(path):
                        pass
                except (ValueError, OSError) as err:
                    raise FlagError("--out", err) from None


def check_cache(cfg: RunConfig) -> None:
    """A prior with a response cache can open it: the path is, or can become, an SQLite
    file (not a folder, another file, ``/proc/...``, a read-only disk)."""
    try:
        opts = PRIORS.validate(cfg.prior.name, cfg.prior.options)
    except (ValueError, KeyError):
        return  # reported by check_components
    if not getattr(opts, "cache", False) or not hasattr(opts, "cache_path"):
        return
    given_path = getattr(opts, "cache_path", None)
    why = cache_problem(given_path or default_cache_dir() / "responses.sqlite")
    if why is not None:
        where = "prior.options.cache_path" if given_path else "AMC_CACHE"
        raise FlagError(where, f"cannot use it as the response cache: {why}")


def check_methods(cfg: RunConfig) -> None:
    """Method specs resolve (``--methods``), then with the run's resampling steps
    (``--resample-steps``: e.g. steps not before ``max_steps``); names are distinct."""
    plain = cfg.model_copy(update={"smc": cfg.smc.model_copy(update={"resample_steps": ()})})
    try:
        resolve_methods(plain)
    except (ValueError, KeyError) as err:
        raise FlagError("--methods", err) from None
    try:
        methods = resolve_methods(cfg)
    except (ValueError, KeyError) as err:
        raise FlagError("--resample-steps", err) from None
    names = [m.name for m in methods]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise FlagError("--methods", f"two methods are named {', '.join(twice)} (each (method, "
                                     "seed) writes one results file)")


def check_components(cfg: RunConfig, given: Mapping[str, Any]) -> None:
    """Names and options of the environment, prior and every value the run uses."""
    for flag, comp, registry in (("--env", cfg.env, ENVIRONMENTS), ("--prior", cfg.prior, PRIORS)):
        try:
            registry.validate(comp.name, comp.options)
        except (ValueError, KeyError) as err:
            if flag == "--prior" and "--model" in given:
                rest = {k: v for k, v in comp.options.items() if k != "model"}
                try:
                    registry.validate(comp.name, rest)
                except (ValueError, KeyError):
                    pass
                else:
                    raise FlagError("--model", err) from None
            raise FlagError(flag, err) from None
    values: list[ValueConfig] = [m.value for m in resolve_methods(cfg)]
    try:
        sel = selection_config(cfg)
    except ValueError as err:
        raise FlagError("selection_value", err) from None
    for v in [*values, *([sel] if sel is not None else [])]:
        try:
            VALUES.validate(v.name, v.options)
        except (ValueError, KeyError) as err:
            raise FlagError("--value", err) from None
        check_model_store(v)


def check_model_store(v: ValueConfig) -> None:
    """A registry model URI needs its MLflow store (opening a missing sqlite store would
    create an empty one, and fail only once the run is under way)."""
    model = str(v.options.get("model", ""))
    if not model.startswith(("models:/", "runs:/")):
        return
    store = tracking_uri(v.options.get("tracking_uri"))
    db = Path(store.removeprefix("sqlite:///")) if store.startswith("sqlite:///") else None
    if db is not None and not db.is_file():
        raise FlagError("--value", f"cannot load value model {model!r}: no MLflow store at {db} "
                                   "(set MLFLOW_TRACKING_URI to the store that registered it)")


def check_tasks(cfg: RunConfig, given: Mapping[str, Any]) -> None:
    """Build the suite once: the split or explicit task ids exist, the server answers,
    fixed resampling steps lie before the suite's horizon, and the run is within its limits."""
    try:
        suite = ENVIRONMENTS.build(cfg.env.name, cfg.env.options)
    except (ValueError, KeyError, OSError, ServiceUnavailable) as err:
        raise FlagError("--env", err) from None
    try:
        _check_ids(cfg, suite)
        if isinstance(suite, BoundedEpisodes):
            _check_horizon(cfg, suite.horizon)
        n_tasks = len(task_list(cfg, suite))
    finally:
        suite.close()
    try:
        check_limits(cfg, resolve_methods(cfg), n_tasks)
    except LimitExceeded as err:
        raise FlagError(_limit_flag(err, given), err) from None


def _limit_flag(err: LimitExceeded, given: Mapping[str, Any]) -> str:
    """The flag or key that set the N (or the total) past a limit."""
    if err.method is None:
        return "limits.max_particle_steps"
    if "@" in err.method:
        return "--methods" if "--methods" in given else "methods"
    return "--particles" if "--particles" in given else "smc.n_particles"


def _check_ids(cfg: RunConfig, suite: Any) -> None:
    try:
        if not cfg.task_ids:
            if not suite.task_ids(cfg.split):
                raise FlagError("--split", f"no tasks in split {cfg.split!r} of {cfg.env.name}")
            return
        known: set[str] = set()
        for split in dict.fromkeys((cfg.split, "train", "test", "all")):
            try:
                known.update(suite.task_ids(split))
            except (ValueError, KeyError, FileNotFoundError):
                continue  # the suite has no such split
    except ServiceUnavailable as err:
        raise FlagError("--env", err) from None
    except FlagError:
        raise
    except (ValueError, KeyError, FileNotFoundError) as err:
        raise FlagError("--split", err) from None
    unknown = [t for t in cfg.task_ids if str(t) not in known]
    if known and unknown:
        raise FlagError("task_ids", f"{cfg.env.name} has no task {', '.join(unknown[:5])}"
                                    f"{' ...' if len(unknown) > 5 else ''}")


def _check_horizon(cfg: RunConfig, horizon: int) -> None:
    for m in resolve_methods(cfg):
        late = sorted(s for s in m.smc.resample_steps if s >= horizon)
        if m.smc.resample == "fixed" and late:
            raise FlagError("--resample-steps", (
                f"{m.name} resamples after step(s) {late}, but every {cfg.env.name} episode "
                f"ends within {horizon} steps, so it would equal Best-of-N; use steps in "
                f"1..{horizon - 1}"))


def check_run(cfg: RunConfig, given: Mapping[str, Any]) -> None:
    """Every refusal of :mod:`this module <amc.cli.run_checks>`, before any work."""
    check_out(Path(cfg.out_dir or "."))
    check_methods(cfg)
    check_components(cfg, given)
    check_tasks(cfg, given)
    check_cache(cfg)
    check_resumable(cfg)
