"""The figures a Markdown file states (times and sizes: "2.9 s", "1.5 GB") and where each one's
source is named.

A paragraph whose first line is ``<!-- figures: docs/bench/noop.json -->`` (one path or several,
comma-separated) states figures from those benchmark results: each of its figures must be a value
there, as rounded in the text. A Markdown file named instead (docs/field-knowledge.md, the field
reports in the project's words) must state the same figure. Code (fenced, or a span in
backticks: commands and examples of output) states nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

FIGURE = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*"
    r"(ms|s|seconds?|min|minutes?|hours?|GB|MB|GiB|MiB|KiB|kB)(?!\w)"
)
MARKER = re.compile(r"<!-- figures: ([^>]+?) -->")
CODE_SPAN = re.compile(r"`[^`]*`")


def paragraphs(text: str) -> list[str]:
    """The paragraphs outside fenced code."""
    out, current, fenced = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.strip():
            current.append(line)
        elif current:
            out.append("\n".join(current))
            current = []
    if current:
        out.append("\n".join(current))
    return out


def figures(paragraph: str) -> list[str]:
    """Each figure as written ("2.92 s"), outside code spans (`... 40 s ago`: a literal example)."""
    return [m.group(0) for m in FIGURE.finditer(CODE_SPAN.sub(" ", paragraph))]


def sources(paragraph: str) -> list[str] | None:
    """The benchmark results the paragraph names on its first line, None when it names none."""
    match = MARKER.fullmatch(paragraph.splitlines()[0].strip())
    return [p.strip() for p in match.group(1).split(",")] if match else None


def numbers(data) -> list[float]:
    """Every number in a JSON document."""
    if isinstance(data, bool):
        return []
    if isinstance(data, int | float):
        return [float(data)]
    if isinstance(data, dict):
        data = list(data.values())
    if isinstance(data, list):
        return [n for item in data for n in numbers(item)]
    return []


def found(figure: str, values: list[float]) -> bool:
    """Whether FIGURE's number is one of VALUES as rounded in the text ("2.9" for 2.92)."""
    text = FIGURE.fullmatch(figure).group(1).replace(",", "")
    decimals = len(text.partition(".")[2])
    return any(round(v, decimals) == float(text) for v in values)


def unsourced(root: Path, name: str) -> list[str]:
    """The figures of ROOT/NAME in no paragraph naming a source, and those its sources lack."""
    out = []
    for paragraph in paragraphs((root / name).read_text()):
        stated = figures(paragraph)
        named = sources(paragraph)
        if named is None:
            out += stated
            continue
        values = [
            v
            for path in named
            if path.endswith(".json")
            for v in numbers(json.loads((root / path).read_text()))
        ]
        texts = {
            _same(f)
            for path in named
            if not path.endswith(".json")
            for f in figures((root / path).read_text())
        }
        out += [
            f"{f} (not in {', '.join(named)})" for f in stated if not (found(f, values) or _same(f) in texts)
        ]
    return out


def _same(figure: str) -> str:
    """A figure as compared with a document's: one space between number and unit."""
    match = FIGURE.fullmatch(figure)
    return f"{match.group(1)} {match.group(2)}"
