"""The grouped tombstone digest: folded keys named by shared prefixes, in space that grows as a square root.

The exact digest (:mod:`prunesim.model.digest`) names every folded key. For
distinct keys with no numbering (the normalized commands of real sessions:
``cat src/app/models.py``, ``grep -rn foo src``) its text grows with every
key, about a quarter of a token per character. No exact list can do better
for keys that share nothing: it must tell each apart. So this digest is lossy
on purpose, the way a runtime would shorten a list that grew too long:

* it holds *entries*, each either a whole key or a *group*, a prefix written
  with a trailing ``*`` (``cat src/app/*``) that covers every key starting with
  it;
* its text may hold ``root_tokens * sqrt(n)`` tokens above its base, where
  ``n`` counts the keyed tombstones folded so far; past that it coarsens,
  replacing the two neighbouring entries (in sorted order) that share the
  longest prefix, and everything else under that prefix, by a group of that
  prefix, until the text fits again. Keys that share a command and a path
  merge first, so a group usually reads as "these files under that folder";
* with ``max_tokens`` the text also stays within that bound, by coarsening
  further (down to ``*``, every key), never by forgetting a key.

Every folded key stays covered: it is an entry or starts with a group. What is
lost is the other direction: a key that only shares a group's prefix, never
pruned, is covered too. The need model then reads it as recorded (a false
"recorded"), and a true need for it is an explicit override rather than a blind
re-run. ``docs/policies.md`` gives the figures.
"""

from __future__ import annotations

import math
from bisect import bisect_right

from prunesim.model.digest import CHARS_PER_TOKEN

# Where a group's prefix may end: after a word, a path component or a name's part. A group of "cat
# src/ap" would cover "cat src/apple.py" by accident of spelling; "cat src/*" says what it means.
SEPARATORS = frozenset(" \t/=:,;|&._-")


def _shared(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` that ends at a separator (or a whole word)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    if (i == len(a) or a[i] in SEPARATORS) and (i == len(b) or b[i] in SEPARATORS):
        return i  # a whole word shared: "pytest" and "pytest -x" share "pytest"
    return _cut(a, i)


def _cut(text: str, i: int) -> int:
    """``i``, moved back to just after the last separator in ``text[:i]`` (0 if none)."""
    while i > 0 and text[i - 1] not in SEPARATORS:
        i -= 1
    return i


class GroupedDigest:
    """Folded keys as sorted entries (keys and prefix groups), coarsened to stay within a square-root allowance.

    The same interface as :class:`prunesim.model.digest.Digest`; ``older`` stays 0 (nothing is dropped).
    """

    def __init__(self, base_tokens: int, root_tokens: int, max_tokens: int = 0, is_command=None):
        self.base_tokens = base_tokens
        self.root_tokens = root_tokens
        self.max_tokens = max_tokens
        self._is_command = is_command
        self._entries: list[str] = []  # sorted; none starts with a group's prefix (other than itself)
        self._group: list[bool] = []  # entry i is a prefix group
        self._shared: list[int] = []  # _shared(entries[i], entries[i + 1]), for each neighbouring pair
        self._chars = 0  # each entry, a separator, and "*" after a group
        self.keyed = 0  # folded tombstones that had a key (n of the allowance)
        self.folded = 0
        self.keys = 0  # keys new when folded: not yet covered by an entry
        self.commands = 0  # of those, commands the agent ran
        self.groups_made = 0  # coarsening steps
        self.older = 0  # never dropped: always 0 (the interface of the exact digest)
        self.unnamed = 0
        self.first_record = 0
        self.last_record = 0

    @property
    def tokens(self) -> int:
        return self.base_tokens + math.ceil(self._chars / CHARS_PER_TOKEN)

    def allowance_chars(self) -> int:
        """Characters the text may hold now: ``root_tokens * sqrt(keyed)`` tokens, within ``max_tokens``."""
        tokens = self.root_tokens * math.sqrt(max(1, self.keyed))
        if self.max_tokens:
            tokens = min(tokens, self.max_tokens - self.base_tokens)
        return max(2, int(tokens * CHARS_PER_TOKEN))  # "*" and its separator always fit

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        if not key:
            return False
        i = bisect_right(self._entries, key) - 1
        if i < 0:
            return False
        entry = self._entries[i]
        # Entries are sorted and none lies under a group: a group covering key is the last entry <= key.
        return entry == key or (self._group[i] and key.startswith(entry))

    def commands_beyond(self, in_window: int) -> int:
        """Commands the digest names beyond the ``in_window`` keys the window traces otherwise that it covers.

        A group covers keys it was never given, so ``in_window`` can exceed the commands it was given: it
        then adds none (never fewer than none)."""
        return max(0, self.commands - in_window)

    def add(self, key: str, record_seq: int = 0) -> bool:
        """Fold one tombstone of ``key``; True when no entry covered the key yet."""
        self.folded += 1
        if record_seq:
            self.first_record = min(self.first_record, record_seq) if self.first_record else record_seq
            self.last_record = max(self.last_record, record_seq)
        if not key:
            self.unnamed += 1
            return False
        self.keyed += 1
        new = key not in self
        if new:
            self._insert(key)
            self.keys += 1
            self.commands += bool(self._is_command and self._is_command(key))
        self._fit()
        return new

    def _insert(self, key: str) -> None:
        entries, shared = self._entries, self._shared
        i = bisect_right(entries, key)
        entries.insert(i, key)
        self._group.insert(i, False)
        self._chars += len(key) + 1
        if len(entries) == 1:
            return
        if i > 0:  # the pair (i-1, i) replaces the old pair (i-1, i+1)
            if i < len(entries) - 1:
                shared[i - 1] = _shared(entries[i - 1], key)
                shared.insert(i, _shared(key, entries[i + 1]))
            else:
                shared.append(_shared(entries[i - 1], key))
        else:
            shared.insert(0, _shared(key, entries[1]))

    def _fit(self) -> None:
        limit = self.allowance_chars()
        while self._chars > limit:
            if len(self._entries) > 1:
                self._merge()
            else:  # one entry longer than the allowance: keep the prefix that fits
                entry = self._entries[0]
                self._chars -= len(entry) + 1 + self._group[0]
                self._entries[0] = entry[:_cut(entry, max(0, min(len(entry), limit - 2)))]
                self._group[0] = True
                self._chars += len(self._entries[0]) + 2
                self.groups_made += 1

    def _merge(self) -> None:
        """Replace the neighbours that share the longest prefix, and all under it, by a group of that prefix."""
        entries, group, shared = self._entries, self._group, self._shared
        i = shared.index(max(shared))  # the first such pair in sorted order: deterministic
        prefix = entries[i][:shared[i]]
        lo, hi = i, i + 1
        while lo > 0 and entries[lo - 1].startswith(prefix):
            lo -= 1
        while hi + 1 < len(entries) and entries[hi + 1].startswith(prefix):
            hi += 1
        for j in range(lo, hi + 1):
            self._chars -= len(entries[j]) + 1 + group[j]
        entries[lo:hi + 1] = [prefix]
        group[lo:hi + 1] = [True]
        self._chars += len(prefix) + 2
        del shared[lo:hi]  # the pairs inside the range; the two around it are measured again
        if lo > 0:
            shared[lo - 1] = _shared(entries[lo - 1], prefix)
        if lo < len(entries) - 1:
            shared[lo] = _shared(prefix, entries[lo + 1])
        self.groups_made += 1

    def named(self):
        """The entries as the text writes them: a key, or a group's prefix followed by ``*``."""
        for entry, is_group in zip(self._entries, self._group, strict=True):
            yield entry + "*" if is_group else entry

    def text(self) -> str:
        """The digest as the agent would read it (for display and tests; the run uses only its size)."""
        return (f"pruned as stale, full tombstones in edit log records {self.first_record}-{self.last_record} "
                f"(a * stands for any ending): " + ", ".join(self.named()))
