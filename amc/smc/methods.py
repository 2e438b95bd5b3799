"""Baselines are configurations of the one SIR driver, named by a short spec.

A method spec is ``KIND[@N][+VALUE]``:

- ``react``: one particle, never resample (the plain ReAct agent).
- ``bon``: N independent particles, never resample (Best-of-N).
- ``smc``: N particles resampled on the configured schedule, weighted by a value function.
  AMC is ``smc`` with a trained value; the zero-shot LLM value and the FoA heuristic are
  other values (``smc+zero-shot``...).

``@N`` sets the particle count (default: the run's ``smc.n_particles``); ``+VALUE`` picks a named
value configuration from the run's ``values`` mapping (default: the run's ``value``).
Examples: ``react``, ``bon@8``, ``smc@15+learned``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from amc.config import MethodConfig, SMCConfig, ValueConfig, validate

KINDS = ("react", "bon", "smc")
_SPEC = re.compile(r"^(?P<kind>[a-z]+)(?:@(?P<n>-?\d+))?(?:\+(?P<value>[\w.-]+))?$")


def parse_method(
    spec: str,
    smc: SMCConfig,
    value: ValueConfig,
    values: Mapping[str, ValueConfig] | None = None,
) -> MethodConfig:
    """Resolve a method spec into a :class:`MethodConfig` (clear error on a bad spec)."""
    m = _SPEC.match(spec.strip())
    if not m or m["kind"] not in KINDS:
        raise ValueError(
            f"bad method {spec!r}: expected KIND[@N][+VALUE] with KIND in {', '.join(KINDS)}"
        )
    kind = m["kind"]
    n = int(m["n"]) if m["n"] is not None else (1 if kind == "react" else smc.n_particles)
    if n < 1:
        raise ValueError(f"bad method {spec!r}: N must be >= 1")
    if kind == "react" and n != 1:
        raise ValueError(f"bad method {spec!r}: react has exactly one particle")
    if m["value"] is not None:
        if kind != "smc":
            raise ValueError(f"bad method {spec!r}: only smc takes a value (+VALUE)")
        named = dict(values or {})
        if m["value"] not in named:
            known = ", ".join(sorted(named)) or "none defined"
            raise ValueError(f"method {spec!r}: unknown value {m['value']!r} (values: {known})")
        value = named[m["value"]]
    if kind in ("react", "bon"):
        cfg = smc.model_copy(update={"n_particles": n, "resample": "never"})
        return MethodConfig(name=spec.strip(), smc=cfg, value=ValueConfig(name="none"))
    if smc.resample == "never":
        raise ValueError(f"method {spec!r}: smc needs smc.resample = fixed or ess, not never")
    data = {"name": spec.strip(), "smc": smc.model_copy(update={"n_particles": n}),
            "value": value}
    return validate(MethodConfig, data, f"method {spec.strip()!r}")
