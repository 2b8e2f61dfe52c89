"""The tombstone digest: folded tombstones named compactly in one pinned span.

Under a ``[tombstone] budget`` the oldest tombstones leave the window in
batches and their content keys are added to a single digest. The digest names
every folded key, written the way a runtime would write it to stay short:

* a key ending in a number is written under its stem, consecutive numbers as a
  range (``cmd-{12-40,44}``): keys of consecutive turns, which is how old
  content is pruned, cost a few characters per run of turns, not per key;
* any other key is written under its first word (``cat {a.py,b.py}``), once
  however often it was folded (a command the agent ran five times costs once);
* the header points to the edit log, which keeps every full tombstone.

Its size is ``base + ceil(characters / CHARS_PER_TOKEN)``. The simulator holds
the same structure the text describes (intervals and short strings).

With ``max_tokens`` the digest is bounded: past it, the keys named longest ago
stop being named and are only counted (``older``: "and N older keys, see the
edit log"). The agent can no longer tell that such a key was pruned as stale,
so a need for it is a re-retrieval again: the size of the digest is traded
against re-retrievals. Every folded key stays accounted for: it is named, or
it was dropped and counted in ``older`` (and ``unnamed`` counts tombstones of
spans that had no key).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque

CHARS_PER_TOKEN = 4  # a common rule of thumb for English text and code identifiers
_DIGITS = "0123456789"


def _split(key: str) -> tuple[str, int] | None:
    """``(stem, number)`` for a key ending in a number without a leading zero ("cmd-07" is "cmd-0", 7)."""
    stem = key.rstrip(_DIGITS)
    digits = key[len(stem):]
    if not digits:
        return None
    i = 0
    while (digits[i] == "0" and i < len(digits) - 1) or len(digits) - i > 18:
        i += 1
    return stem + digits[:i], int(digits[i:])


class Digest:
    """Every key folded so far, with the size in tokens of the span that names them."""

    def __init__(self, base_tokens: int, max_tokens: int = 0, is_command=None):
        self.base_tokens = base_tokens
        self.max_tokens = max_tokens
        self._is_command = is_command
        self.commands = 0  # keys named that were commands the agent ran (``is_command`` when first named)
        # Keys in the order they were first named, with is_command (for a bounded digest: the oldest go first).
        self._order: deque[tuple[str, bool]] = deque()
        self.older = 0  # keys no longer named: counted, and the edit log still holds their tombstones
        self._ranges: dict[str, tuple[list[int], list[int]]] = {}  # stem -> (starts, ends), sorted, disjoint
        self._words: dict[str, set[str]] = {}  # first word -> the rest of each key
        self._chars = 0
        self.folded = 0  # tombstones folded (a key folded twice counts twice)
        self.keys = 0  # distinct keys named
        self.unnamed = 0  # folded tombstones whose span had no key (counted, not named)
        self.first_record = 0  # edit-log records of the folded tombstones: the lowest and highest number
        self.last_record = 0

    @property
    def tokens(self) -> int:
        return self.base_tokens + math.ceil(self._chars / CHARS_PER_TOKEN)

    def add(self, key: str, record_seq: int = 0) -> bool:
        """Fold one tombstone of ``key``; True when the key was not named yet."""
        self.folded += 1
        if record_seq:
            self.first_record = min(self.first_record, record_seq) if self.first_record else record_seq
            self.last_record = max(self.last_record, record_seq)
        if not key:
            self.unnamed += 1
            return False
        numbered = _split(key)
        new = self._add_number(*numbered) if numbered else self._add_word(key)
        self.keys += new
        if new:
            command = bool(self._is_command and self._is_command(key))
            self.commands += command
            if self.max_tokens:
                self._order.append((key, command))
                while self.tokens > self.max_tokens and len(self._order) > 1:
                    self._drop(*self._order.popleft())
        return new

    def commands_beyond(self, in_window: int) -> int:
        """Commands the digest names beyond the ``in_window`` of them the window traces otherwise."""
        return self.commands - in_window

    def _drop(self, key: str, command: bool) -> None:
        """Stop naming ``key`` (the oldest named): it is counted in ``older`` from now on."""
        numbered = _split(key)
        if numbered:
            stem, n = numbered
            starts, ends = self._ranges[stem]
            i = bisect_right(starts, n) - 1
            lo, hi = starts[i], ends[i]
            cost = self._range_chars
            self._chars -= cost(lo, hi)
            del starts[i], ends[i]
            for a, b in ((n + 1, hi), (lo, n - 1)):  # what is left of the run, in order
                if a <= b:
                    starts.insert(i, a)
                    ends.insert(i, b)
                    self._chars += cost(a, b)
            if not starts:
                del self._ranges[stem]
                self._chars -= len(stem) + 2
        else:
            word, _, rest = key.partition(" ")
            group = self._words[word]
            group.discard(rest)
            self._chars -= len(rest) + 1
            if not group:
                del self._words[word]
                self._chars -= len(word) + 3
        self.keys -= 1
        self.commands -= command
        self.older += 1

    def __contains__(self, key: str) -> bool:
        if not key:
            return False
        numbered = _split(key)
        if numbered:
            stem, n = numbered
            spans = self._ranges.get(stem)
            if spans is None:
                return False
            i = bisect_right(spans[0], n) - 1
            return i >= 0 and n <= spans[1][i]
        word, _, rest = key.partition(" ")
        return rest in self._words.get(word, ())

    # -- the text, kept as a character count ------------------------------------
    @staticmethod
    def _range_chars(lo: int, hi: int) -> int:
        return len(str(lo)) + (len(str(hi)) + 1 if hi > lo else 0) + 1  # "lo-hi," or "lo,"

    def _add_number(self, stem: str, n: int) -> bool:
        spans = self._ranges.get(stem)
        if spans is None:
            spans = self._ranges[stem] = ([], [])
            self._chars += len(stem) + 2  # "stem{" and "}"
        starts, ends = spans
        i = bisect_right(starts, n) - 1
        if i >= 0 and n <= ends[i]:
            return False
        joins_left = i >= 0 and ends[i] == n - 1
        joins_right = i + 1 < len(starts) and starts[i + 1] == n + 1
        cost = self._range_chars
        if joins_left and joins_right:
            self._chars -= cost(starts[i], ends[i]) + cost(starts[i + 1], ends[i + 1])
            ends[i] = ends[i + 1]
            del starts[i + 1], ends[i + 1]
            self._chars += cost(starts[i], ends[i])
        elif joins_left:
            self._chars += cost(starts[i], n) - cost(starts[i], ends[i])
            ends[i] = n
        elif joins_right:
            self._chars += cost(n, ends[i + 1]) - cost(starts[i + 1], ends[i + 1])
            starts[i + 1] = n
        else:
            starts.insert(i + 1, n)
            ends.insert(i + 1, n)
            self._chars += cost(n, n)
        return True

    def _add_word(self, key: str) -> bool:
        word, _, rest = key.partition(" ")
        group = self._words.get(word)
        if group is None:
            group = self._words[word] = set()
            self._chars += len(word) + 3  # "word {" and "}"
        if rest in group:
            return False
        group.add(rest)
        self._chars += len(rest) + 1
        return True

    def named(self):
        """Every key the digest names (for checks: a long run of numbers yields each of them)."""
        for stem, (starts, ends) in self._ranges.items():
            for a, b in zip(starts, ends, strict=True):
                for n in range(a, b + 1):
                    yield f"{stem}{n}"
        for word, rests in self._words.items():
            for rest in rests:
                yield f"{word} {rest}" if rest else word

    def text(self) -> str:
        """The digest as the agent would read it (for display and tests; the run uses only its size)."""
        parts = []
        for stem, (starts, ends) in sorted(self._ranges.items()):
            runs = ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in zip(starts, ends, strict=True))
            parts.append(f"{stem}{{{runs}}}")
        for word, rests in sorted(self._words.items()):
            parts.append(f"{word} {{{','.join(sorted(rests))}}}")
        older = f" and {self.older} older keys" if self.older else ""
        return (f"pruned as stale, full tombstones in edit log records {self.first_record}-{self.last_record}: "
                + " ".join(parts) + older)
