"""arcops operate metrics: a box's records, GPUs and kernel journal as Prometheus text. The box is a fixture
tree (tests/fixtures/hosts/dual-b60, records as the stages publish them, the real xe hang lines);
the output passes Debian's real promtool and is served by Debian's real node_exporter."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

from arcops import cli
from arcops.common import records
from arcops.common.prometheus_text import render
from arcops.operate import metrics
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .helpers import prometheus
from .helpers.fuzz import FUZZ
from .helpers.prometheus import FIXTURES, HANG, metrics_box


def samples(text: str) -> dict[str, float]:
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if not line.startswith("#")
    }


def test_the_box_state_as_metrics(tmp_path, capsys):
    root = metrics_box(tmp_path)
    assert cli.main(["operate", "metrics", "--root", str(root), "--journal-file", str(HANG)]) == 0
    text = capsys.readouterr().out
    got = samples(text)
    stack = [k for k in got if k.startswith("arcops_stack_info{")]
    assert stack == [
        'arcops_stack_info{release="2026.12.1",kernel="6.17.0-1009-intel",intel_bundle="multi-arc-bmg-offline-installer-26.0",'
        'guc_pinned="70.60.0",llama_cpp="69c28f1547c1-1a2b3c4d",vllm_image="intel/llm-scaler-vllm:0.26.0-b2",'
        'vllm_spec="abababababab"}'
    ]
    assert got['arcops_gpu_guc_info{card="0000:29:00.0",version="70.60.0"}'] == 1
    assert got['arcops_gpu_p2p_allowed{a="0000:29:00.0",b="0000:2d:00.0",route="host bridge"}'] == 1
    # The real hang: one engine reset per card, then a GT reset of the second card.
    assert got['arcops_xe_events_total{card="0000:29:00.0",kind="engine_reset"}'] == 1
    assert got['arcops_xe_events_total{card="0000:2d:00.0",kind="engine_reset"}'] == 1
    assert got['arcops_xe_events_total{card="0000:2d:00.0",kind="gt_reset"}'] == 1
    assert got['arcops_xe_events_total{card="0000:29:00.0",kind="gt_reset"}'] == 0  # zero, not absent
    assert got["arcops_xe_journal_readable"] == 1
    assert got['arcops_vllm_start_ready{result="ready"}'] == 1
    assert got["arcops_vllm_start_attempts"] == 3
    assert got["arcops_vllm_kv_cache_tokens"] == 680000  # the last ready attempt's
    assert got["arcops_vllm_start_timestamp_seconds"] == 1796292000
    assert got["arcops_verify_passed"] == 1
    assert got["arcops_vllm_health_restarts_last_hour"] == 2
    assert got['arcops_vllm_health_report_timestamp_seconds{state="stall",restarted="false"}'] == 1796295600.5
    assert got["arcops_llama_health_restarts_last_hour"] == 1
    assert got['arcops_llama_health_report_timestamp_seconds{state="stall",restarted="true"}'] == 1796295700
    assert got["arcops_wedged_reboots_last_day"] == 1
    assert got['arcops_gate_right{service="vllm_service"}'] == 10
    # The cards' hwmon figures by PCI address: PL1 (max), PL2 (cap), the reactive limit (crit).
    card = 'card="0000:29:00.0"'
    assert [got[f'arcops_gpu_power_limit_watts{{{card},limit="{k}"}}'] for k in ("max", "cap", "crit")] == [
        200,
        240,
        300,
    ]
    assert got[f"arcops_gpu_energy_joules_total{{{card}}}"] == 512345.678901
    assert got[f'arcops_gpu_temperature_celsius{{{card},sensor="vram"}}'] == 46
    assert got[f'arcops_gpu_fan_rpm{{{card},fan="fan1"}}'] == 1150
    # Its clocks (xe freq0, MHz), its VRAM and what its DRM clients hold (none in the tree: 0).
    assert got[f'arcops_gpu_frequency_mhz{{{card},gt="tile0/gt0",kind="max"}}'] == 2400
    assert got[f'arcops_gpu_frequency_mhz{{{card},gt="tile0/gt0",kind="act"}}'] == 0
    assert got[f"arcops_gpu_vram_bytes{{{card}}}"] == 24 * 2**30
    assert got[f"arcops_gpu_vram_used_bytes{{{card}}}"] == 0
    assert got['arcops_bench_decode_tokens_per_second{service="vllm_service",streams="4"}'] == 230
    for family in {k.split("{")[0] for k in got}:
        assert f"# HELP {family} " in text and f"# TYPE {family} " in text


def test_nothing_known_is_absent_not_zero(tmp_path, capsys):
    root = tmp_path / "empty"
    shutil.copytree(FIXTURES / "hosts" / "dual-b60", root, symlinks=True)
    assert cli.main(["operate", "metrics", "--root", str(root)]) == 0
    got = samples(capsys.readouterr().out)
    assert got["arcops_xe_journal_readable"] == 0  # a fixture tree has no journal: said, not zero events
    assert not any(
        k.startswith(("arcops_xe_events_total", "arcops_vllm_", "arcops_gate_", "arcops_verify_"))
        for k in got
    )


def test_label_values_are_escaped():
    family = metrics.Family("arcops_x", "gauge", 'a "help" \\ text')
    family.add(1, v='a"b\\c\nd')
    assert render([family]).splitlines() == [
        '# HELP arcops_x a \\"help\\" \\\\ text',
        "# TYPE arcops_x gauge",
        'arcops_x{v="a\\"b\\\\c\\nd"} 1',
    ]


def test_output_is_written_atomically_and_a_bad_output_refused_first(tmp_path, capsys):
    root = metrics_box(tmp_path)
    out = tmp_path / "textfile" / "arcops.prom"
    assert cli.main(["operate", "metrics", "--root", str(root), "--output", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err
    out.parent.mkdir()
    assert cli.main(["operate", "metrics", "--root", str(root), "--output", str(out)]) == 0
    assert "arcops_stack_info{" in out.read_text() and sorted(p.name for p in out.parent.iterdir()) == [
        "arcops.prom"
    ]


def test_promtool_accepts_the_metrics_and_node_exporter_serves_them(tmp_path, prometheus_tools):
    root = metrics_box(tmp_path)
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    assert (
        cli.main(
            [
                "operate",
                "metrics",
                "--root",
                str(root),
                "--journal-file",
                str(HANG),
                "--output",
                str(textfiles / "arcops.prom"),
            ]
        )
        == 0
    )
    text = (textfiles / "arcops.prom").read_text()
    checked = subprocess.run(
        [str(prometheus_tools / "promtool"), "check", "metrics"], input=text, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr

    with prometheus.node_exporter(prometheus_tools, textfiles) as base:
        scraped = prometheus.get(base + "/metrics")
    assert "arcops_vllm_kv_cache_tokens 680000" in scraped
    assert 'arcops_xe_events_total{card="0000:2d:00.0",kind="gt_reset"} 1' in scraped
    # node_exporter read the file without complaint.
    assert "node_textfile_scrape_error 0" in scraped


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
SAMPLE = re.compile(r'^arcops_[a-z_]+(\{([a-z_]+="([^"\\\n]|\\["\\n])*",?)*\})? (-?[0-9.e+]+|-?inf|nan)$')
KEYS = st.sampled_from(
    ["release", "targets", "passed", "right", "prompts", "bench", "decode", "1", "target", "image"]
)


@example(published={}, report={"attempts": True}, lines=None)  # found by this test: not a list
@settings(FUZZ)
@given(
    st.dictionaries(st.sampled_from(list(records.STAGES)), st.dictionaries(KEYS, JSON, max_size=5) | JSON),
    st.dictionaries(st.sampled_from(["result", "attempts", "started_at"]), JSON) | st.none(),
    st.lists(st.text(max_size=80), max_size=5) | st.none(),
)
def test_any_records_give_well_formed_metrics(published, report, lines):
    """Records are hand-editable JSON: whatever they hold, the output is valid exposition text."""
    text = render(metrics.collect(published, {"gpus": []}, report, lines, 0.0))
    for line in text.splitlines():
        assert line.startswith("# HELP ") or line.startswith("# TYPE ") or SAMPLE.match(line), line


def test_a_user_space_line_that_looks_like_a_reset_is_not_counted(tmp_path, capsys):
    """A journal file mixing the kernel's lines with a process's look-alikes, in the text and JSON
    export forms: only the kernel's reach the metrics."""
    reset = "xe 0000:29:00.0: [drm] Tile0: GT0: reset started"
    journal = tmp_path / "mixed.log"
    journal.write_text(
        "\n".join(
            [
                "2026-11-30T14:03:12+0000 arc kernel: " + reset,
                "2026-11-30T14:03:13+0000 arc fake[99]: " + reset,
                json.dumps({"_TRANSPORT": "syslog", "SYSLOG_IDENTIFIER": "kernel", "MESSAGE": reset}),
                json.dumps({"_TRANSPORT": "kernel", "MESSAGE": reset}),
            ]
        )
        + "\n"
    )
    assert (
        cli.main(["operate", "metrics", "--root", str(metrics_box(tmp_path)), "--journal-file", str(journal)])
        == 0
    )
    got = samples(capsys.readouterr().out)
    assert got['arcops_xe_events_total{card="0000:29:00.0",kind="gt_reset"}'] == 2


def test_the_vllm_service_s_own_p2p_decision_is_a_metric():
    def decision(p2p):
        records = {"vllm_service": {"image": "i", "p2p": p2p}}
        text = render(metrics.collect(records, {"gpus": []}, None, None, 0.0))
        return [line for line in text.splitlines() if line.startswith("arcops_vllm_p2p_enabled")]

    # vllm_service's record: auto turned off across a pair Linux refuses, or forced by hand.
    assert decision({"setting": "auto", "enabled": False}) == ['arcops_vllm_p2p_enabled{setting="auto"} 0']
    assert decision({"setting": True, "enabled": True}) == ['arcops_vllm_p2p_enabled{setting="true"} 1']
    assert decision(None) == [] and decision({"setting": "auto", "enabled": "yes"}) == []
