"""Labels beside points, placed where they overlap nothing: each other, the points, a key, the axes' edges.

A label's box is measured with the figure's renderer (``get_window_extent``),
so it is the box that is drawn. Each label tries a fixed list of places around
its point (``candidates``: right, the right diagonals, left, the left
diagonals, above and below, centred or slid to a side; close, then a little
farther), then its other forms (on two lines), and takes a free place: inside
the axes, clear of every marker, of every text or legend over the axes and of
the labels already placed, and with no other marker nearer to it than its own
point (so that it reads as that point's label). Among the free places the one
crossing the fewest lines (error bars, frontiers) wins, then the earliest in
the list. The labels with the fewest free places choose first; one that finds
none may take the place of a label placed before it, which then moves to
another free place. A label still without a place is replaced by a number,
placed the same way after every label, for the figure's key to resolve; a
number with no free place either is left out (its point is still named in the
key, by its marker). Nothing is random: the same figure gets the same places.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.lines import Line2D
from matplotlib.path import Path as MplPath
from matplotlib.transforms import Bbox
from prunesim.plots import style

EDGE = 2.0  # points kept free inside the axes' edges
GAP = 1.0  # points kept free around a label's box
RINGS = (3.0, 8.0, 14.0)  # points between a point's marker and its label: close, then farther
# Directions (x, y) from the point, in order of preference; a label leaves its point on the side it points to.
DIRECTIONS = ((1, 0), (1, 1), (1, -1), (-1, 0), (-1, 1), (-1, -1), (0, 1), (0, -1))
DIAGONAL = 0.7071
SLIDE = 4.0  # points: a label above or below its point, slid sideways, still starts or ends this far past it


@dataclass
class Request:
    """One label to place: ``text`` beside ``xy`` (in the coordinates of ``transform``)."""

    text: str
    xy: tuple[float, float]
    transform: object  # a matplotlib Transform: data coordinates, or data shifted by an offset
    radius: float = 3.0  # points from xy to the edge of what the label must clear (its marker, a group's circle)
    own: tuple = ()  # the Line2D artists whose markers the label names (its point, a group's points)
    variants: tuple = ()  # other forms of the text (on two lines, say), tried in order before a number
    numbered: bool = True  # with no free place: a number (else the label is left out)
    rank: int = 0  # labels of a lower rank choose their places first (a point's name before a frontier's note)
    props: dict = field(default_factory=dict)  # annotate's keywords: fontsize, colour, bbox, gid, zorder


@dataclass
class Placement:
    texts: list  # per request, the Text drawn (None when left out)
    failed: set[int]  # requests drawn as a number or not at all (numbers_of numbers them)


@dataclass
class _Marker:
    line: object
    centre: tuple[float, float]
    box: Bbox


def renderer_of(fig):
    """The figure's renderer, after its layout (where the axes sit decides where the labels are)."""
    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)  # a canvas that can measure text (the figure is not pyplot's)
    with style.rc():  # text measured as it is drawn: as typed, never as mathtext
        style.literal_text(fig).draw_without_rendering()
    return fig.canvas.get_renderer()


def text_box(text, renderer) -> Bbox:
    """What ``text`` covers when drawn: its glyphs and its bbox patch, if any (display units)."""
    boxes = [text.get_window_extent(renderer)]
    patch = text.get_bbox_patch()
    if patch is not None:
        text.update_bbox_position_size(renderer)
        boxes.append(patch.get_window_extent(renderer))
    return Bbox.union(boxes)


def candidates(radius: float):
    """(offset in points, ha, va) of each place tried, in order of preference: beside the point, on a
    diagonal, above or below it (centred on it, or starting or ending just past it)."""
    out = []
    for ring in RINGS:
        d = radius + ring
        for dx, dy in DIRECTIONS:
            scale = DIAGONAL if dx and dy else 1.0
            va = ("bottom", "center", "top")[1 - dy]
            out.append(((dx * d * scale, dy * d * scale), ("left", "center", "right")[1 - dx], va))
            if not dx:  # above or below: also slid to either side, the point still under (or over) the label
                out += [((-SLIDE, dy * d), "left", va), ((SLIDE, dy * d), "right", va)]
    return out


class _Scene:
    """What a label must keep clear of, measured once per placement (display units)."""

    def __init__(self, ax, renderer):
        self.renderer = renderer
        self.px = ax.figure.dpi / 72  # display units per point
        self.area = ax.get_window_extent(renderer).padded(-EDGE * self.px)
        self.markers = markers(ax)
        self.blocked = [m.box for m in self.markers] + _texts_within(ax, renderer)
        self.lines = _segments(ax)
        self.placed: dict[int, Bbox] = {}  # request index -> the box of its label, in the order placed

    def free(self, box: Bbox, r: Request, placed: bool = True) -> bool:
        """Inside the axes, clear of every obstacle (and of the labels placed, with ``placed``), and nearer
        its own point than any other marker, so that it reads as that point's label."""
        if not (self.area.x0 <= box.x0 and box.x1 <= self.area.x1 and self.area.y0 <= box.y0
                and box.y1 <= self.area.y1):
            return False
        others = [*self.blocked, *(self.placed.values() if placed else ())]
        if any(box.overlaps(b) for b in others):
            return False
        anchor = r.transform.transform(r.xy)
        own = _distance(box, anchor) - r.radius * self.px
        return all(_distance(box, m.centre) - m.box.width / 2 > own for m in self.markers
                   if m.line not in r.own and math.dist(m.centre, anchor) > self.px)  # a marker at xy is its own

    def crossings(self, box: Bbox) -> int:
        return sum(path.intersects_bbox(box, filled=False) for path in self.lines)

    def places(self, label, r: Request):
        """Move ``label`` to each of its places in turn: (offset, ha, va, the box it covers there, gap included)."""
        for offset, ha, va in candidates(r.radius):
            label.xyann = offset
            label.set(ha=ha, va=va)
            yield offset, ha, va, text_box(label, self.renderer).padded(GAP * self.px)


def place(ax, requests: list[Request], failed: set[int] = frozenset()) -> Placement:
    """Draw each request's label as an annotation of ``ax`` where it is free (module docstring).

    ``failed`` are requests to draw as numbers (or leave out) from the start: a
    caller whose key grows with the numbers, moving the axes, places again with
    the failures so far, until no more fail.
    """
    scene = _Scene(ax, renderer_of(ax.figure))
    texts: list = [None] * len(requests)
    failed = set(failed)

    def put(i: int, text: str) -> bool:
        label = _annotation(ax, requests[i], text)
        best = None
        for k, (offset, ha, va, box) in enumerate(scene.places(label, requests[i])):
            if scene.free(box, requests[i]):
                cost = (scene.crossings(box), k)
                if best is None or cost < best[0]:
                    best = (cost, offset, ha, va, box)
        if best is None:
            label.remove()
            return False
        _, label.xyann, ha, va, box = best
        label.set(ha=ha, va=va)
        texts[i] = label
        scene.placed[i] = box
        return True

    def forms(i: int) -> tuple[str, ...]:
        return (str(numbers[i]),) if i in numbers else (requests[i].text, *requests[i].variants)

    def put_any(i: int) -> bool:
        return any(put(i, text) for text in forms(i))

    def take_back(i: int) -> None:
        texts[i].remove()
        texts[i] = None
        del scene.placed[i]

    def put_moving_one(i: int) -> bool:
        """Place ``i`` where a label placed before it was, that label moving to another free place."""
        for j in list(scene.placed):
            label, box = texts[j], scene.placed[j]
            saved = (label.get_text(), label.xyann, label.get_ha(), label.get_va())
            take_back(j)
            if put_any(i):
                if put_any(j):
                    return True
                take_back(i)
            label = _annotation(ax, requests[j], saved[0])
            label.xyann = saved[1]
            label.set(ha=saved[2], va=saved[3])
            texts[j], scene.placed[j] = label, box
        return False

    free = []  # how many places each label has before any other is placed: the fewest choose first
    for r in requests:
        label = _annotation(ax, r, r.text)
        free.append(sum(scene.free(box, r, placed=False) for *_, box in scene.places(label, r)))
        label.remove()
    numbers: dict[int, int] = {}
    for i in sorted(range(len(requests)), key=lambda i: (requests[i].rank, free[i], i)):
        if i not in failed and not (put_any(i) or put_moving_one(i)):
            failed.add(i)
    numbers = numbers_of(requests, failed)
    for i in numbers:
        put_any(i) or put_moving_one(i)
    return Placement(texts, failed)


def numbers_of(requests: list[Request], failed: set[int]) -> dict[int, int]:
    """{request index: its number}: the failed labels that are numbered, 1, 2, ... in the requests' order."""
    return {i: n for n, i in enumerate(sorted(i for i in failed if requests[i].numbered), 1)}


def place_with_key(ax, requests: list[Request], decorate) -> Placement:
    """``place``, after ``decorate(failed, numbers)`` has drawn what depends on its outcome (a key resolving
    the numbers, a note on the labels left out), which may move the axes: then again, with the failures so
    far, until no label fails that had not failed before. The failures only grow, so this ends."""
    failed: set[int] = set()
    while True:
        decorate(failed, numbers_of(requests, failed))
        make_room(ax)
        placed = place(ax, requests, failed)
        if placed.failed == failed:
            return placed
        for text in placed.texts:
            if text is not None:
                text.remove()
        failed = placed.failed


def make_room(ax, rounds: int = 4) -> None:
    """Widen the axes' limits until every marker lies inside them, ``EDGE`` clear of the frame.

    Markers drawn at an offset in points (a group's circle, policies set apart)
    are not counted by autoscaling, and one at the edge of the data would sit
    on the frame, half outside.
    """
    for _ in range(rounds):
        renderer = renderer_of(ax.figure)
        px = ax.figure.dpi / 72
        frame = ax.get_window_extent(renderer).padded(-EDGE * px)
        boxes = [m.box for m in markers(ax)]
        if not boxes:
            return
        spill = Bbox.union(boxes)
        grown = False
        for get, set_, low, high, size in (
                (ax.get_xlim, ax.set_xlim, frame.x0 - spill.x0, spill.x1 - frame.x1, frame.width),
                (ax.get_ylim, ax.set_ylim, frame.y0 - spill.y0, spill.y1 - frame.y1, frame.height)):
            if max(low, high) > 0:
                a, b = get()
                per = (b - a) / max(size, 1.0) * 1.1  # data units per display unit, and a little more
                set_(a - max(low, 0.0) * per, b + max(high, 0.0) * per)
                grown = True
        if not grown:
            return


def markers(ax) -> list[_Marker]:
    """Each filled marker drawn in ``ax`` (error bar caps, '_' and '|', are lines, crossed at a cost)."""
    out = []
    px = ax.figure.dpi / 72
    for line in ax.get_lines():
        if not line.get_visible() or line.get_marker() not in Line2D.filled_markers:
            continue
        half = (line.get_markersize() / 2 + line.get_markeredgewidth()) * px
        for x, y in line.get_transform().transform(line.get_xydata()):
            out.append(_Marker(line, (x, y), Bbox.from_extents(x - half, y - half, x + half, y + half)))
    return out


def _distance(box: Bbox, xy) -> float:
    """From the point ``xy`` to the nearest point of ``box`` (0 inside it)."""
    x, y = xy
    return math.hypot(max(box.x0 - x, 0.0, x - box.x1), max(box.y0 - y, 0.0, y - box.y1))


def _annotation(ax, r: Request, text: str):
    label = ax.annotate(text, r.xy, xycoords=r.transform, xytext=(0, 0), textcoords="offset points",
                        annotation_clip=False, **r.props)
    label.set_in_layout(False)  # inside the axes: the layout must not make room for it
    return label


def _texts_within(ax, renderer) -> list[Bbox]:
    """The boxes of the texts and the legend already drawn over the axes (labels placed before these)."""
    frame = ax.get_window_extent(renderer)
    boxes = [text_box(t, renderer) for t in ax.texts if t.get_visible() and t.get_text()]
    legend = ax.get_legend()
    if legend is not None and legend.get_visible():
        boxes.append(legend.get_window_extent(renderer))
    return [b for b in boxes if b.overlaps(frame)]


def _segments(ax) -> list:
    """Every drawn line in display units, as paths (error bars, frontiers, caps): a label crossing one costs."""
    paths = []
    px = ax.figure.dpi / 72
    for line in ax.get_lines():
        if line.get_visible():
            xy = line.get_transform().transform(line.get_xydata())
            if line.get_linestyle() not in ("None", "none", "", " ") and len(xy) > 1:
                paths.append(MplPath(xy))
            elif line.get_marker() in ("_", "|"):  # error bar caps: a short line across the bar's end
                half = line.get_markersize() / 2 * px
                dx, dy = (half, 0) if line.get_marker() == "_" else (0, half)
                paths += [MplPath([(x - dx, y - dy), (x + dx, y + dy)]) for x, y in xy]
    for coll in ax.collections:
        if coll.get_visible() and hasattr(coll, "get_segments"):
            transform = coll.get_transform()
            paths += [MplPath(transform.transform(s)) for s in coll.get_segments() if len(s) > 1]
    return paths
