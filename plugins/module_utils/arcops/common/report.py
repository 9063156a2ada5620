"""Print facts as JSON or as a readable table: one format choice for every CLI command."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO


def print_json(data: Any, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    json.dump(data, out, indent=2, sort_keys=True)
    out.write("\n")


def print_table(rows: list[dict[str, Any]], columns: list[str], out: TextIO | None = None) -> None:
    """Left-aligned columns; missing values show as '-'."""
    out = out or sys.stdout
    cells = [[("-" if row.get(c) is None else str(row.get(c))) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    for line in [columns, *cells]:
        out.write("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() + "\n")
