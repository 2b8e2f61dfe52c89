"""Intervals for a share of runs: the one place yes/no figures get their uncertainty.

A yes/no figure (a run oscillated, a run lost a constraint) is reported as the share of runs
where it holds, with a Wilson score interval. Wilson rather than the normal approximation because
shares near 0 or 1 are common here (no run oscillated, every run did), and there the normal interval
leaves [0, 1] or collapses to a point.
"""

from __future__ import annotations

import math

# z for a two-sided 95% interval, the level every interval in prunesim's outputs uses.
Z95 = 1.959963984540054


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of ``successes / trials``; ``(nan, nan)`` when there are no trials.

    >>> wilson(0, 10)
    (0.0, 0.2775327998628892)
    >>> low, high = wilson(5, 10)
    >>> round(low, 4), round(high, 4)
    (0.2366, 0.7634)
    """
    if successes < 0 or trials < 0 or successes > trials:
        raise ValueError(f"wilson: {successes} successes out of {trials} trials")
    if trials == 0:
        return (math.nan, math.nan)
    share = successes / trials
    z2 = z * z
    centre = (share + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    # The bounds at 0 and 1 successes are exact in closed form; rounding would leave 1 - 1e-16.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return (low, high)


def paired_difference(first, second, z: float = Z95) -> tuple[float, float, float]:
    """The difference of two shares measured on the same runs (``first[i]`` and ``second[i]`` on seed i), with
    Newcombe's hybrid score interval for paired data (method 10 of his 1998 paper on paired proportions).

    Pairing is what makes a contrast between two settings sharp: over the same seeds the settings meet the same
    workloads, and the interval uses the correlation of their outcomes. Returns ``(difference, low, high)``;
    ``nan`` three times with no runs.

    >>> d, low, high = paired_difference([1, 1, 1, 0, 1, 0, 1, 1], [1, 0, 0, 0, 1, 0, 0, 0])
    >>> round(d, 3), round(low, 3), round(high, 3)
    (0.5, 0.107, 0.706)
    """
    if len(first) != len(second):
        raise ValueError(f"paired_difference: {len(first)} runs against {len(second)}")
    n = len(first)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    both = only_first = only_second = 0
    for x, y in zip(first, second, strict=True):
        x, y = bool(x), bool(y)
        both += x and y
        only_first += x and not y
        only_second += y and not x
    neither = n - both - only_first - only_second
    p1, p2 = (both + only_first) / n, (both + only_second) / n
    l1, u1 = wilson(both + only_first, n, z)
    l2, u2 = wilson(both + only_second, n, z)
    denominator = (both + only_first) * (only_second + neither) * (both + only_second) * (only_first + neither)
    phi = (both * neither - only_first * only_second) / math.sqrt(denominator) if denominator else 0.0
    below = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    above = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    d = p1 - p2
    return (d, max(-1.0, d - below), min(1.0, d + above))
