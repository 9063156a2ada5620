"""debrepack on real packages: the kernel's own bindeb-pkg output (tinyconfig build of Debian's
linux-source-7.2), Debian's own kernel package (one hook directory: left alone), and packages
built here with Ubuntu's template scripts."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from arcops import cli
from arcops.common.checksum import sha256_file
from arcops.kernel.debrepack import MARKER_FIELD, RepackError, repack, repack_all
from arcops.kernel.debs import layout, members

from .helpers.debian_mirror import MirrorUnreachable, fetch_deb, unreachable
from .helpers.kernel_debs import tiny_packages

SCRIPTS = Path(__file__).parent / "fixtures" / "maintscripts"


def _field(deb: Path, name: str) -> str:
    return subprocess.run(
        ["dpkg-deb", "--field", str(deb), name], capture_output=True, text=True, check=True
    ).stdout.strip()


def _contents(deb: Path) -> list[str]:
    listing = subprocess.run(
        ["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=True
    ).stdout
    return sorted(" ".join(line.split()[:2] + line.split()[5:]) for line in listing.splitlines())


@pytest.fixture
def ubuntu_style_deb(tmp_path) -> Path:
    """A package with Ubuntu's mainline template scripts (trigger file + if-form), built here."""
    tree = tmp_path / "pkg"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "boot").mkdir()
    (tree / "boot" / "vmlinuz-7.2.0-070200-generic").write_bytes(b"\0" * 1024)
    (tree / "DEBIAN" / "control").write_text(
        "Package: linux-image-unsigned-7.2.0-070200-generic\nVersion: 7.2.0-070200.202611301200\n"
        "Architecture: amd64\nMaintainer: Kernel <kernel@example.invalid>\nDescription: Linux kernel image\n"
    )
    for name in ("postinst", "postrm"):
        shutil.copy(SCRIPTS / f"ubuntu-mainline.{name}", tree / "DEBIAN" / name)
        (tree / "DEBIAN" / name).chmod(0o755)
    deb = tmp_path / "linux-image-unsigned-7.2.0-070200-generic_7.2.0-070200.202611301200_amd64.deb"
    subprocess.run(["dpkg-deb", "-Zxz", "--build", str(tree), str(deb)], check=True, capture_output=True)
    return deb


def test_ubuntu_template_package_is_repacked_and_marked(ubuntu_style_deb, tmp_path):
    out = tmp_path / "out"
    report = repack(ubuntu_style_deb, out)
    output = Path(report["output"])
    assert report["status"] == "repacked" and not report["done_before"]
    assert sorted(report["changes"]) == ["postinst", "postrm"]
    assert report["changes"]["postinst"][0]["in_heredoc"] and report["changes"]["postinst"][0]["line"] == 25
    # Same identity, same files; marked with the source's sha256; compression kept.
    for field in ("Package", "Version", "Architecture"):
        assert _field(output, field) == _field(ubuntu_style_deb, field)
    assert _field(output, MARKER_FIELD) == report["marker"]
    assert report["marker"].endswith(f"; source sha256 {sha256_file(ubuntu_style_deb)}")
    assert _contents(output) == _contents(ubuntu_style_deb)
    assert members(output) == ["debian-binary", "control.tar.xz", "data.tar.xz"]
    assert Path(str(output) + ".debrepack.json").is_file()


def test_the_control_archive_is_read_once(ubuntu_style_deb, tmp_path, monkeypatch):
    from arcops.kernel import debs

    calls = []
    real = debs._dpkg_deb

    def counted(args, deb, **kwargs):
        calls.append(args)
        return real(args, deb, **kwargs)

    monkeypatch.setattr(debs, "_dpkg_deb", counted)
    assert repack(ubuntu_style_deb, tmp_path / "out")["status"] == "repacked"
    assert calls.count(["--ctrl-tarfile"]) == 1


def test_second_run_does_nothing(ubuntu_style_deb, tmp_path):
    first = repack(ubuntu_style_deb, tmp_path / "out")
    mtime = Path(first["output"]).stat().st_mtime_ns
    again = repack(ubuntu_style_deb, tmp_path / "out")
    assert again["done_before"] and again["sha256"] == first["sha256"]
    assert Path(first["output"]).stat().st_mtime_ns == mtime


def test_tampered_output_is_redone(ubuntu_style_deb, tmp_path):
    first = repack(ubuntu_style_deb, tmp_path / "out")
    Path(first["output"]).write_bytes(b"garbage")
    again = repack(ubuntu_style_deb, tmp_path / "out")
    assert not again["done_before"] and sha256_file(again["output"]) == again["sha256"]


def test_not_a_deb_is_a_clear_error_and_nothing_is_written(ubuntu_style_deb, tmp_path):
    bogus = tmp_path / "linux-image-broken_1_amd64.deb"
    bogus.write_text("not a package\n")
    with pytest.raises(RepackError, match=r"linux-image-broken_1_amd64\.deb: not a valid \.deb"):
        repack_all([ubuntu_style_deb, bogus], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(RepackError, match="no such file"):
        repack_all([tmp_path / "missing.deb"], tmp_path / "out")


def test_cli_reports_and_fails_clearly(ubuntu_style_deb, tmp_path, capsys):
    assert cli.main(["stack", "debrepack", str(ubuntu_style_deb), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "repacked, 2 run-parts call(s) split in postinst, postrm" in out
    assert "postinst:25 (here-document)" in out
    bogus = tmp_path / "x.deb"
    bogus.write_text("x")
    assert cli.main(["stack", "debrepack", str(bogus), "-o", str(tmp_path / "out")]) == 2
    assert "not a valid .deb" in capsys.readouterr().err


def test_debian_kernel_package_needs_no_change_and_is_copied_unchanged(tmp_path):
    try:
        deb = fetch_deb("bookworm", "main", "linux-image-6.1.0-47-cloud-amd64", arch="amd64")
    except MirrorUnreachable as e:
        unreachable(e)
    report = repack(deb, tmp_path / "out")
    assert report["status"] == "unchanged" and report["changes"] == {}
    assert sha256_file(report["output"]) == sha256_file(deb)


def test_bindeb_pkg_kernel_is_repacked(tmp_path):
    """The real thing: `make bindeb-pkg` of linux-source-7.2 (built once, cached)."""
    try:
        deb, libc = tiny_packages()
    except MirrorUnreachable as e:
        unreachable(e)
    # Its linux-libc-dev has no maintainer scripts: copied as it is.
    unchanged = repack(libc, tmp_path / "out")
    assert unchanged["status"] == "unchanged" and sha256_file(unchanged["output"]) == sha256_file(libc)
    report = repack(deb, tmp_path / "out")
    assert report["status"] == "repacked"
    assert set(report["changes"]) >= {"postinst"}
    for changes in report["changes"].values():
        assert all(
            "$hookdirs" in c["before"] and "for arcops_dir in $hookdirs" in c["after"] for c in changes
        )
    output = Path(report["output"])
    assert _field(output, "Package") == _field(deb, "Package")
    assert _contents(output) == _contents(deb)
    control = tmp_path / "control"
    subprocess.run(["dpkg-deb", "--control", str(output), str(control)], check=True)
    for script in report["changes"]:
        subprocess.run(["dash", "-n", str(control / script)], check=True)


def _member_bytes(deb: Path, prefix: str) -> bytes:
    member = next(m for m in layout(deb) if m.name.startswith(prefix))
    with open(deb, "rb") as f:
        f.seek(member.offset)
        return f.read(member.size)


@pytest.mark.parametrize("compression", ["xz", "zstd", "gzip", "none"])
def test_only_the_control_archive_changes(ubuntu_style_deb, tmp_path, compression):
    """The data archive is the input's, byte for byte; the same input gives the same output;
    the scripts keep their mode and owner; dpkg reads the result (zstd control: written as xz)."""
    tree = tmp_path / "tree"
    subprocess.run(["dpkg-deb", "--raw-extract", str(ubuntu_style_deb), str(tree)], check=True)
    deb = tmp_path / f"in-{compression}" / ubuntu_style_deb.name
    deb.parent.mkdir()
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", f"-Z{compression}", "--build", str(tree), str(deb)],
        check=True,
        capture_output=True,
    )
    first, second = repack(deb, tmp_path / "a"), repack(deb, tmp_path / "b")
    output = Path(first["output"])
    assert first["status"] == "repacked" and first["sha256"] == second["sha256"]
    assert _member_bytes(output, "data.tar") == _member_bytes(deb, "data.tar")
    control = {
        "xz": "control.tar.xz",
        "zstd": "control.tar.xz",
        "gzip": "control.tar.gz",
        "none": "control.tar",
    }
    assert members(output)[:2] == ["debian-binary", control[compression]]
    assert _contents(output) == _contents(deb)
    listing = subprocess.run(
        ["dpkg-deb", "--ctrl-tarfile", str(output)], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(listing)) as tar:
        postinst = tar.getmember("./postinst")
    assert (postinst.mode, postinst.uid, postinst.gid) == (0o755, 0, 0)
    assert _field(output, MARKER_FIELD).startswith("format 2; 2 run-parts call(s) split")
