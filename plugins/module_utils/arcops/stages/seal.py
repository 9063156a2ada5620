"""A stage's seal: proof that a box is still exactly as a full, verified run of the stage left it.

A stage writes its seal (seal.json in its state folder) as the last step of a run that changed,
verified and recorded everything. The seal holds a sha256 of each input the run was given
(the role's variables, the small control-node files they name and the code that acted on them)
and a witness: what the run left on the box, read back from the box itself (files by sha256,
mode and owner; dpkg packages by version and selection; systemd units by state; users; the
running kernel; the GPUs' driver and loaded GuC; containers by id and image).

Inputs that are secrets (the role options marked no_log: an API key) are never hashed plainly:
their digests are HMACs keyed by a random key that lives only on the box (seal.key beside the
state folders, 0600), so neither a seal nor a log of one lets anybody check a guess.

A later run reads the box again. Same inputs and the same witness: the stage is converged and
ends after this one check, instead of re-asking the box task by task. Anything else (other
inputs, new code, a file edited, a package unheld, a unit stopped, another kernel) and the run
takes the full path, which repairs and re-verifies, and seals again.

Stdlib only: it runs on the box inside the arcops_seal module.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

from ..common import records
from ..common.outputs import PRIVATE_FILE, write_atomic
from .seal_witness import KINDS, SealError, is_regular, read

SEAL_FILE = "seal.json"
# The box's key for the secret inputs' HMACs, one per seals folder (the state folders' parent).
KEY_FILE = "seal.key"
FORMAT = 3
# The witness kinds, in the order they are read; each reads the box for the names given.


def _sha256(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def inputs_digest(inputs: Any) -> dict[str, str]:
    """A sha256 per input, two levels deep ("vars.intel_stack_guc_version", "code"), so a
    check can name what changed without any value being stored."""
    if not isinstance(inputs, dict):
        return {"": _sha256(inputs)}
    out = {}
    for key, value in inputs.items():
        if isinstance(value, dict) and value:
            out.update({f"{key}.{k}": _sha256(v) for k, v in value.items()})
        else:
            out[str(key)] = _sha256(value)
    return out


def present(secrets: Any) -> dict:
    """The secret inputs that are set (an empty key is no secret, and costs the box no read)."""
    if secrets in (None, ""):
        return {}
    if not isinstance(secrets, dict):
        raise SealError(f"secrets: must be a mapping of names to values, got {type(secrets).__name__}")
    return {str(k): v for k, v in secrets.items() if v not in (None, "", [], {})}


def key_path(state_dir: str) -> Path:
    return Path(state_dir).parent / KEY_FILE


def box_key(state_dir: str, create: bool = False) -> bytes | None:
    """The box's HMAC key for the seals beside STATE_DIR; made (0600, exclusively) when CREATE
    and missing. Anything but a regular file there is no key."""
    where = key_path(state_dir)
    if create and not os.path.lexists(where):
        records.state_folder(where.parent)
        try:
            fd = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE)
        except FileExistsError:
            pass  # made by another run in between: read it
        else:
            with os.fdopen(fd, "w") as f:
                f.write(os.urandom(32).hex() + "\n")
                f.flush()
                os.fsync(f.fileno())
    if not is_regular(where):
        return None
    try:
        text = where.read_text(encoding="ascii").strip()
        return bytes.fromhex(text) if len(text) == 64 else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def secrets_digest(secrets: dict, key: bytes) -> dict[str, str]:
    """An HMAC-SHA256 per secret input, keyed by the box's key."""
    out = {}
    for name, value in secrets.items():
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
        out[name] = hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()
    return out


def secrets_reasons(sealed: Any, secrets: Any, key: bytes | None) -> list[str]:
    """Which secret inputs differ from the sealed run's (by name, never by value)."""
    now = present(secrets)
    sealed = sealed if isinstance(sealed, dict) else {}
    digests = secrets_digest(now, key) if key is not None else {}
    changed = sorted(k for k in set(sealed) | set(now) if key is None or sealed.get(k) != digests.get(k))
    return [f"secret inputs differ from the sealed run: {', '.join(changed)}"] if changed else []


def make(inputs: Any, witness: Any, secrets: Any = None, key: bytes | None = None) -> dict:
    """The seal for these inputs, with the box read now; SECRETS (set ones only) as HMACs with
    KEY, the box's key (required when there are any)."""
    now = present(secrets)
    if now and key is None:
        raise SealError("secrets: the box's seal key is missing")
    digests = secrets_digest(now, key) if now and key is not None else {}
    witnessed = read(witness, key)
    return {"format": FORMAT, "inputs": inputs_digest(inputs), "secrets": digests, "witness": witnessed}


def path(state_dir: str) -> Path:
    return Path(state_dir) / SEAL_FILE


def load(state_dir: str) -> dict | None:
    """The stored seal, or None (none yet, not a regular file, or not one this version wrote)."""
    if not is_regular(path(state_dir)):
        return None
    try:
        seal = json.loads(path(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # damaged or cut short: no seal, so the stage runs
        return None
    if not isinstance(seal, dict) or seal.get("format") != FORMAT:
        return None
    if not all(isinstance(seal.get(k), dict) for k in ("inputs", "secrets", "witness")):
        return None
    if "spec" not in seal["witness"]:
        return None
    return seal


def _diff(kind: str, was: Any, now: Any) -> list[str]:
    if isinstance(was, dict) and isinstance(now, dict):
        return [
            f"{kind} {key}: {was.get(key, 'absent')} -> {now.get(key, 'absent')}"
            for key in sorted(set(was) | set(now))
            if was.get(key) != now.get(key)
        ]
    return [] if was == now else [f"{kind}: {json.dumps(was)} -> {json.dumps(now)}"]


def inputs_reasons(sealed: dict, inputs: Any) -> list[str]:
    """Which inputs differ from the sealed run's (by name, never by value)."""
    now = inputs_digest(inputs)
    changed = sorted(k for k in set(sealed) | set(now) if sealed.get(k) != now.get(k))
    if not changed:
        return []
    shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
    return [f"inputs differ from the sealed run: {shown}"]


def needs_key(secrets: Any, witness: Any) -> bool:
    """Whether a seal of these needs the box's key (secret inputs or secret files)."""
    return bool(present(secrets)) or bool(isinstance(witness, dict) and witness.get("secret_files"))


def witness_reasons(seal: dict, key: bytes | None = None) -> list[str]:
    """What on the box differs from the seal's witness, read now (KEY for its secret files)."""
    spec = seal["witness"]["spec"]
    if isinstance(spec, dict) and isinstance(seal["witness"].get("files"), dict):
        # A sealed file a glob no longer matches (deleted) is read, and reported, as missing.
        spec = {**spec, "files": [*spec.get("files", []), *seal["witness"]["files"]]}
    try:
        now = read(spec, key)
    except SealError as e:
        return [f"the seal's witness cannot be read ({e})"]
    reasons: list[str] = []
    for kind in KINDS:
        reasons += _diff(kind, seal["witness"].get(kind), now.get(kind))
    return reasons


def _no_seal(state_dir: str) -> list[str]:
    return [f"no seal in {state_dir} (no full run has finished here yet)"]


def check(state_dir: str, inputs: Any, secrets: Any = None) -> list[str]:
    """Why the box is not converged for these inputs; empty when it is."""
    seal = load(state_dir)
    if seal is None:
        return _no_seal(state_dir)
    return (
        inputs_reasons(seal["inputs"], inputs)
        or check_secrets(state_dir, secrets, seal)
        or witness_reasons(seal, _key_for(state_dir, seal))
    )


def _key_for(state_dir: str, seal: dict) -> bytes | None:
    """The box's key when the seal's witness has secret files (no read of it otherwise)."""
    return box_key(state_dir) if seal["witness"].get("secret_files") else None


def check_secrets(state_dir: str, secrets: Any, seal: dict | None = None) -> list[str]:
    """Only the secret inputs against the seal (the rest answered by a survey)."""
    seal = load(state_dir) if seal is None else seal
    if seal is None:
        return _no_seal(state_dir)
    now = present(secrets)
    key = box_key(state_dir) if now or seal["secrets"] else None
    return secrets_reasons(seal["secrets"], now, key)


def survey(seals_dir: str) -> dict:
    """Every stage's seal below SEALS_DIR (SEALS_DIR/<stage>/seal.json) with its witness read
    now: one read of the box that answers every stage's check of this run. Inputs are compared
    later, by ``check_surveyed``, where they are known (the control node)."""
    found = {}
    try:
        names = sorted(os.listdir(seals_dir))
    except OSError:
        names = []
    for name in names:
        state_dir = os.path.join(seals_dir, name)
        seal = load(state_dir)
        if seal is not None:
            found[state_dir] = {
                "inputs": seal["inputs"],
                "secrets": sorted(seal["secrets"]),  # names only: the HMACs stay on the box
                "drift": witness_reasons(seal, _key_for(state_dir, seal)),
            }
    return {"dir": os.path.normpath(seals_dir), "seals": found}


def covers(surveyed: Any, state_dir: str) -> bool:
    """Whether a survey answers for STATE_DIR (it read that folder's parent)."""
    return (
        isinstance(surveyed, dict)
        and isinstance(surveyed.get("seals"), dict)
        and surveyed.get("dir") == os.path.dirname(os.path.normpath(state_dir))
    )


def check_surveyed(surveyed: dict, state_dir: str, inputs: Any, secret_names: Any = ()) -> list[str]:
    """``check`` from a survey of this run (no second read of the box), but for the secret
    inputs' values: only their names are compared here; when they match and there are any, the
    caller asks the box (``check_secrets``), which alone holds the key."""
    entry = surveyed["seals"].get(os.path.normpath(state_dir))
    if not isinstance(entry, dict):
        return _no_seal(state_dir)
    sealed = sorted(entry.get("secrets") or [])
    names = sorted(secret_names or [])
    if sealed != names:
        shown = ", ".join(sorted(set(sealed) ^ set(names)))
        return inputs_reasons(entry.get("inputs") or {}, inputs) or [
            f"secret inputs differ from the sealed run: {shown}"
        ]
    return inputs_reasons(entry.get("inputs") or {}, inputs) or list(entry.get("drift") or [])


def render(seal: dict) -> str:
    return json.dumps(seal, indent=2, sort_keys=True) + "\n"


def differs(state_dir: str, seal: dict) -> bool:
    """Whether storing SEAL would change seal.json (anything but a regular file there does)."""
    if not is_regular(path(state_dir)) or not records.private(path(state_dir)):
        return True
    try:
        return path(state_dir).read_text(encoding="utf-8") != render(seal)
    except (OSError, UnicodeDecodeError):
        return True


def changes(state_dir: str, seal: dict) -> list[str]:
    """What storing SEAL changes against the stored one: input and secret names, witness
    differences (secret files by name only). What a write reports, so a run that re-seals
    says why."""
    old = load(state_dir)
    if old is None:
        return [f"no seal of this version in {state_dir}"]
    out = []
    for part in ("inputs", "secrets"):
        was, now = old[part], seal[part]
        names = sorted(k for k in set(was) | set(now) if was.get(k) != now.get(k))
        out += [f"{part} differ: {', '.join(names)}"] if names else []
    for kind in ("spec", *KINDS):
        was, now = old["witness"].get(kind), seal["witness"].get(kind)
        if kind == "secret_files" and was != now:
            out.append(f"secret_files differ: {', '.join(sorted(set(was or {}) | set(now or {})))}")
        elif kind != "secret_files":
            out += _diff(kind, was, now)
    return out


def write(state_dir: str, seal: dict) -> bool:
    """Store the seal; False when the same seal is there already."""
    if not differs(state_dir, seal):
        return False
    target = path(state_dir)
    records.state_folder(target.parent)
    write_atomic(target, render(seal), PRIVATE_FILE)
    return True


def remove(state_dir: str) -> bool:
    """Drop the seal (a rollback changed the box); False when there was none."""
    try:
        path(state_dir).unlink()
        return True
    except FileNotFoundError:
        return False
