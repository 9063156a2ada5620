"""The verify stage: gate (and bench, when asked) every service a box serves, judged one way.

The services come from the serving stages' records (each names its `endpoint`: URL, model, key
file, stack) unless the inventory names targets itself. Each target is gated as `arcops prove gate`
gates (both runs, the golden for its model and stack when there is one, the host watched);
a target that cannot be asked (not running, wrong key, model not served) fails, it is no bad
input here: the box is what is being judged. The record keeps only what a verdict rests on
(no times, no latencies), so a box that answers the same way twice leaves it unchanged; the
full reports go back to the play.

Stdlib only: it runs on the box inside the arcops_verify module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ..common.net import local_url
from . import bench, gate, soak
from . import prompts as prompt_set
from .openai_api import ApiError, Endpoint, base_url, read_key_file

# Serving stage -> what serves there. Their records' `endpoint` entries are the default targets.
SERVING_STAGES = {"vllm_service": "vllm", "llama_cpp_sycl": "llama-server"}
TARGET_KEYS = {"name", "kind", "url", "model", "api_key_file", "stack"}
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class VerifyError(ValueError):
    """Inputs the stage cannot use; the message names the input."""


def check_target(value: Any, where: str) -> dict:
    """One target {name, url, kind?, model?, api_key_file?, stack?} as the gate needs it. An empty
    model means the one model the server serves (llama-server serves one, under its file's name)."""
    if not isinstance(value, dict):
        raise VerifyError(f"{where}: must be a mapping with name and url, got {type(value).__name__}")
    unknown = sorted(set(value) - TARGET_KEYS, key=str)
    if unknown:
        raise VerifyError(f"{where}: {unknown[0]!r} is not a target field ({', '.join(sorted(TARGET_KEYS))})")
    for key in TARGET_KEYS:
        if value.get(key) is not None and not isinstance(value[key], str):
            raise VerifyError(f"{where}.{key}: must be text, got {type(value[key]).__name__}")
    name = value.get("name") or ""
    if not NAME.fullmatch(name):
        raise VerifyError(f"{where}.name: {name!r} must be 1-64 letters, digits, '.', '_' or '-'")
    try:
        url = local_url(base_url(value.get("url") or ""))
    except ApiError:
        raise VerifyError(f"{where}.url: {value.get('url')!r} is not an http(s) URL") from None
    key_file = value.get("api_key_file") or ""
    if key_file and not key_file.startswith("/"):
        raise VerifyError(f"{where}.api_key_file: {key_file!r} must be an absolute path on the box")
    return {
        "name": name,
        "kind": value.get("kind") or "openai",
        "url": url,
        "model": value.get("model") or "",
        "api_key_file": key_file,
        "stack": value.get("stack") or "",
    }


def check_targets(values: Any, where: str = "verify_targets") -> list[dict]:
    if not isinstance(values, list):
        raise VerifyError(f"{where}: must be a list of targets, got {type(values).__name__}")
    out = [check_target(v, f"{where}[{i}]") for i, v in enumerate(values)]
    names = [t["name"] for t in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise VerifyError(f"{where}: the name {twice[0]!r} is given twice")
    return out


def targets_from_records(records: dict[str, Any]) -> list[dict]:
    """The endpoints the serving stages recorded (a stage that serves nothing records none)."""
    out = []
    for stage, kind in SERVING_STAGES.items():
        record = records.get(stage)
        if isinstance(record, str):  # unreadable: say so rather than verify less than the box runs
            raise VerifyError(record)
        endpoint = record.get("endpoint") if isinstance(record, dict) else None
        if endpoint:
            out.append(
                check_target({"name": stage, "kind": kind, **endpoint}, f"the {stage} record's endpoint")
            )
    return out


def check_goldens(values: Any) -> list[dict]:
    if not isinstance(values, list):
        raise VerifyError(f"goldens: must be a list of golden files' contents, got {type(values).__name__}")
    return [gate.load_golden(json.dumps(v), f"goldens[{i}]") for i, v in enumerate(values)]


def pick_golden(goldens: list[dict], model: str, stack: str) -> dict | None:
    """The golden recorded for this model on this stack; none for another stack (after a rollout
    to a new stack there is nothing to compare with until one is recorded there)."""
    for g in goldens:
        if g.get("model") == model and (g.get("stack") or "") == stack:
            return g
    return None


def verify_target(
    target: dict,
    data: dict,
    goldens: list[dict],
    fail_on_drift: bool,
    timeout: float,
    bench_options: dict | None = None,
    watch: Callable[[], Any] | None = None,
    soak_options: dict | None = None,
) -> dict:
    """The gate's report for one target (and the bench's and the soak's), or the error that
    stopped it. The soak follows a gate that passed, its requests timed out at its stall limit."""
    out: dict = {"target": target, "error": None, "gate": None, "bench": None, "soak": None}
    try:
        key = read_key_file(target["api_key_file"]) if target["api_key_file"] else None
        endpoint = Endpoint(target["url"], key, timeout=timeout)
        model = target["model"] or gate.only_model(endpoint)
        stack = target["stack"] or None
        golden = pick_golden(goldens, model, target["stack"])
        out["gate"] = gate.run(endpoint, model, data, golden, fail_on_drift, stack, watch=watch and watch())
        if bench_options and out["gate"]["passed"]:  # numbers from wrong answers mean nothing
            options = dict(bench_options)
            own = options.pop("baselines", None) or {}
            if target["name"] in own:
                options["baseline"] = own[target["name"]]
            out["bench"] = bench.run(endpoint, model, stack=stack, watch=watch and watch(), **options)
        if soak_options and out["gate"]["passed"]:
            patient = Endpoint(target["url"], key, timeout=soak_options["stall_seconds"])
            out["soak"] = soak.run(patient, model, data, soak_options, watch=watch and watch())
    except (gate.GateError, bench.BenchError, ApiError, ValueError) as e:
        out["error"] = " ".join(str(e).split())
    return out


def summary(result: dict) -> dict:
    """What the record keeps of one target: the verdict and what it rests on, nothing volatile."""
    t, report, result_bench = result["target"], result["gate"], result["bench"]
    out = {k: t[k] for k in ("kind", "url", "model", "stack")}
    if result["error"]:
        return {**out, "passed": False, "error": result["error"]}
    prompts = report["prompts"]
    host = report["host"] or {}
    worse = bench.failures(result_bench) if result_bench is not None else []
    soaked = result.get("soak")
    out.update(
        model=report["model"],
        passed=report["passed"] and not worse and (soaked is None or soaked["passed"]),
        right=sum(p["pass"] for p in prompts),
        prompts=len(prompts),
        wrong=[p["id"] for p in prompts if not p["pass"]],
        drift=report["drift"],
        xe_events=len(host.get("xe_events") or []),
    )
    if soaked is not None:
        out["soak"] = soak.summary(soaked)
    if result_bench is not None:
        # The headline a fleet's status shows: decode output tok/s per concurrency. A bench
        # measures anew each time, so a run with the bench on records new figures.
        decode = bench.figures(result_bench)["decode"]
        out["bench"] = {
            "baseline": (result_bench.get("baseline") or {}).get("what"),
            "worse": worse,
            "decode": {str(k): round(v, 1) for k, v in sorted(decode.items())},
        }
    return out


def reasons(name: str, s: dict) -> list[str]:
    """Why a target failed, one line each (what the play's failure says)."""
    if s["passed"]:
        return []
    if s.get("error"):
        return [f"{name} ({s['url']}): {s['error']}"]
    out = []
    if s["wrong"]:
        out.append(
            f"{name}: {s['right']} of {s['prompts']} right in both runs (wrong: {', '.join(s['wrong'])})"
        )
    if s["drift"]:
        out.append(f"{name}: drift from the golden ({', '.join(s['drift'])})")
    if s["xe_events"]:
        out.append(f"{name}: {s['xe_events']} xe event(s) during the gate")
    out += [f"{name}: bench: {w}" for w in (s.get("bench") or {}).get("worse", [])]
    out += [f"{name}: soak: {r}" for r in (s.get("soak") or {}).get("reasons", [])]
    return out or [f"{name}: failed"]


def run(
    targets: list[dict],
    data: dict,
    goldens: list[dict],
    fail_on_drift: bool = False,
    timeout: float = 300.0,
    bench_options: dict | None = None,
    watch: Callable[[], Any] | None = None,
    idle: Callable[[], dict] | None = None,
    soak_options: dict | None = None,
) -> dict:
    """Every target verified in turn: {passed, record, reasons, results}. No target is a failure
    too: a box that serves nothing has not been proven to serve. IDLE, when given, is asked once
    the load has ended whether the GPUs fall back to near idle (box.gpu_power.settle's answer);
    its figures are recorded, and a card that stays busy fails the box."""
    results = [
        verify_target(t, data, goldens, fail_on_drift, timeout, bench_options, watch, soak_options)
        for t in targets
    ]
    summaries = {r["target"]["name"]: summary(r) for r in results}
    why = [line for name, s in summaries.items() for line in reasons(name, s)]
    if not targets:
        why.append("no service to verify: no serving stage recorded an endpoint and verify_targets is empty")
    record = {"passed": not why, "targets": summaries, "prompt_set": set_id(data)}
    settled = idle() if idle is not None and targets else None
    if settled is not None:
        record["idle_power"] = idle_record(settled)
        why += idle_reasons(settled)
        record["passed"] = not why
    out = {"passed": not why, "record": record, "reasons": why, "results": results}
    return {**out, "idle_power": settled} if settled is not None else out


def idle_record(settled: dict) -> dict:
    """What the record keeps of the idle check: the verdict per card and its threshold, and the
    watts of a card that stayed busy. A resting card's exact watts and the seconds it took vary
    from run to run; kept, they would make a box that behaves the same change its record
    (changed=1) at every verify. They are in the module's result and the play's output."""
    cards = {
        card: {
            "idle": c["idle"],
            "idle_below_w": c["idle_below_w"],
            **({} if c["idle"] else {"watts": c["watts"]}),
        }
        for card, c in sorted(settled.get("cards", {}).items())
    }
    return {"measured": settled.get("measured"), "idle": settled.get("idle"), "cards": cards}


def idle_reasons(settled: dict) -> list[str]:
    """A line per card still busy after the load (none when idle or not measured)."""
    if settled.get("idle") is not False:
        return []
    return [
        f"idle power: GPU {card} still draws {c['watts']:g} W {settled['seconds']:g} s after the load "
        f"(near idle is under {c['idle_below_w']:g} W: a GPU that never drops to idle, llama.cpp #24946)"
        for card, c in sorted(settled.get("cards", {}).items())
        if not c.get("idle")
    ]


def set_id(data: dict) -> str:
    """The prompt set's identity in the record: its prompt ids (a new set is a new verdict)."""
    return ",".join(p["id"] for p in data["prompts"])


def bench_options(value: Any) -> dict | None:
    """{concurrency, prompt_lengths, output_tokens, requests, baseline, tolerance} for bench.run,
    None when the bench is off. BASELINE: a profile name or a previous result's JSON text."""
    if value in (None, {}, False):
        return None
    if not isinstance(value, dict):
        raise VerifyError(f"bench: must be a mapping, got {type(value).__name__}")
    known = {
        "concurrency",
        "prompt_lengths",
        "output_tokens",
        "requests",
        "baseline",
        "baselines",
        "tolerance",
    }
    unknown = sorted(set(value) - known, key=str)
    if unknown:
        raise VerifyError(f"bench: {unknown[0]!r} is not a bench option ({', '.join(sorted(known))})")

    def numbers(key: str, default: list[int] | None) -> list[int] | None:
        v = value.get(key) or default
        if v is not None and not (isinstance(v, list) and v and all(_whole(n) and n > 0 for n in v)):
            raise VerifyError(f"bench.{key}: must be a list of whole numbers above 0")
        return v

    def count(key: str, default: int | None) -> int | None:
        v = value.get(key) or default
        if v is not None and not (_whole(v) and v > 0):
            raise VerifyError(f"bench.{key}: must be a whole number above 0")
        return v

    tolerance = value.get("tolerance", bench.TOLERANCE)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise VerifyError("bench.tolerance: a fraction from 0 to below 1 (0.1 = 10 %)")
    baselines = value.get("baselines") or {}
    if not isinstance(baselines, dict) or not all(isinstance(k, str) for k in baselines):
        raise VerifyError("bench.baselines: a mapping of a service's name to its baseline")
    return {
        "concurrency": numbers("concurrency", list(bench.DEFAULT_CONCURRENCY)),
        "lengths": numbers("prompt_lengths", None),
        "output_tokens": count("output_tokens", 128),
        "requests": count("requests", None),
        "baseline": _baseline(value.get("baseline") or None, "bench.baseline"),
        # Per service (the rollout's: each service against its own figures from before).
        "baselines": {k: _baseline(v, f"bench.baselines.{k}") for k, v in baselines.items() if v},
        "tolerance": float(tolerance),
    }


def _whole(n: Any) -> bool:
    """A whole number (Ansible hands over int subclasses; a bool is no count)."""
    return isinstance(n, int) and not isinstance(n, bool)


def _baseline(baseline: Any, where: str) -> tuple | None:
    """(what, figures) from a profile name or a previous result's JSON text; None for none."""
    if baseline is None:
        return None
    if not isinstance(baseline, str):
        raise VerifyError(f"{where}: a profile name or a bench result's JSON text")
    if baseline not in bench.PROFILES and not baseline.lstrip().startswith("{"):
        known = ", ".join(bench.PROFILES)
        raise VerifyError(f"{where}: {baseline[:80]!r} is neither a profile ({known}) nor a bench result")
    try:
        what, figures = bench.load_baseline(baseline, lambda text: text)
    except bench.BenchError:
        raise VerifyError(f"{where}: the text given is not a bench result (format 1 with decode)") from None
    return (what if baseline in bench.PROFILES else "a previous result", figures)


def prompt_data(value: Any) -> dict:
    """The prompt set the stage asks: the shipped one, or the inventory's (checked as a file is)."""
    return prompt_set.DEFAULT if value in (None, {}) else prompt_set.check(value, "verify prompt set")


def lines(record: dict) -> list[str]:
    """One line per target, as the play and the status show them."""
    out = []
    for name, s in sorted((record.get("targets") or {}).items()):
        verdict = "PASS" if s.get("passed") else "FAIL"
        if s.get("error"):
            out.append(f"{name} {s.get('url')}: {s['error']}; {verdict}")
            continue
        drift = (
            "no golden for this stack"
            if s.get("drift") is None
            else f"drift {', '.join(s['drift']) or 'none'}"
        )
        text = f"{name} {s.get('model')} @ {s.get('url')}: {s.get('right')} of {s.get('prompts')} right"
        text += f" in both runs, {drift}, {s.get('xe_events')} xe event(s)"
        if s.get("bench"):
            against = s["bench"]["baseline"] or "no baseline"
            text += f", bench against {against}: {'; '.join(s['bench']['worse']) or 'within tolerance'}"
        if s.get("soak"):
            k = s["soak"]
            text += f", soak {k['seconds']:g} s: {k['answered']} of {k['sent']} answered"
            text += f", {k['stalls']} stall(s), {k['xe_events']} xe event(s)"
        out.append(f"{text}; {verdict}")
    return out


def idle_lines(settled: dict | None) -> list[str]:
    """The idle check as one line for the play (none when it did not run)."""
    if settled is None:
        return []
    if not settled.get("measured"):
        return ["idle power: not measured (no xe power sensors here)"]
    cards = ", ".join(f"{card} {c['watts']:g} W" for card, c in sorted(settled["cards"].items()))
    below = max(c["idle_below_w"] for c in settled["cards"].values())
    verdict = "PASS" if settled["idle"] else "FAIL"
    when = f"{settled['seconds']:g} s after the load"
    return [f"idle power {when}: {cards} (near idle under {below:g} W); {verdict}"]
