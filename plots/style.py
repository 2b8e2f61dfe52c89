"""Shared look and deterministic output for every figure.

Okabe-Ito colours (colour-blind safe), one figure size and resolution, and a
``save`` that writes PNG/SVG/PDF bytes that are identical from run to run
(fixed SVG hash salt, no dates in the metadata), atomically.
"""

from __future__ import annotations

import io
import textwrap
from contextlib import contextmanager
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402
from prunesim.errors import UserError  # noqa: E402
from prunesim.io import output  # noqa: E402
from prunesim.io.output import write_bytes  # noqa: E402

# Okabe & Ito (2008), black moved last so that the first lines are coloured.
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2", "#CC79A7", "#F0E442", "#000000")
GREY = "#777777"
# Sized for print: a figure 5.5 in wide shrinks to a single column (3.4 in) with its smallest text
# (8 pt) at 5 pt and its axis labels (10 pt) at 6 pt; PNG at 200 dpi is sharp at that size.
FIGSIZE = (5.5, 3.6)  # inches: one panel
TWO_PANELS = (5.5, 5.8)  # stories, ledger, break-even: two panels, one above the other
WIDE = (7.0, 4.6)  # Pareto plots: the axes and a key beside them, for the full text width
DPI = 200
SMALL = 8  # pt: the smallest text (names of lines in the margin, labels of points, notes)
FORMATS = ("png", "svg", "pdf")

RC = {
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 8.5,
    "legend.title_fontsize": 8.5,
    "legend.frameon": False,  # every legend sits outside the axes: a frame would only add ink
    "legend.handlelength": 1.8,
    "legend.labelspacing": 0.35,
    "figure.titlesize": 10.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.framealpha": 0.85,
    "svg.hashsalt": "prunesim",
    "svg.fonttype": "path",
    "path.simplify": False,
    # Text is text: a name with a pair of $ in it (a scenario file, a transcript, a policy) is shown as typed,
    # never read as mathtext (which garbles it, or fails on a command it does not know).
    "text.parse_math": False,
}

METADATA = {
    "png": {"Software": "prunesim"},
    "svg": {"Date": None, "Creator": "prunesim"},
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": "prunesim", "Producer": "prunesim"},
}


def colour(i: int) -> str:
    return OKABE_ITO[i % len(OKABE_ITO)]


@contextmanager
def rc():
    with matplotlib.rc_context(RC):
        yield


def new_figure(nrows: int = 1, ncols: int = 1, size=FIGSIZE, **kwargs):
    """A Figure not registered with pyplot (no global state), and its axes."""
    with rc():
        fig = Figure(figsize=size, dpi=DPI, layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False, **kwargs)
    return fig, axes


def literal_text(fig: Figure) -> Figure:
    """Every text of the figure shown as typed, never as mathtext (see ``text.parse_math`` in RC): a text made
    outside :func:`rc` took matplotlib's own default when it was made."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
    return fig


def render(fig: Figure, fmt: str) -> bytes:
    if fmt not in FORMATS:
        raise UserError("--format", fmt, f"unknown format (known: {', '.join(FORMATS)})")
    buf = io.BytesIO()
    with rc():
        literal_text(fig).savefig(buf, format=fmt, dpi=DPI, metadata=METADATA[fmt])
    return buf.getvalue()


def save(fig: Figure, path: Path, fmt: str | None = None, flag: str | None = None) -> Path:
    """Write the figure to ``path`` (its errors name ``flag``, the option that gave the path, when given)."""
    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower() or "png"
    write_bytes(path, render(fig, fmt), flag)
    return path


def output_path(out: str | Path | None, default_dir: Path, name: str, fmt: str | None) -> tuple[Path, str]:
    """Where a figure goes: ``--out`` as a file (its suffix names the format), a device or pipe, or a folder.

    A path ending with ``/``, an existing folder, or a new name without a
    suffix is a folder (the figure gets its default name in it); a name with
    another suffix (``x.jpg``) is refused rather than taken for a folder.
    """
    if out is None:
        fmt = fmt or "png"
        path = Path(default_dir) / f"{name}.{fmt}"
        output.check_file(path)
        return path, fmt
    text = str(out)
    path = Path(text)
    kind = output.kind_of(path, "--out")
    suffix = path.suffix.lower().lstrip(".")
    if not output.names_folder(text) and kind != "folder":
        if kind == "stream":  # /dev/stdout, a pipe: the figure's bytes, in --format (default png)
            return path, fmt or "png"
        if suffix in FORMATS:
            if fmt and fmt != suffix:
                raise UserError("--out", text, f"suffix .{suffix} disagrees with --format {fmt}")
            output.check_file(path, "--out")
            return path, suffix
        if path.exists():
            raise UserError("--out", text, "exists and is not a directory (name a .png, .svg or .pdf file)")
        if suffix:
            raise UserError("--out", text, f".{suffix} is not a figure format (png, svg or pdf); "
                            "end the path with / to name a folder")
    fmt = fmt or "png"
    output.check_folder(path, "--out")
    output.check_file(path / f"{name}.{fmt}", "--out")
    return path / f"{name}.{fmt}", fmt


def legend_outside(ax, handles=None, labels=None, title: str | None = None) -> None:
    """A legend to the right of the axes, where it cannot hide data."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, title=title)


# One line style and marker per series, so that series stay apart in grey print and where they overlap.
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def linestyle(i: int):
    return LINESTYLES[i % len(LINESTYLES)]


def marker(i: int) -> str:
    return MARKERS[i % len(MARKERS)]


# More policy families than Okabe-Ito has colours: grey, brown and purple after them; Okabe-Ito's yellow,
# hard to see as a thin line or a small marker on white, last.
FAMILY_COLOURS = tuple(c for c in OKABE_ITO if c != "#F0E442") + ("#777777", "#8C564B", "#7F3C8D", "#F0E442")


def family_looks(policies) -> dict[str, tuple[str, str, object]]:
    """{policy: (colour, marker, line style)}: one colour per family (the name before ``:``), presets of one
    family told apart by marker and line style."""
    policies = list(dict.fromkeys(policies))
    families = list(dict.fromkeys(p.split(":")[0] for p in policies))
    seen: dict[str, int] = {}
    out = {}
    for p in policies:
        family = p.split(":")[0]
        k = seen.get(family, 0)
        seen[family] = k + 1
        out[p] = (FAMILY_COLOURS[families.index(family) % len(FAMILY_COLOURS)], marker(k), linestyle(k))
    return out


def spread_labels(positions: list[float], gap: float) -> list[float]:
    """Label positions, in the order given, moved apart (upwards) so that no two are closer than ``gap``.

    For labels drawn beside lines that lie close together (two triggers 86 tokens
    apart): each keeps its place when it can, else sits ``gap`` above the one below.
    """
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    out = list(positions)
    last = None
    for i in order:
        if last is not None and out[i] < last + gap:
            out[i] = last + gap
        last = out[i]
    return out


def label_lines(ax, lines: list[tuple[float, str, str]]) -> list:
    """Name each horizontal line ``(y, text, colour)`` in the margin right of the axes, level with it.

    Outside the axes a label cannot hide the data. Labels of lines close
    together are spread apart so they do not overprint, with a short leader to
    their line. Returns the Text artists.
    """
    low, high = ax.get_ylim()
    span = (high - low) or 1.0
    inside = [(y, t, c) for y, t, c in lines if low <= y <= high]
    wanted = [(y - low) / span for y, _, _ in inside]
    # Labels one text line apart: the line's height (SMALL pt and leading) over the axes' height in points.
    height = ax.get_position().height * ax.figure.get_figheight() * 72
    placed = spread_labels(wanted, 1.35 * SMALL / max(height, 1.0))
    excess = max(placed, default=0.0) - 1.0
    if excess > 0:  # spread past the top: move the stack down, no lower than the axes' foot
        placed = [max(p - excess, 0.0) for p in placed]
    texts = []
    for (_, text, c), frac, at in zip(inside, placed, wanted, strict=True):
        texts.append(ax.annotate(text, xy=(1.0, at), xycoords="axes fraction", xytext=(1.02, frac),
                                 textcoords="axes fraction", color=c, fontsize=SMALL, va="center", ha="left",
                                 annotation_clip=False,
                                 arrowprops={"arrowstyle": "-", "color": c, "lw": 0.6, "shrinkA": 0, "shrinkB": 0,
                                             "relpos": (0.0, 0.5)}))  # from the text's left end, not through it
    return texts


def _tick_text(x: float, _pos=None) -> str:
    x = x if x != 0 else 0.0  # no "-0"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:g}"


def thousands(axis) -> None:
    """Tick labels with a thousands separator (24,000), as the text of the figure writes numbers; small
    values as they are (500, 0.5), so that an axis over a narrow range does not read 0, 0, 0."""
    axis.set_major_formatter(FuncFormatter(_tick_text))


def legend_below(ax, handles, labels, ncol: int = 2) -> None:
    """A legend under the axes and their x label (the right margin holds the lines' labels).

    Its distance is in font sizes, not axes fractions, so it clears the tick
    labels and the x label whatever the axes' height.
    """
    if handles:
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), borderaxespad=3.6, ncol=ncol)


TITLE_WIDTH = 62  # characters at 10 pt over a 5.5 in figure: a longer title line is wrapped, not cut


def wrapped(title: str, width: int = TITLE_WIDTH) -> str:
    """``title`` with each of its lines wrapped at ``width`` characters, between words only.

    Names such as ``slack-gated+tombstoned`` are never broken at their hyphen.
    """
    return "\n".join(textwrap.fill(line, width, break_on_hyphens=False, break_long_words=False) if line else line
                     for line in title.split("\n"))


def seeds_text(seeds) -> str:
    seeds = sorted({int(s) for s in seeds})
    if not seeds:
        return "no seeds"
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}-{seeds[-1]} (n={len(seeds)})"
    return "seeds " + ",".join(str(s) for s in seeds)
