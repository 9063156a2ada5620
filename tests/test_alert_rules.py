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

import yaml
from arcops import cli

from .helpers import prometheus
from .helpers.prometheus import FIXTURES, HANG, metrics_box

REPO = Path(__file__).resolve().parent.parent
RULES = REPO / "monitoring" / "prometheus" / "arcops.rules.yml"
RULE_TESTS = sorted((REPO / "monitoring" / "prometheus" / "tests").glob("*.yml"))
OPERATE = REPO / "docs" / "operate.md"
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
    """The rule groups once the box was scraped three times (so rate() and increase() have data:
    a binary operation with an empty side is never evaluated, nor can it fail) and every rule
    evaluated after that."""
    deadline = time.time() + 60
    while not _query(base, "count_over_time(up[1m]) >= 3"):
        assert time.time() < deadline, "Prometheus did not scrape the box three times in 60 s"
        time.sleep(0.2)
    since = time.time()
    while True:
        groups = json.loads(prometheus.get(f"{base}/api/v1/rules"))["data"]["groups"]
        if all(_seconds(r["lastEvaluation"]) > since for g in groups for r in g["rules"]):
            return groups
        assert time.time() < deadline, "Prometheus did not evaluate every rule in 60 s"
        time.sleep(0.2)


def test_a_real_prometheus_evaluates_the_rules_on_a_real_scrape(tmp_path, prometheus_tools):
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    box = metrics_box(tmp_path)
    out = textfiles / "arcops.prom"
    assert (
        cli.main(
            ["operate", "metrics", "--root", str(box), "--journal-file", str(HANG), "--output", str(out)]
        )
        == 0
    )
    sysroot = FIXTURES / "hosts" / "dual-b60"
    with prometheus.node_exporter(prometheus_tools, textfiles, sysroot) as exporter:
        target = exporter.removeprefix("http://")
        with prometheus.prometheus(prometheus_tools, tmp_path / "prom", target, [RULES]) as base:
            groups = _evaluated(base)
            for group in groups:
                for rule in group["rules"]:
                    assert rule["health"] == "ok", (rule["name"], rule.get("lastError"))
            # Every series a rule selects exists in the scrape, with the labels it matches on.
            selectors = {m.group(0) for rule in rules() for m in SELECTOR.finditer(rule["expr"])}
            assert any(s.startswith("node_hwmon_") for s in selectors)
            for selector in sorted(selectors):
                assert _query(base, selector), f"nothing exports {selector}"
            # The journal's resets: an engine reset on 29:00.0, an engine and a GT reset on 2d:00.0.
            for _ in range(50):
                firing = _query(base, 'ALERTS{alertname="ArcopsXeResetsSinceBoot",alertstate="firing"}')
                if len(firing) == 2:
                    break
                time.sleep(0.2)
            cards = {r["metric"]["card"]: r["metric"]["severity"] for r in firing}
            assert cards == {"0000:29:00.0": "warning", "0000:2d:00.0": "warning"}
            assert not _query(base, 'ALERTS{alertname="ArcopsXeGtResetFailed"}')
