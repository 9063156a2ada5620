from arcops.box.pcie import read_link, slot_address, upstream_chain


def test_slot_link_is_read_from_the_cards_upstream_port(host_tree):
    root = host_tree("dual-b60")
    assert upstream_chain(root, "0000:29:00.0") == [
        "0000:00:01.1",
        "0000:27:00.0",
        "0000:28:01.0",
        "0000:29:00.0",
    ]
    assert slot_address(root, "0000:29:00.0") == "0000:27:00.0"
    slot = read_link(root, "0000:27:00.0")
    assert (slot.speed_gts, slot.width, slot.max_speed_gts, slot.max_width) == (8.0, 8, 32.0, 8)
    assert slot.downgraded  # Gen3 slot under a Gen5-capable card


def test_gpu_function_link_is_card_internal(host_tree):
    internal = read_link(host_tree("dual-b60"), "0000:29:00.0")
    assert (internal.speed_gts, internal.width) == (2.5, 1)


def test_narrow_slot_is_downgraded(host_tree):
    root = host_tree("pcie-downgraded")
    slot = read_link(root, slot_address(root, "0000:2d:00.0"))
    assert (slot.width, slot.max_width, slot.downgraded) == (4, 8, True)


def test_full_link_is_not_downgraded(host_tree):
    root = host_tree("dual-b70")
    slot = read_link(root, slot_address(root, "0000:03:00.0"))
    assert (slot.speed_gts, slot.width, slot.downgraded) == (32.0, 16, False)


def test_missing_attributes_read_as_unknown(tmp_path):
    from arcops.common.sysroot import SysRoot

    link = read_link(SysRoot(tmp_path), "0000:01:00.0")
    assert (link.speed_gts, link.width, link.downgraded) == (None, None, False)
