"""The public regressions in the project's known_stacks.yml: what each matches, what it leaves
alone (the pinned stack among them), its workaround shown with the match, lists of patterns."""

from pathlib import Path

import pytest
import yaml
from arcops.fleet import known_stacks

ENTRIES = known_stacks.check(yaml.safe_load(Path(known_stacks.PROJECT_FILE).read_text()), "project")
PINNED = {"compute_runtime": "25.48.36300.8-1~24.04", "igc": "2.24.8-1~24.04"}  # the lab bundle's lock


def _names(**found):
    return [e["name"] for e in known_stacks.matches(found, ENTRIES)]


@pytest.mark.parametrize(
    ("found", "bad"),
    [
        (PINNED, []),
        ({"compute_runtime": "26.05.37020.3-1~24.04"}, ["compute-runtime-26.05-multi-gpu-usm"]),
        ({"compute_runtime": "26.09.37435.1", "igc": "2.32.7"}, ["compute-runtime-26.09-peer-host-mirror"]),
        ({"compute_runtime": "26.22.38500.2", "igc": "2.34.4"}, ["compute-runtime-26.09-peer-host-mirror"]),
        ({"compute_runtime": "26.31.39395.13", "igc": "2.34.4"}, []),  # past what was measured
        ({"compute_runtime": "26.27.39122.12", "igc": "2.38.3"}, ["compute-runtime-26.27.39122.12-sigsegv"]),
        ({"compute_runtime": "26.27.39122.12-1~24.04"}, ["compute-runtime-26.27.39122.12-sigsegv"]),
        ({"compute_runtime": "26.27.39122.14", "igc": "2.38.5"}, []),  # the next build: not reported
        ({"compute_runtime": "26.14.37833.4", "igc": "2.32.7"}, ["compute-runtime-26.09-peer-host-mirror"]),
        ({"compute_runtime": "25.40.35563.10", "igc": "2.20.5"}, ["compute-runtime-25.40-igc-2.20-slow"]),
        ({"compute_runtime": "25.40.35563.10", "igc": "2.24.8"}, []),
    ],
)
def test_public_regressions_match_their_versions_and_not_the_pinned_stack(found, bad):
    assert _names(**found) == bad


def test_each_public_entry_names_its_tracker_and_a_workaround():
    public = [e for e in ENTRIES if "#" in str(e.get("source"))]
    assert len(public) >= 3
    for entry in public:
        assert entry["verdict"] == "bad" and entry["workaround"].strip()


def test_the_workaround_is_shown_with_the_refusal_and_the_line():
    matched = known_stacks.matches({"compute_runtime": "26.22.1"}, ENTRIES)
    (refusal,) = known_stacks.refusals(matched, [], ENTRIES)
    name = "compute-runtime-26.09-peer-host-mirror"
    assert refusal.startswith(f"matches the known-bad stack {name}: 2x Arc Pro B70")
    assert refusal.endswith(
        "(name it in known_bad_overrides to deploy it anyway) Workaround: NEOReadDebugKeys=1 "
        "EnableDeferBacking=0 in the engine's environment (confirmed by the reporter); then name this "
        "entry in known_bad_overrides."
    )
    (line,) = known_stacks.lines(matched, ["compute-runtime-26.09-peer-host-mirror"])
    assert line.startswith("compute-runtime-26.09-peer-host-mirror (overridden): ") and "Workaround: " in line
    # The report and the fleet's metrics read each line's entry and state back.
    assert known_stacks.line_verdict(line) == ("compute-runtime-26.09-peer-host-mirror", "overridden")
    (plain,) = known_stacks.lines(matched, [])
    assert known_stacks.line_verdict(plain) == ("compute-runtime-26.09-peer-host-mirror", "bad")
    assert known_stacks.line_verdict("no known stack matches") is None


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"workaround": ""}, "e: workaround must say what to do (or be left out)"),
        ({"workaround": ["x"]}, "e: workaround must say what to do (or be left out)"),
        ({"match": {"igc": []}}, 'e: match "igc": the pattern must be text or a list of texts'),
        ({"match": {"igc": ["2.*", None]}}, 'e: match "igc": the pattern must be text or a list of texts'),
        ({"match": {"igc": [["2.*"]]}}, 'e: match "igc": the pattern must be text or a list of texts'),
    ],
)
def test_a_bad_workaround_or_pattern_list_is_refused_naming_the_entry(entry, problem):
    base = {"name": "e", "verdict": "bad", "match": {"igc": "2.*"}, "evidence": "seen"}
    with pytest.raises(known_stacks.KnownStacksError) as caught:
        known_stacks.check({"format": 1, "entries": [{**base, **entry}]}, "f")
    assert str(caught.value) == f"f: {problem}"
