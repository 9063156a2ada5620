"""The Level Zero residency filter for vLLM's container: its source, build flags and build.

arcops-l0-residency.so (src/arcops/cxx/arcops-l0-residency.c) is an LD_AUDIT library: loaded
into every process of the container, it lets a device allocation be made resident only on the
device that owns it, the half of the dual-B60 report's host-RAM fix that Intel's image lacks
(docs/host-ram.md). It is built with gcc and the flags below, so the same source gives the same
library wherever it is built: today the unit tests and `scripts/bench residency`; vllm_service is
to build it on the box through this module, which is why it keeps to the standard library.
"""

from __future__ import annotations

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


class BuildError(RuntimeError):
    """The filter could not be built; the message says what the compiler said."""


def compile_command(output: Path, compiler: str = "gcc") -> list[str]:
    return [compiler, *CFLAGS, "-o", str(output), str(SOURCE), *LIBS]


def build(output_dir: Path, compiler: str = "gcc") -> Path:
    """Compile the filter into output_dir (written beside, then renamed: never half a library)."""
    if shutil.which(compiler) is None:
        raise BuildError(f"{compiler} not found: the residency filter is built with it")
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / LIBRARY
    partial = output_dir / f".{LIBRARY}.{os.getpid()}.tmp"
    result = subprocess.run(compile_command(partial, compiler), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        first = (result.stderr.strip().splitlines() or ["no output"])[0]
        raise BuildError(f"{compiler} failed on {SOURCE.name} (exit {result.returncode}): {first}")
    partial.chmod(0o644)
    os.replace(partial, target)
    return target
