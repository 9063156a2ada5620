from arcops import gpus
from arcops.sysroot import SysRoot


def test_dual_b60_finds_both_cards_on_xe(dual_b60):
    found = gpus.scan(SysRoot(dual_b60))
    assert [g.address for g in found] == ["0000:29:00.0", "0000:2d:00.0"]
    assert {g.model for g in found} == {"Arc Pro B60"}
    assert {g.driver for g in found} == {"xe"}
    assert [g.render for g in found] == ["/dev/dri/renderD128", "/dev/dri/renderD129"]
    assert [g.card for g in found] == ["/dev/dri/card0", "/dev/dri/card1"]
    assert all(g.numa_node is None for g in found)  # sysfs says -1: no NUMA affinity


def test_non_display_intel_functions_are_ignored(dual_b60):
    # 0000:00:14.0 is an Intel USB controller (class 0x0c0330) in the fixture.
    assert "0000:00:14.0" not in [g.address for g in gpus.scan(SysRoot(dual_b60))]


def test_unbound_and_unknown_devices_are_reported(tmp_path):
    dev = tmp_path / "sys/bus/pci/devices/0000:03:00.0"
    dev.mkdir(parents=True)
    (dev / "vendor").write_text("0x8086\n")
    (dev / "device").write_text("0xE2FF\n")
    (dev / "class").write_text("0x038000\n")
    (dev / "numa_node").write_text("1\n")
    [gpu] = gpus.scan(SysRoot(tmp_path))
    assert gpu.device_id == "0xe2ff"
    assert gpu.model is None
    assert gpu.driver is None
    assert gpu.render is None
    assert gpu.numa_node == 1


def test_empty_root_has_no_gpus(tmp_path):
    assert gpus.scan(SysRoot(tmp_path)) == []
