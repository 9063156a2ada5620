"""A read-only image registry for tests: one image from a `docker save` archive, over HTTP.

No registry image can be pulled here, so the vllm_service pull path (pull by tag, then check the
registry digest) is tested against this: the Registry API v2 subset a pull uses (GET /v2/,
GET/HEAD manifests by tag or digest, GET/HEAD blobs), serving a schema-2 manifest whose layers
are the archive's layers, gzip'd reproducibly. The manifest's sha256 is the digest a pull
records (RepoDigests), the one the role is pinned to.

    python -m tests.helpers.registry_standin ARCHIVE REPO TAG --port N   # prints the digest, then serves
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import re
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG = "application/vnd.docker.container.image.v1+json"
LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def image_from_archive(archive: Path | str) -> tuple[bytes, dict[str, bytes]]:
    """(manifest, blobs by digest) for the first image of a docker-archive (.tar or .tar.gz)."""
    opener = gzip.open if str(archive).endswith(".gz") else open
    with opener(archive, "rb") as raw, tarfile.open(fileobj=io.BytesIO(raw.read())) as tar:

        def member(name: str) -> bytes:
            f = tar.extractfile(name)
            assert f is not None, name
            return f.read()

        entry = json.loads(member("manifest.json"))[0]
        config = member(entry["Config"])
        blobs = {_digest(config): config}
        layers = []
        for name in entry["Layers"]:
            data = gzip.compress(member(name), compresslevel=1, mtime=0)  # same bytes every time
            blobs[_digest(data)] = data
            layers.append({"mediaType": LAYER, "size": len(data), "digest": _digest(data)})
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {"mediaType": CONFIG, "size": len(config), "digest": _digest(config)},
        "layers": layers,
    }
    return json.dumps(manifest, indent=3).encode(), blobs


def serve(archive: Path | str, repo: str, tag: str, port: int, host: str = "127.0.0.1"):
    """Start serving in a thread; returns (server, manifest digest). server.shutdown() stops it."""
    manifest, blobs = image_from_archive(archive)
    digest = _digest(manifest)
    route = re.compile(rf"/v2/{re.escape(repo)}/(manifests|blobs)/([^/]+)")

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: bytes = b"", kind: str = "application/json", extra=None):
            self.send_response(status)
            self.send_header("Docker-Distribution-API-Version", "registry/2.0")
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(body)

        def do_GET(self):
            if self.path.rstrip("/") == "/v2":
                return self._send(200, b"{}")
            m = route.fullmatch(self.path)
            if m and m[1] == "manifests" and m[2] in (tag, digest):
                return self._send(200, manifest, MANIFEST, {"Docker-Content-Digest": digest})
            if m and m[1] == "blobs" and m[2] in blobs:
                blob = blobs[m[2]]
                return self._send(200, blob, "application/octet-stream", {"Docker-Content-Digest": m[2]})
            return self._send(404, b'{"errors": [{"code": "NOT_FOUND"}]}')

        do_HEAD = do_GET

        def log_message(self, *args):  # quiet
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, digest


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archive")
    p.add_argument("repo")
    p.add_argument("tag")
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    server, digest = serve(args.archive, args.repo, args.tag, args.port)
    print(digest, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
