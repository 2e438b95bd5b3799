"""A value head served by a REAL ``mlflow models serve`` process, scored by the ``remote`` value.

One server per session (start-up is the cost), reached through a loopback proxy that counts
requests and can inject a 503 or drop a connection. The server is stopped (its whole process
group) in teardown.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from amc.priors.transport import PermanentError
from amc.types import History
from amc.value.remote import RemoteValue, RemoteValueOptions
from amc.value.scorers import LearnedValue
from amc.value.serve_io import history_to_json

pytestmark = pytest.mark.slow

NAME = "amc-value-textcraft"
CHAMPION = f"models:/{NAME}@champion"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proxy:
    """Loopback HTTP relay to the server: counts /invocations requests, injects faults."""

    def __init__(self, upstream: int) -> None:
        self.faults: deque[str] = deque()  # "503" or "drop", consumed one per request
        self.invocations = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                proxy.invocations += self.path == "/invocations"
                fault = proxy.faults.popleft() if proxy.faults else None
                if fault == "drop":  # close the socket without answering
                    self.close_connection = True
                    return
                if fault == "503":
                    self._reply(503, b"overloaded", {"Retry-After": "0"})
                    return
                conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=300)
                conn.request("POST", self.path, body,
                             {"Content-Type": self.headers.get("Content-Type", "")})
                resp = conn.getresponse()
                self._reply(resp.status, resp.read(), {})
                conn.close()

            def _reply(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="session")
def champion(trained, mlflow_uri) -> str:
    """Promote the trained (challenger) version to champion, as the pipeline's promotion does."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_uri)
    version = client.get_model_version_by_alias(NAME, "challenger").version
    client.set_registered_model_alias(NAME, "champion", version)
    return CHAMPION


@pytest.fixture(scope="session")
def server(champion, mlflow_uri, tmp_path_factory) -> Iterator[str]:
    port = _free_port()
    work = tmp_path_factory.mktemp("serve")
    bindir = str(Path(sys.executable).parent)  # mlflow runs `uvicorn` from PATH
    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_uri, "HF_HUB_OFFLINE": "1",
           "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    log = open(work / "serve.log", "w")  # noqa: SIM115 (closed in teardown)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "models", "serve", "-m", champion, "--env-manager",
         "local", "-h", "127.0.0.1", "-p", str(port)], cwd=work, env=env, stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("mlflow models serve did not start:\n"
                                + (work / "serve.log").read_text()[-3000:])
                time.sleep(1)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.fixture(scope="session")
def proxy(server) -> Proxy:
    return Proxy(int(server.rsplit(":", 1)[1]))


@pytest.fixture(scope="session")
def states(make_histories) -> list[History]:
    """Particle states of several lengths (prefixes of the learnable trajectories)."""
    return [History(h.task_id, h.observation0, h.steps[:k])
            for h in make_histories(8, 2, seed=3) for k in (0, 1, 2, 3)]


@pytest.fixture(scope="session")
def in_process(champion, mlflow_uri) -> LearnedValue:
    return LearnedValue.load(champion, tracking_uri=mlflow_uri, device="cpu", cache_size=0)


def _remote(url: str, **opts: object) -> RemoteValue:
    return RemoteValue(RemoteValueOptions(url=url, backoff_s=0.05, **opts))


async def test_remote_equals_in_process_with_one_request_per_batch(
        proxy, states, in_process) -> None:
    value = _remote(proxy.url + "/invocations")
    for n in (1, 15, len(states)):
        before = proxy.invocations
        got = await value.score(states[:n])
        assert proxy.invocations - before == 1
        assert got == pytest.approx(in_process.score_histories(states[:n]), abs=1e-5)
    assert len({round(v, 4) for v in got}) > 4  # a real model, not a constant
    await value.aclose()


async def test_transient_faults_are_retried_and_4xx_is_a_clear_error(
        proxy, states, in_process) -> None:
    value = _remote(proxy.url + "/invocations")
    proxy.faults.extend(["503", "drop"])
    before = proxy.invocations
    got = await value.score(states[:4])
    assert proxy.invocations - before == 3 and value.stats["retries"] == 2
    assert got == pytest.approx(in_process.score_histories(states[:4]), abs=1e-5)
    wrong = _remote(proxy.url + "/predict")  # the real server answers 404
    with pytest.raises(PermanentError, match=r"remote value .*/predict: .*\(404\)"):
        await wrong.score(states[:2])
    assert wrong.stats["retries"] == 0
    await value.aclose()
    await wrong.aclose()


def test_input_forms_agree_and_out_of_range_is_clipped_and_flagged(
        champion, mlflow_uri, states, in_process) -> None:
    import mlflow
    import pandas as pd

    mlflow.set_tracking_uri(mlflow_uri)
    pf = mlflow.pyfunc.load_model(champion)
    texts = [in_process.render(h) for h in states]
    by_text = pf.predict(pd.DataFrame({"text": texts}))
    by_history = pf.predict(pd.DataFrame({"history": [history_to_json(h) for h in states]}))
    by_dict = pf.predict({"history": [history_to_json(h) for h in states]})
    assert by_history["raw"].tolist() == pytest.approx(by_text["raw"].tolist(), abs=1e-6)
    assert by_dict["raw"].tolist() == pytest.approx(by_text["raw"].tolist(), abs=1e-6)
    raw = by_text["raw"].to_numpy()
    mid = float(sorted(raw)[len(raw) // 2])  # a range that half the predictions exceed
    narrow = mlflow.pyfunc.load_model(champion, model_config={"reward_range": [raw.min(), mid]})
    out = narrow.predict(pd.DataFrame({"text": texts}))
    above = raw > mid
    assert above.any() and (~above).any()
    assert (out["status"] == "clipped").tolist() == above.tolist()
    assert out["value"].tolist() == pytest.approx(raw.clip(max=mid).tolist(), abs=1e-9)
    with pytest.raises(ValueError, match="exactly one of the columns"):
        pf.predict(pd.DataFrame({"text": texts[:1], "history": ["{}"]}))


FRESH = """
import importlib.util, json, sys
# drop the editable-install finder, so only the model's logged code can provide amc
sys.meta_path[:] = [f for f in sys.meta_path
                    if "__editable__" not in str(getattr(f, "__module__", ""))]
assert importlib.util.find_spec("amc") is None, "amc must not be importable here"
import mlflow, pandas as pd
pf = mlflow.pyfunc.load_model(sys.argv[1])
out = pf.predict(pd.DataFrame({"history": json.loads(sys.argv[2])}))
import amc
print(json.dumps({"raw": out["raw"].tolist(), "amc": amc.__file__}))
"""


def test_logged_model_loads_where_amc_is_not_importable(
        champion, mlflow_uri, states, in_process, tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AMC_SHARED")}
    env.update(MLFLOW_TRACKING_URI=mlflow_uri, HF_HUB_OFFLINE="1")
    rows = [history_to_json(h) for h in states[:6]]
    out = subprocess.run([sys.executable, "-c", FRESH, champion, json.dumps(rows)], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert "/code/amc/" in got["amc"]  # the copy logged with the model, not a source tree
    assert got["raw"] == pytest.approx(in_process.score_histories(states[:6]), abs=1e-5)


def test_logged_requirements_name_cpu_torch_and_what_amc_imports(champion, mlflow_uri) -> None:
    import mlflow

    mlflow.set_tracking_uri(mlflow_uri)
    local = Path(mlflow.artifacts.download_artifacts(champion))
    reqs = (local / "requirements.txt").read_text().splitlines()
    assert reqs[0] == "--extra-index-url https://download.pytorch.org/whl/cpu"
    assert any(r.startswith("torch==") and r.endswith("+cpu") for r in reqs)
    names = {r.split("==")[0] for r in reqs[1:]}
    assert {"transformers", "safetensors", "pydantic", "pyyaml", "mlflow", "pandas"} <= names
    code = local / "code" / "amc"
    assert (code / "value" / "model.py").is_file() and (code / "value" / "serve_io.py").is_file()
    assert not list(code.rglob("__pycache__"))


async def test_run_with_remote_value_equals_in_process_champion(
        champion, mlflow_uri, proxy, tmp_path) -> None:
    from amc.config import RunConfig
    from amc.runner import run_methods

    cfg = RunConfig(
        methods=("smc@4+learned", "smc@4+remote"), max_tasks=3, seeds=(0,), out_dir=tmp_path,
        smc={"resample_steps": (1, 2)},  # synthetic episodes end by step 3: score before that
        values={"learned": {"name": "learned", "options": {
                    "model": champion, "tracking_uri": mlflow_uri, "device": "cpu"}},
                "remote": {"name": "remote", "options": {"url": proxy.url + "/invocations"}}})
    before = proxy.invocations
    with pytest.warns(UserWarning, match="trained on 'textcraft'"):
        out = await run_methods(cfg, progress=False)
    assert proxy.invocations > before
    assert out.n_failed == 0
    local, remote = out.results["smc@4+learned#0"], out.results["smc@4+remote#0"]
    assert [r.task_id for r in local] == [r.task_id for r in remote]
    for a, b in zip(local, remote, strict=True):
        assert [(t.pid, t.slot, t.lineage, [s.action for s in t.steps], t.total_reward)
                for t in a.trajectories] == [
            (t.pid, t.slot, t.lineage, [s.action for s in t.steps], t.total_reward)
            for t in b.trajectories]
        assert [s.ancestors for s in a.steps] == [s.ancestors for s in b.steps]
        va = [v for s in a.steps for v in s.values if v is not None]
        vb = [v for s in b.steps for v in s.values if v is not None]
        assert va and vb == pytest.approx(va, abs=1e-5)
        assert dict(b.metrics) == pytest.approx(dict(a.metrics), abs=1e-9, nan_ok=True)


@pytest.mark.parametrize("body", [
    {"dataframe_records": [{"history": json.dumps({"task_id": "0", "steps": []})}]},
    {"dataframe_records": [{"history": "not json"}]},
    {"dataframe_records": [{"history": json.dumps({"observation0": "x", "steps": [{}]})}]},
    {"dataframe_records": [{"state": "x"}]},
    {"dataframe_records": [{"text": "x"}], "params": {"batch_size": 0}},
])
def test_a_malformed_request_is_a_one_line_json_400_without_a_stack_trace(server, body) -> None:
    """Issue 64: a row without observation0 was answered 400 with a full Python stack trace."""
    req = urllib.request.Request(server + "/invocations", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=60)
    text = info.value.read().decode()
    assert info.value.code == 400 and len(text.strip().splitlines()) == 1, text
    answer = json.loads(text)
    assert answer["error_code"] == "BAD_REQUEST" and "stack_trace" not in answer
    assert answer["message"].startswith("bad request: ") and "Traceback" not in text
    assert len(answer["message"]) < 300  # the cause, not a dump of the input
