"""Spans: the items that occupy the context window."""

from __future__ import annotations

from dataclasses import dataclass, field

# Every kind a span can have. Pinned kinds are never offered to a policy.
KINDS = (
    "system",
    "constraint",
    "user",
    "reasoning",
    "tool_call",
    "tool_output",
    "prune_index",
    "prune_rationale",
    "tombstone",
    "tombstone_digest",
    "summary",
    "placeholder",
    "warning",
)

# Kinds a model-driven editor may consider by default.
PRUNABLE_KINDS = frozenset(
    {"user", "reasoning", "tool_call", "tool_output", "prune_index", "prune_rationale", "summary", "placeholder",
     "warning"}
)

# A span the replayed runtime removes itself before model call k carries the tag "drop@k"; a placeholder
# left for it carries the tag too, and leaves with it.
RUNTIME_DROP = "drop@"

# Reasoning the model wrote as a thinking block (Anthropic's extended thinking), not as text.
THINKING = "thinking"

# A placeholder is tagged with the kind of span it replaced ("replaced:tool_output"); a summary a model
# wrote is tagged so that the next compaction judges the content it carries again.
PLACEHOLDER_OF = "replaced:"

# The runtime's system prompt and tool definitions (a transcript's hidden system part): the runtime keeps a
# cache breakpoint at their end, which outlives a compaction of everything after them.
SYSTEM_PROMPT = "system_prompt"
SUMMARY_TAG = "compaction"

NO_TAGS: frozenset[str] = frozenset()  # one shared empty set: no call per span


@dataclass(slots=True)
class Span:
    """One item in the window.

    ``key`` identifies what the span holds (for a tool output, the normalized
    command that produced it); ``stale_at`` is the turn from which its content
    is no longer useful; ``pinned`` spans are never candidates for eviction.
    """

    id: int
    kind: str
    tokens: int
    turn: int
    key: str = ""
    stale_at: int = 1 << 30
    pinned: bool = False
    tags: frozenset[str] = NO_TAGS
    # Prune-pass number that created this span (prune_index / prune_rationale), else -1.
    pass_id: int = -1
    # For a rationale: the ids of the spans its plan names. For a summary: the ids of the removed
    # spans whose content it carries. For a placeholder: the id of the span it stands for.
    names: tuple[int, ...] = ()
    # The tool that produced a tool call or output (from imported transcripts; "" when unknown).
    tool: str = ""
    # The tool call a tool call or output belongs to (imported transcripts: the runtime's call id, numbered;
    # 0 when unknown). A span that has one is a message of the runtime's conversation even when empty: it
    # stays in the window at 0 tokens, so that a policy counting tool results counts it as the runtime does.
    call: int = 0
    # Set once at creation (kind, pinned and tags never change): may an editor ever consider it?
    # ``offerable``: a prunable kind, unpinned, not a constraint; ``artifact``: a prune index or rationale.
    offerable: bool = field(init=False, repr=False, compare=False)
    artifact: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.offerable = not self.pinned and self.kind in PRUNABLE_KINDS and "constraint" not in self.tags
        self.artifact = self.kind in ("prune_index", "prune_rationale")

    def is_stale(self, turn: int) -> bool:
        return turn >= self.stale_at

    @property
    def is_constraint(self) -> bool:
        return self.kind == "constraint" or "constraint" in self.tags
