"""Provenance outside the window: an append-only, hash-chained edit log, and tombstones.

A policy that edits its own window is safe only if the record of its edits is
not itself editable by it. The :class:`EditLog` lives outside the window and is
owned by the engine: it is appended to, never rewritten. Each :class:`Record`
carries the hash of the record before it, so that editing, deleting or
reordering any record breaks the chain and :meth:`EditLog.verify` says where.
The log's *anchor* (its length and head hash) is kept apart from the records;
checking against an anchor also catches a log cut at its tail.

A :class:`Tombstone` is the small marker an evicted span leaves in the window:
the content's hash, the turn and the reason, and the number of the log record
that holds the rest. Policies get read-only views (:class:`EditLogView`); they
never append.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

GENESIS = "0" * 64  # the "previous hash" of the first record


class SelfEditRefused(Exception):
    """A plan that would edit what must not be edited.

    Raised by a policy's guard (``authorize``) for a plan whose candidates overlap
    the plan's own rationale, a tombstone, an edit-log record or a span tagged
    ``constraint``. The engine catches it, applies nothing of the plan, and
    records the refusal (an events.csv row, a log record and a summary counter).
    """

    def __init__(self, reason: str, span_ids: Sequence[int] = ()):
        self.reason = reason
        self.span_ids = tuple(span_ids)
        super().__init__(f"self-edit refused ({reason}): spans {list(self.span_ids)}")


def content_hash(*parts: object) -> str:
    """A stable hash of what a span holds (the simulator has no text: its identity stands in)."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# One encoder each, made once: json.dumps with options builds a new encoder on every call.
_DIGEST_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_LINE_JSON = json.JSONEncoder(sort_keys=True).encode


def _digest(body: dict, prev: str) -> str:
    payload = _DIGEST_JSON({"body": body, "prev": prev})
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Record:
    """One entry of the edit log. ``body`` is plain JSON data; ``seq`` counts from 1."""

    seq: int
    body: dict
    prev: str
    hash: str

    @property
    def kind(self) -> str:
        return self.body.get("kind", "")

    def as_dict(self) -> dict:
        return {"seq": self.seq, "prev": self.prev, "hash": self.hash, **self.body}


@dataclass(frozen=True, slots=True)
class Verification:
    """What :meth:`EditLog.verify` found: ``ok``, and where and why the chain breaks."""

    ok: bool
    records: int
    bad_seq: int = 0  # position (1-based) of the first bad record; 0 when ok
    problem: str = ""

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True, slots=True)
class Anchor:
    """The log's length and head hash, kept apart from the records (a supervisor's copy)."""

    length: int
    head: str


@dataclass(frozen=True, slots=True)
class Tombstone:
    """What an evicted span leaves behind: enough to know the work was done, and why."""

    evicted_id: int
    key: str
    kind: str
    tokens: int
    content_hash: str
    turn: int
    reason: str
    record_seq: int


class EditLog:
    """An append-only, hash-chained list of records.

    By default every record is held in memory. A long run bounds that: with
    ``sink`` (a text file opened for reading and writing) each record is
    written to it as one JSON line the moment it is appended, and with
    ``tail=N`` only the last ``N`` records stay in memory, after the
    checkpoint (number and hash) of the record just before them. Either way
    :meth:`verify` checks a whole chain: the file when there is one (read back
    from disk), else the records held from their checkpoint.
    """

    def __init__(self, sink=None, tail: int | None = None) -> None:
        if tail is not None and tail < 1:
            raise ValueError(f"tail must be at least 1 (got {tail})")
        self._records: deque[Record] | list[Record] = deque(maxlen=tail) if tail else []
        self._tail = tail
        self._sink = sink
        self._length = 0
        self._head = GENESIS

    # -- writing (the engine only) -------------------------------------------
    def append(self, kind: str, **fields) -> Record:
        body = {"kind": kind, **fields}
        prev = self._head
        seq = self._length + 1
        # The digest serializes the body: anything that is not plain JSON data fails here, before the append.
        record = Record(seq, body, prev, _digest({"seq": seq, **body}, prev))
        self._records.append(record)
        self._length = seq
        self._head = record.hash
        if self._sink is not None:
            self._sink.write(record_line(record))
        return record

    # -- reading -----------------------------------------------------------------
    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Record]:
        """The records held in memory (the last ``tail`` of them when the log keeps a tail)."""
        return iter(self._records)

    @property
    def complete(self) -> bool:
        """Whether every record is held in memory."""
        return len(self._records) == self._length

    @property
    def records(self) -> tuple[Record, ...]:
        return tuple(self._records)

    @property
    def head(self) -> str:
        return self._head

    def anchor(self) -> Anchor:
        return Anchor(self._length, self._head)

    def view(self) -> EditLogView:
        return EditLogView(self)

    def verify(self, anchor: Anchor | None = None) -> Verification:
        if self._sink is not None:
            self._sink.flush()
            self._sink.seek(0)
            try:
                return verify_records(read_records(self._sink), anchor)
            finally:
                self._sink.seek(0, 2)
        held = list(self._records)
        if not held or held[0].seq == 1:
            return verify_records(held, anchor)
        # A tail: the chain from the record before it, whose link the first held record carries.
        return verify_records(held, anchor, start=held[0].seq, prev=held[0].prev)


def record_line(record: Record) -> str:
    """One record as a line of editlog.jsonl."""
    return _LINE_JSON(record.as_dict()) + "\n"


def read_records(lines: Iterable[str]) -> Iterator[Record]:
    """Records back from editlog.jsonl lines (a line that is not a record raises ValueError)."""
    for n, line in enumerate(lines, start=1):
        try:
            data = json.loads(line)
            seq, prev, hash_ = data.pop("seq"), data.pop("prev"), data.pop("hash")
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ValueError(f"line {n} is not an edit-log record") from None
        yield Record(seq, data, prev, hash_)


def verify_records(records: Iterable[Record], anchor: Anchor | None = None, start: int = 1,
                   prev: str = GENESIS) -> Verification:
    """Check the chain: numbering, links and hashes; then, if given, the anchor.

    An edited record fails its hash; a deleted or reordered one breaks the
    numbering and the link to its predecessor; a cut tail leaves a valid chain
    that no longer matches the anchor. ``records`` may be any iterable (a file
    read line by line): it is read once. A tail of a longer log is checked from
    its checkpoint: ``start`` is its first number and ``prev`` the hash before it.
    """
    i = start - 1
    for i, r in enumerate(records, start=start):
        if r.seq != i:
            return Verification(False, i, i, f"record {i} is numbered {r.seq} (deleted or reordered)")
        if r.prev != prev:
            return Verification(False, i, i, f"record {i} does not link to record {i - 1}")
        if _digest({"seq": r.seq, **r.body}, r.prev) != r.hash:
            return Verification(False, i, i, f"record {i} does not match its hash (edited)")
        prev = r.hash
    length = i
    if anchor is not None:
        if anchor.length != length:
            return Verification(False, length, min(anchor.length, length) + 1,
                                f"the log holds {length} records, the anchor says {anchor.length}")
        if anchor.head != prev:
            return Verification(False, length, length, "the head hash does not match the anchor")
    return Verification(True, length)


@dataclass(frozen=True)
class EditLogView:
    """Read-only access to a log: records, and evictions by content key."""

    _log: EditLog = field(repr=False)

    def __len__(self) -> int:
        return len(self._log)

    @property
    def records(self) -> tuple[Record, ...]:
        return self._log.records

    def evictions(self, key: str | None = None) -> list[Record]:
        return [r for r in self._log if r.kind == "evict" and (key is None or r.body.get("key") == key)]

    def verify(self) -> Verification:
        return self._log.verify()
