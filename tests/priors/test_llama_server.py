"""The llama.cpp server's lifecycle without a model: command lines, options, and that a
spawned server never outlives the process that started it (issue 16, item 5b)."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from amc.priors import llama_server
from amc.priors.embedded import EmbeddedOptions, EmbeddedServer
from amc.priors.llama_server import BINARY_ENV, LlamaServer, cpp_binary, spawn

ROOT = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def fake_binary(tmp_path, monkeypatch):
    """An executable standing in for llama-server where only its path matters."""
    exe = tmp_path / "llama-server"
    exe.write_text("#!/bin/sh\nexec sleep 60\n")
    exe.chmod(0o755)
    monkeypatch.setenv(BINARY_ENV, str(exe))
    return exe


def test_cpp_command_sizes_slots_and_context_and_binds_loopback(fake_binary, tmp_path):
    srv = EmbeddedServer("gemma-3-270m", backend="cpp", port=4321, n_ctx=2048, parallel=15,
                         n_threads=2, cache_ram_mib=64, cache_dir=tmp_path)
    cmd = srv.command(tmp_path / "m.gguf")
    assert cmd[0] == str(fake_binary)
    assert cmd[cmd.index("--parallel") + 1] == "15"
    assert cmd[cmd.index("--ctx-size") + 1] == str(2048 * 15)  # context per slot * slots
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--port") + 1] == "4321"
    assert cmd[cmd.index("--threads") + 1] == "2" == cmd[cmd.index("--threads-batch") + 1]
    assert cmd[cmd.index("--cache-ram") + 1] == "64"
    assert {"--cont-batching", "--swa-full", "--cache-prompt"} <= set(cmd)
    assert srv.health_url == "http://127.0.0.1:4321/health"


def test_python_fallback_has_one_slot_and_its_own_command(tmp_path):
    srv = EmbeddedServer("gemma-3-270m", backend="python", port=4321, parallel=15,
                         cache_dir=tmp_path)
    cmd = srv.command(tmp_path / "m.gguf")
    assert cmd[:3] == [sys.executable, "-m", "amc.priors.llama_app"] and srv.parallel == 1
    assert cmd[cmd.index("--chat_format") + 1] == "gemma"
    assert srv.health_url == "http://127.0.0.1:4321/v1/models"


def test_binary_is_found_only_when_executable(tmp_path, monkeypatch):
    exe = tmp_path / "llama-server"
    exe.write_text("")
    monkeypatch.setenv(BINARY_ENV, str(exe))
    assert cpp_binary() is None
    exe.chmod(0o755)
    assert cpp_binary() == exe


def test_bad_backend_and_model_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match=r"unknown llama\.cpp server backend 'rust'"):
        LlamaServer(lambda: tmp_path, "m", backend="rust",  # type: ignore[arg-type]
                    log_dir=lambda: tmp_path)
    with pytest.raises(ValueError, match="unknown embedded model 'gpt'"):
        EmbeddedServer("gpt")


def test_in_flight_follows_parallel_unless_set():
    assert EmbeddedOptions().max_in_flight == EmbeddedOptions().parallel == 16
    assert EmbeddedOptions(parallel=32).max_in_flight == 32
    assert EmbeddedOptions(parallel=32, max_in_flight=4).max_in_flight == 4
    with pytest.raises(ValueError):
        EmbeddedOptions(server="rust")


def test_server_outlives_the_thread_that_asked_for_it(tmp_path):
    """PDEATHSIG fires when the forking *thread* exits: a server started from a pool thread
    (asyncio.to_thread) must not die with that thread."""
    box = []
    t = threading.Thread(target=lambda: box.append(spawn(["sleep", "30"], tmp_path / "log")))
    t.start()
    t.join()
    proc = box[0]
    try:
        time.sleep(0.5)
        assert proc.poll() is None and alive(proc.pid)
    finally:
        llama_server.kill_group(proc)
    assert not alive(proc.pid)


PARENT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from amc.priors.embedded import EmbeddedServer
    from amc.priors.llama_server import spawn
    if sys.argv[1] == "spawn":
        proc = spawn(["sleep", "60"], Path(sys.argv[2]) / "log")
        print(proc.pid, flush=True)
    else:
        srv = EmbeddedServer("gemma-3-270m", parallel=2, n_ctx=1024,
                             cache_dir=Path(sys.argv[2])).start()
        print(srv.proc.pid, flush=True)
    time.sleep(120)
""")


def kill_parent_and_check_child(mode: str, cache_dir: Path, startup_s: float) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, mode, str(cache_dir)],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = parent.stdout.readline()  # blocks until the child is up (or the parent died)
        assert line.strip().isdigit(), f"parent failed: {parent.wait(timeout=startup_s)}"
        child = int(line)
        assert alive(child)
        os.kill(parent.pid, signal.SIGKILL)  # no finaliser, no atexit, no __exit__ runs
        parent.wait(timeout=10)
        assert wait_gone(child, 5.0), "the server outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_spawned_process_dies_with_its_killed_parent(tmp_path):
    kill_parent_and_check_child("spawn", tmp_path, 30)


@pytest.mark.slow
def test_llama_server_dies_with_its_killed_parent():
    """kill -9 of a run leaves no 2 GB llama-server behind (the real binary and model)."""
    if cpp_binary() is None:
        pytest.skip("llama-server is not built (opt-in: AMC_LLAMA_SERVER=1 scripts/setup.sh)")
    kill_parent_and_check_child("server", ROOT / ".cache", 120)
