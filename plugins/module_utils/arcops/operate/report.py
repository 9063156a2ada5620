"""`arcops operate report` and `arcops fleet report`: one HTML page a person can look at.

The box page is read from what the box already records, the same sources as `arcops operate
metrics`: the stages' records (stack, verify: gate and bench), the facts (GPUs, links, P2P), the
watchdog's last start report, the health watch's last report and this boot's kernel journal (xe
events per card). The fleet page comes from `arcops fleet status` (every box's row against the
release), the release's known-stack matches and the last rollout's record. Values missing or of
the wrong shape read as "-", never as a failure: a report is for looking, on any box.

Stdlib only (common.html_page): it runs on the box too.
"""

from __future__ import annotations

from typing import Any

from ..box import xe_events
from ..common import html_page as h
from ..common.numbers import finite_or_none as _number
from ..common.records import as_dict as _dict
from ..common.records import as_list as _list
from ..common.times import utc_iso
from ..stages.status import summarize
from ..vllm.health import within_hour  # the restart policy's own count


def _stack(records: dict) -> str:
    rows = summarize(records)
    marks = {n: "bad" for n, r in enumerate(rows) if r.get("state") in ("failed", "unreadable")}
    return h.section("Stack", h.table(rows, ["stage", "state", "detail"], marks), ident="stack")


def _gpus(facts: dict) -> str:
    rows = []
    for g in _list(facts.get("gpus")):
        g = _dict(g)
        link = _dict(g.get("link"))
        speed = f"{link.get('speed_gts', '-')} GT/s x{link.get('width', '-')}" if link else "-"
        rows.append(
            {
                "card": g.get("address"),
                "model": g.get("model"),
                "driver": g.get("driver"),
                "GuC loaded": g.get("guc_loaded"),
                "render node": g.get("render"),
                "slot link": speed + (" (downgraded)" if link.get("downgraded") else ""),
            }
        )
    pairs = [
        {
            "a": p.get("a"),
            "b": p.get("b"),
            "route": p.get("route"),
            "P2P": "allowed" if p.get("allowed") else "refused",
            "why": p.get("why"),
        }
        for p in map(_dict, _list(_dict(facts.get("p2p")).get("pairs")))
    ]
    refused = {n: "warn" for n, p in enumerate(pairs) if p["P2P"] == "refused"}
    host = _dict(facts.get("host"))
    about = (
        f"{host.get('os_pretty', '-')}, kernel {host.get('kernel', '-')}, "
        f"{host.get('mem_total_gib', '-')} GiB RAM"
    )
    return h.section(
        "GPUs",
        f'<p class="meta">{h.esc(about)}</p>',
        h.table(rows, ["card", "model", "driver", "GuC loaded", "render node", "slot link"], ident="gpus"),
        "<h3>Peer-to-peer between GPUs</h3>",
        h.table(pairs, ["a", "b", "route", "P2P", "why"], refused, ident="p2p"),
        ident="gpus-section",
    )


def _verify(verify: dict) -> str:
    if not verify:
        return h.section("Verify", h.banner("no verify has run on this box"), ident="verify")
    passed = verify.get("passed") is True
    head = h.banner(
        f"release {verify.get('release') or '-'}: verify {'passed' if passed else 'FAILED'}",
        "ok" if passed else "bad",
    )
    rows, charts = [], []
    for name, target in sorted(_dict(verify.get("targets")).items()):
        target = _dict(target)
        bench = _dict(target.get("bench"))
        decode = {k: _number(v) for k, v in _dict(bench.get("decode")).items()}
        rows.append(
            {
                "service": name,
                "gate": f"{target.get('right', '-')}/{target.get('prompts', '-')} right",
                "passed": "yes" if target.get("passed") is True else "NO",
                "bench baseline": bench.get("baseline"),
                "worse": ", ".join(map(str, _list(bench.get("worse")))) or "-",
            }
        )
        items = [(f"{k} stream(s)", v) for k, v in sorted(decode.items(), key=lambda kv: _sort_key(kv[0]))]
        items = [(label, v) for label, v in items if v is not None]
        if items:
            charts.append(h.bars(f"{name}: decode at the last bench", items, "tok/s"))
    marks = {n: "bad" for n, r in enumerate(rows) if r["passed"] == "NO"}
    table = h.table(
        rows, ["service", "gate", "passed", "bench baseline", "worse"], marks, ident="verify-targets"
    )
    return h.section("Verify", head, table, f'<div class="charts">{"".join(charts)}</div>', ident="verify")


def _sort_key(text: Any) -> tuple[int, str]:
    return (int(text), "") if str(text).isdigit() else (1 << 30, str(text))


def _serving(start: dict | None, health: tuple[list[float] | None, dict | None], now: float) -> str:
    parts = []
    if start:
        ready = start.get("result") == "ready"
        parts.append(
            h.banner(
                f"last vLLM start ({start.get('started_at', '-')}): {start.get('result', '-')}",
                "ok" if ready else "bad",
            )
        )
        attempts = [
            {"attempt": a.get("n"), "outcome": a.get("outcome"), "KV cache tokens": a.get("kv_cache_tokens")}
            for a in map(_dict, _list(start.get("attempts")))
        ]
        parts.append(h.table(attempts, ["attempt", "outcome", "KV cache tokens"], ident="attempts"))
    else:
        parts.append(h.banner("no vLLM start report on this box"))
    restarts, latest = health
    if restarts is not None:
        recent = within_hour(restarts, now)
        parts.append(f'<p class="meta">health watch restarts in the last hour: {len(recent)}</p>')
    if isinstance(latest, dict):
        kind = "ok" if latest.get("restarted") is True else "warn"
        text = (
            f"health watch's last report ({latest.get('at', '-')}): {latest.get('state', '-')}, "
            f"{'restarted' if latest.get('restarted') is True else 'not restarted'}"
        )
        why = latest.get("why_not") or latest.get("detail")
        parts.append(h.banner(text + (f": {why}" if why else ""), kind))
        parts.append(_evidence(_dict(latest.get("evidence"))))
    return h.section("vLLM: start and health", *parts, ident="serving")


def _evidence(evidence: dict) -> str:
    """What the health watch kept before its restart: the folder, stacks and devcoredumps."""
    if not evidence:
        return ""
    rows = [
        {"kind": "devcoredump", "of": d.get("card"), "file or error": d.get("file") or d.get("error")}
        for d in map(_dict, _list(evidence.get("devcoredumps")))
    ]
    rows += [
        {
            "kind": "python stacks",
            "of": f"pid {p.get('pid')} {p.get('exe') or ''}".strip(),
            "file or error": p.get("file") or p.get("error"),
        }
        for p in map(_dict, _list(evidence.get("stacks")))
    ]
    return f'<p class="meta">evidence kept in {h.esc(evidence.get("dir"))}</p>' + h.table(
        rows, ["kind", "of", "file or error"], ident="evidence"
    )


def _events(lines: list[str] | None) -> str:
    if lines is None:
        return h.section(
            "xe events this boot",
            h.banner("the kernel journal could not be read here", "warn"),
            ident="events",
        )
    by_device = xe_events.count(lines)["by_device"]
    rows = [
        {"card": card, **{k: found.get(k, 0) for k in xe_events.KINDS}}
        for card, found in sorted(by_device.items())
    ]
    resets = [sum(r[k] for k in xe_events.RESET_KINDS) for r in rows]
    wedged = [n for n, r in enumerate(rows) if r[xe_events.GT_RESET_FAILED]]
    marks = {n: "warn" for n in range(len(rows)) if resets[n]} | dict.fromkeys(wedged, "bad")
    items = [(r["card"], float(resets[n])) for n, r in enumerate(rows)]
    parts = [h.table(rows, ["card", *xe_events.KINDS], marks, ident="xe-events")]
    if wedged:
        parts.insert(0, h.banner("a GT reset failed: that GPU is wedged until a reboot", "bad"))
    if items:
        parts.append(h.bars("engine and GT resets per card this boot", items, "resets"))
    return h.section("xe events this boot", *parts, ident="events")


def box_page(
    name: str,
    records: dict,
    facts: dict,
    start: dict | None,
    kernel_lines: list[str] | None,
    health: tuple[list[float] | None, dict | None],
    now: float,
) -> str:
    """The box's page (records as records.read_published, facts as box.facts.collect)."""
    sections = []
    if facts.get("simulated"):
        sections.append(h.banner("SIMULATED hardware view: nothing here is a real Arc box", "warn"))
    sections += [
        _stack(records),
        _verify(_dict(records.get("verify"))),  # a record read as text (unreadable) is {}
        _serving(start, health, now),
        _events(kernel_lines),
        _gpus(facts),
    ]
    return h.page(f"arcops: {name}", f"written {utc_iso(now)} by arcops operate report", sections)
