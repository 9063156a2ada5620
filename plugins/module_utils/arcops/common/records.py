"""Where each stage's record lives on a box, and how it is read and written: one place for all.

A stage's record is a JSON object. It is kept in the stage's state folder (state.json, where
the stage keeps what it needs for a rollback) and published as an Ansible local fact
(FACT_DIR/<file>, read back as ansible_local.<name>). The status summary, a fleet status and the
metrics read the published copies; arcops_record reads state.json, and writes it and the fact in
one task. Every new state.json is also kept in the state folder's history/ (newest HISTORY_KEEP),
so what a box ran, and when it changed, can be read back after a rollback overwrote state.json.

Stdlib only: it runs on the box inside the arcops_record and arcops_status modules.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from .outputs import PRIVATE_FILE, private_dir, write_atomic

FACT_DIR = "/etc/ansible/facts.d"
# Every stage's state folder is STATE_ROOT/<stage> by default (its *_state_dir variable); the
# seals there are read together once per run (arcops.stages.seal.survey).
STATE_ROOT = "/var/lib/arcops"
STATE_FILE = "state.json"
HISTORY_DIR = "history"
HISTORY_KEEP = 20
# Stage -> its published record's file in FACT_DIR. preflight's predates the others' naming.
STAGES = {
    "preflight": "arcops.fact",
    "intel_stack": "arcops_intel_stack.fact",
    "mainline_kernel": "arcops_mainline_kernel.fact",
    "llama_cpp_sycl": "arcops_llama_cpp_sycl.fact",
    "vllm_service": "arcops_vllm_service.fact",
    "verify": "arcops_verify.fact",
}


class RecordError(ValueError):
    """A record that cannot be written: unknown stage, not an object, a folder in the way."""


def render(record: Any) -> str:
    """The file text: what to_nice_json writes (sorted keys, four-space indent), one final newline."""
    if not isinstance(record, dict):
        raise RecordError(f"record: must be a mapping, got {type(record).__name__}")
    try:
        return json.dumps(record, indent=4, sort_keys=True, allow_nan=False) + "\n"
    except (TypeError, ValueError) as e:
        raise RecordError(f"record: not JSON ({e})") from None


def targets(stage: str, state_dir: str | None, fact_dir: str | None = FACT_DIR) -> list[Path]:
    """The files a stage's record is written to: state.json (when the stage has a state folder)
    and the published fact (unless FACT_DIR is None)."""
    if stage not in STAGES:
        raise RecordError(f"stage: {stage!r} is not one of {', '.join(STAGES)}")
    out = [Path(state_dir) / STATE_FILE] if state_dir else []
    return [*out, Path(fact_dir) / STAGES[stage]] if fact_dir else out


def present(path: Path) -> bool:
    """Whether a record file is there to read; anything but a regular file is refused (a link
    could point anywhere, and reading a FIFO would hang)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
        raise RecordError(f"{path}: is a link or a folder, not a record file")
    if not stat.S_ISREG(st.st_mode):
        raise RecordError(f"{path}: not a regular file, not a record file")
    return True


def private(path: Path) -> bool:
    """Whether only its owner may read or write the file."""
    return not os.lstat(path).st_mode & 0o077


def pending(
    stage: str, record: Any, state_dir: str | None, fact_dir: str | None = FACT_DIR
) -> tuple[str, list[Path]]:
    """The text to write and the files that do not hold it yet."""
    text = render(record)
    stale = []
    for path in targets(stage, state_dir, fact_dir):
        try:
            # A file others may read (an older version's 0644) is rewritten 0600 too.
            same = present(path) and private(path) and path.read_text(encoding="utf-8") == text
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:
            stale.append(path)
    return text, stale


def state_folder(folder: str | Path) -> Path:
    """A stage's state folder (or one below it), made or closed to 0700 with STATE_ROOT: records
    can name what an API key protects, and no other user of the box needs them."""
    return private_dir(folder, top=STATE_ROOT)


def write(text: str, paths: list[Path]) -> None:
    """Write TEXT to every path atomically, 0600: a state folder is made private (0700, with
    STATE_ROOT above it), the facts folder is made 0755 when missing (Ansible's own)."""
    for path in paths:
        if path.name == STATE_FILE:
            state_folder(path.parent)
        else:
            os.makedirs(path.parent, mode=0o755, exist_ok=True)
        write_atomic(path, text, PRIVATE_FILE)


def read(state_dir: str) -> dict | None:
    """The stage's state.json, or None when there is none; a file that is not a JSON object is
    refused by name (a damaged record must not pass for "never installed")."""
    path = Path(state_dir) / STATE_FILE
    if not present(path):
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"{path}: cannot be read ({getattr(e, 'strerror', None) or e})") from None
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        raise RecordError(f"{path}: not a JSON object; move it aside or restore it from {HISTORY_DIR}/")
    return record


def keep_history(text: str, state_dir: str, keep: int = HISTORY_KEEP) -> Path | None:
    """Keep TEXT (a new state.json) as history/<UTC time>.json and drop all but the newest KEEP."""
    if keep <= 0:
        return None
    folder = state_folder(Path(state_dir) / HISTORY_DIR)
    ns = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(ns // 1_000_000_000)) + f".{ns % 1_000_000_000:09d}Z"
    path = folder / f"{stamp}.json"
    write_atomic(path, text, PRIVATE_FILE)
    for old in sorted(p for p in folder.glob("*.json") if not p.is_symlink())[:-keep]:
        old.unlink(missing_ok=True)
    return path


def store(
    stage: str,
    record: Any,
    state_dir: str | None,
    fact_dir: str | None = FACT_DIR,
    history: int = HISTORY_KEEP,
    dry_run: bool = False,
) -> list[Path]:
    """Write the record where it is not yet (state.json, and the fact unless FACT_DIR is None),
    keeping a new state.json in the history; the files written (DRY_RUN: to be written)."""
    text, stale = pending(stage, record, state_dir, fact_dir)
    if stale and not dry_run:
        write(text, stale)
        if state_dir and Path(state_dir) / STATE_FILE in stale:
            keep_history(text, state_dir, history)
    return stale
