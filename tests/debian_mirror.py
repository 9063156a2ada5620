"""Fetch real packages from Debian's mirror for tests, verified by sha256 and cached.

Tests use real artefacts (firmware blobs, kernel packages) where Debian ships them. The cache
(ARCOPS_CACHE/debian, default /var/cache/arcops/debian) keeps a second run offline.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

MIRROR = os.environ.get("ARCOPS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
CACHE = Path(os.environ.get("ARCOPS_CACHE", "/var/cache/arcops")) / "debian"


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read()


def _index_entry(suite: str, component: str, package: str) -> dict[str, str]:
    index = CACHE / f"{suite}_{component}_Packages"
    if not index.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        data = lzma.decompress(_get(f"{MIRROR}/dists/{suite}/{component}/binary-all/Packages.xz"))
        index.write_bytes(data)
    for stanza in index.read_text().split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" ")
        )
        if fields.get("Package") == package:
            return fields
    raise LookupError(f"{package} is not in {suite}/{component}")


def fetch_deb(suite: str, component: str, package: str) -> Path:
    """Path of the package's .deb in the suite (downloaded once, sha256 checked)."""
    try:
        entry = _index_entry(suite, component, package)
        deb = CACHE / Path(entry["Filename"]).name
        if not deb.exists():
            data = _get(f"{MIRROR}/{entry['Filename']}")
            if hashlib.sha256(data).hexdigest() != entry["SHA256"]:
                raise AssertionError(f"{deb.name}: sha256 differs from the {suite} index")
            deb.write_bytes(data)
        return deb
    except OSError as e:  # network unreachable: say so, never pass silently
        pytest.skip(f"Debian mirror {MIRROR} unreachable: {e}")


def extract_deb(deb: Path, dest: Path) -> Path:
    subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True)
    return dest
