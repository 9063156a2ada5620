"""Every time and size the README and docs state comes from a benchmark's JSON in the repository
(docs/bench/, written by scripts/bench) or, for the field reports' figures, from
docs/field-knowledge.md, named by the paragraph that states it (issue 46).

A paragraph that opens with ``<!-- figures: docs/bench/noop.json -->`` may state only values of
that result, as rounded in the text. The files in SOURCED state no figure without one. The others
still hold figures with no result behind them (the field reports' figures, settings, timings of
past CI runs): UNSOURCED is their count, which may only go down; a file that drops one must lower
its count here, and a new figure without a source fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .helpers.fuzz import FUZZ
from .helpers.stated_figures import figures, found, paragraphs, sources, unsourced

REPO = Path(__file__).resolve().parents[1]
SOURCED = ["README.md", "docs/fleet.md", "docs/host-ram.md", "docs/lab.md", "docs/seal.md"]
# The field reports' figures in the project's words: the source other docs name for them
# (<!-- figures: docs/field-knowledge.md -->); they were measured on the reporters' boxes.
FIELD_RECORD = "docs/field-knowledge.md"
UNSOURCED = {
    "docs/cli.md": 1,
    "docs/collection.md": 3,
    "docs/hardware-check.md": 14,
    "docs/operate.md": 13,
    "docs/prove.md": 7,
    "docs/security.md": 1,
    "docs/stages.md": 10,
    "docs/testing.md": 171,
    "docs/roles/vllm_service.md": 5,
}


def docs() -> list[str]:
    return ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))]


@pytest.mark.parametrize("name", SOURCED)
def test_every_figure_of_these_files_is_a_benchmarks(name):
    assert unsourced(REPO, name) == [], f"{name}: figures with no benchmark result behind them"


def test_the_other_files_state_no_more_figures_without_a_source():
    counts = {name: len(unsourced(REPO, name)) for name in docs() if name not in [*SOURCED, FIELD_RECORD]}
    counts = {name: n for name, n in counts.items() if n}
    assert counts == UNSOURCED, (
        "a figure needs a source (<!-- figures: docs/bench/X.json -->); fewer: lower UNSOURCED"
    )


def test_a_marked_paragraph_is_checked_against_its_result(tmp_path):
    (tmp_path / "r.json").write_text('{"sizes": [{"median_s": 2.92, "bytes": 1500}], "ok": true}')
    (tmp_path / "a.md").write_text(
        "<!-- figures: r.json -->\nA run takes 2.9 s (2.92 s exactly); not 3.1 s.\n\n"
        "Unmarked: 5 minutes, `sleep 9 s`.\n\n```\n$ run\n12 s\n```\n"
    )
    assert unsourced(tmp_path, "a.md") == ["3.1 s (not in r.json)", "5 minutes"]


@pytest.mark.parametrize(
    ("text", "stated"),
    [
        ("took 2.92 s, then 1,089 ms and 1.5 GB", ["2.92 s", "1,089 ms", "1.5 GB"]),
        ("10-25 minutes; 64 GB of RAM; 4 GiB", ["25 minutes", "64 GB", "4 GiB"]),
        ("python3.11 s3 v2.1s 0.5x 3 sockets 8 cores 2 boxes", []),
    ],
)
def test_figures_are_numbers_with_a_unit_of_time_or_size(text, stated):
    assert figures(text) == stated


def test_a_figure_matches_its_value_as_rounded_in_the_text():
    assert found("2.9 s", [2.92]) and found("3 s", [2.92]) and found("1,089 ms", [1089.4])
    assert not found("2.8 s", [2.92]) and not found("2.921 s", [2.9201])


@FUZZ
@given(st.text(max_size=300))
def test_any_markdown_splits_into_paragraphs_and_figures(text):
    for paragraph in paragraphs(text):
        assert paragraph.strip()
        figures(paragraph)
        named = sources(paragraph)
        assert named is None or all(named)


def test_a_paragraph_may_name_the_field_record_for_the_field_reports_figures(tmp_path):
    (tmp_path / "field.md").write_text("The report measured 24-26\n  GiB per card, 11 GiB with both.\n")
    (tmp_path / "a.md").write_text("<!-- figures: field.md -->\nExpected: 26 GiB, then 11 GiB; not 13 GiB.\n")
    assert unsourced(tmp_path, "a.md") == ["13 GiB (not in field.md)"]
