#!/usr/bin/env python3
"""Fetch real packages from Debian's mirror for tests, verified by sha256 and cached.

Tests use real artefacts (firmware blobs, kernel packages) where Debian ships them. The cache
(ARCOPS_CACHE/debian, default /var/cache/arcops/debian) keeps a second run offline.

As a command (the VM tier's prepare step uses it):
    debian_mirror.py fetch SUITE COMPONENT ARCH PACKAGE      prints the .deb's path
    debian_mirror.py pick-kernel SUITE FLAVOUR --not RELEASE prints a kernel release other than RELEASE
"""

from __future__ import annotations

import argparse
import hashlib
import lzma
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

MIRROR = os.environ.get("ARCOPS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
CACHE = Path(os.environ.get("ARCOPS_CACHE", "/var/cache/arcops")) / "debian"


class MirrorUnreachable(OSError):
    """The mirror did not answer: tests say so (skip) rather than pass."""


def unreachable(e: MirrorUnreachable) -> None:
    """Skip a real-artefact test on a developer machine without the mirror; fail it in CI
    (CI=true), where a missing real artefact must never let the tier pass."""
    import pytest

    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"real artefact unavailable in CI: {e}")
    pytest.skip(str(e))


class Gone(MirrorUnreachable):
    """The mirror answered 404: the file left the pool (a point release replaced the package)."""


def _get(url: str, tries: int = 3) -> bytes:
    """The file at URL; a dropped connection or a 5xx is tried again (twice, 2 s and 4 s later)."""
    for n in range(tries):
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise Gone(f"{url}: 404 (no longer on the mirror)") from e
            error: OSError = e
        except OSError as e:
            error = e
        if n + 1 < tries:
            time.sleep(2 * 2**n)
    raise MirrorUnreachable(f"Debian mirror {MIRROR} unreachable: {error}") from error


def _stanzas(suite: str, component: str, arch: str):
    index = CACHE / f"{suite}_{component}_{arch}_Packages"
    if not index.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        data = lzma.decompress(_get(f"{MIRROR}/dists/{suite}/{component}/binary-{arch}/Packages.xz"))
        index.write_bytes(data)
    for stanza in index.read_text().split("\n\n"):
        yield dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" ")
        )


def fetch_deb(suite: str, component: str, package: str, arch: str = "all") -> Path:
    """Path of the package's .deb in the suite (downloaded once, sha256 checked). A cached index
    that names a file the mirror no longer has is read again, once."""
    try:
        return _fetch_deb(suite, component, package, arch)
    except Gone:
        (CACHE / f"{suite}_{component}_{arch}_Packages").unlink(missing_ok=True)
        return _fetch_deb(suite, component, package, arch)


def _fetch_deb(suite: str, component: str, package: str, arch: str) -> Path:
    entry = next((f for f in _stanzas(suite, component, arch) if f.get("Package") == package), None)
    if entry is None:
        raise LookupError(f"{package} is not in {suite}/{component} ({arch})")
    deb = CACHE / Path(entry["Filename"]).name
    if not deb.exists():
        data = _get(f"{MIRROR}/{entry['Filename']}")
        if hashlib.sha256(data).hexdigest() != entry["SHA256"]:
            raise AssertionError(f"{deb.name}: sha256 differs from the {suite} index")
        deb.write_bytes(data)
    return deb


def pick_kernel(suite: str, flavour: str, avoid: str) -> str:
    """The newest versioned kernel release of a flavour in the suite that is not `avoid`."""
    pattern = re.compile(rf"^linux-image-(\d+\.\d+\.\d+-\d+-{re.escape(flavour)})$")
    releases = [
        m.group(1) for f in _stanzas(suite, "main", "amd64") if (m := pattern.match(f.get("Package", "")))
    ]
    candidates = sorted(
        (r for r in releases if r != avoid), key=lambda r: [int(x) for x in re.findall(r"\d+", r)]
    )
    if not candidates:
        raise LookupError(f"no {flavour} kernel other than {avoid} in {suite}")
    return candidates[-1]


def extract_deb(deb: Path, dest: Path) -> Path:
    subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True)
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description="Real Debian packages for arcops tests")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("fetch")
    p.add_argument("suite")
    p.add_argument("component")
    p.add_argument("arch")
    p.add_argument("package")
    p = sub.add_parser("pick-kernel")
    p.add_argument("suite")
    p.add_argument("flavour")
    p.add_argument("--not", dest="avoid", required=True)
    args = parser.parse_args()
    if args.cmd == "fetch":
        print(fetch_deb(args.suite, args.component, args.package, args.arch))
    else:
        print(pick_kernel(args.suite, args.flavour, args.avoid))


if __name__ == "__main__":
    main()
