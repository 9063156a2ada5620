"""GPU memory per card from DRM fdinfo (arcops box gpu-memory): fixture /proc trees in the format xe
writes (tests/fixtures/drm_fdinfo/xe-client.txt: the example of the xe driver's documentation,
docs.kernel.org/gpu/xe/xe-drm-usage-stats.html)."""

from __future__ import annotations

import json

from arcops import cli
from arcops.box import drm_memory
from arcops.common.sysroot import SysRoot
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import REPO
from .helpers.fuzz import FUZZ

XE_CLIENT = (REPO / "tests/fixtures/drm_fdinfo/xe-client.txt").read_text()
GIB = 2**30


def client(client_id: int, pdev: str, system: str, gtt: str, vram: str) -> str:
    return (
        XE_CLIENT.replace("drm-client-id:\t3", f"drm-client-id:\t{client_id}")
        .replace("0000:03:00.0", pdev)
        .replace("drm-resident-system:\t0", f"drm-resident-system:\t{system}")
        .replace("drm-resident-gtt:\t192 KiB", f"drm-resident-gtt:\t{gtt}")
        .replace("drm-resident-vram0:\t23992 KiB", f"drm-resident-vram0:\t{vram}")
    )


def proc_tree(tmp_path, fds: dict[int, dict[str, str]]):
    for pid, files in fds.items():
        folder = tmp_path / "proc" / str(pid) / "fdinfo"
        folder.mkdir(parents=True)
        for fd, text in files.items():
            (folder / fd).write_text(text)
    return tmp_path


def two_card_box(tmp_path):
    """Two vLLM workers, one per card, each with its client open on two fds (dup), plus a process
    holding a second client on card 0 and one with no DRM fd."""
    return proc_tree(
        tmp_path,
        {
            101: {"3": "pos:\t0\nflags:\t02\n", "7": client(1, "0000:03:00.0", "2 GiB", "9 GiB", "20 GiB")},
            102: {"7": client(2, "0000:83:00.0", "1 GiB", "10 GiB", "21 GiB")},
            103: {"7": client(2, "0000:83:00.0", "1 GiB", "10 GiB", "21 GiB")},  # forked: same client
            104: {"9": client(3, "0000:03:00.0", "0", "512 MiB", "0")},
            105: {"0": "pos:\t0\nflags:\t0100002\nmnt_id:\t26\n"},
        },
    )


def test_the_real_format_parses_to_bytes_per_stat_and_region():
    c = drm_memory.parse(XE_CLIENT)
    assert (c.driver, c.pdev, c.client_id) == ("xe", "0000:03:00.0", "3")
    assert c.memory["resident-gtt"] == 192 * 2**10
    assert c.memory["total-vram0"] == 23992 * 2**10
    assert c.memory["shared-vram0"] == 16 * 2**20
    assert "cycles-rcs" not in c.memory and "engine-capacity-ccs" not in c.memory
    assert drm_memory.parse("pos:\t0\nflags:\t02\n") is None


def test_clients_are_counted_once_per_card_and_host_ram_is_system_plus_gtt(tmp_path):
    found, skipped = drm_memory.clients(SysRoot(two_card_box(tmp_path)))
    assert skipped == 0
    rows = drm_memory.per_card(found)
    assert [(r["pdev"], r["clients"], r["pids"]) for r in rows] == [
        ("0000:03:00.0", 2, [101, 104]),
        ("0000:83:00.0", 1, [102, 103]),
    ]
    assert [r["host_bytes"] for r in rows] == [11 * GIB + 512 * 2**20, 11 * GIB]
    assert [r["vram_bytes"] for r in rows] == [20 * GIB, 21 * GIB]
    only, _ = drm_memory.clients(SysRoot(tmp_path), [102])
    assert [c.client_id for c in only] == ["2"]


def test_cli_prints_a_table_and_json_and_exits_1_without_clients(tmp_path, capsys):
    root = two_card_box(tmp_path / "box")
    assert cli.main(["box", "gpu-memory", "--root", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["card", "driver", "clients", "processes", "host_gib", "vram_gib"]
    assert [line.split() for line in out[-2:]] == [
        ["0000:03:00.0", "xe", "2", "2", "11.5", "20.0"],
        ["0000:83:00.0", "xe", "1", "2", "11.0", "21.0"],
    ]
    assert cli.main(["box", "gpu-memory", "--root", str(root), "--pid", "102", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(r["pdev"], r["host_bytes"]) for r in data["cards"]] == [("0000:83:00.0", 11 * GIB)]
    (tmp_path / "empty" / "proc").mkdir(parents=True)
    assert cli.main(["box", "gpu-memory", "--root", str(tmp_path / "empty")]) == 1
    assert "no DRM client" in capsys.readouterr().err


@settings(FUZZ)
@given(st.text(max_size=400))
def test_any_fdinfo_text_parses_or_is_not_a_client(text):
    c = drm_memory.parse(text)
    assert c is None or all(isinstance(v, int) and v >= 0 for v in c.memory.values())


def test_sizes_in_the_units_the_kernel_prints_and_nothing_else():
    assert [drm_memory.size(t) for t in ("512", "3 KiB", "4 MiB", "2 GiB")] == [512, 3072, 4 * 2**20, 2 * GIB]
    # '²' was found by the fuzz test below: a digit to str.isdigit(), not to int().
    assert [drm_memory.size(t) for t in ("", "x", "1 kB", "-1", "1 2 3", "²")] == [None] * 6


@settings(FUZZ)
@given(st.text(max_size=30))
def test_any_size_text_is_bytes_or_none(text):
    found = drm_memory.size(text)
    assert found is None or found >= 0
