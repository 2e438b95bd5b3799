"""WebShop over HTTP: step, forced-buy query and fork latency, in process vs `amc serve-env`.

Run: ``python benchmarks/bench_webshop_http.py [--reps 30]``. Writes the project's generated
fixture catalog to a temp dir, starts ``amc serve-env webshop`` on a free loopback port, and
measures side by side, for histories of h = 2, 6 and 10 steps on the goal's item page:

- ``step``: one page action (alternately ``click[description]`` and ``click[< prev]``);
- ``final_action``: the driver's per-particle query for the forced buy (HTTP: ``/final_action``);
- ``fork``: an in-process copy; the server's ``/fork``; a verified replay of the history on a
  fresh server env (the client's fallback; the upstream WebShop server has no ``/fork``).

Medians in milliseconds; the section ``webshop-http`` of docs/benchmarks.md is replaced.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from amc.envs.agentgym.client import AgentGymOptions, AgentGymSuite  # noqa: E402
from amc.envs.agentgym.process import ServerProcess, spawn_env_server  # noqa: E402
from amc.envs.webshop.env import WebShopOptions, WebShopSuite  # noqa: E402
from amc.envs.webshop.fixture import write_fixture_catalog  # noqa: E402
from benchmarks._report import md_table, write_section  # noqa: E402
from benchmarks.bench_envs import median_ms  # noqa: E402

BIG = 10_000  # an episode budget the measurements never reach


def start_server(catalog: Path) -> ServerProcess:
    return spawn_env_server("webshop", {"data_dir": str(catalog), "max_steps": BIG},
                            max_envs=1024, cwd=ROOT)


def script(local: WebShopSuite) -> tuple[str, list[str]]:
    """Task 0, and h-step histories: search the goal's title, open it, then browse."""
    goal = local.catalog.goals[0]
    title = local.catalog.by_asin[goal["asin"]]["Title"]
    browse = itertools.cycle(["click[description]", "click[< prev]"])
    return "0", [f"search[{title}]", f"click[{goal['asin'].lower()}]",
                 *itertools.islice(browse, 8)]


def prepared(suite, task: str, actions: list[str]):
    env = suite.make()
    env.reset(task)
    for a in actions:
        env.step(a)
    return env


def _toggler(env):
    """A step function that alternates between the description and the item page."""
    pages = itertools.cycle(["click[description]", "click[< prev]"])
    return lambda: env.step(next(pages))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    catalog = write_fixture_catalog(Path(tempfile.mkdtemp(prefix="bench-webshop-")))
    srv = start_server(catalog)
    url = srv.url
    local = WebShopSuite(WebShopOptions(data_dir=str(catalog), max_steps=BIG))
    http = AgentGymSuite(AgentGymOptions(base_url=url, fork="server"))
    replay = AgentGymSuite(AgentGymOptions(base_url=url, fork="replay"))
    task, actions = script(local)
    rows = []
    try:
        for h in (2, 6, 10):
            envs = [prepared(s, task, actions[:h]) for s in (local, http, replay)]
            e_local, e_http, e_replay = envs
            step = [median_ms(_toggler(e), args.reps, 1000 if e is e_local else 1)
                    for e in (e_local, e_http)]
            final = [median_ms(e.final_action, args.reps, 1000 if e is e_local else 1)
                     for e in (e_local, e_http)]
            if len(e_http.records) % 2:  # an odd number of toggles: back on the item page
                e_http.step("click[< prev]")
            e_http.records = e_http.records[:h]  # fork measurements replay exactly h steps
            e_replay.records = list(e_http.records)
            fork_local = median_ms(e_local.fork, args.reps, 1000)
            fork_http = median_ms(lambda e=e_http: e.fork().close(), args.reps)
            fork_replay = median_ms(lambda e=e_replay: e.fork().close(), args.reps)
            rows.append([h, f"{step[0] * 1e3:.1f} µs", f"{step[1]:.2f}",
                         f"{final[0] * 1e3:.2f} µs", f"{final[1]:.2f}",
                         f"{fork_local * 1e3:.1f} µs", f"{fork_http:.2f}",
                         f"{fork_replay:.2f}", f"{fork_replay / fork_http:.1f}x"])
            for e in (e_http, e_replay):
                e.close()
    finally:
        http.close()
        replay.close()
        srv.stop()
    body = (
        "`python -m benchmarks.bench_webshop_http` -- WebShop on the generated fixture catalog "
        f"(36 products), task 0 on its goal's item page; median of {args.reps} calls (in "
        f"process: of {args.reps} batches of 1000 calls), milliseconds unless marked. HTTP = "
        "the AgentGym client against `amc serve-env webshop` on loopback; final_action = the "
        "driver's forced-buy query per particle; replay = fresh server env + reset + h verified "
        "steps; both HTTP forks include closing the new env.\n\n"
        + md_table(["history h", "step in-process", "step HTTP", "final_action in-process",
                    "final_action HTTP", "fork in-process", "fork HTTP /fork",
                    "fork HTTP replay", "replay / fork"], rows)
    )
    write_section("webshop-http", "WebShop over HTTP (AgentGym client and serve-env)", body)
    print(body)


if __name__ == "__main__":
    main()
