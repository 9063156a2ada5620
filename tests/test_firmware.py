import gzip
import re
import shutil
import struct
import subprocess

import pytest
from arcops.box.firmware import FirmwareError, blob_version, guc_info_version, loaded_from_journal
from arcops.common.sysroot import SysRoot

from .conftest import REPO
from .helpers.bundle_builder import css_blob
from .helpers.debian_mirror import MirrorUnreachable, extract_deb, fetch_deb, unreachable

JOURNALS = REPO / "tests/fixtures/journal"


@pytest.fixture(scope="module", params=["trixie", "forky"])
def debian_firmware(request, tmp_path_factory):
    """Debian's firmware-intel-graphics for a suite, unpacked: (root, latest BMG GuC in its changelog)."""
    try:
        deb = fetch_deb(request.param, "non-free-firmware", "firmware-intel-graphics")
    except MirrorUnreachable as e:
        unreachable(e)
    root = extract_deb(deb, tmp_path_factory.mktemp(request.param))
    changelog = gzip.decompress(
        (root / "usr/share/doc/firmware-intel-graphics/changelog.Debian.gz").read_bytes()
    ).decode()
    # Newest entry first, e.g. "- xe: Update GUC to v70.72.1 for BMG, LNL, PTL, NVL-S"
    stated = re.search(r"xe: Update GUC to v([\d.]+) for [^\n]*\bBMG\b", changelog)
    assert stated, "the changelog names no BMG GuC update"
    return root / "usr/lib/firmware/xe", stated.group(1)


def test_real_bmg_guc_blob_matches_its_changelog(debian_firmware):
    xe, stated = debian_firmware
    found = blob_version(xe / "bmg_guc_70.bin")
    assert found.layout == "css"
    assert found.version == stated


def test_real_bmg_huc_blob_uses_the_gsc_layout(debian_firmware):
    xe, _ = debian_firmware
    found = blob_version(xe / "bmg_huc.bin")
    assert found.layout == "gsc"
    assert found.major == 8 and found.build is not None


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd command not installed (bootstrap installs it)")
def test_zstd_compressed_blob_reads_like_the_plain_one(debian_firmware, tmp_path):
    xe, stated = debian_firmware
    packed = tmp_path / "bmg_guc_70.bin.zst"
    subprocess.run(["zstd", "-q", "-o", str(packed), str(xe / "bmg_guc_70.bin")], check=True)
    assert blob_version(packed).version == stated


def test_other_xe_blobs_are_refused_with_a_clear_message(debian_firmware):
    xe, _ = debian_firmware
    gsc = next(xe.glob("*_gsc_*.bin"))  # a GSC firmware: CPD layout but no HuC manifest
    with pytest.raises(FirmwareError, match="not a GuC/HuC firmware blob"):
        blob_version(gsc)


def test_synthetic_css_header_round_trip(tmp_path):
    blob = tmp_path / "bmg_guc_70.bin"
    blob.write_bytes(css_blob("70.60.0", payload=1024))
    assert blob_version(blob).version == "70.60.0"


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (lambda b: b[:128], "truncated: its CSS header says 1408 bytes, the file holds 128"),  # header only
        (lambda b: b[:-1], "truncated: its CSS header says 1408 bytes, the file holds 1407"),
        (lambda b: b[:24] + struct.pack("<I", 7) + b[28:], "the CSS header's sizes disagree (size_dw 7 <"),
        (lambda b: b"", "empty file, not a firmware blob"),
    ],
)
def test_a_cut_or_inconsistent_blob_is_refused_saying_what_is_wrong(tmp_path, cut, message):
    """What the kernel refuses at load (xe_uc_fw.c: "Truncated firmware"), arcops refuses before
    installing it: a header-only or cut blob, sizes that disagree, an empty file."""
    blob = tmp_path / "bmg_guc_70.bin"
    blob.write_bytes(cut(css_blob("70.60.0", payload=1024)))
    with pytest.raises(FirmwareError) as e:
        blob_version(blob)
    assert str(e.value) == f"{blob}: {message}" or str(e.value).startswith(f"{blob}: {message}")


@pytest.mark.parametrize("content", [b"", b"hello world" * 20, b"\x28\xb5\x2f\xfd" + b"\0" * 64])
def test_garbage_is_refused(tmp_path, content):
    blob = tmp_path / "x.bin"
    blob.write_bytes(content)
    with pytest.raises(FirmwareError, match=str(blob)):
        blob_version(blob)


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(FirmwareError, match="cannot read"):
        blob_version(tmp_path / "absent.bin")


def test_journal_gives_the_latest_load_per_gpu():
    # journalctl -k lines from kernels with and without the "Tile0: GT0:" prefix.
    with (JOURNALS / "xe-firmware-loads.log").open() as log:
        loaded = loaded_from_journal(log)
    assert loaded[("0000:29:00.0", "GuC")].version == "70.60.0"
    assert loaded[("0000:29:00.0", "GuC")].gt == "GT0"
    assert loaded[("0000:2d:00.0", "GuC")].version == "70.60.0"
    assert loaded[("0000:29:00.0", "HuC")].gt is None
    assert loaded[("0000:2d:00.0", "HuC")].file == "xe/bmg_huc.bin"


def test_guc_info_from_debugfs(dual_b60):
    assert guc_info_version(SysRoot(dual_b60), 0) == "70.60.0"
    assert guc_info_version(SysRoot(dual_b60), 7) is None
