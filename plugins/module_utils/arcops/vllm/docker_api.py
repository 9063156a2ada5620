"""A minimal Docker Engine API client over a unix socket (stdlib http.client).

Enough to start, watch and stop a container that Ansible created: inspect, start, stop, wait, logs
and the host PIDs of its processes. It speaks API version 1.41, which Docker and podman's
``podman system service`` (its Docker-compatible API) both serve. Every call opens its own
connection, so calls from several threads (a blocking wait, a followed log) do not interfere.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import re
import socket
import struct
import time
from collections.abc import Iterator
from datetime import datetime
from urllib.parse import quote, urlencode

from ..common.sysroot import SysRoot

API_VERSION = "v1.41"
# States a container passes through before its exit code is final (Docker's and podman's).
_NOT_YET_EXITED = frozenset({"running", "paused", "restarting", "stopping", "removing"})
DEFAULT_HOST = "unix:///var/run/docker.sock"
# Multiplexed log stream (container without a TTY): 8-byte header, then the payload.
# header = stream (0 stdin, 1 stdout, 2 stderr), 3 zero bytes, payload size (uint32 big-endian).
FRAME_HEADER = struct.Struct(">BxxxI")
_DEFAULT: float = -1.0  # "the client's timeout" (None means no timeout)
_TIMESTAMP_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


class DockerError(RuntimeError):
    """The engine refused a request or could not be reached; the message is the engine's."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def socket_path(docker_host: str | None = None) -> str:
    """The socket path of a docker_host such as 'unix:///run/docker.sock' (default: $DOCKER_HOST)."""
    host = docker_host or os.environ.get("DOCKER_HOST") or DEFAULT_HOST
    if host.startswith("unix://"):
        return host.removeprefix("unix://")
    if host.startswith("/"):
        return host
    raise DockerError(f"docker host {host!r}: only unix:// sockets are supported")


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float | None) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.unix_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def parse_timestamp(text: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp with up to nanoseconds, as the engine writes."""
    m = _TIMESTAMP_RE.match(text)
    if m is None:
        return None
    zone = "+00:00" if m[3] == "Z" else m[3]
    whole = datetime.fromisoformat(m[1] + zone).timestamp()
    return whole + (int(m[2]) / 10 ** len(m[2]) if m[2] else 0.0)


class LogStream:
    """A container's log, line by line, as the engine sends it. close() ends it from any thread."""

    def __init__(self, conn: _UnixConnection, response: http.client.HTTPResponse, tty: bool, since: float):
        self._conn = conn
        self._response = response
        self._tty = tty
        self._since = since
        self._closed = False
        self._reading = False

    def _chunks(self) -> Iterator[bytes]:
        """Payload bytes as they arrive (http.client undoes the chunked transfer encoding)."""
        if self._tty:
            while data := self._response.read1(65536):
                yield data
            return
        while True:
            header = self._read_exactly(FRAME_HEADER.size)
            if header is None:
                return
            _unused, size = FRAME_HEADER.unpack(header)
            payload = self._read_exactly(size)
            if payload is None:
                return
            yield payload

    def _read_exactly(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            more = self._response.read1(n - len(data))
            if not more:
                return None
            data += more
        return data

    def __iter__(self) -> Iterator[str]:
        self._reading = True
        pending = b""
        try:
            for chunk in self._chunks():
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    line = self._keep(raw)
                    if line is not None:
                        yield line
            if pending:
                line = self._keep(pending)
                if line is not None:
                    yield line
        except Exception:
            if not self._closed:
                raise  # the engine broke off the stream; after close() anything goes
        finally:
            self._reading = False
            self._closed = True
            self._release()

    def _keep(self, raw: bytes) -> str | None:
        """The line without the engine's timestamp, or None when it was logged before `since`."""
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        stamp, _unused, rest = text.partition(" ")
        when = parse_timestamp(stamp)
        if when is None:
            return text
        # Docker stamps nanoseconds; podman whole seconds, so there only whole seconds compare (a
        # line from an earlier run in the same second then passes).
        since = self._since if "." in stamp else math.floor(self._since)
        return rest if when >= since else None

    def close(self) -> None:
        """End the stream. A reader blocked in another thread wakes up and releases the connection."""
        if self._closed:
            return
        self._closed = True
        sock = self._conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if not self._reading:
            self._release()

    def _release(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()


class Engine:
    """The Docker Engine API at docker_host (unix:///path/to.sock)."""

    def __init__(self, docker_host: str | None = None, timeout: float = 60.0) -> None:
        self.path = socket_path(docker_host)
        self.timeout = timeout

    def _request(
        self,
        method: str,
        endpoint: str,
        query: dict | None = None,
        timeout: float | None = _DEFAULT,
    ) -> tuple[_UnixConnection, http.client.HTTPResponse]:
        conn = _UnixConnection(self.path, self.timeout if timeout is _DEFAULT else timeout)
        url = f"/{API_VERSION}{endpoint}" + (f"?{urlencode(query)}" if query else "")
        try:
            conn.request(method, url, headers={"Content-Length": "0"} if method == "POST" else {})
            return conn, conn.getresponse()
        except OSError as e:
            conn.close()
            raise DockerError(f"docker engine at {self.path}: {method} {endpoint}: {e}") from e

    def _call(self, method: str, endpoint: str, query: dict | None = None, timeout=_DEFAULT, ok=(200,)):
        """(status, decoded JSON body or None); DockerError with the engine's message otherwise."""
        conn, response = self._request(method, endpoint, query, timeout)
        try:
            body = response.read()
        except OSError as e:
            raise DockerError(f"docker engine at {self.path}: {method} {endpoint}: {e}") from e
        finally:
            conn.close()
        data = None
        if body:
            try:
                data = json.loads(body)
            except ValueError:
                data = None
        if response.status not in ok:
            message = data.get("message") if isinstance(data, dict) else None
            text = message or body.decode(errors="replace").strip() or response.reason
            raise DockerError(f"{method} {endpoint}: {text}", response.status)
        return response.status, data

    @staticmethod
    def _name(name: str) -> str:
        return quote(name, safe="")

    def inspect(self, name: str) -> dict | None:
        """The container's inspect JSON, or None when there is no such container."""
        try:
            return self._call("GET", f"/containers/{self._name(name)}/json")[1]
        except DockerError as e:
            if e.status == 404:
                return None
            raise

    def start(self, name: str) -> bool:
        """Start the container; False when it was already running."""
        status, _unused = self._call("POST", f"/containers/{self._name(name)}/start", ok=(204, 304))
        return status == 204

    def stop(self, name: str, timeout: int = 30) -> bool:
        """Stop it (SIGTERM, SIGKILL after timeout seconds); False when it was not running."""
        status, _unused = self._call(
            "POST",
            f"/containers/{self._name(name)}/stop",
            {"t": int(timeout)},
            timeout=self.timeout + timeout,
            ok=(204, 304),
        )
        return status == 204

    def wait(self, name: str, interval: float = 0.5) -> int:
        """Block until the container is not running; its exit code.

        Asks inspect every `interval` seconds instead of calling the engine's wait endpoint:
        podman's Docker API (4.3, Debian 12's) answers a wait by spinning a CPU core until the
        container exits, which for a watched server is a core for as long as it serves.
        """
        while True:
            info = self.inspect(name)
            if info is None:
                raise DockerError(f"wait {name}: no such container: {name}", 404)
            state = info.get("State") if isinstance(info.get("State"), dict) else {}
            # Podman says Running false while "stopping", before the exit code is known.
            if not state.get("Running") and state.get("Status") not in _NOT_YET_EXITED:
                code = state.get("ExitCode")
                return code if isinstance(code, int) and not isinstance(code, bool) else -1
            time.sleep(interval)

    def logs(self, name: str, since: float = 0, follow: bool = True, tty: bool | None = None) -> LogStream:
        """stdout and stderr lines logged at or after `since` (epoch seconds, fractions honoured).

        The engine is asked for whole seconds with timestamps; lines from earlier in the same
        second (a previous run of the container) are dropped by their timestamp.
        """
        if tty is None:
            info = self.inspect(name)
            if info is None:
                raise DockerError(f"no such container: {name}", 404)
            tty = bool((info.get("Config") or {}).get("Tty"))
        query = {"stdout": 1, "stderr": 1, "follow": int(follow), "timestamps": 1, "since": int(since)}
        conn, response = self._request("GET", f"/containers/{self._name(name)}/logs", query, timeout=None)
        if response.status != 200:
            body = response.read()
            conn.close()
            try:
                message = json.loads(body).get("message")
            except (ValueError, AttributeError):
                message = None
            raise DockerError(
                f"GET logs {name}: {message or body.decode(errors='replace').strip()}", response.status
            )
        content_type = response.getheader("Content-Type", "")
        if "multiplexed-stream" in content_type:
            tty = False
        return LogStream(conn, response, tty, since)

    def pids(self, name: str, sysroot: SysRoot | None = None) -> list[int]:
        """Host PIDs of the container's processes: State.Pid and its descendants (from /proc)."""
        info = self.inspect(name)
        if info is None:
            raise DockerError(f"no such container: {name}", 404)
        root = int((info.get("State") or {}).get("Pid") or 0)
        return process_tree(root, sysroot or SysRoot("/")) if root > 0 else []


def _ppid(stat: str) -> int | None:
    # /proc/PID/stat: "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    _unused, _unused, rest = stat.rpartition(")")
    fields = rest.split()
    return int(fields[1]) if len(fields) > 1 and fields[1].lstrip("-").isdigit() else None


def process_tree(root: int, sysroot: SysRoot) -> list[int]:
    """root and all its descendants, from /proc/*/stat under sysroot, sorted."""
    children: dict[int, list[int]] = {}
    for entry in sysroot.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = sysroot.read(f"/proc/{entry}/stat")
        ppid = _ppid(stat) if stat else None
        if ppid is not None:
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo.extend(children.get(pid, []))
    return sorted(found)
