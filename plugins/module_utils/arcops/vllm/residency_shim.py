"""The Level Zero residency filter for vLLM's container: its source, build flags and build.

arcops-l0-residency.so (plugins/module_utils/arcops/cxx/arcops-l0-residency.c) is an LD_AUDIT library: loaded
into every process of the container, it lets a device allocation be made resident only on the
device that owns it, the half of the dual-B60 report's host-RAM fix that Intel's image lacks
(docs/host-ram.md). It is built with gcc and the flags below, so the same source gives the same
library wherever it is built: on the box by vllm_service (through the arcops_l0_filter module,
which is why this keeps to the standard library), in the unit tests and by `scripts/bench residency`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "cxx" / "arcops-l0-residency.c"
LIBRARY = "arcops-l0-residency.so"
# Warnings are errors: a compiler that finds something to say about the filter builds nothing.
CFLAGS = ("-std=c11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror")
LIBS = ("-ldl",)
# What a process under the filter is given (the container's environment).
AUDIT_VAR = "LD_AUDIT"
PASS_ALL_VAR = "ARCOPS_L0_PEER_RESIDENT"
LOG_VAR = "ARCOPS_L0_RESIDENCY_LOG"
# What a process under the filter prints when ARCOPS_L0_RESIDENCY_LOG=1: the proof it loaded.
MARKER = "arcops-l0-residency 1: loaded"
# Beside the library: the source and flags it was built from, and its own sha256.
STAMP = "arcops-l0-residency.build.json"


class BuildError(RuntimeError):
    """The filter could not be built; the message says what the compiler said."""


def compile_command(output: Path, compiler: str = "gcc", source: Path = SOURCE) -> list[str]:
    return [compiler, *CFLAGS, "-o", str(output), str(source), *LIBS]


def build(output_dir: Path, compiler: str = "gcc", source: Path = SOURCE) -> Path:
    """Compile the filter into output_dir (written beside, then renamed: never half a library)."""
    if shutil.which(compiler) is None:
        raise BuildError(f"{compiler} not found: the residency filter is built with it")
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / LIBRARY
    partial = output_dir / f".{LIBRARY}.{os.getpid()}.tmp"
    try:
        result = subprocess.run(
            compile_command(partial, compiler, source), capture_output=True, text=True, check=False
        )
    except OSError as e:
        raise BuildError(f"{compiler} could not run: {e.strerror}") from None
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        first = (result.stderr.strip().splitlines() or ["no output"])[0]
        raise BuildError(f"{compiler} failed on {source.name} (exit {result.returncode}): {first}")
    partial.chmod(0o644)
    os.replace(partial, target)
    return target


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wanted_stamp(source: Path) -> dict:
    """What a library built now from this source would be stamped with (not its own sha256)."""
    return {"source_sha256": _sha256(source), "cflags": list(CFLAGS), "libs": list(LIBS)}


def _built(output_dir: Path) -> dict | None:
    """The stamp of the library in output_dir when the library still matches it, else None."""
    try:
        stamp = json.loads((output_dir / STAMP).read_text())
        if isinstance(stamp, dict) and stamp.get("library_sha256") == _sha256(output_dir / LIBRARY):
            return stamp
    except (OSError, ValueError):
        pass
    return None


def ensure(output_dir: Path, source: Path = SOURCE, compiler: str = "gcc", check: bool = False) -> dict:
    """The library in output_dir, built from source with CFLAGS unless the one there already was.

    A library whose stamp names other source or flags, or whose bytes no longer match its stamp,
    is rebuilt; the stamp is written after the library, so a build cut short is rebuilt next time.
    check: say what would happen, change nothing. Returns changed, reason, library, sha256.
    """
    if not source.is_file():
        raise BuildError(f"{source}: no such source file (the residency filter's C source)")
    want = wanted_stamp(source)
    have = _built(output_dir)
    library = output_dir / LIBRARY
    if have is not None and all(have.get(k) == v for k, v in want.items()):
        return {
            "changed": False,
            "reason": "built from this source",
            "library": str(library),
            "sha256": have["library_sha256"],
        }
    if have is None:
        reason = "not built" if not library.exists() else "library does not match its stamp"
    else:
        reason = "source changed" if have.get("source_sha256") != want["source_sha256"] else "flags changed"
    if check:
        return {"changed": True, "reason": reason, "library": str(library), "sha256": ""}
    build(output_dir, compiler, source)
    stamp = {**want, "library_sha256": _sha256(library)}
    partial = output_dir / f".{STAMP}.{os.getpid()}.tmp"
    partial.write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n")
    partial.chmod(0o644)
    os.replace(partial, output_dir / STAMP)
    return {"changed": True, "reason": reason, "library": str(library), "sha256": stamp["library_sha256"]}
