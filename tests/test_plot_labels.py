"""Point labels of a crowded Pareto plot, read from the rendered extents: no two overlap, none covers a point
or the key, none leaves the axes; every policy is named on the plot or, numbered, in the key."""

from __future__ import annotations

import csv
import json
import re

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from prunesim.plots import style
from prunesim.plots.pareto import pareto_figure, read_leaderboard

# Twenty-one policies of long names on a narrow band of x: apart enough not to be grouped
# (7% of either axis' range), near enough that labels drawn at one fixed offset run into each other, and too
# many for every name to find room.
NAMES = [f"{family}:{preset}" for family in ("observation-masking", "memory-pressure-with-long-name", "llm-summary")
         for preset in ("swe-agent", "complexity-trap", "letta", "memgpt", "openhands-sdk-class", "preset-six",
                        "preset-seven")]


def crowded_leaderboard(tmp_path, step=0.002, levels=14):
    rows = []
    for k, name in enumerate(NAMES):
        x = 1.0 + step * k
        y = float((k * 5) % levels)  # a zig-zag: neighbours in x sit far apart in y, others close
        for figure, value in (("cost_ratio", x), ("unrecorded_evictions", y)):
            rows.append({"policy": name, "figure": figure, "n": 10, "median": value, "ci_low": value * 0.98,
                         "ci_high": value * 1.02})
    path = tmp_path / "lb"
    path.mkdir()
    with open(path / "leaderboard.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    meta = {"source": str(tmp_path / "transcripts"), "units": 10, "scenario": {"name": "transcript-32k"},
            "figures": {"cost_ratio": {"unit": "ratio"}, "unrecorded_evictions": {"unit": "evictions"}}}
    (path / "leaderboard.json").write_text(json.dumps(meta))
    return path


def drawn_boxes(fig):
    """Each label's box as drawn (its glyphs and its white box), each marker's, the axes' and the key's."""
    FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = {}
    for text in ax.texts:
        if (text.get_gid() or "").startswith("label:"):
            box = text.get_window_extent(renderer)
            patch = text.get_bbox_patch()
            labels[text.get_gid()] = (text.get_text(), box if patch is None else
                                      box.union([box, patch.get_window_extent(renderer)]))
    px = fig.dpi / 72
    markers = []
    for line in ax.get_lines():
        if (line.get_gid() or "").startswith("point:"):
            (x, y), half = line.get_transform().transform(line.get_xydata())[0], line.get_markersize() / 2 * px
            markers.append((line.get_gid(), (x - half, y - half, x + half, y + half)))
    legend = ax.get_legend()
    return labels, markers, ax.get_window_extent(renderer), legend and legend.get_window_extent(renderer)


@pytest.mark.parametrize("levels", [14, 7])  # 14 levels of y leave room for every name; 7, not for most
def test_crowded_labels_overlap_nothing_and_stay_in_the_axes(tmp_path, levels):
    board = read_leaderboard(crowded_leaderboard(tmp_path, levels=levels))
    fig = pareto_figure(board, x="cost_ratio", y="unrecorded_evictions")
    labels, markers, frame, key = drawn_boxes(fig)
    assert len(labels) == len(NAMES)  # every point drawn alone, each with its label (or its number)
    boxes = list(labels.values())
    for i, (text, box) in enumerate(boxes):
        for other_text, other in boxes[i + 1:]:
            assert not box.overlaps(other), f"{text!r} overlaps {other_text!r}"
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, \
            f"{text!r} leaves the axes"
        for gid, (x0, y0, x1, y1) in markers:
            assert not (box.x0 < x1 and x0 < box.x1 and box.y0 < y1 and y0 < box.y1), f"{text!r} covers {gid}"
        assert key is None or not box.overlaps(key), f"{text!r} runs into the key"
    numbered = [text for text, _ in boxes if text.isdigit()]
    assert bool(numbered) == (levels == 7)  # numbers only where names found no room: the fallback is tested
    # every policy is named: by its label, or by a number whose key entry gives the name
    entries = [t.get_text() for t in fig.axes[0].get_legend().get_texts()] if key is not None else []
    for gid, (text, _) in labels.items():
        name = gid.removeprefix("label:")
        if text.replace("\n", "") != name:
            assert re.fullmatch(r"\d+", text), f"{name} is labelled {text!r}"
            assert any(e.startswith(f"[{text}] {name}:") for e in entries), f"number {text} is not in the key"


def test_the_crowded_figure_is_the_same_bytes_each_time(tmp_path):
    board = read_leaderboard(crowded_leaderboard(tmp_path))
    drawn = [style.render(pareto_figure(board, x="cost_ratio", y="unrecorded_evictions"), "png") for _ in range(2)]
    assert drawn[0] == drawn[1]
