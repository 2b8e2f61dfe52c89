"""How far a long study has come, on stderr: tqdm's bar on a terminal, else a line at every tenth of it.

A log file or a pipe gets no bar (its carriage returns would fill the file), so a
study that said up front it is long writes a line at every tenth of its work and
at least every ten minutes, each with the time left at the pace so far.
"""

from __future__ import annotations

import sys
import time

STEPS = 10  # lines written when stderr is not a terminal: one at every tenth of the work,
QUIET_MAX = 600.0  # and one at least every ten minutes (a study of days would otherwise say nothing for hours)


def duration(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:,.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:,.1f} hours"
    if seconds >= 120:
        return f"{seconds / 60:,.0f} minutes"
    return f"{seconds:,.0f} s"


class Progress:
    """``update(n)`` as ``n`` more of ``total`` ``unit``s are done (``initial`` were done before: a resume)."""

    def __init__(self, total: int, unit: str, label: str, initial: int = 0, stream=None):
        self.total, self.unit, self.label = total, unit, label
        self.done = self.initial = initial
        self.stream = sys.stderr if stream is None else stream
        self.bar = None
        self.next_line = initial + (total - initial) / STEPS
        self.started = self.said = time.perf_counter()
        if self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=initial, unit=unit, unit_scale=True, file=self.stream,
                            dynamic_ncols=True, leave=False)

    def update(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.perf_counter()
        if self.done < self.total and (self.done >= self.next_line or now - self.said >= QUIET_MAX):
            left = (now - self.started) * (self.total - self.done) / max(self.done - self.initial, 1)
            print(f"prunesim: {self.label}: {100 * self.done / self.total:.0f}% ({self.done:,} of {self.total:,} "
                  f"{self.unit}s), about {duration(left)} left", file=self.stream, flush=True)
            self.said = now
            while self.next_line <= self.done:
                self.next_line += (self.total - self.initial) / STEPS

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
