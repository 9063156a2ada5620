import os
import time

from arcops.common.sysroot import SysRoot
from arcops.kernel import grub

from .conftest import REPO

GRUB = REPO / "tests/fixtures/grub"


def lines(name):
    return (GRUB / name).read_text().splitlines()


def test_real_debian_grub_cfg_gives_the_advanced_entry_not_the_simple_one():
    path, title = grub.find_entry(lines("debian12-cloud.grub.cfg"), "6.1.0-50-cloud-amd64")
    uuid = "8f219f4c-0bc8-4646-997c-c1792b8610ae"
    assert path == f"gnulinux-advanced-{uuid}>gnulinux-6.1.0-50-cloud-amd64-advanced-{uuid}"
    assert title == "Debian GNU/Linux, with Linux 6.1.0-50-cloud-amd64"


def test_two_kernels_each_found_recovery_skipped():
    cfg = lines("two-kernels.grub.cfg")
    intel, _ = grub.find_entry(cfg, "6.17.0-1009-intel")
    generic, title = grub.find_entry(cfg, "6.8.0-51-generic")
    assert intel.endswith(">gnulinux-6.17.0-1009-intel-advanced-8f219f4c-0bc8-4646-997c-c1792b8610ae")
    assert generic.endswith(">gnulinux-6.8.0-51-generic-advanced-8f219f4c-0bc8-4646-997c-c1792b8610ae")
    assert "recovery" not in title


def test_release_prefix_does_not_match_a_longer_release():
    assert grub.find_entry(lines("two-kernels.grub.cfg"), "6.17.0-1009") is None


def test_missing_release():
    assert grub.find_entry(lines("debian12-cloud.grub.cfg"), "7.2.6-070206-generic") is None


def test_boot_entry_needs_vmlinuz_initrd_and_menu_entry(tmp_path):
    (tmp_path / "boot/grub").mkdir(parents=True)
    (tmp_path / "boot/grub/grub.cfg").write_text((GRUB / "two-kernels.grub.cfg").read_text())
    (tmp_path / "boot/grub/grubenv").write_text(
        "# GRUB Environment Block\nsaved_entry=gnulinux-simple-x\n" + "#" * 900
    )
    (tmp_path / "boot/vmlinuz-6.17.0-1009-intel").write_text("k")
    entry = grub.boot_entry(SysRoot(tmp_path), "6.17.0-1009-intel")
    assert (entry.vmlinuz, entry.initrd, entry.bootable) == (True, False, False)  # no initrd: not bootable
    assert entry.saved_entry == "gnulinux-simple-x"
    (tmp_path / "boot/initrd.img-6.17.0-1009-intel").write_text("i")
    assert grub.boot_entry(SysRoot(tmp_path), "6.17.0-1009-intel").bootable


def test_inputs_changed_after_the_initrd_was_built_ask_for_a_rebuild(tmp_path):
    """ctime against the initrd's mtime: a blob copied after the last build (a run cut off before
    its initramfs rebuild) is stale; one that was there before the build is not."""
    boot, firmware = tmp_path / "boot", tmp_path / "lib/firmware/xe"
    boot.mkdir()
    firmware.mkdir(parents=True)
    initrd = boot / "initrd.img-6.17.0-1009-intel"
    (firmware / "bmg_guc_70.bin").write_bytes(b"guc")
    blobs = ["/lib/firmware/xe/bmg_guc_70.bin", "/lib/firmware/xe/absent.bin"]
    root = SysRoot(tmp_path)
    assert grub.changed_since_initrd(root, "6.17.0-1009-intel", blobs) == []  # no initrd yet
    initrd.write_text("i")
    now = time.time()
    os.utime(initrd, (now + 100, now + 100))  # built after the copy
    assert grub.boot_entry(root, "6.17.0-1009-intel", initrd_inputs=blobs).initrd_stale == []
    os.utime(initrd, (now - 100, now - 100))  # built before it
    entry = grub.boot_entry(root, "6.17.0-1009-intel", initrd_inputs=blobs)
    assert entry.initrd_stale == ["/lib/firmware/xe/bmg_guc_70.bin"]
    assert entry.as_dict()["initrd_stale"] == entry.initrd_stale
