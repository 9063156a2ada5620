import json
import re
import tarfile
from pathlib import Path

import pytest
from arcops.cli import main
from arcops.kernel import bundle, stack

from .helpers.bundle_builder import build_bundle, css_blob

# The tests' own bundles are trusted; Python before 3.11.4 has no extraction filters.
DATA_FILTER = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    return build_bundle(tmp_path_factory.mktemp("bundle"))


@pytest.fixture(scope="module")
def lock(tarball):
    return bundle.make_lock(tarball, "server")


@pytest.fixture
def unpacked(tarball, tmp_path):
    with tarfile.open(tarball) as tar:
        tar.extractall(tmp_path, **DATA_FILTER)
    return tmp_path


def test_lock_reads_the_layout_not_file_names(lock, tarball):
    assert lock["version"] == "26.18.8.2"
    assert lock["kernel_release"] == "6.17.0-1009-intel"
    assert lock["installer"]["file"] == tarball.name
    groups = {p["name"]: p["group"] for p in lock["packages"]}
    assert groups["linux-image-6.17.0-1009-intel"] == "kernel"
    assert groups["linux-modules-extra-6.17.0-1009-intel"] == "kernel"
    assert groups["libze1"] == groups["intel-opencl-icd"] == groups["libigc2"] == "runtime"
    assert groups["xpu-smi"] == "other"
    assert all(p["path"].startswith("ubuntu-24.04-server/") for p in lock["packages"])
    assert {(f["name"], f["kind"], f["version"]) for f in lock["firmware"]} == {
        ("bmg_guc_70.bin.zst", "GuC", "70.60.0"),
        ("bmg_huc.bin.zst", "HuC", "8.2.10"),
    }  # lnl_guc_70 is another platform's


def test_desktop_flavour_is_locked_separately(tarball):
    assert all(
        p["path"].startswith("ubuntu-24.04-desktop/")
        for p in bundle.make_lock(tarball, "desktop")["packages"]
    )


def test_select_returns_what_to_install(unpacked, lock):
    sel = stack.select(unpacked, lock, "6.17.0-1009-intel", "70.60.0")
    assert [p["name"] for p in sel["kernel_packages"]] == [
        "linux-headers-6.17.0-1009-intel",
        "linux-image-6.17.0-1009-intel",
        "linux-modules-6.17.0-1009-intel",
        "linux-modules-extra-6.17.0-1009-intel",
    ]
    assert "xpu-smi" not in [p["name"] for p in sel["runtime_packages"]]
    assert all(p["path"].startswith(str(unpacked)) for p in sel["kernel_packages"])


def test_tampered_package_is_refused(unpacked, lock):
    deb = next(unpacked.rglob("ubuntu-24.04-server/gfxdrv/gpgpu/libze1_*.deb"))
    deb.write_bytes(deb.read_bytes() + b"\0")
    with pytest.raises(bundle.BundleError, match=r"libze1_.*sha256 .* differs from the lock"):
        stack.select(unpacked, lock, "6.17.0-1009-intel", "70.60.0")


def test_extra_package_is_refused(unpacked, lock, tmp_path):
    from .helpers.bundle_builder import build_deb

    build_deb(next(unpacked.glob("*/ubuntu-24.04-server/base")), "evil", "1.0", "amd64", {"etc/evil": "x"})
    with pytest.raises(bundle.BundleError, match=r"evil_1.0_amd64.deb is in the bundle but not in the lock"):
        stack.select(unpacked, lock, "6.17.0-1009-intel", "70.60.0")


def test_wrong_guc_blob_is_refused_even_when_locked(tmp_path):
    tb = build_bundle(tmp_path / "b", guc="70.72.1")
    lock = bundle.make_lock(tb, "server")
    with tarfile.open(tb) as tar:
        tar.extractall(tmp_path / "x", **DATA_FILTER)
    with pytest.raises(
        bundle.BundleError, match=re.escape("is GuC 70.72.1 by its header, the pinned GuC is 70.60.0")
    ):
        stack.select(tmp_path / "x", lock, "6.17.0-1009-intel", "70.60.0")


def test_wrong_kernel_pin_is_refused(unpacked, lock):
    with pytest.raises(bundle.BundleError, match=re.escape("the pinned kernel is 6.8.0-51-generic")):
        stack.select(unpacked, lock, "6.8.0-51-generic", "70.60.0")


def test_corrupt_firmware_is_refused(unpacked, lock):
    blob = next(unpacked.rglob("firmware/bmg_guc_70.bin.zst"))
    blob.write_bytes(css_blob("70.60.0"))  # right version, but not the locked file
    with pytest.raises(bundle.BundleError, match=re.escape("bmg_guc_70.bin.zst: sha256")):
        stack.select(unpacked, lock, "6.17.0-1009-intel", "70.60.0")


def test_not_a_bundle(tmp_path):
    bad = tmp_path / "x.tar.xz"
    with tarfile.open(bad, "w:xz") as tar:
        tar.add(__file__, arcname="hello.py")
    with pytest.raises(bundle.BundleError, match="not an Intel offline installer"):
        bundle.make_lock(bad, "server")


def test_cli_lock_then_verify(tarball, unpacked, tmp_path, capsys):
    lock_file = tmp_path / "bundle.lock.json"
    assert main(["stack", "bundle", "lock", str(tarball), "-o", str(lock_file)]) == 0
    assert json.loads(lock_file.read_text())["kernel_release"] == "6.17.0-1009-intel"
    assert main(["stack", "bundle", "verify", str(unpacked), "--lock", str(lock_file)]) == 0
    assert "matches" in capsys.readouterr().out
    assert main(["stack", "bundle", "lock", str(tmp_path / "missing.tar.xz")]) == 2
    assert "no such file" in capsys.readouterr().err


# --- bad input: each refused with one line naming the file and what is wrong -----------------------


def _recompressed(tarball, tmp_path, mode: str) -> Path:
    """The bundle as a .tar.gz (Python's tarfile, like the real tarballs' gzip variant)."""
    out = tmp_path / tarball.name.replace(".tar.xz", ".tar.gz")
    with tarfile.open(tarball) as src, tarfile.open(out, mode) as dst:
        for info in src:
            dst.addfile(info, src.extractfile(info) if info.isfile() else None)
    return out


@pytest.mark.parametrize("how", ["cut", "crc", "trailing"])
def test_broken_tarball_makes_no_lock(tarball, tmp_path, capsys, how):
    gz = _recompressed(tarball, tmp_path, "w:gz")
    data = bytearray(gz.read_bytes())
    if how == "cut":
        data = data[: len(data) // 2]
    elif how == "crc":
        data[-8] ^= 0xFF  # the gzip trailer's CRC32: every byte of the tar itself is intact
    else:
        data += b"trailing garbage"
    gz.write_bytes(bytes(data))
    out = tmp_path / "lock.json"
    assert main(["stack", "bundle", "lock", str(gz), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"arcops: {gz}: cannot unpack: ") and "\n" not in err
    assert not out.exists()


def test_lock_output_that_is_a_folder_is_refused_before_any_work(tarball, tmp_path, capsys):
    assert main(["stack", "bundle", "lock", str(tarball), "-o", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"arcops: lock file (-o) {tmp_path}: is a folder"
    assert main(["stack", "bundle", "lock", str(tarball), "-o", str(tmp_path / "no" / "lock.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "the lock is list, not a JSON object"),
        ("null", "the lock is NoneType, not a JSON object"),
        ('"lock"', "the lock is str, not a JSON object"),
        ("{}", "lock format None is not 1"),
        ('{"format": true}', "lock format True is not 1"),
        ('{"format": 1}', "installer must be {file, sha256}"),
        ('{"format": 1, "packages": [null], "firmware": {}}', r"packages\[0\] lacks path, name"),
        ('{"format": NaN}', "NaN is not JSON"),
        ("[" * 100_000, "nested too deeply"),
        ("{\xff}", "not JSON"),
    ],
)
def test_lock_of_the_wrong_shape_is_named(unpacked, tmp_path, capsys, text, message):
    path = tmp_path / "lock.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text else b"{\xff}")
    assert main(["stack", "bundle", "verify", str(unpacked), "--lock", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert re.search(message, err) and err.startswith(f"arcops: lock {path}: ") and "\n" not in err


def test_lock_entries_with_wrong_types_are_refused_by_verify(unpacked, lock):
    broken = {**lock, "packages": [{**lock["packages"][0], "sha256": 5}]}
    with pytest.raises(bundle.BundleError, match=r"packages\[0\] lacks sha256"):
        stack.select(unpacked, broken, "6.17.0-1009-intel", "70.60.0")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda lock: {**lock, "signed_by": "x"}, "unknown key(s) 'signed_by': a lock of another arcops"),
        (
            lambda lock: {**lock, "installer": {**lock["installer"], "url": "u"}},
            "installer: unknown key(s) 'url'",
        ),
        (
            lambda lock: {**lock, "firmware": [{**lock["firmware"][0], "size": 1}]},
            "firmware[0]: unknown key(s) 'size'",
        ),
        (lambda lock: {**lock, "format": "1"}, "lock format '1' is not 1"),
        (lambda lock: {**lock, "version": 26.18}, "version must be a string"),
    ],
)
def test_a_lock_of_another_schema_is_refused_naming_the_field(
    unpacked, lock, tmp_path, capsys, change, message
):
    """Unknown keys anywhere, a field or a format number of the wrong type: a lock of another
    schema is refused with the file and the field, never half-read."""
    path = tmp_path / "lock.json"
    path.write_text(json.dumps(change(lock)))
    assert main(["stack", "bundle", "verify", str(unpacked), "--lock", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.startswith(f"arcops: lock {path}: ") and "\n" not in err


def test_missing_lock_says_how_to_make_it(unpacked, tmp_path, capsys):
    assert main(["stack", "bundle", "verify", str(unpacked), "--lock", str(tmp_path / "none.json")]) == 2
    assert "make it with `arcops stack bundle lock TARBALL -o" in capsys.readouterr().err


@pytest.mark.parametrize("version", [b"", b"\n\n", b"\xff\xfe26.18\n", b"26.18 and words\n"])
def test_unreadable_version_file_is_named(unpacked, lock, version):
    (next(unpacked.glob("*/VERSION"))).write_bytes(version)
    with pytest.raises(bundle.BundleError, match="VERSION: "):
        stack.select(unpacked, lock, "6.17.0-1009-intel", "70.60.0")


def _escaping_tarball(path: Path, kind: str) -> Path:
    """A bundle-shaped tarball with one member that would land outside the unpack folder."""
    import io

    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("bundle/ok.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"ok"))
        bad = tarfile.TarInfo(
            {"dotdot": "bundle/../../escaped.txt", "absolute": "/tmp/escaped.txt"}.get(kind, "bundle/x")
        )
        if kind in ("symlink", "abs-symlink"):
            bad.type, bad.linkname = tarfile.SYMTYPE, "../../../etc" if kind == "symlink" else "/etc"
        elif kind == "hardlink":
            bad.type, bad.linkname = tarfile.LNKTYPE, "../../etc/passwd"
        else:
            bad.size = 4
        tar.addfile(bad, io.BytesIO(b"evil") if bad.isfile() else None)
    return path


def test_lock_refuses_a_tarball_with_a_link_loop(tmp_path, capsys):
    import io

    tb = tmp_path / "loop.tar.gz"
    with tarfile.open(tb, "w:gz") as tar:
        info = tarfile.TarInfo("bundle/VERSION")
        info.size = 6
        tar.addfile(info, io.BytesIO(b"26.18\n"))
        for name, target in (("a", "b"), ("b", "a")):
            link = tarfile.TarInfo(f"bundle/{name}")
            link.type, link.linkname = tarfile.SYMTYPE, target
            tar.addfile(link)
    out = tmp_path / "lock.json"
    assert main(["stack", "bundle", "lock", str(tb), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(rf"arcops: {re.escape(str(tb))}: member bundle/[ab] is a symbolic link loop", err)
    assert not out.exists()


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink", "abs-symlink", "hardlink"])
@pytest.mark.parametrize("filters", ["python", "by hand"])
def test_lock_refuses_members_outside_the_bundle(tmp_path, monkeypatch, capsys, kind, filters):
    """With Python's data filter, and by hand where Python has none (before 3.11.4): refused,
    no lock, nothing written outside the scratch folder."""
    if filters == "by hand":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python has no extraction filters")
    tb = _escaping_tarball(tmp_path / "evil.tar.gz", kind)
    out = tmp_path / "lock.json"
    assert main(["stack", "bundle", "lock", str(tb), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    # A leading "/" is dropped, as Python's filter does: that member lands inside, and the
    # tarball is then refused as no bundle.
    want = "not an Intel offline installer" if kind == "absolute" else f"{tb}: cannot unpack: "
    assert want in err and "\n" not in err
    assert not out.exists()
    assert not Path("/tmp/escaped.txt").exists() and not (tmp_path.parent / "escaped.txt").exists()
