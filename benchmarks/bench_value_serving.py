"""Latency per scoring batch: a value head served by ``mlflow models serve`` vs in-process.

A MiniLM-L6 value model with a fresh head (weights do not change the cost) is saved, logged as
the pyfunc into a temporary sqlite MLflow store, registered and promoted to ``champion``, and
served by a real ``mlflow models serve --env-manager local`` process on loopback. For each N, N
TextCraft-like particle states (6 steps, rendered to at most ``--max-tokens`` tokens) are scored
by the in-process :class:`LearnedValue` (cache off) and by the ``remote`` value (one
``/invocations`` request: JSON, server-side rendering, the same forward pass), interleaved,
median of ``--repeats``. Results go to docs/benchmarks.md.

    python -m benchmarks.bench_value_serving [--n 1 4 15 64] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import torch

from amc.tracking import sqlite_uri
from amc.value.model import ModelConfig, build_model, load_tokenizer_for
from amc.value.registry import log_value_model, set_alias
from amc.value.remote import RemoteValue, RemoteValueOptions
from amc.value.render import RenderOptions
from amc.value.scorers import LearnedValue
from benchmarks._report import md_table, write_section
from benchmarks.bench_value import particle_histories


def _logged_champion(root: Path, max_tokens: int) -> tuple[str, str]:
    """(tracking URI, models:/...@champion) of a fresh-head model logged under ``root``."""
    import mlflow

    cfg = ModelConfig(max_length=max_tokens + 8)
    tok = load_tokenizer_for(cfg)
    model = build_model(cfg, torch.Generator().manual_seed(0)).eval()
    model.save(root / "model", tok, {"render": RenderOptions(
        env="textcraft", max_tokens=max_tokens).model_dump(mode="json"), "env": "textcraft"})
    uri = sqlite_uri(root / "mlflow.db")
    mlflow.set_tracking_uri(uri)
    logged = log_value_model(root / "model", env="textcraft")
    set_alias(logged.name, "champion", str(logged.version))
    return uri, f"models:/{logged.name}@champion"


def _serve(model_uri: str, tracking_uri: str, log: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking_uri, "HF_HUB_OFFLINE": "1",
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "models", "serve", "-m", model_uri,
                             "--env-manager", "local", "-h", "127.0.0.1", "-p", str(port)],
                            env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url + "/ping", timeout=5):
                return proc, url + "/invocations"
        except OSError:
            time.sleep(1)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError("mlflow models serve did not start:\n" + log.read_text()[-2000:])


async def _measure(ns: list[int], repeats: int, local: LearnedValue,
                   remote: RemoteValue) -> list[list[object]]:
    rows = []
    for n in ns:
        hs = particle_histories(n, seed=n)
        await local.score(hs)  # warm-up both paths (first-call allocations, connection)
        await remote.score(hs)
        t_local, t_remote = [], []
        for _ in range(repeats):  # interleaved: the machine's load drifts
            t0 = time.perf_counter()
            await local.score(hs)
            t_local.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await remote.score(hs)
            t_remote.append(time.perf_counter() - t0)
        ml, mr = statistics.median(t_local) * 1e3, statistics.median(t_remote) * 1e3
        rows.append([n, f"{ml:.1f}", f"{mr:.1f}", f"{mr - ml:+.1f}", f"{mr / ml:.2f}x"])
        print(f"N={n}: in-process {ml:.1f} ms, served {mr:.1f} ms", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1, 4, 15, 64])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=248)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        tracking, model_uri = _logged_champion(root, args.max_tokens)
        proc, url = _serve(model_uri, tracking, root / "serve.log")
        try:
            local = LearnedValue.load(model_uri, tracking_uri=tracking, device="cpu",
                                      cache_size=0)
            remote = RemoteValue(RemoteValueOptions(url=url))
            rows = asyncio.run(_measure(args.n, args.repeats, local, remote))
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
    body = (
        f"`python -m benchmarks.bench_value_serving` -- milliseconds per scoring batch of N "
        f"TextCraft-like states (6 steps, <= {args.max_tokens} tokens), MiniLM-L6 value head, "
        f"CPU, median of {args.repeats} interleaved repeats. *In-process*: `LearnedValue` "
        f"(cache off). *Served*: the `remote` value against `mlflow models serve "
        f"models:/amc-value-textcraft@champion --env-manager local` on loopback (one "
        f"`/invocations` request per batch; the server renders the trajectory JSON). Both "
        f"share the machine's cores (torch threads {torch.get_num_threads()}).\n\n"
        + md_table(["N", "in-process ms", "served ms", "served - in-process ms", "ratio"], rows)
        + "\n\nThe difference is the HTTP/JSON round trip plus server-side rendering and "
        "pandas conversion; the forward pass itself is the same code.\n")
    print(body)
    if not args.no_write:
        write_section("value_serving", "Served value head vs in-process scoring (CPU)", body)


if __name__ == "__main__":
    main()
