"""A bench's plots as PNG files beside its summary (matplotlib, Agg: no display, no browser engine): throughput
against concurrency, TTFT and inter-token latency against concurrency (p50 and p99), and the latency-throughput
curve. With another release's run, each plot overlays both: this release solid with round markers, the other
dashed with square markers, named in the legend."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tritonops.bench.results import BenchSummary, workload_said

NOW = {"linestyle": "-", "marker": "o", "color": "#1f77b4"}
BEFORE = {"linestyle": "--", "marker": "s", "color": "#d62728"}


def write_plots(folder: Path, summary: BenchSummary, other: BenchSummary | None = None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    runs = [(summary, NOW)] + ([(other, BEFORE)] if other is not None else [])
    role = {id(summary): "this run", id(other): f"compared: {short_release(other.release)}" if other else ""}
    written = []
    # the whole release names (through a door, every host's: A+B+C) under the axes, never in the legend
    footer = "\n".join(textwrap.fill(f"{'this run' if run is summary else 'compared'}: release {run.release}", 110)
                       for run, _ in runs)

    def save(figure, name: str) -> None:
        figure.text(0.01, 0.01, footer, fontsize=7, color="#555555", va="bottom", ha="left")
        figure.tight_layout(rect=(0, 0.04 + 0.035 * footer.count("\n"), 1, 1))
        path = folder / name
        figure.savefig(path, dpi=110)
        pyplot.close(figure)
        written.append(path)

    def levels(run: BenchSummary, name: str):
        points = [(level.concurrency, level.figure(name)) for level in run.levels if level.figure(name) is not None]
        return [x for x, _ in points], [y for _, y in points]

    def label(run: BenchSummary, what: str = "") -> str:
        return f"{role[id(run)]}{' ' + what if what else ''}"

    title = f"{summary.deployment}: {workload_said(summary)}"
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    for run, style in runs:
        axes.plot(*levels(run, "output_tokens_per_s"), label=label(run), **style)
    _concurrency_axis(axes, summary)
    axes.set_ylabel("output tokens/s (all streams)")
    axes.set_title(f"Throughput against concurrency\n{title}", fontsize=10)
    axes.legend()
    save(figure, "throughput.png")

    for name, what in (("ttft", "Time to first token"), ("itl", "Inter-token latency")):
        figure, axes = pyplot.subplots(figsize=(7, 4.5))
        for run, style in runs:
            axes.plot(*levels(run, f"{name}_p50_ms"), label=label(run, "p50"), **style)
            axes.plot(*levels(run, f"{name}_p99_ms"), label=label(run, "p99"), alpha=0.7,
                      **{**style, "marker": "^" if style is NOW else "v", "linestyle": ":" if style is NOW else "-."})
        _concurrency_axis(axes, summary)
        axes.set_ylabel(f"{what.lower()} (ms)")
        axes.set_ylim(bottom=0)
        axes.set_title(f"{what} against concurrency (p50, p99)\n{title}", fontsize=10)
        axes.legend()
        save(figure, f"{name}.png")

    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    for run, style in runs:
        points = [(level.figure("output_tokens_per_s"), level.figure("e2e_p50_ms"), level.concurrency)
                  for level in run.levels if level.figure("output_tokens_per_s") and level.figure("e2e_p50_ms")]
        axes.plot([p[0] for p in points], [p[1] for p in points], label=label(run, "e2e p50"), **style)
        for x, y, concurrency in points:
            axes.annotate(f"c{concurrency}", (x, y), textcoords="offset points", xytext=(5, 5), fontsize=8,
                          color=style["color"])
    axes.set_xlabel("output tokens/s (all streams)")
    axes.set_ylabel("end-to-end latency per request, p50 (ms)")
    axes.set_ylim(bottom=0)
    axes.set_title(f"Latency against throughput (points: concurrency)\n{title}", fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend()
    save(figure, "latency_throughput.png")
    return written


def short_release(release: str) -> str:
    """A release as a legend names it: its id, or for a door's several hosts (A+B+C) the first id and how many
    more."""
    ids = release.split("+")
    return ids[0] if len(ids) == 1 else f"{ids[0]} +{len(ids) - 1}"


def _concurrency_axis(axes, summary: BenchSummary) -> None:
    ticks = sorted({level.concurrency for level in summary.levels})
    if len(ticks) > 1 and ticks[-1] / max(ticks[0], 1) >= 8:
        axes.set_xscale("log", base=2)
    axes.set_xticks(ticks)
    axes.set_xticklabels([str(t) for t in ticks])
    axes.set_xlabel("concurrency (requests in flight)")
    axes.grid(True, alpha=0.3)
