"""The agent of a replayed transcript reacts to what a policy removed (the closed loop).

A recorded tool call *uses* a resource (an edit of a file, see
:mod:`prunesim.io.transcripts.resources`) that an earlier call *fetched* (a
read of it). When the use comes and the policy under test has removed the
resource's latest fetched content from the window, while the recording still
held it (the real runtime had not dropped it by then), the simulated agent
lacks what the real one had. With probability ``[reaction] probability`` it
fetches the content again first: one model call that asks for it, the tool
call, and its output at the recorded size, placed just before the recorded
call that uses it (the engine bills, caches and times them like any call).

Fitted on the removals recorded in Claude Code sessions
(``scripts/fit_reaction.py``, docs/transcripts.md): after the runtime removed
content the agent later needed, its next touch of the file was a fresh read
far more often than when the content was still there. The probability is that
excess over the null (the share of next touches that are reads anyway), so a
use the recording shows the agent making with the content at hand turns into
a re-fetch as often as a removal made the real agent read again. The re-read
came one call before the use (the median lead) in those sessions, which is
where the model places it.

A use that the recording itself answers (a read of the resource in the same
turn) re-fetches nothing, nor does a resource never fetched, one whose latest
output was cut on arrival (never seen whole), or one whose content a summary
in the window carries. The draw for a need is a fixed hash
of the run's seed, the resource and the turn: every policy meets the same
draws, and they shift no other random stream.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources as package_files
from typing import Literal

from prunesim.errors import UserError

MODES = ("closed", "none")
FIT_FILE = "reaction.json"  # written by scripts/fit_reaction.py, beside this module


def shipped_fit() -> dict:
    """The fitted values shipped with prunesim (``sim/model/reaction.json``)."""
    return json.loads(package_files.files("prunesim.model").joinpath(FIT_FILE).read_text("utf-8"))


FITTED_PROBABILITY = float(shipped_fit()["probability"])


@dataclass
class ReactionParams:
    """``[reaction]``: whether a replayed transcript's agent re-fetches content a policy removed.

    ``mode = "closed"`` (the default) lets it; ``"none"`` replays the recorded
    calls only (the open loop). ``probability`` is the chance of a re-fetch
    when a recorded use meets removed content (default: the shipped fit).
    Synthetic workloads record no resources and never react.
    """

    mode: Literal["closed", "none"] = "closed"
    probability: float = FITTED_PROBABILITY

    def check(self, key: str, where: str) -> None:
        if self.mode not in MODES:
            raise UserError(where, f"{key}.mode", f"unknown reaction {self.mode!r} (known: {', '.join(MODES)})")
        if not 0 <= self.probability <= 1:
            raise UserError(where, f"{key}.probability", f"must be between 0 and 1 (got {self.probability})")


@dataclass(frozen=True, slots=True)
class Content:
    """A resource's latest fetched content: the output span, and what fetching it again takes."""

    resource: str
    span_id: int
    key: str
    tool: str
    call_tokens: int
    tokens: int
    stale_after: int
    tags: frozenset[str]
    recorded_drop: int  # the call before which the recording itself dropped it (0: never)


def recorded_drop(tags: frozenset[str]) -> int:
    """The earliest ``drop@k`` tag's call: when the replayed runtime itself removed the span (0: never)."""
    calls = [int(t[5:]) for t in tags if t.startswith("drop@") and t[5:].isdigit()]
    return min(calls) if calls else 0


def draw(seed: int, resource: str, turn: int) -> float:
    """A uniform in [0, 1), fixed by the run's seed, the resource and the turn."""
    h = hashlib.blake2b(f"{seed}\0{resource}\0{turn}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(h, "little") / 2**64


class Reaction:
    """What the engine asks each turn: which removed contents the agent fetches again first."""

    def __init__(self, params: ReactionParams, seed: int):
        self.probability = params.probability
        self.seed = seed
        self.latest: dict[str, Content] = {}  # resource -> its latest fetched content
        self._call_tokens: dict[str, int] = {}  # key -> tokens of this turn's call of it

    def saw(self, arrival, span) -> None:
        """``arrival`` entered the window as ``span``: a fetching output becomes its resources' latest content."""
        if arrival.kind == "tool_call":
            self._call_tokens[arrival.key] = arrival.tokens
            return
        if arrival.kind != "tool_output" or not arrival.fetches:
            return
        if span.tokens < arrival.tokens:  # cut on arrival at a full window: never seen whole, nothing to fetch again
            for resource in arrival.fetches:
                self.latest.pop(resource, None)
            return
        content = Content("", span.id, arrival.key, arrival.tool, self._call_tokens.get(arrival.key, 0),
                          arrival.tokens, arrival.stale_after, arrival.tags, recorded_drop(arrival.tags))
        for resource in arrival.fetches:
            self.latest[resource] = _named(content, resource)

    def due(self, plan, turn: int, held) -> list[Content]:
        """The contents to fetch again before ``plan``'s recorded calls; ``held(span_id)``: still in the window."""
        self._call_tokens.clear()
        calls = [plan.tool_call, *(a for a in plan.extra if a.kind == "tool_call")]
        fetched_now = {r for a in calls for r in a.fetches}
        out: list[Content] = []
        seen: set[int] = set()
        for arrival in calls:
            for resource in arrival.uses:
                content = self.latest.get(resource)
                if content is None or resource in fetched_now or content.span_id in seen:
                    continue
                if content.recorded_drop and content.recorded_drop <= turn:
                    continue  # the recording lacked it too: what the real agent did next is on record
                if held(content.span_id):
                    continue
                seen.add(content.span_id)
                if draw(self.seed, resource, turn) < self.probability:
                    out.append(content)
        return out

    def refetched(self, content: Content, span_id: int, tokens: int) -> None:
        """The content is in the window again as ``span_id``: the latest for every resource it held."""
        for resource, c in list(self.latest.items()):
            if c.span_id == content.span_id:
                self.latest[resource] = Content(resource, span_id, c.key, c.tool, c.call_tokens, tokens,
                                                c.stale_after, c.tags, c.recorded_drop)


def _named(content: Content, resource: str) -> Content:
    return Content(resource, content.span_id, content.key, content.tool, content.call_tokens, content.tokens,
                   content.stale_after, content.tags, content.recorded_drop)
