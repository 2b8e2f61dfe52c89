"""prunesim leaderboard [DIR] --policies all --out OUT: every policy on the same transcripts (or seeds), reduced."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

from prunesim.cli.commands._common import add_transcript_options, out_arg, print_notes
from prunesim.cli.commands._units import add_unit_arguments, gather, partial, read_inputs
from prunesim.errors import UserError
from prunesim.io import atomic, output, reproduce
from prunesim.io.labels import fitted_names, policy_labels
from prunesim.io.transcripts.identity import Seen
from prunesim.studies import leaderboard as lb
from prunesim.studies import observable
from prunesim.studies.grid import inert_axes, parse_axes


def register(sub) -> None:
    p = sub.add_parser(
        "leaderboard",
        help="every policy on a folder of transcripts (or seeds of a scenario): costs and breakages, with intervals",
        description="Replay every transcript in DIR (or run --seeds of a synthetic --scenario) under each policy "
        "and reduce per policy: median and bootstrap 95% interval over the transcripts or seeds of the input "
        "tokens billed relative to noop, decision tokens, peak utilization, re-retrievals, lost constraints, "
        "unrecorded evictions and forced truncations. Writes OUT/leaderboard.csv, OUT/runs.csv and "
        "OUT/leaderboard.json. See docs/leaderboard.md.",
    )
    add_unit_arguments(p)
    p.add_argument("--grid", action="append", metavar="NAME=VALUES",
                   help="also run each policy at these settings, as sweeps take them (POLICY:NAME=VALUES for one "
                        "policy, NAME=VALUES for all): a row per policy and setting, beside its documented one; "
                        "repeatable")
    add_transcript_options(p)
    p.add_argument("--out", type=_out_dir, required=True, help="the output folder")
    p.set_defaults(func=main)


def _out_dir(text: str) -> Path:
    return Path(out_arg(text))


def main(args) -> int:
    inputs = read_inputs(args, "leaderboard", (*lb.OUTPUT_FILES, reproduce.FILE))
    policies, scenario, transcripts, seeds = inputs.policies, inputs.scenario, inputs.transcripts, inputs.seeds
    axes = parse_axes(args.grid)
    for param in axes:
        if param.rpartition(":")[2] in ("turns", "seed", "policy"):
            raise UserError("--grid", param, "cannot be a leaderboard's axis (use --seeds, --seed or --policies)")
    entries = lb.entries_of(scenario, policies, axes)  # noop first: the reference runs whether asked or not
    shown = [e for e in entries if e.policy != lb.REFERENCE or lb.REFERENCE in policies]
    for line in inert_axes(axes, policies):
        print(line, file=sys.stderr)
    rows: list[dict] = []
    tools: set[str] = set()
    seen = Seen(lambda line: print(f"prunesim: warning: {line}", file=sys.stderr))
    if transcripts:
        units = lb.transcript_units(args.dir, entries, args.seed, tools, seen=seen, jobs=inputs.jobs,
                                    tokenizer=args.tokenizer, calibration=args.calibration,
                                    sidechains=args.sidechains)
    else:
        units = lb.synthetic_units(entries, seeds, inputs.jobs)

    def rows_of(unit):  # its rows now; what it ran on kept, not its summaries
        rows.extend(lb.unit_rows(unit, shown, transcripts))
        return dataclasses.replace(unit, summaries={})

    done, skipped = gather(units, rows_of)
    count = len(done)
    print_notes(policies, scenario, frozenset(tools) if transcripts else None)
    if partial(done, skipped, args.skip_bad, "leaderboard"):
        return 2
    table = lb.reduce(rows, shown)
    pairs = lb.paired(rows, shown)
    unobservable = observable.common([u.unobservable or {} for u in done])
    cache = lb.cache_assumption(table, shown)
    meta = {
        "paired": pairs,  # each row's dollars against noop's on the same units (docs/leaderboard.md)
        "source": str(args.dir) if transcripts else None,
        "scenario": scenario.to_dict(),
        "policies": policies,
        "grid": axes,
        "settings": [{"policy": e.policy, "setting": e.setting} for e in shown],
        "units": count,
        "seeds": seeds,
        "seed": args.seed if transcripts else None,
        "tokenizer": args.tokenizer if transcripts else None,
        "calibration": args.calibration if transcripts else None,
        "sidechains": args.sidechains if transcripts else None,
        "skipped": skipped,  # the files --skip-bad left out
        "repeats": seen.repeats,  # runs whose content another file (or line) already gave: counted once
        # What each model's units were billed on, and the values no recording gave (prunesim.io.settings). The
        # scenario above is the base every unit started from; on transcripts its window and [pricing] are each
        # recording's (these), not its own placeholders.
        "runtime": lb.runtimes(done),
        "unobservable": unobservable,
        "cache_assumption": cache,
    }
    try:
        with output.folder(args.out, "--out") as staging:  # the files together, or none
            lb.write(staging, meta, rows, table)
            ran = seeds if seeds is not None else [args.seed if args.seed is not None else scenario.seed]
            atomic.write_json(staging / reproduce.FILE, reproduce.record(ran))
    except OSError as err:
        raise UserError("--out", str(args.out), f"cannot write: {err.strerror or err}") from None
    what = f"{count} transcript(s) in {args.dir}" if transcripts else f"{count} seed(s) of {scenario.name}"
    if count == 1:  # said first: the table's intervals look like any other's
        unit = "transcript" if transcripts else "seed"
        what = (f"ONE {unit} ({what}): a bootstrap interval over one value is that value and a share's Wilson "
                f"interval is that of one trial, so nothing here says how a policy does on other {unit}s")
    if skipped:
        what += f" ({len(skipped)} file(s) that failed left out: --skip-bad)"
    print(format_table(table, shown, what))
    print(format_runtime(meta["runtime"], transcripts))
    print(format_unobservable(unobservable))
    print(format_cache(cache))
    if transcripts:
        print(format_bills(rows))
    print(format_paired(pairs, shown))
    print(f"\nwritten: {args.out / lb.TABLE_FILE}, {args.out / lb.RUNS_FILE}, {args.out / lb.META_FILE}, "
          f"{args.out / reproduce.FILE}")
    return 0


def _num(x: float, ratio: bool) -> str:
    if math.isinf(x) or math.isnan(x):
        return str(x)
    if ratio:
        return f"{x:.3f}"
    if abs(x) >= 100 or float(x).is_integer():
        return f"{x:,.0f}"
    return f"{x:.1f}"


def _usd(x: float) -> str:
    return str(x) if math.isinf(x) or math.isnan(x) else f"${x:.3f}"


def format_table(table: list[dict], entries: list, what: str) -> str:
    """One row per policy and setting: each figure's median [interval], a count's mean [interval] and share."""
    ratios = ({f.name for f in lb.FIGURES if f.unit == "ratio"}
              | {f.name for f in lb.OUTCOME_FIGURES if f.unit in ("ratio", "bool", "probability")})
    dollars = {f.name for f in lb.FIGURES if f.unit == "USD"}
    cell = {}
    for r in table:
        ratio = r["figure"] in ratios or r["figure"].endswith(lb.SHARE_SUFFIX)
        centre = r["mean"] if r["interval"] in ("mean", "wilson") else r["median"]
        show = _usd if r["figure"] in dollars else lambda x, ratio=ratio: _num(x, ratio)
        cell[(r["policy"], r["setting"], r["figure"])] = f"{show(centre)} [{show(r['ci_low'])}, {show(r['ci_high'])}]"
    shown = ("cost_ratio", "uncached_cost_ratio", "cost_usd", "uncached_cost_usd", "cost_vs_recorded", "input_ratio",
             "decision_tokens", "peak_utilization",
             "re_retrievals", "re_retrievals_share", "refetches", "lost_constraints", "lost_constraints_share",
             "unrecorded_evictions", "forced_truncations", "acted",
             # what the policy did to the agent, where an agent model ran (left out where none did)
             "turns_over_recorded", "redos", "capped", "task_success")  # the files hold every figure
    figures = [f for f in shown if any(k[2] == f for k in cell)]
    label = policy_labels([e.policy for e in entries])  # a policy from a file by its class, not its path
    names = [label[e.policy] + (f" @ {e.setting}" if e.setting else "") for e in entries]
    acting = {(r["policy"], r["setting"]): r["acting_threshold"] for r in table}
    names = [n + ("" if acting.get(e.key) is None else f" (acts at {acting[e.key]:,.0f})")
             for n, e in zip(names, entries, strict=True)]
    widths = [max(len(f), *(len(cell.get((*e.key, f), "-")) for e in entries)) for f in figures]
    name_w = max(len("policy"), *(len(n) for n in names))
    lines = [f"leaderboard: {what}; median [bootstrap 95% interval] over them, ratios against {lb.REFERENCE}; "
             f"counts: mean [bootstrap interval of the mean], <count>_share: share of units with one or more "
             "[Wilson interval]",
             "  ".join([f"{'policy':{name_w}s}", *(f"{f:>{w}s}" for f, w in zip(figures, widths, strict=True))])]
    for name, e in zip(names, entries, strict=True):
        lines.append("  ".join([f"{name:{name_w}s}", *(f"{cell.get((*e.key, f), '-'):>{w}s}"
                                                         for f, w in zip(figures, widths, strict=True))]))
    return "\n".join(lines)


def format_runtime(runtime: dict, transcripts: bool) -> str:
    """Which model and price table the units were billed on, and what no recording gave."""
    lines = []
    for model, r in runtime.items():
        windows = ", ".join(f"{w:,}" for w in r["windows"] if isinstance(w, int))
        acting = ", ".join(f"{w:,}" for w in r["triggers"] if isinstance(w, int))
        unit = "transcript(s)" if transcripts else "seed(s)"
        lines.append(f"billed as {model} ({'; '.join(map(str, r['price_tables']))}) on {r['units']} {unit}: window "
                     f"{windows} tokens, the scenario's trigger at {acting}")
        if transcripts and r["not_recorded"]:
            lines.append("  not recorded (assumed): " + ", ".join(
                f"{k} ({n} of {r['units']})" if n != r["units"] else k for k, n in r["not_recorded"].items()))
    return "\n".join(lines)


def format_unobservable(unobservable: dict) -> str:
    if not unobservable:
        return ""
    return "\n".join(["unobservable here (left out, not 0):",
                      *(f"  {k}: {why}" for k, why in unobservable.items())])


def format_cache(cache: dict) -> str:
    """Whether the prompt cache decides the sign of a policy's saving or the ranking."""
    lines = []
    if cache["sign_depends_on_cache"]:
        lines.append("the prompt cache decides the sign: " + ", ".join(
            f"{name} ({cache['medians'][name]['cached']:.3f} with the cache, {cache['medians'][name]['uncached']:.3f}"
            " without)" for name in cache["sign_depends_on_cache"]))
    if cache["ranking_depends_on_cache"]:
        pairs = cache["reversed_pairs"]
        moved = sorted({name for pair in pairs for name in pair}, key=lambda n: (-sum(n in p for p in pairs), n))
        lines.append(f"the ranking by median cost ratio depends on the cache: {len(pairs)} pair(s) of entries swap "
                     f"places without it, most often {', '.join(moved[:3])} (leaderboard.json: "
                     "cache_assumption.reversed_pairs)")
    return "\n".join(lines) if lines else "the prompt cache changes no sign and no rank of the median cost ratios"


def format_paired(pairs: list[dict], entries: list) -> str:
    """Per row: its total dollars, the difference from noop's on the same units [paired 95% interval], W/L/T."""
    if not pairs:
        return ""
    label = policy_labels([e.policy for e in entries])
    names = {(p["policy"], p["setting"]): label[p["policy"]] + (f" @ {p['setting']}" if p["setting"] else "")
             for p in pairs}
    width = max(len(n) for n in names.values())
    lines = [f"\ndollars against noop on the same units, paired: total, difference [95% interval of the paired "
             f"difference], wins/losses/ties on the units where it acted (a tie: within {lb.TIE_SHARE:.1%} of "
             "noop's bill); an interval that crosses 0 is a tie, whatever the medians say"]
    for p in pairs:
        low, high = p["interval"]
        wlt = f"{p['wins']}/{p['losses']}/{p['ties']} of {p['acted']}" if p["acted"] else "acted on no unit"
        lines.append(f"  {names[(p['policy'], p['setting'])]:{width}s}  ${p['total_usd']:10.4f}  "
                     f"{p['diff_usd']:+10.4f} [{low:+.4f}, {high:+.4f}]  {wlt}")
    return "\n".join(lines)


def format_bills(rows: list[dict]) -> str:
    """Per transcript: noop's dollars beside the bill it records (when noop is shown)."""
    mine = [r for r in rows if r["policy"] == lb.REFERENCE and r["setting"] == ""]
    if not mine:
        return ""
    lines = [f"\nnoop's dollars beside the recorded bills ({len(mine)} transcript(s)):"]
    total = recorded = 0.0
    shown = fitted_names([r["unit"] for r in mine], 56)  # distinct, not cut alike
    for r in mine:
        bill = r["recorded_cost_usd"]
        ratio = "" if bill is None else f" ({r['cost_vs_recorded']:.3f} of it)"
        lines.append(f"  {shown[r['unit']]:56s} ${r['cost_usd']:9.4f}  recorded "
                     + ("(no usage recorded)" if bill is None else f"${bill:9.4f}{ratio}"))
        total += r["cost_usd"]
        recorded += bill or 0.0
    known = [r for r in mine if r["recorded_cost_usd"] is not None]
    if known:
        ours = sum(r["cost_usd"] for r in known)
        lines.append(f"  in all: ${ours:.2f} against ${recorded:.2f} recorded over {len(known)} transcript(s) "
                     "that record their usage")
    return "\n".join(lines)
