"""The reaction model's fit and its check against what agents did after real removals.

A recorded runtime removes content on its own: Claude Code compacts the
conversation (``compact_boundary``) and clears old tool results. Every such
removal of a file's latest fetched content (:mod:`prunesim.io.transcripts.resources`)
is an *episode*; the file's first touch after it (a recorded call that fetches
or uses it) is the episode's *need*, and that touch is a *re-read* when it
fetches the file. The null is the same question asked of content still held:
how often the next touch of a file whose content is in the window is a read
anyway (the agent re-reads to see its edit, or a range it had not read).

The fit (:func:`fit`): ``observed_share`` is re-reads over needs after
removals, ``baseline`` the share of next touches that are reads while the
content is held, and ``probability = (observed_share - baseline) / (1 - baseline)``:
how often a use with removed content becomes a re-fetch beyond the reads the
agent would make anyway (the engine's ``[reaction] probability``). The model
then predicts ``observed_share`` re-reads per need (``probability`` plus the
baseline's reads of the rest); the open loop, the baseline alone.

:func:`check` gives each recorded compaction's needs, predicted and observed
re-reads; :func:`cross_validate` the same with each session's prediction
fitted on the other sessions only.

:func:`lookback_check` asks the same compactions of the agent model's lookback
needs (:mod:`prunesim.model.agent_needs`), with a profile fitted on another
scaffold's outcomes: for each removed file content, the chance the lookback
needs would need it at some later call of the session, summed per compaction,
beside the re-reads observed. Claude Code's own profile has no lookback needs
(no outcome data): this is a check across scaffolds, on data no lookback
parameter was set on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from prunesim.io.transcripts.workload import WorkloadData
from prunesim.observe.metrics.intervals import wilson


@dataclass(frozen=True)
class Episode:
    """A file's latest fetched content removed by the runtime before call ``call``, and what came next."""

    transcript: str
    call: int
    cause: str  # "compaction" or "drop" (old tool output cleared)
    resource: str
    touch: int  # the call that next touched the file (0: never)
    reread: bool  # that touch fetched it again
    lead: int  # calls from the re-read to the next use of the file (-1: no later use, or no re-read)
    fetched: int = 0  # the call whose output held the content (its work turn)
    last_call: int = 0  # the session's last model call


def _calls(data: WorkloadData) -> tuple[list[tuple[int, tuple, tuple]], list[tuple[str, dict]]]:
    """(turn, fetches, uses) of every tool call in order, and (resource, output part) of each fetched file."""
    calls: list[tuple[int, tuple, tuple]] = []
    contents: list[tuple[str, dict]] = []
    pending: dict[tuple[int, str], list[dict]] = {}
    for p in data.parts:
        if p["kind"] == "tool_call":
            calls.append((p["turn"], tuple(p.get("fetches", ())), tuple(p.get("uses", ()))))
            pending.setdefault((p["turn"], p.get("key", "")), []).append(p)
        elif p["kind"] == "tool_output":
            waiting = pending.get((p["turn"], p.get("key", "")))
            if waiting:
                call = waiting.pop(0)
                contents.extend((r, p) for r in call.get("fetches", ()) if r.startswith("file:"))
    return calls, contents


def _next_touch(calls, resource: str, after: int) -> tuple[int, bool]:
    """The first call at or after turn ``after`` that touches ``resource``: (turn, whether it fetches); (0, False)."""
    for turn, fetches, uses in calls:
        if turn >= after and (resource in fetches or resource in uses):
            return turn, resource in fetches
    return 0, False


def episodes(data: WorkloadData) -> list[Episode]:
    """Every removal by the recorded runtime of a file's latest fetched content (see the module docstring)."""
    compactions = {e["turn"] for e in data.header.get("events", ()) if e.get("event") == "compaction"}
    calls, contents = _calls(data)
    by_resource: dict[str, list[dict]] = {}
    for resource, part in contents:
        by_resource.setdefault(resource, []).append(part)
    out = []
    for resource, parts in by_resource.items():
        for i, part in enumerate(parts):
            k = part.get("dropped_at", 0)
            if not k or (i + 1 < len(parts) and parts[i + 1]["turn"] < k):
                continue  # never removed, or a later read had replaced it by then
            touch, reread = _next_touch(calls, resource, k)
            lead = -1
            if reread:
                use = next((t for t, _f, uses in calls if t >= touch and resource in uses), 0)
                lead = use - touch if use else -1
            out.append(Episode(data.name, k, "compaction" if k in compactions else "drop", resource, touch, reread,
                               lead, part["turn"], data.turns))
    return sorted(out, key=lambda e: (e.call, e.resource))


def held_touches(data: WorkloadData) -> list[bool]:
    """For each file content the runtime still held at the file's next touch: whether that touch read it again."""
    calls, contents = _calls(data)
    out = []
    for resource, part in contents:
        touch, reread = _next_touch(calls, resource, part["turn"] + 1)
        if touch and touch < (part.get("dropped_at") or touch + 1):
            out.append(reread)
    return out


@dataclass(frozen=True)
class Fit:
    needs: int
    rereads: int
    held: int
    held_rereads: int

    @property
    def observed_share(self) -> float:
        return self.rereads / self.needs if self.needs else 0.0

    @property
    def baseline(self) -> float:
        return self.held_rereads / self.held if self.held else 0.0

    @property
    def probability(self) -> float:
        b = self.baseline
        return min(1.0, max(0.0, (self.observed_share - b) / (1 - b))) if b < 1 else 0.0

    def as_dict(self) -> dict:
        return {
            "probability": round(self.probability, 4),
            "observed_share": round(self.observed_share, 4),
            "observed_share_wilson95": [round(x, 4) for x in wilson(self.rereads, self.needs)],
            "baseline": round(self.baseline, 4),
            "baseline_wilson95": [round(x, 4) for x in wilson(self.held_rereads, self.held)],
            "needs": self.needs, "rereads": self.rereads, "held_touches": self.held,
            "held_rereads": self.held_rereads,
        }


def fit(per_session: dict[str, tuple[list[Episode], list[bool]]]) -> Fit:
    """The fit over sessions' episodes and held touches (see the module docstring)."""
    needs = [e for eps, _ in per_session.values() for e in eps if e.touch]
    held = [r for _, h in per_session.values() for r in h]
    return Fit(len(needs), sum(e.reread for e in needs), len(held), sum(held))


def predicted_share(probability: float, baseline: float) -> float:
    """Re-reads per need the closed loop predicts: a re-fetch, or else the reads the agent makes anyway."""
    return probability + (1 - probability) * baseline


def check(eps: list[Episode], probability: float, baseline: float) -> list[dict]:
    """Per recorded compaction: its needs, the re-reads predicted (closed loop, open loop) and observed."""
    share = predicted_share(probability, baseline)
    by_call: dict[int, list[Episode]] = {}
    for e in eps:
        if e.cause == "compaction":
            by_call.setdefault(e.call, []).append(e)
    rows = []
    for call, group in sorted(by_call.items()):
        needed = [e for e in group if e.touch]
        rows.append({"transcript": group[0].transcript, "call": call, "removed_files": len(group),
                     "needs": len(needed), "predicted": round(share * len(needed), 3),
                     "predicted_open_loop": round(baseline * len(needed), 3),
                     "observed": sum(e.reread for e in needed)})
    return rows


QUADRATURE = 256  # midpoint nodes of the per-run need rate's Gamma: the expectation over runs, without draws


def run_rates(profile) -> np.ndarray:
    """The per-run need rates the expectation is taken over: the Gamma's quantiles at QUADRATURE midpoints."""
    from prunesim.model.agent_profiles import run_rate

    if not profile.need_cv:
        return np.array([float(profile.need_rate or 0.0)])
    return np.array([run_rate(profile, (j + 0.5) / QUADRATURE) for j in range(QUADRATURE)])


def need_chance(profile, fetched: int, first: int, last: int, rates: np.ndarray | None = None) -> float:
    """The chance that the lookback needs of ``profile`` need an item of work turn ``fetched`` at some model call
    from ``first`` to ``last``: ``1 - E[prod_w (1 - min(1, lambda_run exp(-(w - fetched - 1) / decay)))]`` over
    the calls within the horizon, the expectation over the per-run rate (``rates``: :func:`run_rates`)."""
    ages = np.arange(max(first, fetched + 1), min(last, fetched + int(profile.need_horizon)) + 1) - fetched
    if not len(ages) or not profile.need_rate:
        return 0.0
    rates = run_rates(profile) if rates is None else rates
    decay = np.exp(-(ages - 1) / float(profile.need_decay))
    kept = np.prod(1.0 - np.minimum(1.0, rates[:, None] * decay[None, :]), axis=1)
    return 1.0 - float(np.mean(kept))


def lookback_check(eps: list[Episode], profile) -> list[dict]:
    """Per recorded compaction: the file contents it removed, the re-reads the lookback needs of ``profile``
    predict (each removed content needed at some later call, with a re-fetch) and the re-reads observed."""
    by_call: dict[tuple[str, int], list[Episode]] = {}
    for e in eps:
        if e.cause == "compaction":
            by_call.setdefault((e.transcript, e.call), []).append(e)
    rows = []
    rates = run_rates(profile)
    for (transcript, call), group in sorted(by_call.items()):
        predicted = sum(need_chance(profile, e.fetched, call, e.last_call, rates) for e in group)
        rows.append({"transcript": transcript, "call": call, "removed_files": len(group),
                     "predicted": round(predicted, 3), "observed": sum(e.reread for e in group)})
    return rows


def cross_validate(per_session: dict[str, tuple[list[Episode], list[bool]]]) -> list[dict]:
    """:func:`check` of each session with the fit of all the other sessions (leave one session out)."""
    rows = []
    for name, (eps, _) in per_session.items():
        others = {k: v for k, v in per_session.items() if k != name}
        f = fit(others)
        for row in check(eps, f.probability, f.baseline):
            rows.append({**row, "fold_probability": round(f.probability, 4), "fold_baseline": round(f.baseline, 4)})
    return rows


def totals(rows: list[dict]) -> dict:
    """Sums over compactions, and the mean absolute error of each prediction per compaction."""
    n = len(rows)
    out = {"compactions": n}
    for key in ("needs", "predicted", "predicted_open_loop", "observed"):
        out[key] = round(sum(r[key] for r in rows), 3)
    for key in ("predicted", "predicted_open_loop"):
        out[f"{key}_mean_abs_error"] = round(sum(abs(r[key] - r["observed"]) for r in rows) / n, 3) if n else 0.0
    return out


def gaps(eps: list[Episode]) -> dict:
    """Calls from a removal to the re-read, and from a re-read to the file's next use (p50, p75, p90)."""
    def quantiles(values):
        return [float(x) for x in np.percentile(values, [50, 75, 90])] if values else []
    rereads = [e for e in eps if e.reread]
    return {"removal_to_reread_calls": quantiles([e.touch - e.call + 1 for e in rereads]),
            "reread_to_use_calls": quantiles([e.lead for e in rereads if e.lead >= 0]),
            "rereads_followed_by_a_use": sum(e.lead >= 0 for e in rereads), "rereads": len(rereads)}


def collect(data: WorkloadData) -> tuple[str, list[Episode], list[bool]]:
    """One workload's part of the check: its name, its episodes and its held touches."""
    return data.name, episodes(data), held_touches(data)


def reaction_report(collected: list[tuple[str, list[Episode], list[bool]]], shipped: dict) -> dict:
    """The ``reaction`` part of ``prunesim fidelity --json``: the shipped fit (``sim/model/reaction.json``)
    checked on these workloads (:func:`collect`), and, with two sessions or more, each session's check with a
    fit of the others."""
    per_session: dict[str, tuple[list[Episode], list[bool]]] = {}
    for name, session_eps, session_held in collected:
        eps, held = per_session.setdefault(name, ([], []))
        eps.extend(session_eps)
        held.extend(session_held)
    fitted_on = set(shipped.get("sessions", ()))
    rows = []
    for eps, _ in per_session.values():
        rows.extend(check(eps, shipped["probability"], shipped["baseline"]))
    for row in rows:
        row["in_fit"] = row["transcript"] in fitted_on
    out = {"probability": shipped["probability"], "baseline": shipped["baseline"], "compactions": rows,
           "totals": totals(rows), "local_fit": fit(per_session).as_dict()}
    if len(per_session) > 1:
        folds = cross_validate(per_session)
        out["out_of_fold"] = {"compactions": folds, "totals": totals(folds)}
    out["lookback"] = lookback_report([e for eps, _ in per_session.values() for e in eps])
    return out


def lookback_report(eps: list[Episode]) -> dict:
    """:func:`lookback_check` under each shipped profile that has lookback needs: per compaction and in all."""
    from prunesim.model.agent_profiles import AgentParams, resolve, shipped_profiles

    out = {}
    for name in shipped_profiles():
        profile = resolve(AgentParams(profile=name))
        if not profile.needs_on or profile.sources["need_rate"].startswith("borrowed"):
            continue
        rows = lookback_check(eps, profile)
        n = len(rows)
        out[name] = {"source": profile.sources["need_rate"], "compactions": rows,
                     "predicted": round(sum(r["predicted"] for r in rows), 3),
                     "observed": sum(r["observed"] for r in rows),
                     "mean_abs_error": round(sum(abs(r["predicted"] - r["observed"]) for r in rows) / n, 3)
                     if n else 0.0}
    return out
