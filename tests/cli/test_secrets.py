"""A key never reaches disk, even when the endpoint hands it back.

A real HTTP server on 127.0.0.1 echoes the request's ``Authorization`` header inside a 200
completion (and, for every fifth request, inside a 400 error), the way a hostile or badly
configured endpoint could. After ``amc run`` with a canary key, every byte under the run's
folder, the response cache and the command's own output is searched for the canary: it must
appear nowhere, while the masked echo (``Authorization: Bearer ***``) must be there, so the
answer did reach the files. The MLflow side logs the same texts as params, tags and artifacts
(a file, ``log_dict``, ``log_text``) into a real sqlite store, searched the same way.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from amc.ports import free_port
from tests.priors.loopback import completion

REPO = Path(__file__).resolve().parents[2]
CANARY = f"canary-{random.Random(53).getrandbits(96):024x}"  # no sk- shape: masked as a known key
SHORT = "Zq7c64x"  # issue 64: a 7-character key is masked too (as a whole token)


class _Echo(BaseHTTPRequestHandler):
    """Answers every completion with the request's Authorization header in the text."""

    calls = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        auth = self.headers.get("authorization", "")
        key = auth.removeprefix("Bearer ")
        type(self).calls += 1
        if type(self).calls % 5 == 0:  # a permanent error that quotes the header too
            status, payload = 400, {"error": {"message": f"bad request from {auth} ({key})",
                                              "type": "invalid_request_error"}}
        else:
            action = f"look around. Authorization: {auth}; api-key: {key}; raw {key}"
            status = 200
            payload = completion(body, action, self.path.endswith("/chat/completions"), None)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        """Quiet: the test reads the client's files, not the server's log."""


@pytest.fixture()
def echo_server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", free_port()), _Echo)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()
        srv.server_close()


def files_with(root: Path, needle: bytes) -> list[str]:
    """Every file under ``root`` whose bytes contain ``needle``."""
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.parametrize(("key_env", "canary"), [("OPENAI_API_KEY", CANARY),
                                                 ("AMC_LLM_CREDENTIAL", SHORT)])
def test_an_echoed_key_is_masked_in_results_failures_cache_and_output(tmp_path, echo_server,
                                                                      key_env, canary) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update({"PYTHONPATH": str(REPO), "AMC_CACHE": str(cache), key_env: canary})
    args = ["run", "--env", "synthetic", "--prior", "openai", "--model", "toy",
            "-S", f"prior.options.base_url={echo_server}",
            "-S", f"prior.options.api_key_env={key_env}", "-S", "prior.options.max_retries=0",
            "-m", "react,bon@2", "--steps", "2", "--max-tasks", "3", "--quiet", "--out", str(out)]
    p = subprocess.run([sys.executable, "-m", "amc", *args], capture_output=True, timeout=300,
                       env=env, cwd=tmp_path)
    assert p.returncode == 1, p.stderr.decode()  # the 400s: some tasks failed, as documented
    assert b"Traceback" not in p.stderr
    assert list(out.glob("*.failures.jsonl")) and (cache / "responses.sqlite").is_file()
    needle = canary.encode()
    assert files_with(tmp_path, needle) == []  # results, failures, summary, cache, WAL files
    assert needle not in p.stdout + p.stderr
    assert files_with(out, b"Authorization: Bearer ***")  # the echo was persisted, masked
    assert files_with(cache, b"Authorization: Bearer ***")


def test_mlflow_params_tags_and_artifacts_hold_no_key(tmp_path, monkeypatch) -> None:
    import mlflow

    from amc.pipeline.lineage import stage_run
    from amc.results import write_json_atomic

    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "mlruns"
    echoed = f"Authorization: Bearer {CANARY}"
    params = {"prior": {"options": {"extra_body": {"note": echoed}, "model": CANARY}}}
    with stage_run("collect", params=params, uri=f"sqlite:///{store}/mlflow.db",
                   tags={"echo": echoed, "raw": CANARY}) as run:
        write_json_atomic(tmp_path / "manifest.json", {"first_answer": echoed})
        mlflow.log_artifact(str(tmp_path / "manifest.json"))
        mlflow.log_dict({"failures": [{"error": echoed}]}, "record.json")
        mlflow.log_text(f"first answer: {echoed}", "note.md")
        mlflow.log_param("echo", echoed)
        mlflow.set_tag(key="echo2", value=echoed)
    got = mlflow.MlflowClient().get_run(run.info.run_id).data
    assert got.params["prior.options.extra_body.note"] == "Authorization: Bearer ***"
    assert got.tags["raw"] == "***" and got.tags["echo2"] == "Authorization: Bearer ***"
    assert got.params["echo"] == "Authorization: Bearer ***"
    assert files_with(tmp_path, CANARY.encode()) == []
    assert len(files_with(store / "artifacts", b"Authorization: Bearer ***")) == 3  # masked
