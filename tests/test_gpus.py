from arcops.box import gpus
from arcops.common.sysroot import SysRoot


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


def test_sysfs_values_that_do_not_parse_read_as_unknown_never_crash_or_hang(dual_b60, tmp_path):
    """'1.5' as a NUMA node, '1.2.3 GT/s', non-ASCII digits, a two-column resource row, a FIFO."""
    import os
    import shutil

    root = tmp_path / "box"
    shutil.copytree(dual_b60, root, symlinks=True)
    gpu = root / "sys/devices/pci0000:00/0000:00:01.1/0000:27:00.0/0000:28:01.0/0000:29:00.0"
    slot = gpu.parent.parent  # 0000:27:00.0, the card's upstream port in the slot
    (gpu / "numa_node").write_text("1.5\n")
    (gpu / "resource").write_text("0x1 0x2\n0x3 0x4\n0x00000060 0x0000007f\n")
    (slot / "current_link_speed").write_text("1.2.3 GT/s PCIe\n")
    (slot / "current_link_width").write_text("\u0668\n")  # an Arabic-Indic eight: not an ASCII digit
    (slot / "max_link_width").write_text("\u00b2\n")  # superscript two: isdigit() but not int()
    (gpu / "boot_vga").unlink(missing_ok=True)
    os.mkfifo(gpu / "boot_vga")
    found = {g.address: g for g in gpus.scan(SysRoot(root))}
    odd = found["0000:29:00.0"]
    assert odd.numa_node is None and odd.bar2_mib is None and odd.boot_vga is False
    assert (odd.link["speed_gts"], odd.link["width"], odd.link["max_width"]) == (None, None, None)
    assert found["0000:2d:00.0"].bar2_mib is not None  # the other card still reads in full


def test_xe_job_timeouts_per_engine_class_with_the_drivers_defaults(host_tree):
    from arcops.box import engine_timeouts

    gpu = gpus.scan(host_tree("dual-b60"))[0]
    assert sorted(gpu.job_timeouts) == sorted(engine_timeouts.CLASSES)
    assert gpu.job_timeouts["ccs"] == {
        "job_timeout_ms": 5000,
        "job_timeout_min": 1,
        "job_timeout_max": 10000,
        "default_job_timeout_ms": 5000,
        "default_job_timeout_max": 10000,
        "gts": ["tile0/gt0"],
    }
    assert gpu.job_timeouts["vcs"]["gts"] == ["tile0/gt1"]


def test_no_engines_without_xe(host_tree):
    found = gpus.scan(host_tree("one-gpu-unbound"))
    assert any(g.driver != "xe" for g in found)
    assert all(g.job_timeouts == {} for g in found if g.driver != "xe")
