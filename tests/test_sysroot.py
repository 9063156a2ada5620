from arcops.common.sysroot import SysRoot


def test_fixture_trees_are_labelled_simulated(dual_b60):
    assert SysRoot(dual_b60).simulated


def test_real_root_is_not_simulated():
    assert not SysRoot("/").simulated


def test_paths_resolve_under_the_root(tmp_path):
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text("6.17.0-1009-intel\n")
    root = SysRoot(tmp_path)
    assert root.read("/proc/sys/kernel/osrelease") == "6.17.0-1009-intel"
    assert root.read("/missing", default="-") == "-"
    assert root.listdir("/missing") == []
    assert root.link_name("/missing") is None
