import pytest
from arcops.box import host
from arcops.common.sysroot import SysRoot


def test_dual_b60_host(host_tree):
    h = host.read_host(host_tree("dual-b60"))
    assert h.mem_total_gib == 62.7  # 64 GB installed, as MemTotal shows it
    assert h.swap_total_gib == 8.0
    assert (h.kernel, h.os_id, h.os_version) == ("6.17.0-1009-intel", "ubuntu", "24.04")
    assert (h.boot_mode, h.secure_boot) == ("uefi", False)


def test_secure_boot_on(host_tree):
    h = host.read_host(host_tree("low-ram-32g"))
    assert (h.boot_mode, h.secure_boot, h.mem_total_gib) == ("uefi", True, 31.4)


def test_bios_boot_has_no_secure_boot(tmp_path):
    assert host.secure_boot(SysRoot(tmp_path)) == ("bios", None)


def test_meminfo_units(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/meminfo").write_text("MemTotal:       1024 kB\nHugePages_Total:       4\n")
    assert host.meminfo(SysRoot(tmp_path)) == {"MemTotal": 1024 * 1024, "HugePages_Total": 4}


def test_free_gib_measures_the_nearest_existing_parent(tmp_path):
    assert host.free_gib(str(tmp_path / "not/yet/there")) == pytest.approx(
        host.free_gib(str(tmp_path)), abs=0.2
    )
