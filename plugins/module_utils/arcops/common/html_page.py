"""One self-contained HTML page: inline CSS and inline SVG charts, no script, no font, no image
or link that a browser would fetch (the page is viewed where there may be no network). Every
value is escaped. Narrow screens get one column and tables that scroll sideways on their own.

Stdlib only: `arcops operate report` runs on the box as well as on the control node.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

STYLE = """
:root { color-scheme: light; --bad: #b3261e; --ok: #1b6e2a; --warn: #8a5300; --line: #d0d4da; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 12px;
       color: #1d2026; background: #fff; }
h1 { font-size: 1.45em; margin: 0.2em 0; }
h1, .meta, .banner, figcaption { overflow-wrap: anywhere; }
h2 { font-size: 1.15em; margin: 1.4em 0 0.4em; border-bottom: 1px solid var(--line); }
.meta { color: #555; margin: 0 0 0.8em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.3em 0; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f4f6; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.bad td { background: #fde8e7; }
tr.warn td { background: #fff3da; }
.banner { border-left: 5px solid var(--line); padding: 6px 10px; margin: 0.5em 0; background: #f7f7f8; }
.banner.bad { border-color: var(--bad); background: #fde8e7; }
.banner.warn { border-color: var(--warn); background: #fff3da; }
.banner.ok { border-color: var(--ok); background: #e6f4ea; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; max-width: 100%; }
figcaption { font-size: 0.9em; color: #444; }
svg { max-width: 100%; height: auto; }
@media (max-width: 600px) { body { font-size: 14px; padding: 8px; } }
"""


def esc(value: object) -> str:
    return html.escape("-" if value is None else str(value), quote=True)


def page(title: str, meta: str, sections: Iterable[str]) -> str:
    """The whole document."""
    body = "\n".join(sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n"
        f'<body><h1>{esc(title)}</h1><p class="meta">{esc(meta)}</p>\n{body}\n</body></html>\n'
    )


def section(title: str, *parts: str, ident: str = "") -> str:
    anchor = f' id="{esc(ident)}"' if ident else ""
    return f"<section{anchor}><h2>{esc(title)}</h2>\n" + "\n".join(parts) + "\n</section>"


def banner(text: str, kind: str = "") -> str:
    """A one-paragraph notice; kind: bad, warn, ok or plain."""
    return f'<p class="banner {esc(kind)}">{esc(text)}</p>'


def table(
    rows: Sequence[dict], columns: Sequence[str], row_class: dict[int, str] | None = None, ident: str = ""
) -> str:
    """rows as a table of columns (numbers right-aligned); row_class marks rows bad or warn."""
    if not rows:
        return '<p class="meta">none</p>'
    anchor = f' id="{esc(ident)}"' if ident else ""
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    lines = []
    for n, row in enumerate(rows):
        kind = (row_class or {}).get(n)
        cells = []
        for c in columns:
            value = row.get(c)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            cells.append(f'<td class="num">{esc(value)}</td>' if number else f"<td>{esc(value)}</td>")
        lines.append((f'<tr class="{esc(kind)}">' if kind else "<tr>") + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><table{anchor}><thead><tr>{head}</tr></thead><tbody>'
        + "".join(lines)
        + "</tbody></table></div>"
    )


def bars(title: str, items: Sequence[tuple[str, float]], unit: str) -> str:
    """A horizontal bar chart as inline SVG: one bar per (label, value), the axis from zero, each
    bar's value written beside it; a figure with its caption."""
    width, label_w, row_h = 520, 170, 26
    top = max((item[1] for item in items), default=0) or 1
    height = row_h * max(len(items), 1) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{esc(title)}">'
    ]
    plot = width - label_w - 70
    for n, (label, value) in enumerate(items):
        y = 10 + n * row_h
        w = max(0.0, value) / top * plot
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12">{esc(label)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" fill="#3b6fb6"/>'
            f'<text x="{label_w + w + 4:.1f}" y="{y + 15}" font-size="12">{esc(f"{value:g}")}</text>'
        )
    base = 10 + len(items) * row_h
    parts.append(
        f'<line x1="{label_w}" y1="6" x2="{label_w}" y2="{base}" stroke="#555"/>'
        f'<text x="{label_w}" y="{base + 15}" font-size="11">0</text>'
        f'<text x="{label_w + plot}" y="{base + 15}" font-size="11" text-anchor="end">'
        f"{esc(f'{top:g}')} {esc(unit)}</text></svg>"
    )
    return f"<figure>{''.join(parts)}<figcaption>{esc(title)} ({esc(unit)})</figcaption></figure>"
