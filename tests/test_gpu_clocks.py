"""Each xe card's GT frequencies and VRAM size (arcops.box.gpu_clocks) on the simulated trees,
whose files are in xe's own formats (tests/fixtures/build_host_trees.py)."""

from __future__ import annotations

import shutil

from arcops.box import gpu_clocks
from arcops.common.sysroot import SysRoot
from arcops.operate import metrics
from hypothesis import given
from hypothesis import strategies as st

from .helpers.fuzz import FUZZ
from .helpers.gpu_load import HOSTS

GIB = 2**30
GT0 = {"act": 0, "cur": 400, "min": 400, "max": 2400, "rp0": 2400, "rpe": 1500, "rpn": 400}


def test_each_xe_card_has_its_vram_and_both_gts_clocks():
    cards = gpu_clocks.cards(SysRoot(HOSTS / "dual-b60"))
    assert [c["card"] for c in cards] == ["0000:29:00.0", "0000:2d:00.0"]
    for card in cards:
        assert card["vram_bytes"] == 24 * GIB
        assert card["freq_mhz"]["tile0/gt0"] == GT0
        assert card["freq_mhz"]["tile0/gt1"]["max"] == 1700
    assert {c["vram_bytes"] for c in gpu_clocks.cards(SysRoot(HOSTS / "dual-b70"))} == {32 * GIB}


def test_only_cards_the_xe_driver_has_bound_are_read():
    mixed = gpu_clocks.cards(SysRoot(HOSTS / "mixed-igpu-display"))
    assert [c["card"] for c in mixed] == ["0000:29:00.0", "0000:2d:00.0"]  # not the i915 iGPU
    assert [c["card"] for c in gpu_clocks.cards(SysRoot(HOSTS / "one-gpu-unbound"))] == ["0000:29:00.0"]
    assert gpu_clocks.cards(SysRoot(HOSTS / "no-intel-gpu")) == []


FILES = ["tile0/physical_vram_size_bytes", "tile0/gt0/freq0/act_freq", "tile0/gt0/freq0/max_freq"]


@FUZZ
@given(st.dictionaries(st.sampled_from(FILES), st.binary(max_size=40), max_size=3))
def test_any_file_contents_read_as_figures_or_nothing(tmp_path_factory, contents):
    tree = tmp_path_factory.mktemp("fuzz") / "box"
    shutil.copytree(HOSTS / "dual-b60", tree, symlinks=True)
    device = tree / "sys/bus/pci/devices/0000:29:00.0"
    for name, data in contents.items():
        (device / name).write_bytes(data)
    card = gpu_clocks.cards(SysRoot(tree))[0]
    assert card["vram_bytes"] is None or (isinstance(card["vram_bytes"], int) and card["vram_bytes"] > 0)
    for kinds in card["freq_mhz"].values():
        assert all(isinstance(v, int) and 0 <= v <= gpu_clocks.MAX_MHZ for v in kinds.values())


def test_vram_in_use_is_given_only_when_every_process_was_read():
    cards = gpu_clocks.cards(SysRoot(HOSTS / "dual-b60"))
    held = [{"pdev": "0000:29:00.0", "driver": "xe", "vram_bytes": 5 * GIB}]

    def family(memory, name):
        families = metrics.collect({}, {}, None, None, 0.0, clocks=cards, memory=memory)
        return next(f for f in families if f.name == name).samples

    used = family(held, "arcops_gpu_vram_used_bytes")
    assert [(labels["card"], value) for labels, value in used] == [
        ("0000:29:00.0", 5 * GIB),
        ("0000:2d:00.0", 0),
    ]
    assert family(None, "arcops_gpu_vram_used_bytes") == []
    assert len(family(None, "arcops_gpu_vram_bytes")) == 2
