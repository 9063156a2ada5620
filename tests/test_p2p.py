"""Peer-to-peer DMA as Linux judges it (box/p2p.py), on the simulated host trees: a shared
switch, an AMD Zen CPU, a listed host bridge, ACS redirection read from config space."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from arcops.box import facts, gpus, p2p
from arcops.common.sysroot import SysRoot
from hypothesis import given, settings
from hypothesis import strategies as st

HOSTS = Path(__file__).parent / "fixtures" / "hosts"


def judged(root: Path) -> dict:
    sysroot = SysRoot(root)
    return p2p.judge(sysroot, [g.address for g in gpus.scan(sysroot) if g.model])


def copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(HOSTS / name, target, symlinks=True)
    return target


def config_space(acs_control: int | None) -> bytes:
    """4 KiB of config space: AER at 0x100 pointing on to ACS at 0x140 (its control word at
    0x146), or AER alone."""
    data = bytearray(4096)
    nxt = 0x140 if acs_control is not None else 0
    data[0x100:0x104] = (0x0001 | (1 << 16) | (nxt << 20)).to_bytes(4, "little")
    if acs_control is not None:
        data[0x140:0x144] = (0x000D | (1 << 16)).to_bytes(4, "little")
        data[0x146:0x148] = acs_control.to_bytes(2, "little")
    return bytes(data)


def test_the_field_reports_box_passes_p2p_through_its_amd_host_bridge():
    out = judged(HOSTS / "dual-b60")
    assert out["cpu"] == {"vendor": "AuthenticAMD", "family": 23}
    assert out["gpus"]["0000:29:00.0"] == ["0000:00:01.1", "0000:27:00.0", "0000:28:01.0", "0000:29:00.0"]
    (pair,) = out["pairs"]
    assert (pair["a"], pair["b"], pair["route"], pair["allowed"]) == (
        "0000:29:00.0",
        "0000:2d:00.0",
        "host bridge",
        True,
    )
    assert "AMD Zen" in pair["why"]


def test_two_root_ports_of_an_unlisted_intel_host_bridge_are_refused():
    (pair,) = judged(HOSTS / "dual-b70-intel-host")["pairs"]
    assert pair["route"] == "host bridge" and pair["allowed"] is False
    assert "8086:ae7f" in pair["why"] and "not on the kernel's list" in pair["why"]


def test_cards_behind_one_switch_stay_inside_it():
    out = judged(HOSTS / "quad-b60-switch")
    assert len(out["pairs"]) == 6  # every pair of four
    assert all(p["route"] == "switch" and p["allowed"] for p in out["pairs"])
    assert "switch port 0000:01:00.0" in out["pairs"][0]["why"]
    assert "ACS not readable here" in out["pairs"][0]["why"]  # the tree has no config space


def test_acs_redirection_sends_switch_traffic_to_the_host_bridge(tmp_path):
    root = copy("quad-b60-switch", tmp_path)
    devices = root / "sys/bus/pci/devices"
    for port in ("0000:01:00.0", "0000:02:00.0", "0000:02:01.0", "0000:02:02.0", "0000:02:03.0"):
        (devices / port / "config").write_bytes(config_space(None))
    for card in ("0000:03:00.0", "0000:04:01.0", "0000:06:00.0", "0000:07:01.0"):
        (devices / card / "config").write_bytes(config_space(0x0001))  # source validation only
    first = judged(root)["pairs"][0]
    assert first["route"] == "switch" and first["allowed"] and "not readable" not in first["why"]
    # Request Redirect on the switch's first downstream port: its card's pairs go up and out.
    (devices / "0000:02:00.0" / "config").write_bytes(config_space(1 << 2))
    pairs = {(p["a"], p["b"]): p for p in judged(root)["pairs"]}
    up = pairs[("0000:05:00.0", "0000:08:00.0")]
    assert up["route"] == "host bridge" and up["allowed"] is False
    assert "ACS redirects peer requests at 0000:02:00.0" in up["why"]
    assert pairs[("0000:08:00.0", "0000:0b:00.0")]["route"] == "switch"


def test_a_listed_host_bridge_allows_what_its_entry_allows(tmp_path):
    root = copy("dual-b70-intel-host", tmp_path)
    bridge = root / "sys/devices/pci0000:00/0000:00:00.0/device"
    bridge.write_text("0x09a2\n")  # Ice Lake-SP: listed for any two of its ports
    (pair,) = judged(root)["pairs"]
    assert pair["allowed"] and "Ice Lake-SP" in pair["why"]
    bridge.write_text("0x2f00\n")  # listed only when both devices are on it: they are
    assert judged(root)["pairs"][0]["allowed"]


def test_cpu_reads_the_first_processor_and_tolerates_any_text(tmp_path):
    (tmp_path / "proc").mkdir()
    info = tmp_path / "proc/cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n\nvendor_id\t: X\n")
    assert p2p.cpu(SysRoot(tmp_path)) == {"vendor": "AuthenticAMD", "family": 25}
    info.write_text("cpu family\t: lots\n")
    assert p2p.cpu(SysRoot(tmp_path)) == {"vendor": None, "family": None}
    assert p2p.cpu(SysRoot(tmp_path / "none")) == {"vendor": None, "family": None}


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_any_config_space_reads_as_a_verdict_or_unknown(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("cfg")
    folder = root / "sys/bus/pci/devices/0000:01:00.0"
    folder.mkdir(parents=True)
    (folder / "config").write_bytes(data)
    assert p2p.acs_redirects(SysRoot(root), "0000:01:00.0") in (True, False, None)


def test_a_capability_list_that_loops_ends(tmp_path):
    # A next pointer back to itself: read once, no hang.
    data = bytearray(4096)
    data[0x100:0x104] = (0x0001 | (0x100 << 20)).to_bytes(4, "little")
    folder = tmp_path / "sys/bus/pci/devices/0000:01:00.0"
    folder.mkdir(parents=True)
    (folder / "config").write_bytes(bytes(data))
    assert p2p.acs_redirects(SysRoot(tmp_path), "0000:01:00.0") is False


def test_a_config_that_is_a_fifo_or_a_folder_is_unknown_not_a_hang(tmp_path):
    folder = tmp_path / "sys/bus/pci/devices/0000:01:00.0"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "config")
    assert p2p.acs_redirects(SysRoot(tmp_path), "0000:01:00.0") is None
    (folder / "config").unlink()
    (folder / "config").mkdir()
    assert p2p.acs_redirects(SysRoot(tmp_path), "0000:01:00.0") is None


def test_facts_carry_the_verdicts_and_a_box_without_arc_gpus_has_no_pairs():
    assert facts.collect(SysRoot(HOSTS / "dual-b70-intel-host"))["p2p"]["pairs"][0]["allowed"] is False
    out = facts.collect(SysRoot(HOSTS / "no-intel-gpu"))["p2p"]
    assert out["pairs"] == [] and out["gpus"] == {} and out["rule"] == p2p.RULE
