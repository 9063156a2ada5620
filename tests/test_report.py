"""arcops operate report and arcops fleet report, looked at in a real browser: Debian's headless
Chromium driven by Playwright. Each page loads with no console error and no request but itself,
its tables show the records' values, a box's trouble and a fleet's drift and halted rollout are
marked, no secret reaches it, and it is usable at a phone's width (no sideways scroll)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from arcops import cli
from arcops.fleet import fleet_report

from .helpers import browser, fleet_records
from .helpers.prometheus import HANG, STARTS, metrics_box

PHONE = 390  # CSS pixels: a common phone's width


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    if browser.chromium_path() is None:
        pytest.fail("no Chromium: scripts/bootstrap installs Debian's chromium package")
    with sync_playwright() as p:
        launched = browser.launch(p)
        yield launched
        launched.close()


def _loads_clean(opened: browser.Opened, path: Path) -> None:
    assert opened.errors == []
    assert opened.requests == [path.resolve().as_uri()]  # nothing fetched: no network at view time


def _cells(opened: browser.Opened, table: str) -> list[list[str]]:
    return opened.page.eval_on_selector_all(
        f"#{table} tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )


def _row_classes(opened: browser.Opened, table: str) -> list[str]:
    return opened.page.eval_on_selector_all(f"#{table} tbody tr", "rows => rows.map(r => r.className)")


def test_a_box_page_shows_its_records_marks_its_resets_and_keeps_secrets_out(tmp_path, chromium, capsys):
    box = metrics_box(tmp_path)
    latest = box / STARTS.lstrip("/") / "health-latest.json"
    report = json.loads(latest.read_text())
    report["why_not"] = "2 restart(s) this hour; /metrics at https://ops:s3cret-pass@10.0.0.5:8000 stalled"
    kept = "/var/lib/arcops/vllm/starts/health-20261203T100000Z"
    report["evidence"] = {  # as vllm.health_box's evidence_taker returns it
        "dir": kept,
        "stacks": [{"pid": 41, "exe": "/usr/bin/python3", "file": f"{kept}/py-spy-41.txt"}],
        "devcoredumps": [
            {
                "card": "card1",
                "device": "0000:2d:00.0",
                "file": f"{kept}/devcoredump-card1.txt",
                "bytes": 9,
                "freed": True,
            }
        ],
    }
    latest.write_text(json.dumps(report))
    out = tmp_path / "box.html"
    argv = ["operate", "report", "--root", str(box), "--journal-file", str(HANG), "--name", "box-a"]
    assert cli.main([*argv, "--output", str(out)]) == 0
    assert "1 secret(s) redacted" in capsys.readouterr().out
    assert "s3cret-pass" not in out.read_text()

    opened = browser.open_file(chromium, out)
    _loads_clean(opened, out)
    page = opened.page
    assert page.title() == "arcops: box-a"
    stages = {row[0]: row[1:] for row in _cells(opened, "stack")}
    assert stages["verify"][0] == "passed" and "2026.12.1" in stages["verify"][1]
    assert _cells(opened, "verify-targets") == [["vllm_service", "10/10 right", "yes", "-", "-"]]
    chart = page.inner_text("#verify figure")
    assert "73.7" in chart and "230" in chart and "tok/s" in chart
    assert _cells(opened, "attempts") == [
        ["1", "xe_event", "-"],
        ["2", "ready", "553472"],
        ["3", "ready", "680000"],
    ]
    serving = page.inner_text("#serving")
    assert "stall, not restarted: 2 restart(s) this hour" in serving and "[REDACTED]" in serving
    assert _cells(opened, "evidence") == [
        ["devcoredump", "card1", f"{kept}/devcoredump-card1.txt"],
        ["python stacks", "pid 41 /usr/bin/python3", f"{kept}/py-spy-41.txt"],
    ]
    events = _cells(opened, "xe-events")
    assert [r[0] for r in events] == ["0000:29:00.0", "0000:2d:00.0"]
    assert events[1][3] == "1" and _row_classes(opened, "xe-events") == ["warn", "warn"]
    assert page.inner_text("body").count("SIMULATED") == 1
    assert _cells(opened, "p2p")[0][3] == "allowed"
    opened.page.close()

    phone = browser.open_file(chromium, out, width=PHONE)
    _loads_clean(phone, out)
    assert not browser.overflows(phone)
    phone.page.close()


def test_a_fleet_page_marks_drift_a_halted_rollout_and_an_unreachable_box(tmp_path, chromium, capsys):
    status = tmp_path / "status.json"
    status.write_text(json.dumps(fleet_records.status()))
    run = fleet_records.halted_rollout(tmp_path)
    out = tmp_path / "fleet.html"
    prom = tmp_path / "arcops-fleet.prom"
    argv = ["fleet", "report", "--status", str(status), "--rollout", str(run), "--output", str(out)]
    assert cli.main([*argv, "--metrics", str(prom)]) == 0
    assert "1 secret(s) redacted" in capsys.readouterr().out
    assert "hunter22x" not in out.read_text() + prom.read_text()
    metrics = prom.read_text()
    for sample in (
        'arcops_fleet_box_on_target{box="arc-01",running="2026.12.2",target="2026.12.2"} 1',
        'arcops_fleet_box_on_target{box="arc-02",running="2026.12.1",target="2026.12.2"} 0',
        'arcops_fleet_box_reachable{box="arc-03"} 0',
        'arcops_fleet_rollout_info{release="2026.12.2",result="halted"} 1',
        'arcops_fleet_rollout_halted{release="2026.12.2",box="arc-02"} 1',
    ):
        assert sample in metrics.splitlines()

    for width in (1100, PHONE):
        opened = browser.open_file(chromium, out, width=width)
        _loads_clean(opened, out)
        page = opened.page
        boxes = {row[0]: row for row in _cells(opened, "boxes")}
        assert boxes["arc-01"][2:4] == ["2026.12.2", "2026.12.2"]
        assert boxes["arc-02"][2:4] == ["2026.12.1", "2026.12.2"]
        assert boxes["arc-03"][-1].startswith("unreachable: ssh://[REDACTED]")
        assert _row_classes(opened, "boxes") == ["", "warn", "bad"]
        assert "1 box(es) not on the target release: arc-02" in page.inner_text("#boxes-section")
        rollout_text = page.inner_text("#rollout-section")
        assert "HALTED by arc-02: gate failed: 3 of 10 right" in rollout_text
        results = {row[0]: row[5] for row in _cells(opened, "rollout")}
        assert results == {"arc-01": "upgraded", "arc-02": "rolled back"}
        assert "no release file given" in page.inner_text("#release")
        assert not browser.overflows(opened)
        page.close()


def test_a_known_bad_release_is_marked_on_the_fleet_page(tmp_path, chromium):
    found = fleet_records.KNOWN
    out = tmp_path / "fleet.html"
    out.write_text(fleet_report.page({"rows": [], "problems": []}, found, None, time.time(), "lab"))
    opened = browser.open_file(chromium, out)
    _loads_clean(opened, out)
    banners = opened.page.eval_on_selector_all(
        "#release .banner", "els => els.map(e => [e.className, e.textContent])"
    )
    assert banners[0] == ["banner bad", "release 2026.12.2: 2 known-stack match(es)"]
    assert banners[1][0] == "banner bad" and banners[2][0] == "banner "
    opened.page.close()


def test_a_report_is_refused_before_anything_is_read(tmp_path, capsys):
    assert cli.main(["operate", "report", "--output", str(tmp_path / "page.txt")]) == 2
    assert "name it FILE.html" in capsys.readouterr().err
    assert cli.main(["operate", "report", "--output", str(tmp_path / "no" / "page.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "s.json").write_text("[1, 2]")
    argv = ["fleet", "report", "--status", str(tmp_path / "s.json"), "--output", str(tmp_path / "f.html")]
    assert cli.main(argv) == 2
    assert "not what 'arcops fleet status --json' prints" in capsys.readouterr().err
    assert not (tmp_path / "f.html").exists()
