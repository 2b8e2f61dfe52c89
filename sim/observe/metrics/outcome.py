"""What the policy did to the agent: its model calls, redone work, the turn cap and the task's success.

These come from the agent model (:mod:`prunesim.model.agent`): its redo turns
as ``redo`` events, the rest from the :class:`~prunesim.model.agent.Outcome`
the engine publishes on ``RunEnd``. A run without an agent model (``[agent]
profile = "none"``, a synthetic run by default) has none of these figures: they
are left out of its summary, not written as 0, since nothing in such a run
could move them. Within a run under an agent model, a figure its profile
cannot move is left out the same way: ``redos`` without needs, ``stop_reason``,
``cap_calls`` and ``capped`` without a turn cap, ``task_success`` without a
success model (Claude Code and Codex have neither: no outcome data). Reducing them over seeds
or transcripts (a mean, a share) is a study's job.
"""

from __future__ import annotations

from prunesim.model.events import Observer, RunEnd

from .definition import Metric

DEFINITIONS = (
    Metric("agent_profile", "name", "The agent profile the run's agent model took ([agent] profile, or a "
           "transcript's scaffold); only under an agent model, as every figure below."),
    Metric("stop_reason", "reason", "Why the agent stopped: done (every work turn done) or turn_cap (its model "
           "calls reached the profile's cap; the work left was not done)."),
    Metric("agent_calls", "calls", "The agent's model calls: its work turns (turns), re-fetch turns (refetches) "
           "and redo turns (redos). Prune passes and summaries are the policy's calls, not the agent's."),
    Metric("redos", "calls", "Redo turns: work the agent did again because nothing recorded that it had been done "
           "(no placeholder, tombstone, digest, rationale, edit log, summary or tool call of it left); each is an "
           "events.csv redo row with {key, call_tokens, tokens, latency_s}."),
    Metric("redo_tokens", "tokens", "Tokens the redo turns put back in the window: each tool call and its output."),
    Metric("cap_calls", "calls", "The model calls the profile's turn cap counts: agent_calls, plus the policy's "
           "model calls where the scaffold counts them (SWE-agent's summaries)."),
    Metric("capped", "bool", "The run stopped at its turn cap (stop_reason turn_cap)."),
    Metric("lengthening", "log ratio", "L = ln(agent_calls / turns): how much longer the policy made the run; "
           "0 when it added no call. The success model's input."),
    Metric("task_success", "probability", "P(the task is solved), from what the run did: cap_success when capped, "
           "else from the run's base outcome ([agent] base; a replay's: the recorded run solved it) and its "
           "lengthening (docs/agent.md). Left out where the profile has no success model."),
    Metric("turns_over_recorded", "ratio", "agent_calls / the work turns the workload planned (a replay: the "
           "recorded model calls): how much longer than recorded the run was, < 1 when it stopped at the cap."),
)

NAMES = tuple(m.name for m in DEFINITIONS)


class OutcomeMetrics(Observer):
    def __init__(self, run):
        self.redos = self.redo_tokens = 0
        self.outcome = None

    def on_redo(self, time, turn, key, call_tokens, tokens, latency_s) -> None:
        self.redos += 1
        self.redo_tokens += call_tokens + tokens

    def on_run_end(self, end: RunEnd) -> None:
        self.outcome = end.outcome

    def summary(self, so_far: dict) -> dict:
        o = self.outcome
        if o is None:
            return {}
        # A figure the run's agent model cannot move is left out: no redo without needs, no cap figure without a
        # cap, no success without a success model.
        out = {"agent_profile": o.profile}
        if o.cap:
            out["stop_reason"] = o.stop_reason
        out["agent_calls"] = o.agent_calls
        if o.redo:
            out.update(redos=self.redos, redo_tokens=self.redo_tokens)
        if o.cap:
            out.update(cap_calls=o.cap_calls, capped=bool(o.capped))
        out["lengthening"] = round(o.lengthening, 6)
        if o.task_success is not None:
            out["task_success"] = round(o.task_success, 6)
        out["turns_over_recorded"] = round(o.turns_over_recorded, 6)
        return out
