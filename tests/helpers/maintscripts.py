"""Run maintainer scripts the way dpkg would on noble: under dash, with hook directories holding
scripts that log each run, so a rewrite is judged by what runs, not by its text."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def hook(directory: Path, name: str, log: Path, status: int = 0) -> None:
    """An executable hook that appends "<root>/<name> <args>" to log and exits with status."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f'#!/bin/sh\necho "{directory.parent.name}/{name}${{*:+ $*}}" >> {log}\nexit {status}\n')
    path.chmod(0o755)


def run_dash(
    script_text: str, tmp_path: Path, *args: str, env: dict | None = None
) -> subprocess.CompletedProcess:
    script = tmp_path / "script.sh"
    script.write_text(script_text)
    script.chmod(0o755)
    return subprocess.run(
        ["dash", str(script), *args], capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
