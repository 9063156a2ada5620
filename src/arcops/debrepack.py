"""Repack .debs whose maintainer scripts call run-parts with several directories.

For each package: read its control archive, split every multi-directory run-parts call
(runparts_split), and when something changed rebuild it with dpkg-deb under the same name,
version and architecture, with a control field that marks it repacked and names the
original's sha256. A package that needs no change is copied byte for byte. Each output gets
a report beside it (OUT.deb.debrepack.json), which is also how a re-run knows the work is done.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .checksum import sha256_file
from .debs import DebError, check_data, control_fields, control_files, members
from .outputs import OutputError, output_dir, write_atomic
from .runparts_split import rewrite
from .shellscan import ShellSyntaxError

MARKER_FIELD = "Arcops-Repacked"
MAINTAINER_SCRIPTS = ("preinst", "postinst", "prerm", "postrm", "config")
REPORT_SUFFIX = ".debrepack.json"
# Format of the report and marker; bump when the rewrite changes, so old outputs are redone.
REPACK_FORMAT = 1


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


def _check_syntax(script: Path) -> None:
    shell = "bash" if b"bash" in script.read_bytes().split(b"\n", 1)[0] else "sh"
    _run([shell, "-n", str(script)], f"{script.name}: the rewritten script does not parse")


def _data_compressor(deb: Path) -> str:
    data = next((m for m in members(deb) if m.startswith("data.tar")), "data.tar.xz")
    return {".xz": "xz", ".gz": "gzip", ".zst": "zstd", ".tar": "none"}.get(Path(data).suffix, "xz")


def _marker(source_sha256: str, changes: int) -> str:
    return f"format {REPACK_FORMAT}; {changes} run-parts call(s) split; source sha256 {source_sha256}"


def _rewrite_scripts(deb: Path) -> tuple[dict[str, bytes], dict[str, list[dict]]]:
    """(new script bytes, changes) per maintainer script that changed. Scripts are read as bytes
    and decoded with surrogateescape: text that is not UTF-8 passes through unchanged."""
    try:
        control = control_files(deb)
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
    return new, changed


def _replace_file(path: Path, data: bytes) -> None:
    """Write a fresh file at path: whatever stood there (a link above all) is removed, not followed."""
    if path.is_symlink() or path.exists():
        if path.is_dir() and not path.is_symlink():
            raise RepackError(f"{path}: is a folder, expected a file")
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _add_marker(control: Path, value: str) -> None:
    text = control.read_bytes().decode("utf-8", "surrogateescape")
    lines = [ln for ln in text.splitlines() if not ln.startswith(f"{MARKER_FIELD}:")]
    new = "\n".join(lines) + f"\n{MARKER_FIELD}: {value}\n"
    _replace_file(control, new.encode("utf-8", "surrogateescape"))
    control.chmod(0o644)


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
    unpacked_bytes: int = 0


def _plan(deb: Path, outdir: Path) -> _Plan:
    fields = _identity(deb)
    source_sha256 = sha256_file(deb)
    plan = _Plan(deb, fields, source_sha256, previous_report(outdir / deb.name, source_sha256))
    if plan.previous is None:
        plan.new_scripts, plan.changes = _rewrite_scripts(deb)
        try:
            # Copied unchanged, it must at least unpack; repacked, its tree must fit.
            plan.unpacked_bytes = check_data(deb)
        except DebError as e:
            raise RepackError(str(e)) from e
    return plan


def _check_room(plans: list[_Plan], outdir: Path) -> None:
    """A repack unpacks one tree at a time and writes each output: all of it must fit."""
    pending = [p for p in plans if p.previous is None]
    if not pending:
        return
    tree = max((p.unpacked_bytes for p in pending if p.changes), default=0)
    need = tree + sum(p.deb.stat().st_size for p in pending)
    free = shutil.disk_usage(outdir if outdir.exists() else outdir.parent).free
    if need > free:
        raise RepackError(
            f"{outdir}: needs {need / 2**20:.1f} MiB free to unpack and rebuild the packages,"
            f" has {free / 2**20:.1f} MiB"
        )


def repack(deb: str | Path, outdir: str | Path, compressor: str | None = None) -> dict:
    """Repack (or copy) one .deb into OUTDIR; returns its report. Skips work already done."""
    return repack_all([deb], outdir, compressor)[0]


def _write(plan: _Plan, outdir: Path, compressor: str | None) -> dict:
    if plan.previous is not None:
        return plan.previous
    deb, changes = plan.deb, plan.changes
    output = outdir / deb.name
    marker = _marker(plan.source_sha256, sum(len(v) for v in changes.values())) if changes else ""
    with tempfile.TemporaryDirectory(prefix="debrepack-", dir=outdir) as tmp:
        partial = Path(tmp) / deb.name
        if changes:
            tree = Path(tmp) / "tree"
            _run(["dpkg-deb", "--raw-extract", str(deb), str(tree)], f"{deb}: cannot unpack it")
            for name, data in plan.new_scripts.items():
                _replace_file(tree / "DEBIAN" / name, data)
                _check_syntax(tree / "DEBIAN" / name)
            _add_marker(tree / "DEBIAN" / "control", marker)
            # Level 1: a repacked package is installed once on this box; at dpkg-deb's default
            # level a kernel package takes minutes to compress.
            build = [
                "dpkg-deb",
                f"-Z{compressor or _data_compressor(deb)}",
                "-z1",
                "--build",
                str(tree),
                str(partial),
            ]
            if os.geteuid() != 0:
                build.insert(1, "--root-owner-group")  # raw-extract kept no owners without root
            _run(build, f"{deb}: dpkg-deb could not rebuild it")
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
    except ValueError:
        return None
    same_input = report.get("source_sha256") == source_sha256 and report.get("format") == REPACK_FORMAT
    intact = same_input and report.get("sha256") == sha256_file(output)
    return {**report, "done_before": True} if intact else None


def repack_all(debs: list[str | Path], outdir: str | Path, compressor: str | None = None) -> list[dict]:
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
    return [_write(plan, out, compressor) for plan in plans]
