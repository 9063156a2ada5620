"""The tests' own Debian mirror client (tests/helpers/debian_mirror.py) against a mirror played by
a local HTTP server: a dropped answer is tried again, and a cached index that names a package
the mirror has since replaced (a point release) is read again instead of failing the run."""

from __future__ import annotations

import hashlib
import lzma
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from .helpers import debian_mirror


class Mirror(BaseHTTPRequestHandler):
    # What the mirror serves, set by each test (the server makes a handler per request).
    files: ClassVar[dict[str, bytes]] = {}
    failures: ClassVar[dict[str, int]] = {}
    asked: ClassVar[list[str]] = []

    def do_GET(self):
        self.asked.append(self.path)
        if self.failures.get(self.path, 0) > 0:
            self.failures[self.path] -= 1
            self.send_error(503)
            return
        data = self.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def _index(version: str, data: bytes) -> bytes:
    stanza = (
        f"Package: arcops-probe\nVersion: {version}\nFilename: pool/main/a/arcops-probe_{version}_all.deb\n"
        f"SHA256: {hashlib.sha256(data).hexdigest()}\n\n"
    )
    return lzma.compress(stanza.encode())


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Mirror)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(debian_mirror, "MIRROR", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setattr(debian_mirror, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(debian_mirror.time, "sleep", lambda s: None)
    Mirror.files, Mirror.failures, Mirror.asked = {}, {}, []
    yield Mirror
    server.shutdown()
    server.server_close()


INDEX = "/dists/bookworm/main/binary-all/Packages.xz"


def test_a_cached_index_naming_a_replaced_package_is_read_again(mirror):
    old, new = b"old deb", b"new deb"
    mirror.files = {INDEX: _index("1", old), "/pool/main/a/arcops-probe_1_all.deb": old}
    assert debian_mirror.fetch_deb("bookworm", "main", "arcops-probe").read_bytes() == old
    # A point release: version 2 replaces 1 in the pool and the index; the cached .deb is kept,
    # so a cache without it (another machine) must follow the new index.
    mirror.files = {INDEX: _index("2", new), "/pool/main/a/arcops-probe_2_all.deb": new}
    (debian_mirror.CACHE / "arcops-probe_1_all.deb").unlink()
    assert debian_mirror.fetch_deb("bookworm", "main", "arcops-probe").read_bytes() == new
    assert mirror.asked[-3:] == [
        "/pool/main/a/arcops-probe_1_all.deb",
        INDEX,
        "/pool/main/a/arcops-probe_2_all.deb",
    ]


def test_a_dropped_answer_is_tried_again_and_a_dead_mirror_is_said(mirror):
    data = b"deb"
    mirror.files = {INDEX: _index("1", data), "/pool/main/a/arcops-probe_1_all.deb": data}
    mirror.failures = {"/pool/main/a/arcops-probe_1_all.deb": 2}
    assert debian_mirror.fetch_deb("bookworm", "main", "arcops-probe").read_bytes() == data
    mirror.failures = {"/dists/bookworm/main/binary-amd64/Packages.xz": 3}
    with pytest.raises(debian_mirror.MirrorUnreachable, match="unreachable: HTTP Error 503"):
        debian_mirror.fetch_deb("bookworm", "main", "arcops-probe", "amd64")
