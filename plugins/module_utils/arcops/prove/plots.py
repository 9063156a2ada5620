"""PNG plots of a bench result, on the control node (matplotlib: the `plots` extra; never
imported on a box): decode tokens/s against concurrent streams, prefill tokens/s against prompt
length, this run beside its baseline when there is one."""

from __future__ import annotations

import io
from pathlib import Path

from ..common.outputs import write_atomic


class PlotError(ValueError):
    """matplotlib is missing or the plot cannot be written."""


def bench_png(result: dict, out: str | Path, baseline: tuple[str, dict] | None = None) -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display: files only
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotError(
            "--plot needs matplotlib: pip install 'arcops[plots]' (scripts/bootstrap does)"
        ) from None
    from .bench import figures

    now = figures(result)
    fig, (decode, prefill) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100)
    title = f"{result.get('model')}" + (f" on {result['stack']}" if result.get("stack") else "")
    fig.suptitle(title)
    series = [("this run", now, "o-")]
    if baseline is not None:
        series.append((baseline[0], baseline[1], "s--"))
    for label, data, style in series:
        d = sorted((int(k), v) for k, v in (data.get("decode") or {}).items())
        if d:
            decode.plot([k for k, _unused in d], [v for _unused, v in d], style, label=label)
        p = sorted((int(k), v) for k, v in (data.get("prefill") or {}).items())
        if p:
            prefill.plot([k for k, _unused in p], [v for _unused, v in p], style, label=label)
    decode.set(xlabel="concurrent streams", ylabel="output tokens/s", title="decode")
    prefill.set(xlabel="prompt tokens", ylabel="prefill tokens/s", title="prefill")
    for ax in (decode, prefill):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    path = Path(out)
    png = io.BytesIO()
    try:
        fig.savefig(png, format="png")
        write_atomic(path, png.getvalue())  # readers see the old plot or the new one
    except OSError as e:
        raise PlotError(f"--plot {path}: {e.strerror}") from None
    finally:
        plt.close(fig)
    return path
