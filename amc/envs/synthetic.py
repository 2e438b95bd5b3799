"""A tractable tree MDP with a known stochastic prior, for exact checks of the sampler.

Each task is a random tree of depth ``depth`` and branching ``branching`` generated from
``(seed, task_id)``. A node may end the episode early (probability ``p_terminal``); leaves at
the full depth always do. Entering a node earns its reward: terminal nodes earn a terminal
reward in [0, 1] and, with ``dense=True``, internal nodes earn a small reward too. The prior
policy pi(a | s) at each internal node is a Dirichlet(``alpha``) draw, so it is stochastic,
known and cheap to enumerate.

Because everything is enumerable we can compute, exactly:

- the posterior over complete trajectories  p*(tau) ∝ pi(tau) exp(R(tau) / beta),
- the evidence  Z = E_pi[exp(R / beta)],
- the soft value of every node, returned by :class:`ExactValue` in the driver's units
  f*(s) = beta * log E_pi[exp(R_future(s) / beta) | s]  (future reward *after* s; 0 at
  terminal nodes), which is the optimal twist: with it, SIR targets the exact posterior
  marginal at every step.

Registered as environment ``synthetic``, prior ``synthetic`` and value ``exact``.

Example::

    tree = SyntheticTree.build("3", SyntheticOptions())
    tree.posterior()        # {path: probability}
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from pydantic import Field

from amc.config import Frozen
from amc.protocols import BoundedEpisodes
from amc.registry import ENVIRONMENTS, PRIORS, VALUES
from amc.smc.weights import logsumexp
from amc.types import AgentTurn, EnvStep, History, Usage

Path = tuple[int, ...]


class SyntheticOptions(Frozen):
    """Shape of the synthetic tree MDP (shared by its environment, prior and exact value)."""

    depth: int = Field(3, ge=1, le=8)
    """Maximum depth; nodes at this depth are terminal."""
    branching: int = Field(3, ge=1, le=8)
    """Children per internal node (actions a0..a{branching-1})."""
    p_terminal: float = Field(0.15, ge=0, le=1)
    """Probability that an internal non-root node ends the episode early."""
    dense: bool = False
    """Whether internal nodes also earn a small reward (in [0, 0.2])."""
    alpha: float = Field(0.7, gt=0)
    """Dirichlet concentration of the prior policy at each node (small = peaky)."""
    seed: int = 0
    """Seed of the family of trees (task id picks one tree)."""
    n_test: int = Field(50, ge=1)
    """Number of test tasks (ids 0..n_test-1)."""
    n_train: int = Field(200, ge=1)
    """Number of train tasks (ids 10000..10000+n_train-1)."""


@dataclass(frozen=True)
class SyntheticTree:
    """One task's tree: rewards, terminal flags and prior probabilities per node."""

    options: SyntheticOptions
    reward: dict[Path, float]
    terminal: dict[Path, bool]
    policy: dict[Path, np.ndarray]  # internal node -> pi(. | node), shape (branching,)

    @staticmethod
    def build(task_id: str, options: SyntheticOptions) -> SyntheticTree:
        return _build(int(task_id), options)

    def children(self, node: Path) -> list[Path]:
        return [(*node, a) for a in range(self.options.branching)]

    def soft_values(self, beta: float) -> dict[Path, float]:
        """log E_pi[exp(R_future / beta) | node] for every node (0 at terminal nodes)."""
        out: dict[Path, float] = {}

        def visit(node: Path) -> float:
            if self.terminal[node]:
                out[node] = 0.0
                return 0.0
            terms = np.array(
                [
                    np.log(p) + self.reward[c] / beta + visit(c) if p > 0 else -np.inf
                    for c, p in zip(self.children(node), self.policy[node], strict=True)
                ]
            )
            out[node] = logsumexp(terms)
            return out[node]

        visit(())
        return out

    def leaves(self) -> list[Path]:
        """All complete trajectories (paths to terminal nodes), in lexical order."""
        return sorted(n for n, t in self.terminal.items() if t)

    def prior_prob(self, leaf: Path) -> float:
        return float(np.prod([self.policy[leaf[:k]][leaf[k]] for k in range(len(leaf))]))

    def path_reward(self, leaf: Path) -> float:
        return float(sum(self.reward[leaf[: k + 1]] for k in range(len(leaf))))

    def posterior(self, beta: float) -> dict[Path, float]:
        """Exact p*(tau) ∝ pi(tau) exp(R(tau)/beta) over complete trajectories."""
        leaves = self.leaves()
        logp = np.array([np.log(self.prior_prob(x)) + self.path_reward(x) / beta for x in leaves])
        p = np.exp(logp - logsumexp(logp))
        return dict(zip(leaves, p.tolist(), strict=True))

    def prior_distribution(self) -> dict[Path, float]:
        return {x: self.prior_prob(x) for x in self.leaves()}

    def log_evidence(self, beta: float) -> float:
        """log Z = log E_pi[exp(R / beta)] (the soft value of the root)."""
        return self.soft_values(beta)[()]


@lru_cache(maxsize=4096)
def _build(task: int, o: SyntheticOptions) -> SyntheticTree:
    rng = np.random.default_rng([o.seed, task])
    reward: dict[Path, float] = {(): 0.0}
    terminal: dict[Path, bool] = {}
    policy: dict[Path, np.ndarray] = {}
    frontier: list[Path] = [()]
    while frontier:  # breadth-first so the draw order is fixed
        node = frontier.pop(0)
        is_term = len(node) == o.depth or (len(node) > 0 and rng.random() < o.p_terminal)
        terminal[node] = is_term
        if node:
            reward[node] = float(rng.random()) if is_term else (
                float(rng.uniform(0, 0.2)) if o.dense else 0.0
            )
        if not is_term:
            policy[node] = rng.dirichlet(np.full(o.branching, o.alpha))
            frontier.extend((*node, a) for a in range(o.branching))
    return SyntheticTree(o, reward, terminal, policy)


def path_of(history: History) -> Path:
    """The tree node a history is at (invalid actions do not move)."""
    node: list[int] = []
    for s in history.steps:
        m = s.info.get("node")
        if m is not None:
            node = list(m)
    return tuple(node)


_ACTION = re.compile(r"^\s*a?(\d+)\s*$", re.IGNORECASE)


class SyntheticEnv:
    """One episode on a synthetic tree. Actions are ``a0``, ``a1``... (or bare integers)."""

    io_bound = False

    def __init__(self, options: SyntheticOptions) -> None:
        self.options = options
        self.tree: SyntheticTree | None = None
        self.node: Path = ()
        self.closed = False

    def reset(self, task_id: str) -> str:
        self.tree = SyntheticTree.build(task_id, self.options)
        self.node = ()
        return self._observe()

    def _observe(self) -> str:
        return f"You are at node /{'/'.join(map(str, self.node))}."

    def step(self, action: str) -> EnvStep:
        if self.tree is None:
            raise RuntimeError("reset() the environment before step()")
        if self.tree.terminal[self.node]:
            return EnvStep("The episode is over.", 0.0, True, {"node": self.node})
        m = _ACTION.match(action)
        if not m or int(m.group(1)) >= self.options.branching:
            return EnvStep(
                f"Invalid action {action!r}. Valid: {', '.join(self.valid_actions() or [])}.",
                0.0,
                False,
                {"node": self.node, "error": "invalid action"},
            )
        self.node = (*self.node, int(m.group(1)))
        return EnvStep(
            self._observe(), self.tree.reward[self.node], self.tree.terminal[self.node],
            {"node": self.node},
        )

    def fork(self) -> SyntheticEnv:
        env = SyntheticEnv(self.options)
        env.tree, env.node = self.tree, self.node  # the tree is immutable; the node a tuple
        return env

    def valid_actions(self) -> list[str] | None:
        return [f"a{a}" for a in range(self.options.branching)]

    def close(self) -> None:
        self.closed = True


class SyntheticSuite(BoundedEpisodes):
    """Environment factory and task ids for the synthetic tree MDP."""

    name = "synthetic"

    def __init__(self, options: SyntheticOptions) -> None:
        self.options = options

    @property
    def horizon(self) -> int:
        """Every episode ends by the tree's depth."""
        return self.options.depth

    def make(self) -> SyntheticEnv:
        return SyntheticEnv(self.options)

    def task_ids(self, split: str) -> list[str]:
        if split == "test":
            return [str(i) for i in range(self.options.n_test)]
        if split == "train":
            return [str(10_000 + i) for i in range(self.options.n_train)]
        raise ValueError(f"synthetic environment has splits 'train' and 'test', not {split!r}")

    def close(self) -> None:
        pass


class SyntheticPrior:
    """Samples actions from the tree's known prior policy (a stand-in for an LLM agent)."""

    def __init__(self, options: SyntheticOptions) -> None:
        self.options = options

    async def propose(self, history: History, rng: np.random.Generator) -> AgentTurn:
        tree = SyntheticTree.build(history.task_id, self.options)
        node = path_of(history)
        # inverse-CDF draw: same distribution as rng.choice(p=...), a few times faster
        cdf = np.cumsum(tree.policy[node])
        a = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")),
                self.options.branching - 1)
        return AgentTurn(
            raw_text=f"Thought: I will go down branch {a}.\nAction: a{a}",
            action=f"a{a}",
            usage=Usage(prompt_tokens=10 + 5 * history.t, completion_tokens=8, calls=1),
        )

    async def aclose(self) -> None:
        pass


class ExactValue:
    """The exact optimal twist f*(s) = beta log E[exp(R_future/beta) | s] by enumeration."""

    def __init__(self, options: SyntheticOptions, beta: float) -> None:
        self.options, self.beta = options, beta

    async def score(self, histories: Sequence[History]) -> list[float]:
        out = []
        for h in histories:
            soft = _soft_values(h.task_id, self.options, self.beta)
            out.append(self.beta * soft[path_of(h)])
        return out

    async def aclose(self) -> None:
        pass


@lru_cache(maxsize=4096)
def _soft_values(task_id: str, options: SyntheticOptions, beta: float) -> dict[Path, float]:
    return SyntheticTree.build(task_id, options).soft_values(beta)


def _synthetic_options(env_options: object) -> SyntheticOptions:
    if not isinstance(env_options, SyntheticOptions):
        raise ValueError("the synthetic prior and the exact value need env.name == synthetic")
    return env_options


@ENVIRONMENTS.register("synthetic", options=SyntheticOptions)
def make_synthetic_suite(options: SyntheticOptions) -> SyntheticSuite:
    """Tree MDP with a known prior; exact posterior and soft values by enumeration."""
    return SyntheticSuite(options)


@PRIORS.register("synthetic")
def make_synthetic_prior(*, env_options: object = None, **_: object) -> SyntheticPrior:
    """The synthetic tree's known stochastic policy."""
    return SyntheticPrior(_synthetic_options(env_options))


@VALUES.register("exact")
def make_exact_value(*, env_options: object = None, beta: float = 1.0, **_: object) -> ExactValue:
    """Exact soft value of the synthetic tree (the optimal twist)."""
    return ExactValue(_synthetic_options(env_options), beta)
