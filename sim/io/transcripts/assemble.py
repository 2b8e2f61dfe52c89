"""What each model call's prompt held: a transcript's parts, sized, put back in order.

A part arrives after the model call of its turn (turn 0: before the first
call) and stays until the runtime drops it (``dropped_at``: a recorded
compaction, reasoning the API drops at a user turn). The prompt of call ``k``
is every part that arrived before it and is still there, plus what the file
does not show:

* **hidden system part**: the system prompt and tool definitions of a runtime
  that never writes them (Claude Code, Codex). Sized at the first call with a
  recorded prompt count: that count less the parts before it. The call it is
  sized at is *anchored*: its own count set its size.
* **reconciliation** (runtimes that change the prompt without writing it down,
  see ``RECONCILED_FORMATS``): between two calls with recorded counts, the
  API's growth is compared with the parts that arrived. A surplus above
  ``TAU_ABS + TAU_REL * |growth we see|`` is content the runtime injected
  unseen (a skill's expanded prompt, @-mentioned files, files re-read after a
  compaction): a hidden ``user`` part of that size, dropped at the next
  compaction. A shortfall that large is content the runtime removed unseen
  (Claude Code clears old tool results on its own): the oldest tool outputs
  are dropped until the removed tokens come closest to it. Either way the
  call is anchored. Drift of the estimate itself never triggers this, since
  only the growth between two consecutive calls is compared, and the error a
  call carried before is carried on, not reset.
* **after a recorded compaction** the first counted call compares levels, not
  growths: everything we counted before is gone, so the prompt should hold
  the hidden system part and what arrived since (the summary), and the
  tolerance is ``threshold`` of what arrived. Measured on the growth, the
  tolerance would scale with the whole conversation the compaction dropped and
  hide what Claude Code brings back unseen (it re-reads recently used files
  into the prompt after a compaction; docs/transcripts.md gives the sizes).

The same loop runs on plain numbers (to build a workload) or on linear
expressions in a calibration's parameters (to fit one), so the fitted model
and the replayed workload can never disagree.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

RECONCILED_FORMATS = frozenset({"claude-code"})
TAU_ABS = 2000
TAU_REL = 0.25


def threshold(growth: float) -> float:
    return TAU_ABS + TAU_REL * abs(growth)


@dataclass
class Layout:
    """The bare facts of a transcript's parts, as arrays (sizes come separately)."""

    kind: list[str]
    turn: np.ndarray
    dropped_at: np.ndarray
    hidden: np.ndarray  # bool: the hidden system part
    prompt: np.ndarray  # float, per call 1..turns at index k-1; nan where not recorded
    turns: int
    reconcile: bool
    compactions: list[int] = field(default_factory=list)  # call numbers a recorded compaction came before

    def __post_init__(self):
        n = len(self.kind)
        self.arrivals: list[list[int]] = [[] for _ in range(self.turns + 2)]  # before call k: index k
        self.drops: list[list[int]] = [[] for _ in range(self.turns + 2)]
        for i in range(n):
            if self.hidden[i]:
                continue
            t = int(self.turn[i])
            self.arrivals[min(t + 1, self.turns + 1)].append(i)
            d = int(self.dropped_at[i])
            if d:
                self.drops[min(d, self.turns + 1)].append(i)
        self.first_counted = next((k for k in range(1, self.turns + 1) if np.isfinite(self.prompt[k - 1])), 0)


@dataclass
class Assembly:
    """The outcome: per call our count and whether it was anchored; what was added or removed unseen."""

    context: np.ndarray  # per call: tokens in the prompt (numeric mode)
    anchored: np.ndarray  # bool per call
    hidden_tokens: float = 0.0
    hidden_at: int = 0  # the call the hidden system part was sized at
    injections: list[tuple[int, float, int]] = field(default_factory=list)  # (before call, tokens, dropped_at)
    removals: list[tuple[int, list[int], float]] = field(default_factory=list)  # (before call, parts, tokens)
    rows: list = field(default_factory=list)  # linear mode: (coefficients, constant, prompt) of unanchored calls


def assemble(layout: Layout, tokens: np.ndarray, phi: np.ndarray | None = None,
             const: np.ndarray | None = None) -> Assembly:
    """Put the parts back in order (see the module docstring).

    ``tokens``: each part's size. In linear mode ``phi`` (parts x parameters)
    and ``const`` give each part's size as ``phi[i] @ theta + const[i]`` (with
    ``tokens`` its value at the current theta); every unanchored call then
    yields a row: its count as a linear expression, for a least-squares fit.
    """
    T = layout.turns
    linear = phi is not None
    width = phi.shape[1] if linear else 0
    zero = np.zeros(width)
    x, xa, xc = 0.0, zero.copy(), 0.0  # numeric value; linear coefficients and constant
    live: set[int] = set()
    outputs = _Outputs(len(layout.kind))  # the live tool outputs with a size, for removals
    injected: dict[int, list[list]] = {}  # call dropped at -> [tokens, coeffs, const] of injections
    out = Assembly(np.zeros(T), np.zeros(T, bool))
    prev_api = prev_x = None
    prev_xa, prev_xc = zero, 0.0
    hidden = bool(layout.hidden.any())
    compacted = set(layout.compactions)
    level = False  # a compaction came since the last counted call: compare levels there
    compactions = sorted(layout.compactions)
    for k in range(1, T + 1):
        level = level or k in compacted
        for i in layout.arrivals[k]:
            live.add(i)
            if layout.kind[i] == "tool_output" and tokens[i] > 0:
                outputs.add(i, float(tokens[i]))
            x += tokens[i]
            if linear:
                xa = xa + phi[i]
                xc += const[i]
        for i in layout.drops[k]:
            if i in live:
                live.discard(i)
                outputs.remove(i)
                x -= tokens[i]
                if linear:
                    xa = xa - phi[i]
                    xc -= const[i]
        for inj in injected.pop(k, ()):
            x -= inj[0]
            if linear:
                xa = xa - inj[1]
                xc -= inj[2]
        api = layout.prompt[k - 1]
        counted = bool(np.isfinite(api))
        anchored = False
        if hidden and k == layout.first_counted:
            size = max(0.0, api - x)
            out.hidden_tokens, out.hidden_at = size, k
            x += size
            if linear and size > 0:  # the hidden part is what makes this call's count exact
                xa, xc = zero.copy(), float(api)
            anchored = True
        elif layout.reconcile and counted and (prev_api is not None or level) and (
                not hidden or k > layout.first_counted):
            if level:  # everything we counted before the compaction is gone (module docstring)
                ref_api, ref_x, ref_xa, ref_xc = 0.0, 0.0, zero, 0.0
                growth = x - out.hidden_tokens
            else:
                ref_api, ref_x, ref_xa, ref_xc = prev_api, prev_x, prev_xa, prev_xc
                growth = x - prev_x
            excess = (api - ref_api) - (x - ref_x)
            if excess > threshold(growth):
                anchored = True
                drop = _next_compaction(compactions, k)
                coeffs = (xa - ref_xa) if linear else None
                inj_const = (api - ref_api) - (xc - ref_xc) if linear else 0.0
                # Linear form of the injected size: (api - ref_api) - (x - ref_x).
                if drop:  # dropped at the next compaction; without one it stays to the end
                    injected.setdefault(drop, []).append([excess, -coeffs if linear else None, inj_const])
                out.injections.append((k, excess, drop))
                x += excess
                if linear:
                    xa = xa - coeffs
                    xc += inj_const
            elif excess < -threshold(growth):
                anchored = True
                chosen, removed = _oldest_outputs(outputs, tokens, -excess)
                for i in chosen:
                    live.discard(i)
                    outputs.remove(i)
                    x -= tokens[i]
                    if linear:
                        xa = xa - phi[i]
                        xc -= const[i]
                out.removals.append((k, chosen, removed))
        out.context[k - 1] = x
        out.anchored[k - 1] = anchored
        if linear and counted and not anchored:
            out.rows.append((xa.copy(), xc, float(api)))
        if counted:
            level = False
            prev_api, prev_x = api, x
            if linear:
                prev_xa, prev_xc = xa.copy(), xc
        else:
            prev_api = prev_x = None
    return out


def _next_compaction(compactions: list[int], k: int) -> int:
    """The first recorded compaction after call ``k`` (0: none)."""
    at = bisect.bisect_right(compactions, k)
    return compactions[at] if at < len(compactions) else 0


def _oldest_outputs(outputs: _Outputs, tokens: np.ndarray, need: float) -> tuple[list[int], float]:
    """The oldest live tool outputs whose sizes add up closest to ``need`` (whole parts, oldest first).

    Oldest first, an output is taken unless taking it would overshoot more than
    it closes: unless ``removed + size - need > need - removed``, that is unless
    its size is above ``2 * (need - removed)``. :class:`_Outputs` finds the next
    such output at once, so a removal costs the outputs it takes (and a search
    each), never a pass over every live part: a session whose prompt counts
    swing at every call imports in time linear in its length, up to a log.
    """
    chosen, removed = [], 0.0
    start = 0
    while removed < need:
        bound = 2.0 * (need - removed)
        i = outputs.first_at_most(start, bound + 1e-9 * abs(bound) + 1e-9)  # the exact test below decides
        if i is None:
            break
        start = i + 1
        if removed + tokens[i] - need > need - removed:
            continue
        chosen.append(i)
        removed += tokens[i]
    return chosen, removed


class _Outputs:
    """Sizes of live tool outputs by part index, in a tree of minima: the first index from ``start`` whose
    size is at most ``bound`` is found in O(log n); adding and removing one costs as much."""

    def __init__(self, n: int):
        self.leaves = 1 << max(0, math.ceil(math.log2(max(n, 1))))
        self.low = [math.inf] * (2 * self.leaves)

    def _set(self, i: int, value: float) -> None:
        node = i + self.leaves
        self.low[node] = value
        node >>= 1
        while node:
            self.low[node] = min(self.low[2 * node], self.low[2 * node + 1])
            node >>= 1

    def add(self, i: int, size: float) -> None:
        self._set(i, size)

    def remove(self, i: int) -> None:
        if self.low[i + self.leaves] != math.inf:
            self._set(i, math.inf)

    def first_at_most(self, start: int, bound: float) -> int | None:
        if start >= self.leaves:
            return None
        low, node = self.low, start + self.leaves
        while low[node] > bound:  # up while the subtrees right of here hold nothing small enough
            while node & 1:  # a right child: its parent's right part is done
                node >>= 1
            if node == 0:
                return None
            node += 1
        while node < self.leaves:  # down to the leftmost leaf small enough
            node = 2 * node if low[2 * node] <= bound else 2 * node + 1
        return node - self.leaves
