"""A burst of removals taken out of the cost observer's copy of the window, and where each one was.

The cost observer keeps the window as two parallel lists (span ids and their
tokens) and applies the removals since the last model call in one go. Each
removal must be told to the prompt cache as it stood when that removal was
applied: the tokens ahead of the span and its index, after the burst's earlier
removals. Taking them one at a time means a search and a sum of the window per
removal; a pass over a long session evicts hundreds of spans from a window of
thousands, and that was a sixth of ``prunesim replay long-session``.

:func:`apply_burst` gives the same answers from the positions the spans held
before the burst: what the burst's earlier removals took out ahead of a
position is a prefix sum in a Fenwick tree. :func:`apply_one_by_one` is the
plain loop, used for short bursts (where it is cheaper) and for a window that
names a span twice, and the reference the tests compare with.
"""

from __future__ import annotations

from itertools import accumulate

SHORT_BURST = 8  # removals below which the plain loop is faster than building the positions


class _PrefixSums:
    """Amounts added at positions ``0..n-1``, and the sum of those before a position, each in O(log n)."""

    __slots__ = ("_tree",)

    def __init__(self, n: int):
        self._tree = [0] * (n + 1)

    def add(self, position: int, amount: int) -> None:
        tree = self._tree
        i = position + 1
        while i < len(tree):
            tree[i] += amount
            i += i & -i

    def before(self, position: int) -> int:
        tree = self._tree
        total, i = 0, position
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total


def apply_one_by_one(ids: list, tokens: list[int], pending: list[tuple]) -> tuple[list[tuple], int]:
    """Apply ``pending`` (span id, tokens freed, source) to ``ids`` and ``tokens`` in order.

    Returns the changes, one ``(tokens ahead, index, freed, source)`` per removal of a span the window holds,
    and the tokens freed by removals of spans it does not hold (they took nothing out). A removal that frees
    less than the span holds cuts it down; one that frees all of it (or more) takes it out.
    """
    changes, unheld = [], 0
    for span_id, freed, source in pending:
        try:
            i = ids.index(span_id)
        except ValueError:
            unheld += freed
            continue
        changes.append((sum(tokens[:i]), i, freed, source))
        left = tokens[i] - freed
        if left > 0:
            tokens[i] = left
        else:
            del ids[i]
            del tokens[i]
    return changes, unheld


def apply_burst(ids: list, tokens: list[int], pending: list[tuple]) -> tuple[list[tuple], int]:
    """:func:`apply_one_by_one`, with the same results and the same lists after, in O((n + k) log n)."""
    n = len(ids)
    if len(pending) < SHORT_BURST:
        return apply_one_by_one(ids, tokens, pending)
    position = dict(zip(ids, range(n), strict=True))
    if len(position) != n:  # a span id held twice: list.index's first match is the plain loop's to find
        return apply_one_by_one(ids, tokens, pending)
    ahead = [0, *accumulate(tokens)]  # tokens ahead of each position before the burst
    taken, gone = _PrefixSums(n), _PrefixSums(n)  # what the burst took out at each position, and spans
    now: dict[int, int] = {}  # position -> its tokens, once the burst cut it down
    out: set[int] = set()
    changes, unheld = [], 0
    for span_id, freed, source in pending:
        p = position.get(span_id)
        if p is None or p in out:
            unheld += freed
            continue
        changes.append((ahead[p] - taken.before(p), p - gone.before(p), freed, source))
        held = now.get(p, tokens[p])
        if held - freed > 0:
            now[p] = held - freed
            taken.add(p, freed)
        else:
            out.add(p)
            taken.add(p, held)
            gone.add(p, 1)
    for p, held in now.items():
        tokens[p] = held
    for p in sorted(out, reverse=True):
        del ids[p]
        del tokens[p]
    return changes, unheld
