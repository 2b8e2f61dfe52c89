"""prunesim run: one scenario, one policy, one seed."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from prunesim import api
from prunesim.cli.commands._common import (
    add_agent,
    add_prices,
    add_reaction,
    add_set,
    out_arg,
    print_notes,
    scenario_sets,
    seed_arg,
)
from prunesim.cli.commands._long_run import TurnProgress, announce, announce_workload
from prunesim.errors import UserError
from prunesim.io import output
from prunesim.io.atomic import json_ready
from prunesim.io.labels import policy_label
from prunesim.io.scenario_files import load_replay
from prunesim.io.stream import stream_run
from prunesim.observe.recorder import MODES
from prunesim.policies import get_policy
from prunesim.runner import run_one
from prunesim.studies.transcript_replay import one_workload, replay


def register(sub) -> None:
    p = sub.add_parser("run", help="run one scenario under one policy and seed")
    p.add_argument("scenario", nargs="?", help="a scenario file or the name of a shipped scenario "
                   "(default with --workload: transcript)")
    p.add_argument("--workload", type=Path, help="replay an imported workload (or a one-run transcript) instead")
    p.add_argument("--policy", help="policy name (default: the scenario's)")
    p.add_argument("--seed", type=seed_arg, help="random seed (default: the scenario's)")
    add_set(p)
    add_prices(p)
    add_reaction(p)
    add_agent(p)
    p.add_argument("--out", type=out_arg, help="write trace.csv, ledger.csv, events.csv, summary.json and "
                   "reproduce.json (the command and its input files' hashes) here")
    p.add_argument("--trace", choices=MODES, default=None,
                   help="what trace.csv records: every change (all), one row per turn (turns) or nothing (none); "
                        "default all with --out, none without")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=main)


def main(args) -> int:
    out = None
    if args.out is not None:
        out = Path(args.out)
        output.check_folder(out, "--out")
    trace = args.trace or ("all" if out is not None else "none")
    if trace != "none" and out is None:
        raise UserError("--trace", trace, "needs --out DIR: without it nothing is written")
    if args.workload is not None:
        result = _replay_workload(args, trace, out)
    elif args.scenario is None:
        raise UserError("run", None, "give a SCENARIO or --workload FILE")
    else:
        if args.policy is not None:
            get_policy(args.policy)  # first: a policy from a file or a plugin may declare its own table
        sc = api.load_scenario(args.scenario, scenario_sets(args), args.policy, given_as="--set", prices=args.prices)
        result = _synthetic(args, sc, trace, out)
    print_notes([result.policy], result.scenario)
    if args.json:
        print(json.dumps(json_ready(api.record(result)), indent=2, sort_keys=True))
    else:
        print(format_summary(result))
    return 0


def _synthetic(args, sc, trace: str, out: Path | None):
    """The run of a scenario; a long one says first what it will take, and shows its progress (_long_run)."""
    progress = TurnProgress(sc.turns) if announce(sc, args.policy, args.seed, trace, out) else None
    watched = [progress] if progress else []
    try:
        if out is None:
            return run_one(sc, args.policy, args.seed, trace="none", observers=watched)

        def run(recorder, edit_log):  # rows go to the files as the run makes them
            return run_one(sc, args.policy, args.seed, trace=trace, recorder=recorder, edit_log=edit_log,
                           observers=watched)

        return stream_run(sc, args.policy, args.seed, out, trace, run=run, record=True)[0]
    finally:
        if progress:
            progress.close()


def _replay_workload(args, trace: str, out: Path | None):
    if args.policy is not None:
        get_policy(args.policy)  # first: a policy from a file or a plugin may declare its own table
    # errors name --set
    base = load_replay(args.scenario or "transcript", scenario_sets(args), args.policy, prices=args.prices)
    data = one_workload(args.workload)
    progress = TurnProgress(data.turns, first=True) if announce_workload(data) else None
    watched = [progress] if progress else []
    try:
        if out is None:
            result = replay(data, base, args.policy, args.seed, trace=trace, observers=watched)[0]
        else:  # written as it goes, as a synthetic run: the ledger, events, calls and edit log whatever --trace keeps
            def run(recorder, edit_log):
                return replay(data, base, args.policy, args.seed, trace=trace, recorder=recorder, edit_log=edit_log,
                              observers=watched)[0]

            result, _ = stream_run(base, args.policy, args.seed, out, trace, run=run, record=True)
    finally:
        if progress:
            progress.close()
    for warning in result.warnings:
        print(f"prunesim: warning: {warning}", file=sys.stderr)
    return result


def resource_reaction(result) -> bool:
    """Whether the run's agent re-fetched a transcript's resources (no agent model, or a profile that does)."""
    profile = result.summary.get("agent_profile")
    if profile is None:
        return True
    from prunesim.model.agent_profiles import resolve

    return bool(resolve(dataclasses.replace(result.scenario.agent, profile=profile)).resource_reaction)


def format_summary(result) -> str:
    s = result.summary
    sc = result.scenario
    ratio = s["overhead_ratio"]
    lines = [
        f"{result.transcript or sc.name} under {policy_label(result.policy)}, seed {result.seed}: {s['turns']} turns, "
        f"window {sc.window}, {sc.budget_kind} budget {sc.budget}, trigger {sc.trigger}",
        f"  utilization   peak {s['peak_utilization']}, final {s['final_utilization']}, "
        f"band floor {s['band_floor']} (first trigger at turn {s['first_trigger_turn']})",
        f"  passes        {s['passes']} (first half {s['passes_first_half']}, second half {s['passes_second_half']}), "
        f"net-negative {s['net_negative_passes']}, zero-yield {s['zero_yield_passes']}, in band {s['in_band_passes']}",
        f"  per pass      index {s['mean_index_tokens']:.0f}, rationale {s['mean_rationale_tokens']:.0f}, "
        f"evicted {s['mean_evicted_tokens']:.0f}, net {s['mean_net_tokens']:.0f}",
        f"  overhead      ratio {ratio if isinstance(ratio, str) else f'{ratio:.2f}'} "
        f"(sum index+rationale {s['sum_overhead_tokens']} / sum net {s['sum_net_tokens']}), "
        f"oscillating {'yes' if s['oscillating'] else 'no'}",
        f"  non-model     {s['non_model_evictions']} evictions ({s['non_model_tokens']} tokens), "
        f"{s['fallback_evictions']} of them a gate's fallback; forced truncations "
        f"{s['forced_truncations']} ({s['truncated_tokens']} tokens); re-retrievals {s['re_retrievals']}; "
        f"lost constraints {s['lost_constraints']}",
        f"  evicted       {s['policy_evicted_tokens']} tokens by the policy, {s['needed_evicted_tokens']} of them "
        f"still needed ({s['needed_evicted_spans']} spans); precision {s['eviction_precision']:.2f}",
        f"  billed        input {s['input_tokens_billed']}, deciding {s['decision_tokens_billed']} "
        f"({100 * s['decision_share']:.1f}%)",
    ]
    if "repeats" in s:
        lines.append(
            f"  repeats       {s['repeats']}: {s['repeats_after_prune']} after the policy pruned the content "
            f"(gap mean {s['repeat_gap_mean']}, max {s['repeat_gap_max']} turns), {s['repeats_in_window']} in window"
        )
    if "repeats" in s and sc.reaction.mode == "closed" and resource_reaction(result):
        lines.append(f"  reaction      {s['refetches']} re-fetches of content the policy removed before a recorded "
                     f"call used it ({s['refetch_tokens']} tokens; their calls ${s['refetch_cost_usd']:.4f} "
                     f"of ${s['cost_usd']:.4f})")
    if "agent_calls" in s:  # an agent model ran: what the policy did to the agent (docs/agent.md)
        parts = [f"{s['agent_calls']} model calls for {s['turns']} work turns (x{s['turns_over_recorded']:.3f} "
                 f"of the {sc.turns} planned), {s['refetches']} re-fetches"]
        if "redos" in s:
            parts.append(f"{s['redos']} redos")
        if "stop_reason" in s:
            parts.append(f"stopped: {s['stop_reason']} ({s['cap_calls']} calls counted against the cap)")
        if "task_success" in s:
            parts.append(f"P(solved) {s['task_success']:.3f}")
        lines.append(f"  agent         {s['agent_profile']}: " + "; ".join(parts))
    gate = [s.get(k, 0) for k in ("gate_runs", "refusals_over_budget", "refusals_decision_in_band",
                                  "refusals_insufficient_net")]
    if any(gate):
        lines.append(
            f"  gate          ran {gate[0]}; refused: over budget {gate[1]}, no slack to decide {gate[2]}, "
            f"nothing worth pruning {gate[3]}"
        )
    if s.get("clearings") or s.get("compactions") or s.get("memory_warnings"):
        lines.append(
            f"  edits         clearings {s['clearings']} ({s['cleared_spans']} spans, {s['cleared_tokens']} tokens "
            f"net, placeholders {s['placeholder_tokens']} tokens at the end); compactions {s['compactions']} "
            f"(summaries {s['summary_tokens']} tokens, content kept {s['summary_kept_spans']}, dropped "
            f"{s['summary_dropped_spans']}); warnings {s['memory_warnings']}"
        )
    return "\n".join(lines)
