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
from pathlib import Path

from .checksum import sha256_file
from .debs import DebError, control_fields, members
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


def _is_script(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(64)
    return path.name in MAINTAINER_SCRIPTS and head.startswith(b"#!") and b"sh" in head.split(b"\n", 1)[0]


def _check_syntax(script: Path) -> None:
    shell = "bash" if b"bash" in script.read_bytes().split(b"\n", 1)[0] else "sh"
    _run([shell, "-n", str(script)], f"{script.name}: the rewritten script does not parse")


def _data_compressor(deb: Path) -> str:
    data = next((m for m in members(deb) if m.startswith("data.tar")), "data.tar.xz")
    return {".xz": "xz", ".gz": "gzip", ".zst": "zstd", ".tar": "none"}.get(Path(data).suffix, "xz")


def _marker(source_sha256: str, changes: int) -> str:
    return f"format {REPACK_FORMAT}; {changes} run-parts call(s) split; source sha256 {source_sha256}"


def _rewrite_scripts(control_dir: Path) -> dict[str, list[dict]]:
    changed: dict[str, list[dict]] = {}
    for script in sorted(control_dir.iterdir()):
        if not _is_script(script):
            continue
        try:
            new_text, changes = rewrite(script.read_text())
        except ShellSyntaxError as e:
            raise RepackError(f"{script.name}: {e}") from e
        if changes:
            script.write_text(new_text)
            _check_syntax(script)
            changed[script.name] = [c.as_dict() for c in changes]
    return changed


def _add_marker(control: Path, value: str) -> None:
    lines = [ln for ln in control.read_text().splitlines() if not ln.startswith(f"{MARKER_FIELD}:")]
    control.write_text("\n".join(lines) + f"\n{MARKER_FIELD}: {value}\n")


def _identity(deb: Path) -> dict[str, str]:
    """Package, Version and Architecture of a .deb, or a RepackError saying why it is not one."""
    if not deb.is_file():
        raise RepackError(f"{deb}: no such file")
    try:
        return control_fields(deb, "Package", "Version", "Architecture")
    except DebError as e:
        raise RepackError(str(e)) from e


def repack(deb: str | Path, outdir: str | Path, compressor: str | None = None) -> dict:
    """Repack (or copy) one .deb into OUTDIR; returns its report. Skips work already done."""
    return _repack(Path(deb), _identity(Path(deb)), Path(outdir), compressor)


def _repack(deb: Path, fields: dict[str, str], outdir: Path, compressor: str | None) -> dict:
    source_sha256 = sha256_file(deb)
    output = outdir / deb.name
    previous = previous_report(output, source_sha256)
    if previous is not None:
        return previous

    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="debrepack-", dir=outdir) as tmp:
        control_dir = Path(tmp) / "control"
        _run(["dpkg-deb", "--control", str(deb), str(control_dir)], f"{deb}: cannot extract its control data")
        changes = _rewrite_scripts(control_dir)
        marker = _marker(source_sha256, sum(len(v) for v in changes.values())) if changes else ""
        partial = Path(tmp) / deb.name
        if changes:
            tree = Path(tmp) / "tree"
            _run(["dpkg-deb", "--raw-extract", str(deb), str(tree)], f"{deb}: cannot unpack it")
            for name in changes:
                shutil.copy2(control_dir / name, tree / "DEBIAN" / name)
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
            shutil.copy2(deb, partial)
        os.replace(partial, output)

    report = {
        "input": str(deb),
        "output": str(output),
        "package": fields["Package"],
        "version": fields["Version"],
        "architecture": fields["Architecture"],
        "status": "repacked" if changes else "unchanged",
        "format": REPACK_FORMAT,
        "source_sha256": source_sha256,
        "sha256": sha256_file(output),
        "marker": marker,  # the Arcops-Repacked field dpkg will show once it is installed
        "changes": changes,
    }
    report_path(output).write_text(json.dumps(report, indent=2) + "\n")
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
    """Repack several packages; every input is checked to be a .deb before any is written."""
    checked = [(Path(deb), _identity(Path(deb))) for deb in debs]
    return [_repack(deb, fields, Path(outdir), compressor) for deb, fields in checked]
