"""docker_api against a fake engine that speaks the real wire format, and against podman's service."""

import json
import os
import re
import socketserver
import struct
import tempfile
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from arcops.common.sysroot import SysRoot
from arcops.vllm.docker_api import DockerError, Engine, parse_timestamp, process_tree, socket_path


def rfc3339nano(when: float) -> str:
    whole = int(when)
    return (
        datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        + f".{round((when - whole) * 1e9):09d}Z"
    )


class FakeContainer:
    def __init__(self, name, tty=False, pid=4242):
        self.name, self.tty, self.start_pid = name, tty, pid
        self.running, self.pid, self.exit_code = False, 0, 0
        self.log: list[tuple[float, int, str]] = []  # (epoch, stream 1|2, text with its newline)
        self.cond = threading.Condition()

    def add(self, text, stream=1, when=None):
        with self.cond:
            self.log.append((time.time() if when is None else when, stream, text))
            self.cond.notify_all()

    def exit(self, code):
        with self.cond:
            self.running, self.pid, self.exit_code = False, 0, code
            self.cond.notify_all()


class FakeEngineServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path):
        self.containers: dict[str, FakeContainer] = {}
        self.requests: list[tuple[str, str]] = []
        self.fail: dict[tuple[str, str], tuple[int, str]] = {}
        super().__init__(path, EngineHandler)


class EngineHandler(BaseHTTPRequestHandler):
    """The Engine API subset docker_api uses, framed like dockerd: chunked, multiplexed without a TTY."""

    protocol_version = "HTTP/1.1"
    server: FakeEngineServer

    def log_message(self, *args):
        pass

    def address_string(self):
        return "unix"

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def _route(self, method):
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.server.requests.append((method, self.path))
        m = re.fullmatch(r"/v1\.41/containers/([^/]+)/(\w+)", url.path)
        if m is None:
            return self._json(404, {"message": "page not found"})
        name, action = unquote(m[1]), m[2]
        if (method, action) in self.server.fail:
            status, message = self.server.fail[(method, action)]
            return self._json(status, {"message": message})
        c = self.server.containers.get(name)
        if c is None:
            return self._json(404, {"message": f"No such container: {name}"})
        if (method, action) == ("GET", "json"):
            state = {"Running": c.running, "Pid": c.pid, "ExitCode": c.exit_code}
            return self._json(200, {"Name": f"/{name}", "State": state, "Config": {"Tty": c.tty}})
        if (method, action) == ("POST", "start"):
            if c.running:
                return self._empty(304)
            with c.cond:
                c.running, c.pid = True, c.start_pid
            return self._empty(204)
        if (method, action) == ("POST", "stop"):
            if not c.running:
                return self._empty(304)
            c.add(f"stopping within {query.get('t')} s\n")
            c.exit(143)
            return self._empty(204)
        if (method, action) == ("POST", "wait"):
            with c.cond:
                c.cond.wait_for(lambda: not c.running)
            return self._json(200, {"StatusCode": c.exit_code, "Error": None})
        if (method, action) == ("GET", "logs"):
            return self._logs(c, query)
        return self._json(404, {"message": f"no {method} {action}"})

    def _json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _empty(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _chunk(self, data):
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _logs(self, c, query):
        follow, stamps = query.get("follow") == "1", query.get("timestamps") == "1"
        since = int(query.get("since", "0"))
        self.send_response(200)
        kind = "raw-stream" if c.tty else "multiplexed-stream"
        self.send_header("Content-Type", f"application/vnd.docker.{kind}")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        while True:
            with c.cond:
                if follow and c.running:
                    c.cond.wait_for(lambda n=sent: len(c.log) > n or not c.running, timeout=0.5)
                entries, sent = c.log[sent:], len(c.log)
                done = not (follow and c.running)
            for when, stream, text in entries:
                if int(when) < since:
                    continue
                payload = ((rfc3339nano(when) + " ") if stamps else "").encode() + text.encode()
                data = payload if c.tty else struct.pack(">BxxxI", stream, len(payload)) + payload
                # Split every frame over chunks, the 8-byte header included, as a real engine may.
                for part in (data[:3], data[3:10], data[10:]):
                    if part:
                        self._chunk(part)
            if done:
                break
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


@pytest.fixture
def fake_engine():
    with tempfile.TemporaryDirectory(prefix="arcops-dapi-") as d:
        path = os.path.join(d, "docker.sock")
        server = FakeEngineServer(path)
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        try:
            yield server, Engine(f"unix://{path}", timeout=5)
        finally:
            for c in server.containers.values():
                c.exit(0)
            server.shutdown()
            server.server_close()


def test_socket_path(monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    assert socket_path() == "/var/run/docker.sock"
    assert socket_path("unix:///run/podman/podman.sock") == "/run/podman/podman.sock"
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/user/0/docker.sock")
    assert socket_path() == "/run/user/0/docker.sock"
    assert socket_path("/tmp/x.sock") == "/tmp/x.sock"
    with pytest.raises(DockerError, match="only unix://"):
        socket_path("tcp://10.0.0.1:2375")


def test_inspect_start_stop_wait(fake_engine):
    server, engine = fake_engine
    c = server.containers["vllm"] = FakeContainer("vllm")
    assert engine.inspect("missing") is None
    assert engine.inspect("vllm")["State"]["Running"] is False
    assert engine.start("vllm") is True
    assert engine.start("vllm") is False  # 304: already running
    assert engine.inspect("vllm")["State"] == {"Running": True, "Pid": 4242, "ExitCode": 0}
    codes = []
    waiter = threading.Thread(target=lambda: codes.append(engine.wait("vllm")))
    waiter.start()
    time.sleep(0.1)
    assert codes == []  # blocking until the container stops
    assert engine.stop("vllm", timeout=7) is True
    waiter.join(timeout=5)
    assert codes == [143]
    # Never the wait endpoint: podman's Docker API spins a core for as long as a wait is open.
    assert not [r for r in server.requests if r[1].endswith("/wait")]
    assert engine.stop("vllm") is False  # 304: not running
    assert ("POST", "/v1.41/containers/vllm/stop?t=7") in server.requests
    assert c.running is False


def test_engine_errors_carry_the_engines_message(fake_engine):
    server, engine = fake_engine
    server.containers["vllm"] = FakeContainer("vllm")
    server.fail[("POST", "start")] = (500, "error gathering device information while adding custom device")
    with pytest.raises(DockerError, match="error gathering device information") as e:
        engine.start("vllm")
    assert e.value.status == 500
    server.fail.clear()
    with pytest.raises(DockerError, match="No such container: nope") as e:
        engine.start("nope")
    assert e.value.status == 404
    with pytest.raises(DockerError, match="no such container: nope"):
        engine.wait("nope")


def test_unreachable_engine(tmp_path):
    with pytest.raises(DockerError, match="docker engine at"):
        Engine(f"unix://{tmp_path}/none.sock").inspect("vllm")


def test_multiplexed_log_follows_new_lines_until_the_container_stops(fake_engine):
    server, engine = fake_engine
    c = server.containers["vllm"] = FakeContainer("vllm")
    engine.start("vllm")
    c.add("INFO 11-30 14:00:01 [api_server.py:1] vLLM API server version 0.26.0\n")
    c.add("WARNING this goes to stderr\n", stream=2)
    got = []
    stream = engine.logs("vllm", since=0)

    def read():
        got.extend(stream)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.2)
    c.add("INFO 11-30 14:00:05 [kv_cache_utils.py:1] GPU KV cache size: 657,184 tokens\n")
    c.add("INFO:     Application startup complete.\n")
    time.sleep(0.2)
    assert got[-1] == "INFO:     Application startup complete."
    engine.stop("vllm")
    reader.join(timeout=5)
    assert not reader.is_alive()
    assert got == [
        "INFO 11-30 14:00:01 [api_server.py:1] vLLM API server version 0.26.0",
        "WARNING this goes to stderr",
        "INFO 11-30 14:00:05 [kv_cache_utils.py:1] GPU KV cache size: 657,184 tokens",
        "INFO:     Application startup complete.",
        "stopping within 30 s",
    ]


def test_tty_container_raw_stream(fake_engine):
    server, engine = fake_engine
    c = server.containers["vllm"] = FakeContainer("vllm", tty=True)
    c.add("first\r\n")
    c.add("second\nthird\n")
    assert list(engine.logs("vllm", since=0, follow=False)) == ["first", "second", "third"]


def test_since_drops_earlier_lines_of_the_same_second(fake_engine):
    server, engine = fake_engine
    c = server.containers["vllm"] = FakeContainer("vllm")
    start = int(time.time()) - 10 + 0.5
    c.add("Application startup complete. (previous run)\n", when=start - 5)
    c.add("stopped (previous run, same second)\n", when=start - 0.25)
    c.add("new run\n", when=start + 0.1)
    assert list(engine.logs("vllm", since=start, follow=False)) == ["new run"]
    # The engine gets whole seconds: it dropped the line 5 s before, the client the rest.
    assert any(f"since={int(start)}" in path for _, path in server.requests)


def test_closing_a_log_stream_from_another_thread(fake_engine):
    server, engine = fake_engine
    server.containers["vllm"] = FakeContainer("vllm")
    engine.start("vllm")
    stream = engine.logs("vllm", since=0)
    done = threading.Event()
    threading.Thread(target=lambda: (list(stream), done.set()), daemon=True).start()
    time.sleep(0.1)
    assert not done.is_set()
    stream.close()
    assert done.wait(timeout=5)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T14:00:00.123456789Z", 1796047200.123456789),
        ("2026-11-30T14:00:00Z", 1796047200.0),  # podman: whole seconds
        ("2026-11-30T15:00:00.5+01:00", 1796047200.5),
        ("not-a-time", None),
    ],
)
def test_parse_timestamp(text, expected):
    found = parse_timestamp(text)
    assert found == pytest.approx(expected, abs=1e-6) if expected is not None else found is None


def _proc(root: Path, pid: int, ppid: int, comm: str) -> None:
    d = root / "proc" / str(pid)
    d.mkdir(parents=True)
    (d / "stat").write_text(f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194560 1 0 0 0 5 3 0 0 20 0 1 0 1\n")


def test_container_pids_from_proc(fake_engine, tmp_path):
    server, engine = fake_engine
    server.containers["vllm"] = FakeContainer("vllm", pid=100)
    for pid, ppid, comm in [
        (1, 0, "systemd"),
        (90, 1, "conmon"),
        (100, 90, "vllm"),
        (101, 100, "VLLM::Worker_TP0"),
        (102, 100, "VLLM::Worker_TP1"),
        (103, 101, "sh"),
        (200, 1, "python3 (x) y)"),  # a comm with spaces and parentheses, not in the container
    ]:
        _proc(tmp_path, pid, ppid, comm)
    (tmp_path / "proc" / "self").mkdir()
    root = SysRoot(tmp_path)
    assert engine.pids("vllm", root) == []  # not running: no State.Pid
    engine.start("vllm")
    assert engine.pids("vllm", root) == [100, 101, 102, 103]
    assert process_tree(1, root) == [1, 90, 100, 101, 102, 103, 200]


# --- podman's Docker API, when podman works here ------------------------------------------------------


from .helpers.podman import podman_shell_container  # noqa: E402


def test_against_podmans_docker_api(podman_engine):
    engine = podman_engine
    script = (
        'echo "INFO GPU KV cache size: 1,234 tokens"; echo "to stderr" >&2; '
        'echo "INFO:     Application startup complete."; exec sleep 30'
    )
    with podman_shell_container("arcops-dapi", script) as name:
        assert engine.inspect(name)["State"]["Running"] is False
        since = time.time()
        assert engine.start(name) is True
        info = engine.inspect(name)
        assert info["State"]["Running"] is True and info["Config"]["Tty"] is False
        pids = engine.pids(name)
        assert info["State"]["Pid"] in pids
        lines, stream = [], engine.logs(name, since=since)
        for line in stream:
            lines.append(line)
            if "startup complete" in line:
                stream.close()
        assert "INFO GPU KV cache size: 1,234 tokens" in lines
        codes = []
        waiter = threading.Thread(target=lambda: codes.append(engine.wait(name)))
        waiter.start()
        assert engine.stop(name, timeout=1) is True
        waiter.join(timeout=20)
        assert codes and codes[0] in (137, 143)
        assert engine.stop(name, timeout=1) is False
        with pytest.raises(DockerError, match="no such container"):
            engine.wait(f"{name}-missing")
        assert engine.inspect(f"{name}-missing") is None
