from arcops import gpus
from arcops.sysroot import SysRoot


def addresses(found):
    return [g.address for g in found]


def test_dual_b60_finds_both_cards_on_xe(host_tree):
    found = gpus.scan(host_tree("dual-b60"))
    assert addresses(found) == ["0000:29:00.0", "0000:2d:00.0"]
    assert {g.model for g in found} == {"Arc Pro B60"}
    assert {g.driver for g in found} == {"xe"}
    assert [g.render for g in found] == ["/dev/dri/renderD128", "/dev/dri/renderD129"]
    assert [g.card for g in found] == ["/dev/dri/card0", "/dev/dri/card1"]
    assert found[0].by_path == [
        "/dev/dri/by-path/pci-0000:29:00.0-card",
        "/dev/dri/by-path/pci-0000:29:00.0-render",
    ]
    assert all(g.numa_node is None for g in found)  # sysfs says -1: no NUMA affinity
    assert all(g.bar2_mib == 24 * 1024 for g in found)  # resizable BAR maps all 24 GiB
    assert not any(g.boot_vga for g in found)


def test_dual_b70_is_named_and_sized(host_tree):
    found = gpus.scan(host_tree("dual-b70"))
    assert [g.model for g in found] == ["Arc Pro B70 (BMG-G31)"] * 2
    assert [g.bar2_mib for g in found] == [32 * 1024] * 2
    assert [g.link["width"] for g in found] == [16, 16]


def test_switch_ports_and_other_intel_functions_are_not_gpus(host_tree):
    # The card's own PCIe switch ports (class 0x0604) and a USB controller (0x0c0330) are Intel too.
    assert addresses(gpus.scan(host_tree("dual-b60"))) == ["0000:29:00.0", "0000:2d:00.0"]


def test_integrated_gpu_is_reported_and_drives_the_display(host_tree):
    found = gpus.scan(host_tree("mixed-igpu-display"))
    assert addresses(found) == ["0000:00:02.0", "0000:29:00.0", "0000:2d:00.0"]
    igpu = found[0]
    assert (igpu.driver, igpu.model, igpu.boot_vga) == ("i915", None, True)
    assert igpu.link["address"] == "0000:00:02.0"  # on the root bus: its own link
    assert [g.render for g in found] == ["/dev/dri/renderD128", "/dev/dri/renderD129", "/dev/dri/renderD130"]


def test_unbound_gpu_has_no_nodes(host_tree):
    bound, unbound = gpus.scan(host_tree("one-gpu-unbound"))
    assert bound.driver == "xe"
    assert (unbound.driver, unbound.card, unbound.render, unbound.by_path) == (None, None, None, [])


def test_no_intel_gpu(host_tree):
    assert gpus.scan(host_tree("no-intel-gpu")) == []


def test_unknown_device_on_a_bare_tree(tmp_path):
    dev = tmp_path / "sys/bus/pci/devices/0000:03:00.0"
    dev.mkdir(parents=True)
    (dev / "vendor").write_text("0x8086\n")
    (dev / "device").write_text("0xE2FF\n")
    (dev / "class").write_text("0x038000\n")
    (dev / "numa_node").write_text("1\n")
    [gpu] = gpus.scan(SysRoot(tmp_path))
    assert (gpu.device_id, gpu.model, gpu.driver, gpu.numa_node, gpu.bar2_mib) == (
        "0xe2ff",
        None,
        None,
        1,
        None,
    )


def test_empty_root_has_no_gpus(tmp_path):
    assert gpus.scan(SysRoot(tmp_path)) == []
