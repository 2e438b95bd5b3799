"""Typed, frozen configuration: one pydantic model per component, loaded from YAML.

Every field carries a one-line docstring (kept by ``use_attribute_docstrings``, so it shows in
``amc run --help-config`` and in errors). ``extra="forbid"`` turns a typo into an error.
Component options (``env.options`` etc.) are validated by the model the component registered
(:mod:`amc.registry`).

A config file is YAML with the sections below (``params.yaml`` is one); command-line
``-S section.key=value`` overrides are applied on top (values parsed as YAML scalars), then
typed values (:func:`apply_values`: a command's own flags, never re-parsed as YAML).

YAML is read strictly (:func:`read_yaml`): a key given twice in one mapping is an error (YAML
would keep the last silently), and a document whose aliases expand past
:data:`YAML_MAX_VALUES` values (``$AMC_YAML_MAX_VALUES``) is refused before it is expanded,
so a few hundred bytes of nested aliases cannot fill the memory.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from amc.errors import format_validation_error


class ConfigError(ValueError):
    """An invalid configuration: one readable line, plus the dotted keys that failed
    (``fields``), so a command can name the flag that set them."""

    def __init__(self, message: str, fields: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.fields = fields


def _distinct(items: tuple[Any, ...]) -> tuple[Any, ...]:
    twice = next((x for k, x in enumerate(items) if x in items[:k]), None)
    if twice is not None:  # one results file per (method, seed): a repeat would run twice
        raise ValueError(f"{twice!r} is given twice: {list(items)}")
    return items


def _seeds(seeds: tuple[int, ...]) -> tuple[int, ...]:
    if not seeds or min(seeds) < 0:  # numpy's generators take no negative seed
        raise ValueError(f"seeds must be >= 0, and at least one, got {list(seeds)}")
    return _distinct(seeds)


Distinct = AfterValidator(_distinct)  # a tuple field in which no item may appear twice
Steps = tuple[Annotated[int, Field(ge=1)], ...]  # step numbers or particle counts (>= 1)
Seeds = Annotated[tuple[int, ...], AfterValidator(_seeds)]
"""Run seeds: at least one, each >= 0, none twice (each (method, seed) is one results file)."""


class Frozen(BaseModel):
    """Base for config models: immutable, no unknown keys, no inf/NaN, docstrings kept."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True,
                              allow_inf_nan=False)  # an API would be sent `Infinity`


class ComponentConfig(Frozen):
    """A registry name plus the options its factory validates."""

    name: str
    """Registry name of the component."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Component-specific options (validated by the component's own model)."""


class EnvConfig(ComponentConfig):
    """Which benchmark to run."""

    name: str = "synthetic"
    """Environment registry name (synthetic, textcraft, sciworld, webshop, agentgym)."""


class PriorConfig(ComponentConfig):
    """Which black-box agent to steer."""

    name: str = "synthetic"
    """Prior registry name (synthetic, openai, embedded, hf)."""


class ValueConfig(ComponentConfig):
    """Which value function twists the weights (unused by never-resampling methods)."""

    name: str = "none"
    """Value registry name (none, exact, learned, zero-shot, foa)."""


RESAMPLER_NAMES: tuple[str, ...] = ("multinomial", "residual", "stratified", "systematic")
"""The resampling schemes of :data:`amc.smc.resampling.RESAMPLERS` (named here so that config
validation needs no import of the engine)."""


class SMCConfig(Frozen):
    """The sequential importance resampling driver."""

    n_particles: int = Field(15, ge=1)
    """N, the number of particles per task."""
    max_steps: int = Field(20, ge=1)
    """T, the step budget of every particle."""
    beta: float = Field(1.0, gt=0, allow_inf_nan=False)
    """KL coefficient beta: the posterior is prior * exp(reward / beta)."""
    resample: Literal["never", "fixed", "ess"] = "fixed"
    """Schedule: never (Best-of-N, ReAct), fixed steps, or when ESS < rho * N."""
    resample_steps: Annotated[Steps, Distinct] = (4,)
    """Steps after which to resample when resample == fixed (paper: TextCraft [4])."""
    ess_threshold: float = Field(0.5, gt=0, le=1, allow_inf_nan=False)
    """rho: resample when ESS < rho * N (resample == ess)."""
    resampler: str = "multinomial"
    """Resampling scheme: multinomial, systematic, stratified or residual."""
    resample_terminated: bool = False
    """Whether finished particles take part in resampling (may be duplicated or dropped)."""
    success_threshold: float = 1.0
    """A trajectory with total reward >= this counts as a success."""

    @field_validator("resampler")
    @classmethod
    def _known_resampler(cls, name: str) -> str:
        if name not in RESAMPLER_NAMES:  # amc.smc.resampling.RESAMPLERS has these
            raise ValueError(f"unknown resampler {name!r}; known: {', '.join(RESAMPLER_NAMES)}")
        return name

    def unreachable_resample_steps(self) -> list[int]:
        """Fixed resample steps at or past ``max_steps``: no schedule resamples after the last
        step, so these would be silently skipped (empty unless ``resample == "fixed"``)."""
        if self.resample != "fixed":
            return []
        return sorted(s for s in set(self.resample_steps) if s >= self.max_steps)


class MethodConfig(Frozen):
    """A named configuration of the one SMC driver (ReAct, Best-of-N, SMC...)."""

    name: str
    """Label used in results and tables."""
    smc: SMCConfig
    """Driver settings for this method."""
    value: ValueConfig = ValueConfig()
    """Value function (ignored when smc.resample == never)."""

    @model_validator(mode="after")
    def _check(self) -> MethodConfig:
        # Checked per method, not in SMCConfig: react and bon never resample, so a run of
        # only those may keep resample_steps that its max_steps does not reach.
        late = self.smc.unreachable_resample_steps()
        if late:
            raise ValueError(
                f"resample_steps {late} are not before max_steps = {self.smc.max_steps}: "
                f"no resampling happens after the last step, so {self.name} would equal "
                f"Best-of-N; use steps in 1..{self.smc.max_steps - 1}")
        return self


class LimitsConfig(Frozen):
    """Sizes past which a run is refused before any work (``-n 1e11`` would grow the memory
    until the machine gives up); raise them with ``-S limits.KEY=VALUE``."""

    max_particles: int = Field(10_000, ge=1)
    """Largest N of any method (``-n``, ``smc@N``)."""
    max_particle_steps: int = Field(100_000_000, ge=1)
    """Largest total of tasks x N x max_steps, summed over methods and seeds."""


class RunConfig(Frozen):
    """One `amc run`: an environment, a prior, methods, tasks and seeds."""

    env: EnvConfig = EnvConfig()
    """The benchmark."""
    prior: PriorConfig = PriorConfig()
    """The black-box agent."""
    value: ValueConfig = ValueConfig()
    """Default value function for SMC methods."""
    values: dict[str, ValueConfig] = Field(default_factory=dict)
    """Named alternative values, picked by a method spec such as smc@15+NAME."""
    selection_value: str | None = None
    """Value that picks the deployable answer from every method's pool (a key of values, or
    the default value's registry name); None = no deployable selection (reported as NaN)."""
    smc: SMCConfig = SMCConfig()
    """Default driver settings; methods override n_particles/resample."""
    methods: tuple[str, ...] = ("react", "bon", "smc")
    """Methods to run: react, bon, smc (see amc.smc.methods)."""
    split: str = "test"
    """Which split of the environment's tasks to run."""
    max_tasks: int | None = Field(None, ge=1)
    """Run only the first max_tasks tasks of the split (None = all)."""
    task_ids: tuple[str, ...] | None = None
    """Explicit task ids (overrides split/max_tasks)."""
    seeds: Seeds = (0,)
    """Run seeds; each (method, seed) is one results file."""
    max_concurrent_tasks: int = Field(4, ge=1)
    """Tasks in flight at once."""
    max_concurrent_particles: int = Field(64, ge=1)
    """Particle steps (proposal + env step) in flight at once, across all tasks."""
    limits: LimitsConfig = LimitsConfig()
    """Size limits checked before the run starts (N, tasks x N x steps)."""
    out_dir: Path = None  # type: ignore[assignment]  # None on input: filled in below
    """Where per-(method, seed) JSON-lines results are written; None = a folder per
    configuration, runs/<env>-<hash of env, prior, smc, value, values>, so a changed flag never
    meets results of another configuration."""

    @field_validator("task_ids", mode="before")
    @classmethod
    def _ids_as_text(cls, ids: Any) -> Any:
        """Task ids are names: ``task_ids: [3, 7]`` (YAML numbers) means ids "3" and "7"."""
        if isinstance(ids, list | tuple):
            if not ids:  # never "every task of the split": leave task_ids out for that
                raise ValueError("no task ids given (leave task_ids out to run the split)")
            ids = tuple(str(t) if isinstance(t, int) and not isinstance(t, bool) else t
                        for t in ids)
            _distinct(ids)  # a task twice would run twice and count twice
        return ids

    @field_validator("methods")
    @classmethod
    def _some_distinct_methods(cls, methods: tuple[str, ...]) -> tuple[str, ...]:
        if not methods:
            raise ValueError("no methods given")
        return _distinct(methods)

    @model_validator(mode="before")
    @classmethod
    def _none_out_dir(cls, data: Any) -> Any:
        """``out_dir: null`` asks for the default folder, like leaving it out."""
        if isinstance(data, dict) and "out_dir" in data and data["out_dir"] is None:
            data = {k: v for k, v in data.items() if k != "out_dir"}
        return data

    @model_validator(mode="after")
    def _default_out_dir(self) -> RunConfig:
        if self.out_dir is not None:
            return self
        what = self.model_dump(mode="json", include={"env", "prior", "smc", "value", "values"})
        if self.selection_value is not None:  # only then: older folders keep their names
            what["selection_value"] = self.selection_value
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in self.env.name)
        # a derived default of a frozen model: set once, here, before anyone can read it
        object.__setattr__(self, "out_dir", Path("runs") / f"{safe}-{config_hash(what)}")
        return self


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"smc.beta=0.5"`` -> (["smc", "beta"], 0.5); the value is parsed as YAML."""
    if "=" not in item:
        raise ValueError(f"override {item!r} is not of the form key=value")
    key, raw = item.split("=", 1)
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise ValueError(f"override {item!r} has an empty key")
    return parts, read_yaml(raw, key.strip()) if raw.strip() else ""


def _set(node: dict[str, Any], parts: list[str], value: Any) -> None:
    """Set ``node[p0][p1]...`` = value, creating (or replacing non-mapping) sections."""
    for p in parts[:-1]:
        nxt = node.get(p)
        if not isinstance(nxt, dict):
            nxt = node[p] = {}
        node = nxt
    node[parts[-1]] = value


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Set dotted keys in a nested dict (a copy); creates intermediate sections."""
    out = json.loads(json.dumps(data, default=str))
    for item in overrides:
        _set(out, *parse_override(item))
    return out


def apply_values(data: dict[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Set dotted keys to typed values (a copy): ``{"out_dir": Path("#x")}`` stays that path,
    where ``apply_overrides`` would read ``#x`` as a YAML comment."""
    out = json.loads(json.dumps(data, default=str))
    for key, value in values.items():
        _set(out, key.split("."), value)
    return out


def load_run_config(
    path: str | Path | None = None, overrides: Iterable[str] = (), section: str | None = None,
    values: Mapping[str, Any] | None = None,
) -> RunConfig:
    """A :class:`RunConfig` from an optional YAML file (or one of its sections), ``-S``-style
    overrides, then typed ``values`` (dotted keys; applied last)."""
    data: dict[str, Any] = {}
    if path is not None:
        data = load_yaml(path)
        if section is not None:
            if section not in data or not isinstance(data[section], dict):
                raise ValueError(f"{path}: no mapping section {section!r}")
            data = data[section]
    elif section is not None:
        raise ValueError(f"section {section!r} given without a config file")
    data = apply_values(apply_overrides(data, overrides), values or {})
    return validate(RunConfig, data, "run config")


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; a clear error for a missing file or a non-mapping."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"config file not found: {p}")
    data = read_yaml(p.read_text(), str(p)) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping at the top level")
    return data


YAML_MAX_VALUES = 100_000  # values a YAML document may expand to; $AMC_YAML_MAX_VALUES wins


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # ``<<: *base``: later keys may override the merged ones
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # unhashable: the base class reports it
            if key in seen:
                raise ValueError(f"line {key_node.start_mark.line + 1}: key {key!r} is given "
                                 "twice in one mapping (YAML would silently keep the last)")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _expanded_size(node: yaml.Node, limit: int) -> int:
    """Values ``node`` expands to (an alias counts its whole target each time), capped just
    past ``limit``; shared nodes are measured once, so a bomb costs what its text costs."""
    sizes: dict[int, int] = {}  # a node inside itself (a recursive alias) is over the limit

    def size(n: yaml.Node) -> int:
        if id(n) in sizes:
            return sizes[id(n)]
        sizes[id(n)] = limit + 1
        total = 1
        if isinstance(n, yaml.SequenceNode):
            total += sum(size(c) for c in n.value)
        elif isinstance(n, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in n.value)
        sizes[id(n)] = min(total, limit + 1)
        return sizes[id(n)]

    return size(node)


def read_yaml(text: str, where: str) -> Any:
    """Parse YAML text strictly (see the module docstring); errors name ``where``."""
    raw = os.environ.get("AMC_YAML_MAX_VALUES", "").strip()
    if raw and not raw.isdigit():
        raise ValueError(f"AMC_YAML_MAX_VALUES: {raw!r} is not a whole number")
    limit, loader = int(raw) if raw else YAML_MAX_VALUES, _StrictLoader(text)
    try:
        node = loader.get_single_node()
        size = 0 if node is None else _expanded_size(node, limit)
        if size <= limit:
            return None if node is None else loader.construct_document(node)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    finally:
        loader.dispose()
    raise ValueError(f"{where}: its YAML aliases expand to more than {limit} values (the limit "
                     "AMC_YAML_MAX_VALUES; raise it with AMC_YAML_MAX_VALUES=N if this is meant)")


def validate(model: type[Frozen], data: Mapping[str, Any], where: str = "config") -> Any:
    """Validate ``data`` with ``model``; errors become one readable ``ValueError``."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as err:
        fields = tuple(".".join(map(str, e["loc"])) for e in err.errors())
        raise ConfigError(format_validation_error(err, where), fields) from None


def config_hash(cfg: BaseModel | Mapping[str, Any]) -> str:
    """Short stable hash of a resolved config (for result records and resume checks)."""
    data = cfg.model_dump(mode="json") if isinstance(cfg, BaseModel) else cfg
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]
