"""PNG plots of a bench result, on the control node (matplotlib: the `plots` extra; never
imported on a box). Three panels: decode tokens/s against concurrent streams, latency against
concurrent streams (time to first token and time per output token, median and p99), and prefill
tokens/s against prompt length; this run beside its baseline when there is one. Stream counts
are whole ticks, every y axis starts at zero and names its unit, and the title names the model
and the server."""

from __future__ import annotations

import io
from pathlib import Path

from ..common.outputs import write_atomic

# (result key, label, style) of the latency panel: medians solid, p99 dashed.
LATENCY = (
    ("median_ttft_ms", "TTFT median", "o-"),
    ("p99_ttft_ms", "TTFT p99", "o--"),
    ("median_tpot_ms", "TPOT median", "s-"),
    ("p99_tpot_ms", "TPOT p99", "s--"),
)


class PlotError(ValueError):
    """matplotlib is missing or the plot cannot be written."""


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display: files only
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotError(
            "--plot needs matplotlib: pip install 'arcops[plots]' (scripts/bootstrap does)"
        ) from None
    return plt


def _points(data: dict, key: str) -> tuple[list[int], list[float]]:
    pairs = sorted((int(k), v) for k, v in (data.get(key) or {}).items())
    return [k for k, _v in pairs], [v for _k, v in pairs]


def _latency(ax, result: dict) -> None:
    levels = sorted(result.get("decode") or [], key=lambda d: d["max_concurrency"])
    for key, label, style in LATENCY:
        shown = [(d["max_concurrency"], d.get(key)) for d in levels if d.get(key) is not None]
        if shown:
            ax.plot([s for s, _v in shown], [v for _s, v in shown], style, label=label)
    if any(d.get("tpot_unknown_why") for d in levels):
        ax.annotate(
            "TPOT unknown where answers came in bursts",
            (0.02, 0.95),
            xycoords="axes fraction",
            fontsize="small",
        )


def bench_figure(result: dict, baseline: tuple[str, dict] | None = None):
    """The figure (matplotlib's), for bench_png to write and the tests to read."""
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    from .bench import figures

    fig, (decode, latency, prefill) = plt.subplots(1, 3, figsize=(16, 4.2), dpi=100)
    server = result.get("url") or "an unnamed server"
    stack = f" ({result['stack']})" if result.get("stack") else ""
    fig.suptitle(f"{result.get('model')} on {server}{stack}")
    series = [("this run", figures(result), "o-")]
    if baseline is not None:
        series.append((baseline[0], baseline[1], "s--"))
    for label, data, style in series:
        for ax, key in ((decode, "decode"), (prefill, "prefill")):
            x, y = _points(data, key)
            if x:
                ax.plot(x, y, style, label=label)
    _latency(latency, result)
    decode.set(xlabel="concurrent streams", ylabel="output tokens/s", title="decode")
    latency.set(xlabel="concurrent streams", ylabel="milliseconds", title="latency (this run)")
    prefill.set(xlabel="prompt tokens", ylabel="prefill tokens/s", title="prefill")
    streams = sorted({d["max_concurrency"] for d in result.get("decode") or []})
    lengths = sorted({p["target_tokens"] for p in result.get("prefill") or []})
    for ax, ticks in ((decode, streams), (latency, streams), (prefill, lengths)):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if ticks:  # the counts measured, not fractions between them
            ax.set_xticks(ticks)
    for ax in (decode, latency, prefill):
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def bench_png(result: dict, out: str | Path, baseline: tuple[str, dict] | None = None) -> Path:
    fig = bench_figure(result, baseline)
    plt = _pyplot()
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
