"""Repack .debs whose maintainer scripts call run-parts with several directories.

For each package: read its control archive, split every multi-directory run-parts call
(runparts_split), and when something changed write it again under the same name, version and
architecture with a new control archive only: the rewritten scripts and a control field that
marks it repacked and names the original's sha256. Every other ar member, the data archive
above all, is copied byte for byte (a kernel's modules are never decompressed or recompressed,
and dpkg installs the very files the kernel's builder shipped). The same input always gives the
same output bytes. A package that needs no change is copied whole. Each output gets a report
beside it (OUT.deb.debrepack.json), which is also how a re-run knows the work is done.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import lzma
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..common.checksum import sha256_file
from ..common.outputs import OutputError, output_dir, write_atomic
from .debs import (
    AR_HEADER,
    AR_MAGIC,
    DebError,
    Member,
    check_data,
    control_fields,
    control_files,
    control_tar,
    layout,
)
from .runparts_split import rewrite
from .shellscan import ShellSyntaxError

MARKER_FIELD = "Arcops-Repacked"
MAINTAINER_SCRIPTS = ("preinst", "postinst", "prerm", "postrm", "config")
REPORT_SUFFIX = ".debrepack.json"
# Format of the report and marker; bump when the rewrite changes, so old outputs are redone.
# 2: only the control archive is rebuilt; the data archive is the original's, byte for byte.
REPACK_FORMAT = 2
# The control archive is written with the original's compression where the standard library
# has it; zstd (Ubuntu's default) it does not, and dpkg reads any mix of xz and zstd members.
_CONTROL_COMPRESSION = {".xz": ".xz", ".gz": ".gz", ".tar": "", ".zst": ".xz"}


class RepackError(ValueError):
    """A package could not be repacked (the message says which and why)."""


def _run(argv: list[str], what: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RepackError(f"{what}: {proc.stderr.strip() or proc.stdout.strip() or 'failed'}")
    return proc


def report_path(output: Path) -> Path:
    return output.with_name(output.name + REPORT_SUFFIX)


def _is_script(name: str, data: bytes) -> bool:
    return name in MAINTAINER_SCRIPTS and data.startswith(b"#!") and b"sh" in data.split(b"\n", 1)[0]


def _check_syntax(name: str, script: bytes, work: Path) -> None:
    path = work / name
    path.write_bytes(script)
    shell = "bash" if b"bash" in script.split(b"\n", 1)[0] else "sh"
    _run([shell, "-n", str(path)], f"{name}: the rewritten script does not parse")


def _marker(source_sha256: str, changes: int) -> str:
    return f"format {REPACK_FORMAT}; {changes} run-parts call(s) split; source sha256 {source_sha256}"


def _rewrite_scripts(deb: Path, raw: bytes) -> tuple[dict[str, bytes], dict[str, list[dict]], bytes]:
    """(new script bytes, changes) per maintainer script that changed, and the control file, from
    the control tar RAW. Scripts are read as bytes and decoded with surrogateescape: text that
    is not UTF-8 passes through unchanged."""
    try:
        control = control_files(deb, raw)
    except DebError as e:
        raise RepackError(str(e)) from e
    new: dict[str, bytes] = {}
    changed: dict[str, list[dict]] = {}
    for name in sorted(control):
        if not _is_script(name, control[name]):
            continue
        try:
            text, changes = rewrite(control[name].decode("utf-8", "surrogateescape"))
        except ShellSyntaxError as e:
            raise RepackError(f"{deb}: {name}: {e}") from e
        if changes:
            new[name] = text.encode("utf-8", "surrogateescape")
            changed[name] = [c.as_dict() for c in changes]
    return new, changed, control.get("control", b"")


def _with_marker(control: bytes, value: str) -> bytes:
    text = control.decode("utf-8", "surrogateescape")
    lines = [ln for ln in text.splitlines() if not ln.startswith(f"{MARKER_FIELD}:")]
    return ("\n".join(lines) + f"\n{MARKER_FIELD}: {value}\n").encode("utf-8", "surrogateescape")


def _control_archive(raw: bytes, replaced: dict[str, bytes]) -> bytes:
    """The control tar with the replaced files' new contents; every member's name, mode, owner
    and mtime, and every other member, as in the original."""
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as src,
        tarfile.open(fileobj=out, mode="w:", format=tarfile.GNU_FORMAT) as dst,
    ):
        for info in src:
            data = replaced.get(info.name.removeprefix("./")) if info.isreg() else None
            if data is None:
                dst.addfile(info, src.extractfile(info) if info.isreg() else None)
            else:
                new = copy.copy(info)
                new.size = len(data)
                dst.addfile(new, io.BytesIO(data))
    return out.getvalue()


def _compress(tar: bytes, suffix: str) -> bytes:
    if suffix == ".xz":
        return lzma.compress(tar, format=lzma.FORMAT_XZ)
    if suffix == ".gz":
        return gzip.compress(tar, mtime=0)
    return tar


def _ar_member(name: str, data: bytes, like: bytes) -> bytes:
    """An ar member: its header keeps the original control header's mtime, owner and mode."""
    header = name.encode("ascii").ljust(16) + like[16:48] + str(len(data)).encode().ljust(10) + b"`\n"
    return header + data + (b"\n" if len(data) % 2 else b"")


def _copy_member(src, dst, member: Member) -> None:
    """One ar member of the original, header, data and pad byte, as it is."""
    src.seek(member.offset - AR_HEADER)
    left = AR_HEADER + member.size
    while left:
        chunk = src.read(min(left, 2**20))
        if not chunk:
            raise RepackError(f"{src.name}: changed while it was being repacked")
        dst.write(chunk)
        left -= len(chunk)
    if member.size % 2:
        dst.write(b"\n")


def _write_repacked(deb: Path, partial: Path, raw: bytes, replaced: dict[str, bytes]) -> None:
    """deb with a new control archive (its control tar RAW with the replaced files) and its other
    members copied as they are."""
    try:
        parts = layout(deb)
    except DebError as e:
        raise RepackError(str(e)) from e
    control = parts[1]
    suffix = _CONTROL_COMPRESSION.get(Path(control.name).suffix, ".xz")
    name = "control.tar" + suffix
    with open(deb, "rb") as src, open(partial, "wb") as dst:
        src.seek(control.offset - AR_HEADER)
        like = src.read(AR_HEADER)
        dst.write(AR_MAGIC)
        for member in parts:
            if member is control:
                dst.write(_ar_member(name, _compress(_control_archive(raw, replaced), suffix), like))
            else:
                _copy_member(src, dst, member)


def _identity(deb: Path) -> dict[str, str]:
    """Package, Version and Architecture of a .deb, or a RepackError saying why it is not one."""
    if not deb.is_file():
        raise RepackError(f"{deb}: no such file")
    try:
        return control_fields(deb, "Package", "Version", "Architecture")
    except DebError as e:
        raise RepackError(str(e)) from e


@dataclass
class _Plan:
    """What one input needs, decided before anything is written."""

    deb: Path
    fields: dict[str, str]
    source_sha256: str
    previous: dict | None  # an intact earlier result: nothing to do
    new_scripts: dict[str, bytes] = field(default_factory=dict)
    changes: dict[str, list[dict]] = field(default_factory=dict)
    control: bytes = b""  # the control file as read, for the marked copy
    control_tar: bytes = b""  # the control archive as read, rebuilt with the new scripts


def _plan(deb: Path, outdir: Path) -> _Plan:
    fields = _identity(deb)
    source_sha256 = sha256_file(deb)
    plan = _Plan(deb, fields, source_sha256, previous_report(outdir / deb.name, source_sha256))
    if plan.previous is None:
        try:
            plan.control_tar = control_tar(deb)
        except DebError as e:
            raise RepackError(str(e)) from e
        plan.new_scripts, plan.changes, plan.control = _rewrite_scripts(deb, plan.control_tar)
        try:
            # Its data archive is copied as it is, so it must at least unpack: a corrupt one is
            # refused here, before any output is written, not half-way through an install.
            check_data(deb)
        except DebError as e:
            raise RepackError(str(e)) from e
    return plan


def _check_room(plans: list[_Plan], outdir: Path) -> None:
    """Every output is about its input's size (only the small control archive changes): all of
    them must fit."""
    pending = [p for p in plans if p.previous is None]
    if not pending:
        return
    need = sum(p.deb.stat().st_size for p in pending) + 2**20
    free = shutil.disk_usage(outdir if outdir.exists() else outdir.parent).free
    if need > free:
        raise RepackError(
            f"{outdir}: needs {need / 2**20:.1f} MiB free to write the packages, has {free / 2**20:.1f} MiB"
        )


def repack(deb: str | Path, outdir: str | Path) -> dict:
    """Repack (or copy) one .deb into OUTDIR; returns its report. Skips work already done."""
    return repack_all([deb], outdir)[0]


def _write(plan: _Plan, outdir: Path) -> dict:
    if plan.previous is not None:
        return plan.previous
    deb, changes = plan.deb, plan.changes
    output = outdir / deb.name
    marker = _marker(plan.source_sha256, sum(len(v) for v in changes.values())) if changes else ""
    with tempfile.TemporaryDirectory(prefix="debrepack-", dir=outdir) as tmp:
        partial = Path(tmp) / deb.name
        if changes:
            for name, data in plan.new_scripts.items():
                _check_syntax(name, data, Path(tmp))
            replaced = {**plan.new_scripts, "control": _with_marker(plan.control, marker)}
            _write_repacked(deb, partial, plan.control_tar, replaced)
        else:
            shutil.copyfile(deb, partial)
        os.replace(partial, output)

    report = {
        "input": str(deb),
        "output": str(output),
        "package": plan.fields["Package"],
        "version": plan.fields["Version"],
        "architecture": plan.fields["Architecture"],
        "status": "repacked" if changes else "unchanged",
        "format": REPACK_FORMAT,
        "source_sha256": plan.source_sha256,
        "sha256": sha256_file(output),
        "marker": marker,  # the Arcops-Repacked field dpkg will show once it is installed
        "changes": changes,
    }
    write_atomic(report_path(output), json.dumps(report, indent=2) + "\n")
    return {**report, "done_before": False}


def previous_report(output: Path, source_sha256: str) -> dict | None:
    """The report of an earlier run for this very input, if its output is still intact."""
    path = report_path(output)
    if not (path.is_file() and output.is_file()):
        return None
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):  # damaged or cut short: unknown, so redo it
        return None
    if not isinstance(report, dict):
        return None
    same_input = report.get("source_sha256") == source_sha256 and report.get("format") == REPACK_FORMAT
    intact = same_input and report.get("sha256") == sha256_file(output)
    return {**report, "done_before": True} if intact else None


def repack_all(debs: list[str | Path], outdir: str | Path) -> list[dict]:
    """Repack several packages. Every input is read and every rewrite decided before the first
    output is written: a bad package among good ones leaves the output folder as it was."""
    paths = [Path(deb) for deb in debs]
    names = [p.name for p in paths]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise RepackError(f"several inputs are named {', '.join(dupes)}: their outputs would collide")
    try:
        out = output_dir(outdir, create=False)  # a bad output is refused before the work
        plans = [_plan(p, out) for p in paths]
        _check_room(plans, out)
        output_dir(out)
    except OutputError as e:
        raise RepackError(str(e)) from e
    return [_write(plan, out) for plan in plans]
