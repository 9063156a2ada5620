import pytest
from arcops.box import facts


@pytest.mark.parametrize(
    ("tree", "gpus", "display"),
    [
        ("dual-b60", ["0000:29:00.0", "0000:2d:00.0"], None),
        ("mixed-igpu-display", ["0000:00:02.0", "0000:29:00.0", "0000:2d:00.0"], "0000:00:02.0"),
        ("no-intel-gpu", [], None),
    ],
)
def test_collect(host_tree, tree, gpus, display):
    data = facts.collect(host_tree(tree), ["/tmp"])
    assert data["simulated"] is True
    assert [g["address"] for g in data["gpus"]] == gpus
    assert data["display_gpu"] == display
    assert set(data["free_gib"]) == {"/tmp"}


def test_loaded_guc_comes_from_debugfs_on_fixture_trees(host_tree):
    data = facts.collect(host_tree("dual-b60"))
    assert [(g["guc_loaded"], g["guc_source"]) for g in data["gpus"]] == [("70.60.0", "debugfs")] * 2


def test_unbound_gpu_has_no_loaded_guc(host_tree):
    data = facts.collect(host_tree("one-gpu-unbound"), read_journal=False)
    assert [g["guc_loaded"] for g in data["gpus"]] == ["70.60.0", None]
