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
