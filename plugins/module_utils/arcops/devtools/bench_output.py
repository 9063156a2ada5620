"""What every `scripts/bench` command shares: --json PATH and --format, and the JSON file checked
before any run (a benchmark that runs for minutes must not fail at its end on a bad path)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli.common import whole
from ..common.outputs import OutputError, output_file, write_atomic


def add_options(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    parser.add_argument("--json", metavar="PATH", help=f"also write {what} as JSON here")
    parser.add_argument("--format", choices=["table", "json"], default="table")


def json_target(args: argparse.Namespace) -> Path | None:
    """The --json file, checked now (None when not asked for); exit 2 after saying why not."""
    try:
        return output_file(args.json, "--json") if args.json else None
    except OutputError as e:
        print(f"bench: {e}", file=sys.stderr)
        raise SystemExit(2) from None


def write(target: Path | None, result: dict) -> None:
    if target:
        write_atomic(target, json.dumps(result, indent=2) + "\n")


def box_counts(most: int):
    """An argparse type: a rising, comma-separated list of fleet sizes from 1 to MOST."""

    def parse(text: str) -> tuple[int, ...]:
        not_counts = f"{text!r} is not a comma-separated list of box counts"
        try:
            sizes = tuple(whole(v) for v in text.split(","))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(not_counts) from None
        if not sizes or any(not 1 <= s <= most for s in sizes) or list(sizes) != sorted(set(sizes)):
            raise argparse.ArgumentTypeError(f"{text!r}: counts from 1 to {most}, rising")
        return sizes

    return parse


def per_box_growth(rows: list[dict], cost: str) -> float | None:
    """ROWS' COST per box at the largest fleet over the one at a tenth of it (1.0: linear; 10:
    quadratic), None without a row at a tenth."""
    by_size = {r["boxes"]: r for r in rows}
    largest = max(by_size)
    tenth = by_size.get(largest // 10)
    return round(by_size[largest][cost] / tenth[cost], 2) if tenth else None
