"""The AgentGym client's requests against a scripted HTTP server on loopback: 503s and dropped
connections are retried (jittered waits, Retry-After honoured), a /step read timeout is not."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from amc.envs.agentgym.client import AgentGymSuite
from amc.envs.agentgym.options import AgentGymError, AgentGymOptions
from amc.envs.agentgym.transport import Jitter
from amc.errors import USER_ERRORS
from amc.ports import free_port


class Script:
    """What the server answers, in order: a status code, ``"drop"`` (close without an answer)
    or ``"slow"`` (answer after 1 s); after the script, 200 ``{"id": 7}``."""

    def __init__(self, *steps: int | str) -> None:
        self.steps, self.seen = list(steps), 0


@pytest.fixture()
def server() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            script.seen += 1
            step = script.steps.pop(0) if script.steps else 200
            if step == "drop":
                self.close_connection = True
                self.connection.close()
                return
            if step == "slow":
                time.sleep(1.0)
                step = 200
            body = b'{"id": 7}' if step == 200 else b'{"detail": "busy"}'
            self.send_response(int(step))
            if step == 503:
                self.send_header("Retry-After", "0")
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            pass  # the client hung up on a slow answer, as intended

    httpd = Server(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", script
    httpd.shutdown()
    httpd.server_close()


def suite(url: str, **kw: object) -> AgentGymSuite:
    return AgentGymSuite(AgentGymOptions(base_url=url, backoff_s=0.01, **kw))  # type: ignore[arg-type]


def test_503s_and_dropped_connections_are_retried_until_an_answer(server):
    url, script = server
    script.steps = [503, "drop", 503]
    s = suite(url, retries=3)
    assert s.call("POST", "/create", json_body={}) == {"id": 7}
    assert script.seen == 4 and s.retries == 3
    s.close()


def test_the_last_503_is_reported_and_a_dead_server_is_a_user_error(server):
    url, script = server
    script.steps = [503] * 5
    s = suite(url, retries=2)
    with pytest.raises(AgentGymError, match="HTTP 503: busy"):
        s.call("POST", "/create", json_body={})
    assert script.seen == 3 and s.retries == 2
    s.close()
    dead = suite(f"http://127.0.0.1:{free_port()}", retries=1)
    with pytest.raises(AgentGymError, match="ConnectError") as info:
        dead.call("POST", "/create", json_body={})
    assert dead.retries == 1 and isinstance(info.value, USER_ERRORS)
    dead.close()


def test_a_step_that_times_out_is_not_sent_twice(server):
    url, script = server
    script.steps = ["slow"]
    s = suite(url, retries=3, timeout_s=0.2)
    with pytest.raises(AgentGymError, match=r"no answer within 0\.2 s"):
        s.request("POST", "/step", json_body={"id": 1, "action": "x"}, retry_read=False)
    assert script.seen == 1 and s.retries == 0
    s.close()


def test_each_request_has_its_own_jitter_stream():
    j = Jitter(seed=5)
    a, b = j.rng().uniform(size=3), j.rng().uniform(size=3)
    assert list(a) != list(b)
    assert list(Jitter(seed=5).rng().uniform(size=3)) == list(a)
