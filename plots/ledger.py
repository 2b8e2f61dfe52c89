"""A run's pass ledger: what each model-driven pass cost and what it freed.

Top: per pass, index and rationale (the decision's overhead), evicted and net
(evicted - index - rationale) as grouped bars. Bottom: cumulative overhead
against cumulative net reclamation, with the line where they are equal (an
overhead ratio of 1: above it the passes cost more than they freed).
"""

from __future__ import annotations

import numpy as np
from prunesim.plots import style
from prunesim.plots.io import Run
from prunesim.plots.trace import title_for

BARS = (("index", "index (read)"), ("rationale", "rationale (written)"), ("evicted", "evicted"), ("net", "net"))


def ledger_figure(run: Run):
    fig, axes = style.new_figure(2, 1, size=style.TWO_PANELS)
    top, bottom = axes[0][0], axes[1][0]
    rows = run.ledger
    with style.rc():
        top.set_title(title_for([run], f"{len(rows)} model-driven prune passes"))
        top.set_xlabel("prune pass (number, in order)")
        top.set_ylabel("tokens")
        bottom.set_xlabel("cumulative net reclamation (tokens)")
        bottom.set_ylabel("cumulative overhead (tokens)")
        for axis in (top.yaxis, bottom.xaxis, bottom.yaxis):
            style.thousands(axis)
        if not rows:
            for ax in (top, bottom):
                ax.text(0.5, 0.5, "no model-driven passes in this run", ha="center", va="center",
                        transform=ax.transAxes)
            return fig
        n = np.array([int(r["pass"]) for r in rows])
        width = 0.2
        for i, (col, text) in enumerate(BARS):
            values = np.array([float(r[col]) for r in rows])
            top.bar(n + (i - 1.5) * width, values, width, color=style.colour(i), label=text)
        top.axhline(0, color="black", lw=0.8)
        top.set_xticks(n if len(n) <= 25 else n[:: max(1, len(n) // 20)])
        style.legend_below(top, *top.get_legend_handles_labels(), ncol=4)  # beside the bars, it took a third
        overhead = np.cumsum([float(r["index"]) + float(r["rationale"]) for r in rows])
        net = np.cumsum([float(r["net"]) for r in rows])
        (line,) = bottom.plot(net, overhead, marker="o", ms=4, color=style.colour(4),
                              label="after each pass (cumulative)")
        line.set_gid("cumulative")
        lo = min(0.0, float(net.min()), float(overhead.min()))
        hi = max(float(net.max()), float(overhead.max())) * 1.05 or 1.0
        bottom.plot([lo, hi], [lo, hi], color=style.GREY, ls="--", lw=1.0,
                    label="overhead = net (ratio 1)")[0].set_gid("parity")
        bottom.axvline(0, color="black", lw=0.8)
        ratio = run.metrics.get("overhead_ratio")
        ratio_text = ratio if isinstance(ratio, str) else f"{float(ratio):.2f}" if ratio is not None else "?"
        bottom.set_title(f"overhead (index + rationale) against net, after each pass\n"
                         f"overhead ratio sum(index + rationale) / sum(net) = {ratio_text}")
        bottom.legend(loc="best", frameon=True, framealpha=0.9, edgecolor="none")
    return fig
