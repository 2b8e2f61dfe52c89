"""prunesim tune [DIR] --policy P: a policy's settings searched on half the units, judged on the other half."""

from __future__ import annotations

import json
from pathlib import Path

from prunesim.cli.commands._common import add_transcript_options, out_arg, positive_int
from prunesim.cli.commands._units import add_unit_arguments, gather, partial, read_inputs
from prunesim.errors import UserError
from prunesim.io import atomic, output, reproduce
from prunesim.io.scenario_files import load, load_replay
from prunesim.policies import parse_names
from prunesim.studies import leaderboard as lb
from prunesim.studies import tune as tn
from prunesim.studies.recommend import refuse_without_success
from prunesim.studies.transcript_replay import replay_scenario

OUTPUT_FILES = (tn.TRIALS_FILE, tn.JSON_FILE, reproduce.FILE)


def register(sub) -> None:
    p = sub.add_parser(
        "tune",
        help="search a policy's settings on half of the transcripts (or seeds) with optuna, and judge the choice "
             "on the other half against the documented setting (experimental)",
        description="Split the units in two by --seed; search the policy's settings (the ranges its tables "
        "declare) on one half with optuna's TPE sampler, the documented setting first; replay the best on the "
        "other half beside the documented setting and give the paired bootstrap 95% interval of the difference. "
        "Needs the tune extra (pip install 'prunesim[tune]'). Experimental. See docs/tune.md.",
    )
    add_unit_arguments(p, policies=False, jobs=False)
    p.add_argument("--policy", required=True, help="the policy to tune (a name, a preset, or file.py:Class)")
    p.add_argument("--trials", type=positive_int, default=tn.TRIALS, help=f"trials (default {tn.TRIALS})")
    p.add_argument("--objective", default="dollars", choices=tn.OBJECTIVES,
                   help="what the search minimizes: dollars (default), or dollars per solved task (the runs' "
                        "predicted solved share, from an agent profile with a success model)")
    p.add_argument("--json", action="store_true", help="print tune.json instead of the summary")
    add_transcript_options(p)
    p.add_argument("--out", type=lambda t: Path(out_arg(t)), help="also write OUT/tune.json and OUT/trials.csv")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.trials > tn.MAX_TRIALS:
        raise UserError("--trials", str(args.trials), f"at most {tn.MAX_TRIALS:,}")
    tn._optuna()  # refused before any work when the extra is missing
    policy = parse_names(args.policy, "--policy")
    if len(policy) != 1:
        raise UserError("--policy", args.policy, "tunes one policy at a time")
    policy = policy[0]
    inputs = read_inputs(args, "tune", OUTPUT_FILES, [policy])
    if args.objective == tn.PER_SOLVED:
        refuse_without_success(inputs.scenario, inputs.transcripts)
    user, name = inputs.overrides, args.scenario or ("transcript" if inputs.transcripts else None)
    seed = args.seed if inputs.transcripts else 0
    if inputs.transcripts:
        keep = lambda data, entries, s: (data, list(data.warnings), {})  # noqa: E731 - the workload itself
        done, skipped = gather(lb.transcript_units(args.dir, lb.entries_of(inputs.scenario, [policy]), args.seed,
                                                   set(), measure=keep, tokenizer=args.tokenizer,
                                                   calibration=args.calibration, sidechains=args.sidechains))
        if partial(done, skipped, args.skip_bad, "tune"):
            return 2
        datas = [u.summaries for u in done]
        names = [d.name for d in datas]
        # A token setting is checked against the scenario's window when loaded, and against each unit's on replay.
        window = min(inputs.scenario.window, *(replay_scenario(inputs.scenario, d).window for d in datas))
        bills = tn.replay_bills(datas, lambda o: load_replay(name, {**user, **o}, [policy], prices=args.prices),
                               policy, args.seed, args.objective)
    else:
        names = [f"seed {s}" for s in inputs.seeds]
        window, skipped = inputs.scenario.window, []
        bills = tn.seed_bills(lambda o: load(name, {**user, **o}, [policy], prices=args.prices), policy,
                             inputs.seeds, args.objective)
    space = tn.search_space(policy, inputs.scenario, window)
    result = tn.tune(policy, names, bills, space, trials=args.trials, seed=seed or 0, objective=args.objective)
    result.meta = {"source": str(args.dir) if inputs.transcripts else name, "skipped": skipped}
    if args.out is not None:
        try:
            with output.folder(args.out, "--out") as staging:
                tn.write(staging, result)
                ran = inputs.seeds if not inputs.transcripts else [args.seed if args.seed is not None
                                                                   else inputs.scenario.seed]
                atomic.write_json(staging / reproduce.FILE, reproduce.record(ran))
        except OSError as err:
            raise UserError("--out", str(args.out), f"cannot write: {err.strerror or err}") from None
    if args.json:
        print(json.dumps(result.to_json(), indent=1, allow_nan=False))
        return 0
    print(format_result(result))
    if args.out is not None:
        print(f"\nwritten: {args.out / tn.JSON_FILE}, {args.out / tn.TRIALS_FILE}, {args.out / reproduce.FILE}")
    return 0


def _setting(params: dict) -> str:
    return ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in params.items())


def format_result(r: tn.TuneResult) -> str:
    c = r.comparison
    failed = sum(t["state"] != "complete" for t in r.trials)
    per = " per solved task" if r.objective == tn.PER_SOLVED else ""  # what a trial scores (train_usd)
    lines = [f"tune {r.policy}: {len(r.trials)} trial(s) on {len(r.train)} training unit(s)"
             + (f" ({failed} refused by a run)" if failed else "") + f", judged on {len(r.held_out)} held-out "
             f"unit(s); seed {r.seed} (experimental)",
             "searched: " + "; ".join(f"{d.key} in [{d.low:g}, {d.high:g}]" for d in r.space),
             f"documented: {_setting(r.documented['params'])}: ${r.documented['train_usd']:.4f}{per} on the training "
             "half",
             f"chosen (trial {r.chosen['trial']}): {_setting(r.chosen['params'])}: "
             f"${r.chosen['train_usd']:.4f}{per} on the training half",
             f"held out: documented ${c['documented_usd']:.4f}, chosen ${c['chosen_usd']:.4f}: difference "
             f"{c['diff_usd']:+.4f} [paired 95%: {c['interval'][0]:+.4f}, {c['interval'][1]:+.4f}], "
             f"wins/losses/ties {c['wins']}/{c['losses']}/{c['ties']}",
             f"verdict: {r.verdict}"]
    if r.objective == tn.PER_SOLVED:
        lines.insert(-1, f"held out, dollars per solved task: documented ${c['documented_per_solved']:.4f} "
                     f"({c['documented_solved']:.2f} solved), chosen ${c['chosen_per_solved']:.4f} "
                     f"({c['chosen_solved']:.2f} solved): difference {c['diff_per_solved']:+.4f} [paired 95%: "
                     f"{c['interval_per_solved'][0]:+.4f}, {c['interval_per_solved'][1]:+.4f}]")
    return "\n".join(lines)
