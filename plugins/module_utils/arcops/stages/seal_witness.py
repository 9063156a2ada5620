"""What a stage's run left on the box, read back from the box itself: files by sha256 (secret
files by an HMAC with the box's key), mode and owner; dpkg packages by version and selection;
systemd units by state; users; the running kernel; the GPUs' driver and loaded GuC; containers
by id and image. seal.py compares a seal's witness with a new read.

Stdlib only: it runs on the box inside the arcops_seal module.
"""

from __future__ import annotations

import glob
import grp
import hashlib
import hmac
import os
import pwd
import stat
import subprocess
from pathlib import Path
from typing import Any

from ..box import facts
from ..common.checksum import sha256_file
from ..common.sysroot import SysRoot
from ..vllm.docker_api import DockerError, Engine

DPKG_STATUS = "/var/lib/dpkg/status"
KINDS = ("files", "secret_files", "packages", "units", "users", "kernel", "gpus", "containers")


class SealError(ValueError):
    """A witness spec that cannot be read: unknown kind, wrong type."""


def _file(path: str) -> str:
    try:
        st = os.lstat(path)
    except OSError:
        return "missing"
    owner = f"{st.st_mode & 0o7777:04o} {st.st_uid}:{st.st_gid}"
    if stat.S_ISLNK(st.st_mode):
        return f"link {os.readlink(path)}"
    if stat.S_ISDIR(st.st_mode):
        return f"dir {owner}"
    if not stat.S_ISREG(st.st_mode):  # a FIFO or device is never opened: reading it could block
        return f"not a file (mode {st.st_mode:o}) {owner}"
    try:
        return f"{sha256_file(path)} {owner}"
    except OSError as e:
        return f"unreadable ({e.strerror})"


def is_regular(path: str | Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_secret_files(paths: list[str], key: bytes | None) -> dict[str, str]:
    """Files that hold a secret (a key file): an HMAC of the content with the box's key, never
    a plain sha256 that a guess could be checked against; mode and owner as for files."""
    out: dict[str, str] = {}
    for path in paths:
        seen = _file(path)
        if seen.startswith(("missing", "link", "dir", "not a file", "unreadable")):
            out[path] = seen
            continue
        if key is None:
            out[path] = "unreadable (no seal key on the box)"
            continue
        mac = hmac.new(key, digestmod=hashlib.sha256)
        try:
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 16), b""):
                    mac.update(block)
        except OSError as e:
            out[path] = f"unreadable ({e.strerror})"
            continue
        out[path] = f"hmac:{mac.hexdigest()} {seen.split(' ', 1)[1]}"
    return out


def read_files(patterns: list[str]) -> dict[str, str]:
    """Each path (a glob pattern names every match; no match is recorded as missing)."""
    out: dict[str, str] = {}
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        for path in matches or [pattern]:
            out[path] = _file(path)
    return out


def read_packages(names: list[str], status_file: str = DPKG_STATUS) -> dict[str, str]:
    """'VERSION SELECTION' per package from dpkg's status file (one streaming pass), or
    'not installed'."""
    wanted = set(names)
    found: dict[str, str] = {}
    name = version = status = None

    def flush() -> None:
        if name in wanted and status and status.endswith(" installed"):
            found[name] = f"{version} {status.split()[0]}"

    if not is_regular(status_file):
        return {n: "not installed" for n in names}
    try:
        with open(status_file, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line == "\n":
                    flush()
                    name = version = status = None
                elif line.startswith("Package: "):
                    name = line[9:].strip()
                elif line.startswith("Status: "):
                    status = line[8:].strip()
                elif line.startswith("Version: "):
                    version = line[9:].strip()
            flush()
    except OSError:
        pass
    return {n: found.get(n, "not installed") for n in names}


def read_units(names: list[str]) -> dict[str, str]:
    """'ACTIVE ENABLED' per unit, from one systemctl call."""
    if not names:
        return {}
    try:
        done = subprocess.run(
            ["systemctl", "show", "--property=Id,ActiveState,UnitFileState", "--", *names],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return {n: f"unreadable ({e})" for n in names}
    blocks = [b for b in done.stdout.split("\n\n") if b.strip()]
    out = {}
    for unit, block in zip(names, blocks + [""] * len(names), strict=False):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        out[unit] = f"{props.get('ActiveState', '?')} {props.get('UnitFileState', '') or '-'}"
    return out


def read_users(names: list[str]) -> dict[str, str]:
    """'UID:GID HOME SHELL groups=a,b' per user, or 'missing'."""
    out = {}
    for name in names:
        try:
            p = pwd.getpwnam(name)
        except KeyError:
            out[name] = "missing"
            continue
        groups = sorted(g.gr_name for g in grp.getgrall() if name in g.gr_mem)
        out[name] = f"{p.pw_uid}:{p.pw_gid} {p.pw_dir} {p.pw_shell} groups={','.join(groups)}"
    return out


def read_kernel(_unused: Any = None) -> str:
    return os.uname().release


def read_gpus(root: str) -> list[dict]:
    """Every Arc GPU's address, driver, render node, loaded GuC and xe's job timeout per engine
    class (set at boot by arcops' udev rule; a boot that did not set it is no converged box)."""
    found = facts.collect(SysRoot(root), read_journal=False)["gpus"]
    keep = ("address", "model", "driver", "render", "guc_loaded")
    return [
        {
            **{k: g.get(k) for k in keep},
            "job_timeout_ms": {c: t.get("job_timeout_ms") for c, t in (g.get("job_timeouts") or {}).items()},
        }
        for g in found
        if g.get("model")
    ]


def read_containers(spec: dict) -> dict[str, str]:
    """'CONTAINER_ID IMAGE_ID' per container name, through the Docker Engine API."""
    names = spec.get("names") or []
    try:
        engine = Engine(spec.get("docker_host"), timeout=15)
        out = {}
        for name in names:
            info = engine.inspect(name)
            out[name] = "missing" if info is None else f"{info.get('Id')} {info.get('Image')}"
        return out
    except (DockerError, OSError) as e:
        return {n: f"unreadable ({e})" for n in names}


def _check_spec(witness: Any) -> dict:
    if not isinstance(witness, dict):
        raise SealError(f"witness: must be a mapping, got {type(witness).__name__}")
    unknown = sorted(set(witness) - set(KINDS))
    if unknown:
        raise SealError(f"witness: unknown kind(s) {', '.join(unknown)} (known: {', '.join(KINDS)})")
    for kind in ("files", "secret_files", "packages", "units", "users"):
        value = witness.get(kind, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise SealError(f"witness.{kind}: must be a list of names")
    if "gpus" in witness and not isinstance(witness["gpus"], str):
        raise SealError("witness.gpus: must be the root to read GPUs under (a path)")
    if "containers" in witness and not isinstance(witness["containers"], dict):
        raise SealError("witness.containers: must be a mapping with names and docker_host")
    return witness


def read(witness: Any, key: bytes | None = None) -> dict:
    """Read the box for every kind the witness spec names (KEY: the box's seal key, for the
    secret files)."""
    spec = _check_spec(witness)
    readers = {
        "files": read_files,
        "secret_files": lambda paths: read_secret_files(paths, key),
        "packages": read_packages,
        "units": read_units,
        "users": read_users,
        "kernel": read_kernel,
        "gpus": read_gpus,
        "containers": read_containers,
    }
    out: dict[str, Any] = {"spec": spec}
    for kind in KINDS:
        if kind in spec and spec[kind] not in (None, False, "", [], {}):
            out[kind] = readers[kind](spec[kind])
    return out
