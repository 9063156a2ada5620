"""Fleet status rows (arcops.fleet.fleet_status): a box's records as the stages publish them, its
latest watchdog report, and resets counted from real xe journal lines."""

import json
import sys
from pathlib import Path

from arcops.common import records
from arcops.fleet import fleet_status

JOURNAL = Path(__file__).parent / "fixtures" / "journal"


def publish(fact_dir: Path, stage: str, record: dict) -> None:
    fact_dir.mkdir(parents=True, exist_ok=True)
    (fact_dir / records.STAGES[stage]).write_text(records.render(record))


FACTS = {
    "host": {"kernel": "6.17.0-1009-intel"},
    "gpus": [{"guc_loaded": "70.60.0"}, {"guc_loaded": "70.60.0"}],
}


def test_a_verified_box_runs_its_release(tmp_path):
    starts = tmp_path / "starts"
    starts.mkdir()
    (starts / "latest.json").write_text(json.dumps({"result": "ready", "exit_code": 0, "attempts": []}))
    publish(
        tmp_path / "facts",
        "vllm_service",
        {
            "image": "intel/llm-scaler-vllm:0.26.0-b2",
            "image_digest": "sha256:" + "ab" * 32,
            "report_dir": str(starts),
        },
    )
    targets = {"vllm_service": {"right": 10, "prompts": 10, "passed": True}}
    publish(
        tmp_path / "facts",
        "verify",
        {"passed": True, "release": "2026.12.1", "targets": targets},
    )
    with open(JOURNAL / "xe-dual-b60-hang.log") as lines:
        box = fleet_status.read_box(str(tmp_path / "facts"), FACTS, lines)
    assert (
        box["running"] == "2026.12.1"
        and box["start"] == "ready"
        and box["gate"] == "passed (vllm_service 10/10)"
    )
    assert box["xe_resets"] == 3  # two engine resets (one per card), then a GT reset of the second
    row = fleet_status.row("arc-01", "canary 1", "2026.12.1", box)
    assert row["on_target"] is True and row["guc"] == "70.60.0, 70.60.0"
    assert row["image"] == "intel/llm-scaler-vllm:0.26.0-b2 sha256:abababababab"


def test_a_box_whose_gate_failed_runs_no_release(tmp_path):
    targets = {"vllm_service": {"right": 0, "prompts": 10, "passed": False}}
    publish(tmp_path, "verify", {"passed": False, "release": "2026.12.2", "targets": targets})
    box = fleet_status.read_box(str(tmp_path), FACTS, [])
    row = fleet_status.row("arc-02", "fleet 1", "2026.12.2", box)
    assert (row["running"], row["gate"], row["on_target"]) == (
        "2026.12.2 (gate failed)",
        "FAILED (vllm_service 0/10)",
        False,
    )
    assert (row["start"], row["xe_resets"]) == ("-", 0)


def test_a_box_never_deployed_and_one_not_reached(tmp_path):
    box = fleet_status.read_box(str(tmp_path), {}, [])
    assert fleet_status.row("arc-03", "fleet 2", None, box)["running"] == "-"
    assert fleet_status.row("arc-04", "fleet 2", "1", None, "ssh: timed out")["error"] == "ssh: timed out"


def test_an_unreadable_start_report_says_so(tmp_path):
    (tmp_path / "latest.json").write_text("{not json")
    assert fleet_status.last_start(str(tmp_path))["result"].startswith("unreadable")


def test_the_fleet_table_is_in_rollout_order_and_names_what_is_wrong():
    box = {"running": "2", "verified_release": "2", "kernel": "6.17.0-1009-intel", "guc": ["70.60.0"]}
    box |= {"image": "img", "image_id": None, "start": "ready", "gate": "passed", "xe_resets": 0}
    groups = {"canary": ["b"], "fleet": ["c", "a"]}
    out = fleet_status.fleet(
        groups, ["a", "b", "c"], [1], {"a": "2", "b": "2", "c": "2"}, {"a": box, "b": box}, {}
    )
    assert [(r["box"], r["wave"]) for r in out["rows"]] == [
        ("b", "canary 1"),
        ("c", "fleet 1"),
        ("a", "fleet 2"),
    ]
    lines = fleet_status.table(out["rows"])
    assert lines[0].split() == fleet_status.COLUMNS and "(unreachable)" in lines[2]
    out = fleet_status.fleet({"canary": ["a"], "fleet": ["a"]}, ["a"], [1], {}, {"a": box}, {})
    assert out["problems"] == ["a: in both the canary and the fleet wave"] and out["rows"][0]["wave"] == "-"


def test_arcops_fleet_status_reads_every_box_through_the_playbook(tmp_path, capsys):
    """Through real ansible-playbook (local connections standing in for SSH): each box's records
    and simulated hardware, in rollout order, with the release each is pinned to."""
    import yaml
    from arcops.cli import main

    hosts = {}
    for name, release, sim in (("arc-a", "2026.12.1", "dual-b60"), ("arc-b", "2026.12.2", "guc-70.72.1")):
        facts = tmp_path / name
        targets = {"vllm_service": {"right": 10, "prompts": 10, "passed": True}}
        publish(facts, "verify", {"passed": True, "release": "2026.12.1", "targets": targets})
        hosts[name] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "fleet_status_fact_dir": str(facts),
            "arcops_sysroot": str(Path(__file__).parent / "fixtures" / "hosts" / sim),
            "arcops_release": {"id": release},
        }
    inventory = {"all": {"children": {"arc_servers": {"children": {
        "canary": {"hosts": {"arc-b": hosts["arc-b"]}},
        "fleet": {"hosts": {"arc-a": hosts["arc-a"]}},
    }}}}}  # fmt: skip
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    assert main(["fleet", "status", "-i", str(tmp_path / "hosts.yml"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["box"], r["wave"], r["running"], r["target"], r["on_target"]) for r in rows] == [
        ("arc-b", "canary 1", "2026.12.1", "2026.12.2", False),
        ("arc-a", "fleet 1", "2026.12.1", "2026.12.1", True),
    ]
    assert rows[0]["guc"] == "70.72.1, 70.72.1" and rows[1]["guc"] == "70.60.0, 70.60.0"
    assert main(["fleet", "status", "-i", str(tmp_path / "hosts.yml")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == fleet_status.COLUMNS and out[1].startswith("arc-b")
    assert main(["fleet", "status", "-i", str(tmp_path / "missing")]) == 2


def test_the_last_bench_shows_each_service_at_its_fewest_streams():
    targets = {
        "vllm_service": {"passed": True, "bench": {"decode": {"8": 361.0, "1": 73.7, "4": 230.0}}},
        "llama_cpp_sycl": {"passed": True},  # gated without a bench
    }
    box = fleet_status.box_facts({"verify": {"passed": True, "targets": targets}}, FACTS, None, 0)
    assert box["bench"] == "vllm_service 73.7 tok/s @1"
    assert fleet_status.row("a", "canary 1", None, box)["bench"] == "vllm_service 73.7 tok/s @1"
    for junk in ({"decode": {"x": 1}}, {"decode": {"1": "fast"}}, {"decode": []}, "bench", None):
        verify = {"passed": True, "targets": {"vllm_service": {"bench": junk}}}
        assert fleet_status.box_facts({"verify": verify}, FACTS, None, 0)["bench"] is None
