"""debrepack on packages that are broken or hostile: each is refused with one line naming the
package and what is wrong, and nothing is written (above all, nothing outside the output folder)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from arcops import cli
from arcops.common.checksum import sha256_file
from arcops.kernel import debrepack, debs
from arcops.kernel.debrepack import RepackError, repack, repack_all

from .helpers import craft_deb
from .helpers.craft_deb import TWO_DIRS, file_entry, special_entry


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def victim(tmp_path) -> Path:
    """A file outside the output folder that a followed symlink would rewrite."""
    path = tmp_path / "elsewhere" / "victim.sh"
    path.parent.mkdir()
    path.write_bytes(TWO_DIRS)
    return path


def test_symlinked_maintainer_script_is_refused_and_its_target_untouched(tmp_path, victim):
    deb = craft_deb.deb(tmp_path / "linked.deb", [special_entry("postinst", tarfile.SYMTYPE, str(victim))])
    before = _tree(tmp_path)
    with pytest.raises(RepackError, match=r"linked\.deb: control member './postinst' is a symbolic link"):
        repack(deb, tmp_path / "out")
    assert victim.read_bytes() == TWO_DIRS
    assert _tree(tmp_path) == before  # not even the output folder was made


@pytest.mark.parametrize(
    ("kind", "target", "word"),
    [
        (tarfile.LNKTYPE, "./control", "hard link"),
        (tarfile.FIFOTYPE, "", "FIFO"),
        (tarfile.CHRTYPE, "", "device"),
        (tarfile.BLKTYPE, "", "device"),
        (tarfile.DIRTYPE, "", "folder"),
    ],
)
def test_maintainer_script_that_is_not_a_plain_file_is_refused(tmp_path, kind, target, word):
    deb = craft_deb.deb(tmp_path / "odd.deb", [special_entry("postinst", kind, target)])
    with pytest.raises(RepackError, match=f"control member './postinst' is a {word}"):
        repack(deb, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_nested_control_member_is_refused(tmp_path):
    deb = craft_deb.deb(tmp_path / "nested.deb", [file_entry("sub/postinst", TWO_DIRS)])
    with pytest.raises(RepackError, match="outside the archive's top folder"):
        repack(deb, tmp_path / "out")


@pytest.mark.parametrize("needs_change", [True, False])
def test_deb_cut_in_half_is_refused_not_copied(tmp_path, needs_change):
    good = craft_deb.deb(tmp_path / "good.deb", None if needs_change else [])
    cut = tmp_path / "cut.deb"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(RepackError, match=r"cut\.deb: (truncated|not a valid)"):
        repack(cut, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_trailing_bytes_after_the_last_member_are_refused(tmp_path):
    good = craft_deb.deb(tmp_path / "good.deb", [])
    padded = tmp_path / "padded.deb"
    padded.write_bytes(good.read_bytes() + b"garbage after the archive\n")
    with pytest.raises(RepackError, match=r"padded\.deb: not a valid \.deb: bytes after the last member"):
        repack(padded, tmp_path / "out")


def test_corrupt_data_archive_is_refused_not_copied_unchanged(tmp_path):
    data = bytearray(craft_deb.data_tar())
    data[len(data) // 2] ^= 0xFF  # a gzip CRC / inflate error, same size
    deb = craft_deb.deb(tmp_path / "corrupt.deb", [], data=bytes(data))
    with pytest.raises(RepackError, match=r"corrupt\.deb: corrupt data archive"):
        repack(deb, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("needs_change", [True, False])
def test_data_archive_claiming_more_than_the_limit_is_refused_before_unpacking(tmp_path, needs_change):
    bomb = craft_deb.data_bomb(debs.DATA_MAX_BYTES + 1)
    deb = craft_deb.deb(tmp_path / "bomb.deb", None if needs_change else [], data=bomb)
    with pytest.raises(RepackError, match=r"bomb\.deb: data archive unpacks to more than 17179869184 bytes"):
        repack(deb, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_data_archive_with_too_many_members_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(debs, "DATA_MAX_MEMBERS", 0)
    deb = craft_deb.deb(tmp_path / "many.deb")
    with pytest.raises(RepackError, match=r"many\.deb: data archive has more than 0 members"):
        repack(deb, tmp_path / "out")


def test_output_without_room_for_the_unpacked_tree_is_refused_before_writing(tmp_path, monkeypatch):
    deb = craft_deb.deb(tmp_path / "good.deb")
    full = shutil._ntuple_diskusage(total=10**9, used=10**9 - 10, free=10)
    monkeypatch.setattr(debrepack.shutil, "disk_usage", lambda path: full)
    with pytest.raises(RepackError, match=r"out: needs 1\.0 MiB free to write the packages, has 0\.0 MiB"):
        repack(deb, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_script_that_is_not_utf8_passes_through_byte_for_byte(tmp_path):
    script = b"#!/bin/sh\n# caf\xe9 \xff\xfe latin-1 comment\n" + TWO_DIRS.split(b"\n", 1)[1]
    deb = craft_deb.deb(tmp_path / "latin1.deb", [file_entry("postinst", script)])
    report = repack(deb, tmp_path / "out")
    assert report["status"] == "repacked"
    control = tmp_path / "control"
    subprocess.run(["dpkg-deb", "--control", report["output"], str(control)], check=True)
    new = (control / "postinst").read_bytes()
    assert b"# caf\xe9 \xff\xfe latin-1 comment\n" in new and b"for arcops_dir in" in new


def test_script_that_is_not_utf8_and_needs_nothing_is_copied(tmp_path):
    deb = craft_deb.deb(tmp_path / "plain.deb", [file_entry("postinst", b"#!/bin/sh\necho \xff\n")])
    report = repack(deb, tmp_path / "out")
    assert report["status"] == "unchanged" and sha256_file(report["output"]) == sha256_file(deb)


def test_heredoc_that_only_mentions_run_parts_needs_nothing(tmp_path):
    script = b"#!/bin/sh\ncat <<EOF\nDon't worry: run-parts isn't called here (it's just prose\nEOF\n"
    deb = craft_deb.deb(tmp_path / "prose.deb", [file_entry("postinst", script)])
    assert repack(deb, tmp_path / "out")["status"] == "unchanged"


def test_output_that_is_a_file_is_refused(tmp_path, capsys):
    deb = craft_deb.deb(tmp_path / "good.deb")
    (tmp_path / "out").write_text("a file, not a folder\n")
    assert cli.main(["stack", "debrepack", str(deb), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"arcops: output folder {tmp_path / 'out'}: exists and is not a folder"
    assert (tmp_path / "out").read_text() == "a file, not a folder\n"


def test_output_whose_parent_is_missing_is_refused(tmp_path):
    deb = craft_deb.deb(tmp_path / "good.deb")
    with pytest.raises(RepackError, match=r"parent folder .* does not exist"):
        repack(deb, tmp_path / "no" / "such" / "out")


def test_two_inputs_with_one_name_are_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one, two = craft_deb.deb(tmp_path / "a" / "x.deb"), craft_deb.deb(tmp_path / "b" / "x.deb")
    with pytest.raises(RepackError, match=r"several inputs are named x\.deb"):
        repack_all([one, two], tmp_path / "out")


def test_a_bad_script_in_the_second_package_leaves_the_first_unwritten(tmp_path):
    good = craft_deb.deb(tmp_path / "good.deb")
    bad = craft_deb.deb(tmp_path / "bad.deb", [file_entry("postinst", b"#!/bin/sh\nrun-parts 'a b\n")])
    with pytest.raises(RepackError, match=r"bad\.deb: postinst: line 2: unterminated single quote"):
        repack_all([good, bad], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_fifo_given_as_the_package_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "pipe.deb"
    os.mkfifo(fifo)
    with pytest.raises(RepackError, match=r"pipe\.deb: no such file"):
        repack(fifo, tmp_path / "out")
