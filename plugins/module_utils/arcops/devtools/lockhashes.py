"""Hashes for the project's pip locks: every `name==version` line gets the sha256 of every file
the index holds for that version (wheels for any platform and the sdist), plus those of the
machine's own find-links folder (a local build such as torch's +cpu wheel), so that
`pip install --require-hashes -r LOCK` installs exactly what was pinned, or nothing.

    python -m arcops.devtools.lockhashes requirements.lock requirements-sycl.lock ...

Each lock is rewritten in place (atomically); comments and order are kept. The sha256 come from
the index's own pages (its `#sha256=` fragments), never from a download. Control node only.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

from ..common.checksum import sha256_file
from ..common.outputs import write_atomic

INDEX = "https://pypi.org/simple"
# The machines a venv of the project is built on: x86_64 Linux (Debian 12, Ubuntu 24.04), the
# system's CPython 3.11 to 3.13. Files for other platforms would only bloat the locks.
PLATFORMS = re.compile(r"^(any|(many|musl)?linux[0-9_]*_x86_64)$")
PYTHONS = re.compile(r"^(py3|py2\.py3|cp3(11|12|13)|py3(11|12|13))$")
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
_FILE = re.compile(r'href="[^"#]*/([^/"#]+)#sha256=([0-9a-f]{64})"')


class LockError(ValueError):
    """A lock line that pins nothing, or a version the index has no file of."""


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _file_version(filename: str, name: str) -> str | None:
    """The version a distribution file is of, when it is NAME's (wheel or sdist)."""
    stem = re.sub(r"(\.tar\.gz|\.zip|\.tar\.bz2|\.whl)$", "", filename)
    if stem == filename:
        return None
    wheel = filename.endswith(".whl")
    parts = stem.split("-")
    if wheel:
        if len(parts) < 5 or normalize(parts[0]) != normalize(name):
            return None
        return parts[1]
    head, sep, version = stem.rpartition("-")
    return version if sep and normalize(head) == normalize(name) else None


def installable(filename: str) -> bool:
    """An sdist, or a wheel one of the project's machines can install (PLATFORMS, PYTHONS; an
    abi3 wheel of any CPython 3)."""
    if not filename.endswith(".whl"):
        return True
    python, abi, platforms = filename[:-4].split("-")[-3:]
    pythons = python.split(".")
    fits = any(PYTHONS.match(tag) for tag in pythons) or (
        abi == "abi3" and any(tag.startswith("cp3") for tag in pythons)
    )
    return fits and any(PLATFORMS.match(tag) for tag in platforms.split("."))


def index_hashes(page: str, name: str, version: str) -> list[str]:
    """The sha256 of every installable file of NAME==VERSION on an index page (PEP 503)."""
    return sorted(
        {
            digest
            for filename, digest in _FILE.findall(page)
            if _file_version(filename, name) == version and installable(filename)
        }
    )


def local_hashes(folder: Path | None, name: str, version: str) -> list[str]:
    """The sha256 of every file of NAME==VERSION in a find-links folder."""
    if folder is None or not folder.is_dir():
        return []
    return sorted(
        {
            sha256_file(path)
            for path in folder.iterdir()
            if path.is_file() and _file_version(path.name, name) == version
        }
    )


def fetch_page(name: str) -> str:
    with urllib.request.urlopen(f"{INDEX}/{normalize(name)}/", timeout=60) as response:
        return response.read().decode("utf-8", errors="replace")


def rewrite(text: str, page_of: Callable[[str], str], find_links: Path | None) -> str:
    """The lock TEXT with every requirement's hashes (old ones dropped)."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            out.append(line)
            continue
        if line.lstrip().startswith("--hash"):
            continue  # an earlier run's, replaced below with its requirement
        m = REQUIREMENT.match(line.strip())
        if not m:
            raise LockError(f"line {i}: {line.strip()!r} is not name==version")
        name, version = m.groups()
        found = set(index_hashes(page_of(name), name, version)) | set(local_hashes(find_links, name, version))
        hashes = sorted(found)
        if not hashes:
            raise LockError(f"{name}=={version}: the index has no file of it")
        out.append(f"{name}=={version} \\")
        last = len(hashes) - 1
        out += [f"    --hash=sha256:{h}" + (" \\" if n < last else "") for n, h in enumerate(hashes)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lockhashes", description=__doc__.split("\n\n", maxsplit=1)[0])
    p.add_argument("locks", nargs="+", type=Path, help="pip lock files (name==version lines), rewritten")
    p.add_argument(
        "--find-links",
        type=Path,
        default=Path(os.environ["PIP_FIND_LINKS"]) if os.environ.get("PIP_FIND_LINKS") else None,
        help="a folder of local distributions pip also takes from (default: $PIP_FIND_LINKS)",
    )
    args = p.parse_args(argv)
    pages: dict[str, str] = {}

    def page_of(name: str) -> str:
        if name not in pages:
            pages[name] = fetch_page(name)
        return pages[name]

    try:
        for lock in args.locks:
            new = rewrite(lock.read_text(encoding="utf-8"), page_of, args.find_links)
            write_atomic(lock, new)
            pins = sum(bool(REQUIREMENT.match(line)) for line in new.splitlines())
            print(f"{lock}: {new.count('--hash=')} hashes for {pins} pins")
    except (LockError, OSError) as e:
        print(f"lockhashes: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
