"""prunesim recommend [DIR]: which policy to run, paired on the same units, and how sure the answer is."""

from __future__ import annotations

import json
from pathlib import Path

from prunesim.cli.commands._common import add_transcript_options, out_arg, positive_int, print_notes
from prunesim.cli.commands._units import add_unit_arguments, gather, partial, read_inputs
from prunesim.errors import UserError
from prunesim.io import atomic, output, reproduce
from prunesim.io.labels import policy_labels
from prunesim.observe.metrics import METRICS
from prunesim.studies import leaderboard as lb
from prunesim.studies import recommend as rc
from prunesim.studies.assumptions import RESIMULATED, assumptions
from prunesim.studies.recommend_units import SOLVED, reads_summary, synthetic_units, transcript_measure

OUTPUT_FILES = (rc.CSV_FILE, rc.JSON_FILE, reproduce.FILE)


def register(sub) -> None:
    p = sub.add_parser(
        "recommend",
        help="which policy to run on these transcripts (or seeds), paired against noop and each other, ranked "
             "under the uncertain assumptions (experimental)",
        description="Run every policy on the same units (the transcripts in DIR, or --seeds of a synthetic "
        "--scenario) and answer: total dollars and the paired bootstrap 95% interval of each difference, wins, "
        "losses and ties where the policy acted, its share of the clairvoyant optimum's saving, and, over draws "
        "of the units and of the uncertain assumptions, each policy's chance of being the cheapest. A policy is "
        "named only when that chance is at least 0.9. Experimental: the output may change. See docs/recommend.md.",
    )
    add_unit_arguments(p)
    p.add_argument("--objective", default="dollars", choices=rc.OBJECTIVES,
                   help="what the ranking minimizes: dollars (default), or dollars per solved task (needs the "
                        "runs' predicted solved share)")
    p.add_argument("--draws", type=positive_int, default=rc.DRAWS,
                   help=f"draws of the units and the assumptions (default {rc.DRAWS:,})")
    p.add_argument("--json", action="store_true", help="print recommend.json instead of the table")
    add_transcript_options(p)
    p.add_argument("--out", type=lambda t: Path(out_arg(t)), help="also write OUT/recommend.json and "
                   "OUT/recommend.csv (one row per pair of policies)")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.objective == "dollars-per-solved" and SOLVED not in {m.name for m in METRICS}:
        raise UserError("--objective", args.objective, f"needs each run's predicted solved share ({SOLVED}, from "
                        "the agent model), which this prunesim does not compute yet; use --objective dollars")
    if args.draws > rc.MAX_DRAWS:
        raise UserError("--draws", str(args.draws), f"at most {rc.MAX_DRAWS:,}")
    inputs = read_inputs(args, "recommend", OUTPUT_FILES)
    if args.objective == "dollars-per-solved":
        rc.refuse_without_success(inputs.scenario, inputs.transcripts)
    policies = lb.with_reference(inputs.policies)
    scenario, user = inputs.scenario, set(inputs.overrides)
    summaries = any(reads_summary(p) for p in policies)
    reacts = inputs.transcripts and scenario.reaction.mode == "closed"
    early = {a.name: a for a in assumptions(scenario, [], user, summaries, reacts) if a.how == RESIMULATED}
    tools: set[str] = set()
    if inputs.transcripts:
        units = lb.transcript_units(args.dir, lb.entries_of(scenario, policies), args.seed, tools,
                                    measure=transcript_measure(policies, early), jobs=inputs.jobs,
                                    tokenizer=args.tokenizer,
                                    calibration=args.calibration, sidechains=args.sidechains)
        done, skipped = gather(units)
        runs = [unit.summaries for unit in done]
    else:
        runs, skipped = list(synthetic_units(scenario, policies, inputs.seeds, early, inputs.jobs)), []
        done = runs
    print_notes(policies, scenario, frozenset(tools) if inputs.transcripts else None)
    if partial(done, skipped, args.skip_bad, "recommend"):
        return 2
    if inputs.transcripts:  # a profile may turn the resource re-fetch off: then its probability is read nowhere
        reacts = any(u.reacts for u in runs)
    listed = assumptions(scenario, [u.billing for u in runs], user, summaries, reacts, inputs.transcripts,
                         [u.agent for u in runs])
    source = str(args.dir) if inputs.transcripts else f"{scenario.name}, seeds {_seeds(inputs.seeds)}"
    meta = {"source": source, "scenario": args.scenario, "asked": inputs.policies, "overrides": inputs.overrides,
            "prices": args.prices,
            "seed": args.seed if inputs.transcripts else None, "seeds": inputs.seeds, "skipped": skipped}
    rec = rc.recommend(runs, policies, listed, objective=args.objective, draws=args.draws,
                       seed=args.seed or 0, meta=meta)
    written = []
    if args.out is not None:
        try:
            with output.folder(args.out, "--out") as staging:  # every file, or none
                rc.write(staging, rec)
                ran = inputs.seeds if not inputs.transcripts else [args.seed if args.seed is not None
                                                                   else scenario.seed]
                atomic.write_json(staging / reproduce.FILE, reproduce.record(ran))
        except OSError as err:
            raise UserError("--out", str(args.out), f"cannot write: {err.strerror or err}") from None
        written = [args.out / name for name in OUTPUT_FILES]
    if args.json:
        print(json.dumps(rec.to_json(), indent=1, allow_nan=False))
    else:
        print(format_recommendation(rec, source, inputs.transcripts))
        if written:
            print(f"\nwritten: {', '.join(str(p) for p in written)}")
    return 0


def _seeds(seeds: list[int]) -> str:
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}:{seeds[-1] + 1}"
    return ",".join(map(str, seeds))


def _grouped(names: list[str], by: dict) -> str:
    """Policy names, those that acted on no unit (each ran as noop did) counted rather than listed one by one."""
    idle = [n for n in names if n != lb.REFERENCE and by[n]["acted_share"] == 0]
    shown = [n for n in names if n not in idle]
    if len(idle) > 1:
        shown.append(f"the {len(idle)} policies that acted on no unit")
    else:
        shown += idle
    return "; ".join(shown)


def _money(x: float, digits: int = 2) -> str:
    return f"{'-' if x < 0 else ''}${abs(x):,.{digits}f}"


def format_recommendation(rec: rc.Recommendation, source: str, transcripts: bool) -> str:
    """The recommendation, the paired table, the optimum, the assumptions and what would change the answer."""
    n = len(rec.units)
    kind = "transcript(s)" if transcripts else "seed(s)"
    by = {p["policy"]: p for p in rec.policies}
    skipped = rec.meta.get("skipped") or []
    left_out = f" ({len(skipped)} file(s) that failed left out: --skip-bad)" if skipped else ""
    lines = [f"recommend: {n} {kind} in {source}{left_out}; objective {rec.objective}; {rec.draws:,} draws of the "
             "units and the uncertain assumptions (experimental)"]
    if rec.winner:
        lines.append(f"recommendation: {rec.winner} (the cheapest in {by[rec.winner]['p_best']:.1%} of draws)")
    else:
        lines.append(f"recommendation: {rc.NO_CLEAR_WINNER}: no policy is the cheapest in {rc.CLEAR:.0%} of draws; "
                     f"tied (rank interval reaching 1): {_grouped(rec.tied, by)}")
    for note in rec.notes:
        lines.append(f"note: {note}")
    label = policy_labels([p["policy"] for p in rec.policies])
    # To the cent, or to a hundredth of one where the bills are small (a few short transcripts).
    digits = 2 if max(abs(p["total_usd"]) for p in rec.policies) >= 10 else 4

    def money(x: float) -> str:
        return _money(x, digits)

    head = ("policy", "total", "vs noop [paired 95%]", "W/L/T acted", "acted", "p_best", "rank",
            "oracle_gap [95%]", "pays from")
    per_solved = rec.objective == "dollars-per-solved"
    if per_solved:  # the ranking's own figure beside the dollars: the mean predicted solved share, and $/solved
        head = (*head[:2], "solved", "$/solved", *head[2:])
    table = [head]
    for p in rec.policies:
        d = p["diff_vs_noop"]
        vs = "-" if p["policy"] == lb.REFERENCE else (f"{money(d['diff_usd'])} [{money(d['interval'][0])}, "
                                                      f"{money(d['interval'][1])}]")
        wlt = f"{p['wins']}/{p['losses']}/{p['ties']}" if "wins" in p else "-"
        gap = f"{p['oracle_gap']:.3f}" if "oracle_gap" in p else "-"
        if "oracle_gap_interval" in p:
            gap += " [{:.3f}, {:.3f}]".format(*p["oracle_gap_interval"])
        be = p.get("break_even")
        pays = f"{be['turns']} turns ({be['units']})" if be else "-"
        low, high = p["rank_interval"]
        cells = (label[p["policy"]], money(p["total_usd"]), vs, wlt, f"{p['acted_share']:.2f}",
                 f"{p['p_best']:.3f}", f"[{low:g}, {high:g}]", gap, pays)
        if per_solved:
            cells = (*cells[:2], f"{p['solved_share']:.3f}", _money(p["objective_value"], 4), *cells[2:])
        table.append(cells)
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                                      strict=True))))
    lines.append("W/L/T: wins, losses and ties (within 0.1% of noop's bill) on the units where the policy acted; "
                 "pays from: the session length from which its summed difference stays below zero (units that long)")
    if per_solved:
        lines.append("solved: the mean predicted solved share (task_success) per unit; $/solved: the total over the "
                     "sum of those shares, the figure ranked (p_best, rank); the other columns are in dollars")
    if rec.clairvoyant:
        c = rec.clairvoyant
        lines.append(f"clairvoyant optimum: {money(c['total_usd'])} ({money(c['saving_usd'])} below noop; its "
                     f"planner predicted {money(c['predicted_usd'])}); oracle_gap is each policy's share of that "
                     "saving")
    lines.append("assumptions:")
    params: dict[str, list[str]] = {}  # an agent profile's parameters, one line per profile (the JSON has each)
    for a in rec.assumptions:
        if a.name.startswith("agent.") and a.name != "agent.profile":
            key, profile = a.name[len("agent."):].split(" ", 1)
            value = f"{a.value:g}" if isinstance(a.value, float) else str(a.value).lower()
            params.setdefault(profile.strip("()"), []).append(f"{key} {value} ({a.source})")
            continue
        rng = "" if a.range is None else f", range {a.range[0]:g} to {a.range[1]:g}" if not isinstance(
            a.range[0], str) else f", {' or '.join(a.range)}"
        lines.append(f"  {a.name} = {a.value} ({a.source}, {a.how}{rng}): {a.basis}")
    for profile, values in params.items():
        lines.append(f"  agent parameters of {profile} (fixed: the fit gives points, not intervals; `prunesim agents "
                     f"--why`): {', '.join(values)}")
    flips = [s for s in rec.sensitivity if s["changes_top"]]
    for s in flips:
        low, high = s["at_lo"], s["at_hi"]
        lines.append(f"  changes the cheapest: {s['name']} at {low['value']} -> {_grouped(low['top'], by)}; "
                     f"at {high['value']} -> {_grouped(high['top'], by)}")
    if rec.sensitivity and not flips:
        lines.append("  no drawn assumption, set to either end of its range, changes the cheapest policy")
    for name, why in rec.unobservable.items():
        lines.append(f"unobservable: {name}: {why}")
    return "\n".join(lines)
