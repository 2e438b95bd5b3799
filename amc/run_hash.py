"""What determines a results file: the configuration hash of one method's run and its
sampling hash.

A results file (one method and seed) records ``config_hash`` -- env, prior, method (with its
value) and the selection value -- and ``sample_hash``, the same without the selection value
(rollouts sampled alike but selected by another value are re-selected, not re-sampled;
:func:`amc.runner.refresh_selection`). Seeds, paths and where a value model is stored do not
enter either.
"""

from __future__ import annotations

from typing import Any

from amc.config import MethodConfig, RunConfig, ValueConfig, config_hash


def selection_config(cfg: RunConfig) -> ValueConfig | None:
    """The config of ``cfg.selection_value`` (resolved like a method's ``+NAME``), or None."""
    if cfg.selection_value is None:
        return None
    values = {cfg.value.name: cfg.value, **cfg.values}
    if cfg.selection_value not in values:
        raise ValueError(f"selection_value {cfg.selection_value!r} is not a configured value; "
                         f"known: {', '.join(sorted(values))}")
    return values[cfg.selection_value]


LOCATION_OPTIONS = ("tracking_uri",)
"""Value options that say where a model is found, not which model it is (``models:/name/v``
names the version): left out of the results hash, so naming the store explicitly (the
pipeline's ``mlflow_uri``) keeps the results that were written with it in the environment."""


def _value_dump(v: ValueConfig) -> dict[str, Any]:
    d = v.model_dump(mode="json")
    d["options"] = {k: x for k, x in d["options"].items() if k not in LOCATION_OPTIONS}
    return d


def _method_run_config(cfg: RunConfig, m: MethodConfig) -> dict[str, Any]:
    """What determines a (method) results file's content: env, prior, method, and the
    selection value when there is one (not seeds/paths, nor a value model's store)."""
    method = m.model_dump(mode="json")
    method["value"] = _value_dump(m.value)
    out = {"env": cfg.env.model_dump(mode="json"), "prior": cfg.prior.model_dump(mode="json"),
           "method": method}
    sel = selection_config(cfg)
    if sel is not None:  # only then, so results written without one keep their hash
        out["selection"] = _value_dump(sel)
    return out


def sample_hash(cfg: RunConfig, m: MethodConfig) -> str:
    """Hash of what determines a (method) results file's *rollouts*: env, prior, method; not
    the selection value, which only scores the finished pool (:mod:`amc.smc.reselect`)."""
    cfg_no_sel = cfg.model_copy(update={"selection_value": None})
    return config_hash(_method_run_config(cfg_no_sel, m))
