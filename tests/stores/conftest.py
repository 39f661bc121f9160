"""A real Redis for the store tests: ``CTXWIN_REDIS_URL`` when set (CI starts one), else a
``redis-server`` from PATH started on a free port of 127.0.0.1 for the session; the tests
that kill or pause their server always start their own."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

NO_SERVER = "redis-server not found: apt-get install redis-server"


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on (right now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RedisServer:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def pause(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.resume()
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def _answers(port: int) -> bool:
    redis = pytest.importorskip("redis")
    try:
        return bool(redis.Redis(port=port, socket_timeout=0.5).ping())
    except redis.RedisError:
        return False


def start_redis(folder: Path, unixsocket: Path | None = None) -> RedisServer:
    """A ``redis-server`` of its own (no persistence, files in ``folder``), answering PING;
    listening on ``unixsocket`` too when given."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip(NO_SERVER)
    folder.mkdir(parents=True, exist_ok=True)
    for _attempt in range(3):  # the free port may be taken before the server binds it
        port = free_port()
        log = folder / f"redis-{port}.log"
        argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        argv += ["--appendonly", "no", "--dir", str(folder), "--logfile", str(log)]
        if unixsocket is not None:
            argv += ["--unixsocket", str(unixsocket), "--unixsocketperm", "700"]
        process = subprocess.Popen(argv, cwd=folder, stdout=subprocess.DEVNULL)
        server = RedisServer(process, port, log)
        deadline = time.monotonic() + 15
        while process.poll() is None and time.monotonic() < deadline:
            if _answers(port):
                return server
            time.sleep(0.05)
        server.stop()
    text = log.read_text(errors="replace") if log.exists() else ""
    pytest.fail(f"redis-server did not answer PING on 127.0.0.1:{port}:\n{text[-2000:]}")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Redis shared by the session's tests (keys ``ctxwin:test-<uuid>``, deleted
    afterwards from a server that is not the session's own)."""
    redis = pytest.importorskip("redis")
    if os.environ.get("CTXWIN_REDIS_URL"):
        url = os.environ["CTXWIN_REDIS_URL"]
        yield url
        client = redis.Redis.from_url(url, socket_timeout=5)
        for key in client.scan_iter(match="ctxwin:test-*", count=1000):
            client.delete(key)
        client.close()
        return
    server = start_redis(tmp_path_factory.mktemp("redis"))
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis for one test alone, which it may pause or kill."""
    pytest.importorskip("redis")
    server = start_redis(tmp_path / "redis")
    try:
        yield server
    finally:
        server.stop()
