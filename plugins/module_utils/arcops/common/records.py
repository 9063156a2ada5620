"""Where each stage's record lives on a box, its one shape, and how it is read and written: one
place for all.

A stage's record is a JSON object in one shape (SCHEMA): {"schema": 1, "stage": <stage>, ...}, the
fields in COMMON_FIELDS meaning the same in every stage, and the stage's own fields beside them.
It is stamped here on write, and read back here through upgrade(), which turns a record of an
earlier arcops into this shape and refuses one of a later arcops or of the wrong shape by name.

It is kept in the stage's state folder (state.json, where the stage keeps what it needs for a
rollback) and published as an Ansible local fact (FACT_DIR/<file>, read back as
ansible_local.<name>). The status summary, a fleet status and the metrics read the published
copies (read_published); arcops_record reads state.json (read), and writes it and the fact in
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

from .inputs import InputError, read_text
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


# The shape's version: a record without one was written by arcops 1.0 (format 0, see upgrade()).
SCHEMA = 1
# The fields every stage's record may carry, with one meaning and one type everywhere. A stage's
# own fields (a build, a spec hash, a verdict) sit beside them.
COMMON_FIELDS: dict[str, type] = {
    "schema": int,  # the shape's version (SCHEMA)
    "stage": str,  # the stage that wrote it (STAGES)
    "installed": bool,  # the stage's change is on the box and verified
    "rolled_back": bool,  # tasks_from: rollback put back what was there before
    "target": dict,  # what the stage installs (packages, kernel, firmware)
    "previous": dict,  # what was there before it: what a rollback restores
    "endpoint": dict,  # what the verify stage asks (serving stages; {} while off)
}
# Format 0's fields that this format drops: vllm_service's earlier deployment (read by nothing: a
# fleet rollback applies the previous release's variables again) and verify's own format number.
_DROPPED = {"vllm_service": "previous", "verify": "format"}
# The largest record file read: records are a few kB; a bigger one is not a record.
RECORD_MAX = 4 * 2**20


class RecordError(ValueError):
    """A record that cannot be written or read: unknown stage, not an object, the wrong shape, a
    folder in the way."""


def _check_stage(stage: str) -> None:
    if stage not in STAGES:
        raise RecordError(f"stage: {stage!r} is not one of {', '.join(STAGES)}")


def _is(value: Any, kind: type) -> bool:
    """isinstance, but a bool is no int here (True is not format 1)."""
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def shape_errors(stage: str, record: dict) -> list[str]:
    """What makes RECORD (a mapping) other than a SCHEMA record of STAGE: one line per field."""
    out = []
    for name, kind in COMMON_FIELDS.items():
        value = record.get(name)
        if value is not None and not _is(value, kind):
            out.append(f"{name}: must be {kind.__name__}, got {type(value).__name__}")
    if record.get("stage") not in (None, stage):
        out.append(f"stage: {record.get('stage')!r} in a record of {stage}")
    if _is(record.get("schema"), int) and record["schema"] != SCHEMA:
        out.append(f"schema: {record['schema']}, this arcops reads {SCHEMA}")
    return out


def stamped(stage: str, record: Any) -> dict:
    """RECORD as written: the stage's fields with schema and stage set; RecordError when it is not
    a mapping or a common field has the wrong type."""
    _check_stage(stage)
    if not isinstance(record, dict):
        raise RecordError(f"record: must be a mapping, got {type(record).__name__}")
    errors = shape_errors(stage, record)
    if errors:
        raise RecordError(f"record of {stage}: {'; '.join(errors)}")
    return {**record, "schema": SCHEMA, "stage": stage}


def upgrade(stage: str, data: Any, where: object) -> dict:
    """A record as read from WHERE, in this shape. Format 0 (arcops 1.0, no schema field) had
    preflight's fields under "preflight", and the fields in _DROPPED; both are brought to this
    shape. A later format or the wrong shape is refused by name."""
    if not isinstance(data, dict):
        raise RecordError(f"{where}: not a JSON object; move it aside or restore it from {HISTORY_DIR}/")
    schema = data.get("schema", 0)
    if _is(schema, int) and schema > SCHEMA:
        raise RecordError(
            f"{where}: written by a later arcops (record format {schema}; this one reads {SCHEMA}):"
            " run the arcops that wrote it"
        )
    if "schema" not in data:
        if stage == "preflight" and isinstance(data.get("preflight"), dict):
            data = data["preflight"]
        elif stage in _DROPPED:
            data = {k: v for k, v in data.items() if k != _DROPPED[stage]}
        data = {**data, "schema": SCHEMA, "stage": stage}
    errors = shape_errors(stage, data)
    if errors or "stage" not in data:
        raise RecordError(
            f"{where}: not a {stage} record ({'; '.join(errors) or 'no stage field'}); "
            f"move it aside or restore it from {HISTORY_DIR}/"
        )
    return data


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
    _check_stage(stage)
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
    """The text to write (the record stamped: schema and stage) and the files that do not hold it yet."""
    text = render(stamped(stage, record))
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


def read(stage: str, state_dir: str) -> dict | None:
    """The stage's state.json in this shape (upgrade), or None when there is none; a file that is
    not a record is refused by name (a damaged record must not pass for "never installed")."""
    _check_stage(stage)
    path = Path(state_dir) / STATE_FILE
    if not present(path):
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        text = ""  # not text: damaged, refused by name below like any other
    except OSError as e:
        raise RecordError(f"{path}: cannot be read ({e.strerror or e})") from None
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):  # cut short or damaged: refused by name below
        record = None
    return upgrade(stage, record, path)


def read_published(fact_dir: str | Path = FACT_DIR) -> dict[str, Any]:
    """Each stage's published record in this shape: a dict, None when the stage never ran, or the
    reason it is unreadable (one line). Status, fleet status, metrics, diag and verify read these."""
    out: dict[str, Any] = {}
    for stage, name in STAGES.items():
        path = Path(fact_dir) / name
        if not path.exists():
            out[stage] = None
            continue
        try:
            data = json.loads(read_text(path, "record", limit=RECORD_MAX))
            out[stage] = upgrade(stage, data, f"record {path}")
        except (InputError, RecordError) as e:
            out[stage] = str(e)
        except ValueError as e:
            out[stage] = f"record {path}: not JSON ({e})"
        except RecursionError:
            out[stage] = f"record {path}: nested too deeply to be a record"
    return out


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


def as_dict(value: Any) -> dict:
    """A record part as a mapping: anything else reads as empty (a record may be hand-edited)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    """A record part as a list: anything else reads as empty."""
    return value if isinstance(value, list) else []
