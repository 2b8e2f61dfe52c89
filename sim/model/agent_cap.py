"""The turn cap: the agent stops when the model calls its scaffold counts reach the cap.

Real scaffolds stop a run at a fixed number of steps and count them their own
way: SWE-agent stops at 250 model calls and counts its summarizer's calls
among them (a capped run records 251 turns); OpenHands' ``max_iterations`` 250
counts the agent's own steps (capped runs in the outcome data pile up at 245
to 250); mini-swe-agent's SWE-bench configuration sets ``step_limit: 250``.
``cap_counts`` says which calls count: ``agent`` (the agent's own: work,
re-fetch and redo turns) or ``agent+decisions`` (those and the policy's model
calls: prune passes and summaries). The stop reason is ``turn_cap``; a run
that does all its work stops with ``done`` (its last work turn too). A
replayed recording longer than the cap gets its own length as its cap
(:func:`prunesim.model.agent.build_agent`): its scaffold let it run so long. The engine does not count turns
for the agent: it reports the calls, and this rule says stop.
"""

from __future__ import annotations

DONE, TURN_CAP = "done", "turn_cap"


class TurnCap:
    """``cap`` calls of the kinds ``counts`` names (0: no cap)."""

    def __init__(self, cap: int, counts: str):
        self.cap = cap
        self.with_decisions = counts == "agent+decisions"

    def counted(self, agent_calls: int, decision_calls: int) -> int:
        """The calls the cap counts."""
        return agent_calls + decision_calls if self.with_decisions else agent_calls

    def reached(self, agent_calls: int, decision_calls: int) -> bool:
        return bool(self.cap) and self.counted(agent_calls, decision_calls) >= self.cap
