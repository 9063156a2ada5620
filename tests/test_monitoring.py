"""monitoring/prometheus/arcops.rules.yml: Debian's real promtool checks the rules and runs their
unit tests (monitoring/prometheus/tests/*.yml); every alert is documented and tested both ways;
and a real Prometheus scraping a real node_exporter (the dual-b60 tree's hwmon sensors and
meminfo, and the textfile `arcops operate metrics` writes from the field's hang journal)
evaluates every rule without error, finds a series for every selector the rules use, and fires
the reset alert of the journal's cards."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.parse
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from arcops import cli
from arcops.common.prometheus_text import render
from arcops.fleet import fleet_metrics, rollout

from .helpers import fleet_records, prometheus
from .helpers.prometheus import FIXTURES, HANG, metrics_box

REPO = Path(__file__).resolve().parent.parent
RULES = REPO / "monitoring" / "prometheus" / "arcops.rules.yml"
RULE_TESTS = sorted((REPO / "monitoring" / "prometheus" / "tests").glob("*.yml"))
OPERATE = REPO / "docs" / "operate.md"
DASHBOARD = REPO / "monitoring" / "grafana" / "arcops.json"
SEVERITIES = {"critical", "warning", "info"}
# A series the rules select: a metric of arcops' or node_exporter's, with its label matchers.
SELECTOR = re.compile(r"\b((?:arcops|node)_[A-Za-z0-9_]+)(\{[^}]*\})?")


def rules() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def alerts() -> list[dict]:
    return [rule for rule in rules() if "alert" in rule]


def test_promtool_checks_the_rules_and_passes_their_unit_tests(prometheus_tools):
    promtool = str(prometheus_tools / "promtool")
    checked = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert RULE_TESTS
    tested = subprocess.run(
        [promtool, "test", "rules", *map(str, RULE_TESTS)], capture_output=True, text=True, cwd=REPO
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert tested.stdout.count("SUCCESS") == len(RULE_TESTS)


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of the headings: lower case, punctuation dropped, spaces as dashes."""
    found = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^a-z0-9 _-]", "", title).replace(" ", "-"))
    return found


def test_every_alert_says_what_to_do_and_how_bad_it_is():
    anchors = _anchors(OPERATE.read_text())
    names = [a["alert"] for a in alerts()]
    assert len(names) == len(set(names))
    for alert in alerts():
        name, notes = alert["alert"], alert.get("annotations", {})
        assert alert.get("labels", {}).get("severity") in SEVERITIES, name
        assert notes.get("summary") and notes.get("description"), name
        page, _, anchor = notes.get("runbook", "").partition("#")
        assert page == "docs/operate.md" and anchor == name.lower() and anchor in anchors, name


def test_every_alert_has_series_that_fire_it_and_series_that_must_not():
    fired: dict[str, int] = {}
    quiet: dict[str, int] = {}
    for path in RULE_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            # Boxes (or cards) in the input: one the alert fires for among more is a "must not".
            instances = {re.search(r'instance="([^"]*)"', s["series"]).group(1) for s in case["input_series"]}
            for check in case.get("alert_rule_test", []):
                name, expected = check["alertname"], check.get("exp_alerts") or []
                if expected:
                    fired[name] = fired.get(name, 0) + 1
                if not expected or len({e["exp_labels"].get("instance") for e in expected}) < len(instances):
                    quiet[name] = quiet.get(name, 0) + 1
    for alert in alerts():
        assert fired.get(alert["alert"]), f"{alert['alert']}: no test fires it"
        assert quiet.get(alert["alert"]), f"{alert['alert']}: no test where it must stay quiet"


def _query(base: str, expr: str) -> list[dict]:
    answer = json.loads(prometheus.get(f"{base}/api/v1/query?query={urllib.parse.quote(expr)}"))
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def _seconds(rfc3339: str) -> float:
    """Prometheus' evaluation time (nanoseconds, Z) as seconds since the epoch."""
    whole, _, fraction = rfc3339.rstrip("Z").partition(".")
    return datetime.fromisoformat(whole + "+00:00").timestamp() + float(f"0.{fraction or 0}")


def _evaluated(base: str) -> list[dict]:
    """The rule groups once every target was scraped three times (so rate() and increase() have
    data: a binary operation with an empty side is never evaluated, nor can it fail) and every
    rule evaluated after that."""
    deadline = time.time() + 60
    while not _query(base, "min(count_over_time(up[1m])) >= 3"):
        assert time.time() < deadline, "Prometheus did not scrape every target three times in 60 s"
        time.sleep(0.2)
    since = time.time()
    while True:
        groups = json.loads(prometheus.get(f"{base}/api/v1/rules"))["data"]["groups"]
        if all(_seconds(r["lastEvaluation"]) > since for g in groups for r in g["rules"]):
            return groups
        assert time.time() < deadline, "Prometheus did not evaluate every rule in 60 s"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def lab(tmp_path_factory, prometheus_tools, vllm_server):
    """(Prometheus' URL, rule groups): one Prometheus, evaluating the rules, scraping a real
    node_exporter (the dual-b60 tree's hwmon and meminfo, the metrics of the field's hang
    journal in its textfile folder) and the real vLLM CPU server's /metrics."""
    work = tmp_path_factory.mktemp("monitoring")
    textfiles = work / "textfile"
    textfiles.mkdir()
    out = textfiles / "arcops.prom"
    argv = ["operate", "metrics", "--root", str(metrics_box(work)), "--journal-file", str(HANG)]
    assert cli.main([*argv, "--output", str(out)]) == 0
    # The control node's textfile beside it: the fleet's metrics (a box off its release, one
    # unreachable, a release matching a known-bad stack by override, a halted rollout).
    record = rollout.load(fleet_records.halted_rollout(work))
    families = fleet_metrics.collect(fleet_records.status(), fleet_records.KNOWN, record, time.time())
    (textfiles / "arcops-fleet.prom").write_text(render(families))
    sysroot = FIXTURES / "hosts" / "dual-b60"
    with prometheus.node_exporter(prometheus_tools, textfiles, sysroot) as exporter:
        targets = {"node": exporter.removeprefix("http://"), "vllm": vllm_server.url.removeprefix("http://")}
        with prometheus.prometheus(prometheus_tools, work / "prom", targets, [RULES]) as base:
            groups = _evaluated(base)
            assert {r["metric"]["job"]: r["value"][1] for r in _query(base, "up")} == {
                "node": "1",
                "vllm": "1",
            }
            yield base, groups


def test_every_rule_evaluates_on_a_real_scrape_and_every_series_it_selects_exists(lab):
    base, groups = lab
    for group in groups:
        for rule in group["rules"]:
            assert rule["health"] == "ok", (rule["name"], rule.get("lastError"))
    # Every series a rule selects exists in the scrape, with the labels it matches on.
    selectors = {m.group(0) for rule in rules() for m in SELECTOR.finditer(rule["expr"])}
    assert any(s.startswith("node_hwmon_") for s in selectors)
    for selector in sorted(selectors):
        assert _query(base, selector), f"nothing exports {selector}"


def test_the_journals_resets_fire_their_alert_and_nothing_wedged_is_claimed(lab):
    base, _ = lab
    # The field's hang: an engine reset on 29:00.0, an engine and a GT reset on 2d:00.0.
    for _ in range(50):
        firing = _query(base, 'ALERTS{alertname="ArcopsXeResetsSinceBoot",alertstate="firing"}')
        if len(firing) == 2:
            break
        time.sleep(0.2)
    cards = {r["metric"]["card"]: r["metric"]["severity"] for r in firing}
    assert cards == {"0000:29:00.0": "warning", "0000:2d:00.0": "warning"}
    assert not _query(base, 'ALERTS{alertname="ArcopsXeGtResetFailed"}')


def test_the_fleets_known_bad_stack_and_halted_rollout_fire_their_alerts(lab):
    base, _ = lab
    for _ in range(50):
        firing = {
            r["metric"]["alertname"]: r["metric"]
            for r in _query(base, 'ALERTS{alertname=~"ArcopsFleet.*",alertstate="firing"}')
        }
        if len(firing) == 2:
            break
        time.sleep(0.2)
    assert firing["ArcopsFleetKnownBadStack"]["entry"] == "llm-scaler-0.26.0-b1"
    assert firing["ArcopsFleetRolloutHalted"]["box"] == "arc-02"
    # Drift and an unreachable box wait for their `for:` time (promtool's tests cover it).
    pending = {r["metric"]["alertname"] for r in _query(base, 'ALERTS{alertstate="pending"}')}
    assert {"ArcopsFleetBoxOffRelease", "ArcopsFleetBoxUnreachable"} <= pending


def _panels() -> list[dict]:
    return json.loads(DASHBOARD.read_text())["panels"]


def test_the_dashboard_is_well_formed():
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["host"]["type"] == "query"
    ids = [p["id"] for p in _panels()]
    assert len(ids) == len(set(ids))
    cells = set()
    for panel in _panels():
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        taken = {(grid["y"] + dy, grid["x"] + dx) for dy in range(grid["h"]) for dx in range(grid["w"])}
        assert not cells & taken, f"{panel['title']} overlaps another panel"
        cells |= taken
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}" and panel["targets"], panel["title"]
            assert all(t["expr"] and t["datasource"]["uid"] == "${datasource}" for t in panel["targets"])


def test_every_dashboard_query_returns_data_from_a_real_scrape(lab):
    """No panel queries a series nothing exports: each query, with the box variable set to the
    scraped box, returns series from the real node_exporter, vLLM and the recording rules."""
    base, _ = lab
    host_variable = json.loads(DASHBOARD.read_text())["templating"]["list"][1]
    values = json.loads(prometheus.get(f"{base}/api/v1/label/instance/values?match[]=arcops_stack_info"))
    hosts = {re.match(host_variable["regex"].strip("/"), v).group(1) for v in values["data"]}
    assert hosts == {"127.0.0.1"}
    queried = set()
    for panel in _panels():
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$host", "127.0.0.1")
            assert _query(base, expr), f"panel {panel['title']!r}: no series for {target['expr']}"
            queried |= {m.group(1) for m in SELECTOR.finditer(expr)}
    # Each source is on the dashboard: arcops' metrics, node_exporter's hwmon, vLLM's own.
    assert {"arcops_xe_events_total", "node_hwmon_temp_celsius"} <= queried
    assert any(
        t["expr"].startswith("vllm:") or "(vllm:" in t["expr"]
        for p in _panels()
        for t in p.get("targets", [])
    )
