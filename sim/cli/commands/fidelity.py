"""prunesim fidelity: replayed context against the API's own prompt-token counts, cross-validated; the
prompt-cache model and dollars against the recorded bills, out of sample (prunesim.studies.cache_fidelity); and
the replay pipeline itself against the recorded bills, cross-validated (prunesim.studies.replay_identity)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from prunesim.cli.commands._common import (
    Tally,
    add_set,
    add_transcript_options,
    check_distinct,
    check_transcript_options,
    non_negative_int,
    option_files,
    out_file_arg,
    parse_sets,
    progress,
    report_line,
)
from prunesim.errors import ResourceError, UserError
from prunesim.io import inputs, output
from prunesim.io.atomic import json_ready
from prunesim.io.labels import fitted_names
from prunesim.io.scenario_files import load_replay
from prunesim.studies import cache_fidelity, replay_identity
from prunesim.studies.fidelity import DEFAULT_FOLDS, Study, write_profiles
from prunesim.studies.transcript_replay import TRANSCRIPT_SUFFIXES, expand


def register(sub) -> None:
    p = sub.add_parser("fidelity", help="compare replayed window sizes with the API's prompt-token counts")
    p.add_argument("dir", type=Path, help="a folder (or file) of transcripts and/or workload files")
    add_transcript_options(p)
    p.add_argument("--folds", type=non_negative_int, default=DEFAULT_FOLDS,
                   help=f"cross-validation folds per model family (default {DEFAULT_FOLDS}; 0 or 1: none)")
    p.add_argument("--fit-out", type=out_file_arg, metavar="FILE",
                   help="also fit a calibration on the whole folder and write it (for --calibration FILE)")
    p.add_argument("--fit-on", type=Path, metavar="DIR",
                   help="fit the prompt-cache parameters on this folder and judge every run of DIR with them "
                        "(default: leave-one-out within DIR)")
    p.add_argument("--scenario", default="transcript",
                   help="the scenario the replay-identity check replays under (default: transcript)")
    add_set(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=main)


def main(args) -> int:
    if not args.dir.exists():
        raise UserError(str(args.dir), None, "no such file or folder")
    if args.fit_on is not None and not args.fit_on.exists():
        raise UserError("--fit-on", str(args.fit_on), "no such file or folder")
    check_transcript_options(args)
    sets = parse_sets(args.set)
    for key in sorted(set(sets) & set(replay_identity.SET_PER_RUN)):  # else ignored without a word
        raise UserError("--set", key, "the replay identity sets it per run (both sizes, each model's fitted reuse)")
    base = load_replay(args.scenario, sets)
    if args.fit_out is not None:
        output.check_file(args.fit_out, "--fit-out")
    files = expand([args.dir])
    if not files:
        raise UserError(str(args.dir), None, "no transcript or workload files found")
    check_distinct(files)
    if args.fit_on is not None:
        _check_apart(files, expand([args.fit_on]), args)
    if args.fit_out is not None:
        output.check_not_input(args.fit_out, files + (expand([args.fit_on]) if args.fit_on else [])
                               + option_files(args), "--fit-out")
        if args.fit_out.name.endswith(TRANSCRIPT_SUFFIXES):  # only a name a folder read would take as input
            output.check_outside(args.fit_out, [args.dir] + ([args.fit_on] if args.fit_on else []), "--fit-out")
        output.check_own_kind(args.fit_out, b'"prunesim_calibration"', "a prunesim calibration file", "--fit-out")
    reported: set[str] = set()
    with Study(args.tokenizer, args.calibration, args.sidechains, args.folds) as study, progress(len(files)) as bar:
        tally = Tally(bar, args.skip_bad)

        def on_error(path, err) -> None:  # bad input is one line; a bug on one file gets a crash report
            reported.add(str(path))
            tally.failed(path, err)

        rep = study.run(files, on_error=on_error, on_warning=lambda w: report_line(bar, "warning", w),
                        tick=bar.update)
        profiles = study.fit_all() if args.fit_out is not None and study.entries else None
        cache = cache_fidelity.report(args.dir, args.fit_on)
        with replay_identity.Study(base, args.tokenizer, args.calibration, args.sidechains, args.folds) as ident, \
                replay_identity.Study(base, args.tokenizer, args.calibration, args.sidechains) as donors:
            def once(path, err) -> None:  # a file the first reader failed on is reported once
                if str(path) not in reported:
                    on_error(path, err)

            ident.read(files, on_error=once)
            if args.fit_on is not None:  # a bad file there is as bad as one in DIR: the fit would miss it
                donors.read(expand([args.fit_on]), on_error=once)
            identity = ident.report(donors if args.fit_on is not None else None)
        for warning in identity["warnings"]:  # a noop replay's forced cuts, one line per transcript
            report_line(bar, "warning", warning)
        for failure in cache.pop("failed"):  # a file both readers failed on is reported once
            if isinstance(failure, tuple):  # (path, exception): a bug met on that file
                tally.failed(*failure)
            elif not any(failure.startswith(path) for path in reported):
                tally.bad_line(failure)
        tally.done = study.imported
        if not tally.complete():  # a report over part of the folder would read as one over all of it
            if tally.says_more():  # one file that failed is its own line
                print(f"prunesim: fidelity: {tally.summary()}", file=sys.stderr)
            return tally.exit_code()
        if profiles is not None:  # written last: an interrupted or failed command leaves no --fit-out behind
            write_profiles(args.fit_out, profiles)
    if args.json:
        keys = ("cache_median_error", "cache_p90_error", "cost_median_error", "cost_p90_error")
        rep.update({k: cache[k] for k in keys})
        rep["cache"] = cache
        rep["replay"] = identity
        print(json.dumps(json_ready(rep), indent=2, sort_keys=True))
    else:
        print(format_report(rep))
        print(cache_fidelity.format_report(cache))
        print(replay_identity.format_report(identity))
    if tally.failures and tally.says_more():
        print(f"prunesim: fidelity: {tally.summary()}", file=sys.stderr)
    return tally.exit_code()


def _check_apart(judged: list[Path], fitted: list[Path], args) -> None:
    """Refuse a --fit-on folder that holds any run of DIR: a link to its file, a copy, or the same run in a file
    of other bytes (reformatted, renamed, another line ending): its runs would be judged by a fit made on them."""
    fitted_runs: set[str] = set()
    for path in fitted:
        fitted_runs |= _runs_of(path, args.sidechains)
    shared = [p for p in judged if _runs_of(p, args.sidechains) & fitted_runs]
    if shared:
        raise UserError("--fit-on", str(args.fit_on), f"holds {len(shared)} run(s) of {args.dir} (the first: "
                        f"{shared[0]}; the same content): they would be judged by parameters fitted on them; give "
                        "a folder apart, or leave --fit-on out to fit leaving each run out")


def _runs_of(path: Path, sidechains: str) -> set[str]:
    """What a file holds, by content: each transcript's (identity.of_transcript: parsed, not sized, so cheap), a
    workload file's bytes; nothing for a file that cannot be read (the readers name what is wrong with it)."""
    import hashlib

    from prunesim.io.transcripts import formats, identity
    from prunesim.io.transcripts.workload import is_workload_file

    try:
        if is_workload_file(path):
            return {hashlib.sha256(inputs.read_bytes(path, "workload file")).hexdigest()}
        return {identity.of_transcript(t) for t in formats.iter_transcripts(path, sidechains)}
    except (ResourceError, MemoryError):
        raise
    except Exception:  # noqa: BLE001 - bad input or a bug: the readers that follow report it, once
        return set()


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def format_report(rep: dict) -> str:
    lines = [f"fidelity ({rep['tokenizer']} tokens, calibration {rep['calibration']}): {rep['transcripts']} "
             f"transcript(s) with API prompt counts, {rep['skipped']} without, {rep['failed']} file(s) failed; "
             f"{rep['anchored_calls']} of {rep['calls'] + rep['anchored_calls']} counted calls anchored"]
    shown = fitted_names([r["transcript"] for r in rep["per_transcript"]], 48)  # distinct, not cut alike
    for r in rep["per_transcript"]:
        lines.append(f"  {shown[r['transcript']]:48s} {r['calls']:4d} calls  error {_pct(r['error']):>7s} "
                     f"cross-validated, {_pct(r['error_as_imported']):>7s} as imported")
    for g in rep["profiles"]:
        cv, imp = g["cross_validated"], g["as_imported"]
        lines.append(f"profile {g['profile']}: {g['transcripts']} transcript(s); cross-validated median "
                     f"{_pct(cv['median_error'])}, p90 {_pct(cv['p90_error'])}; as imported median "
                     f"{_pct(imp['median_error'])}, p90 {_pct(imp['p90_error'])}")
    for c in rep["compactions"]:
        lines.append(f"compaction in {c['transcript']} before call {c['turn']} ({c['trigger']}): runtime counted "
                     f"{c['pre_tokens']}, API prompt before {c['api_prompt_before']}, ours {c['ours_before']}, "
                     f"API prompt after {c['api_prompt_after']}")
    react = rep["reaction"]["out_of_fold"]["totals"] if "out_of_fold" in rep["reaction"] else None
    if react and react["compactions"]:
        lines.append(f"reaction: after {react['compactions']} compaction(s), {react['needs']} file(s) needed again; "
                     f"re-reads predicted {react['predicted']:.2f} (open loop {react['predicted_open_loop']:.2f}), "
                     f"observed {react['observed']:.0f}, leaving each session out of the fit")
        for name, look in rep["reaction"].get("lookback", {}).items():
            lines.append(f"lookback needs of {name} ({look['source']}, set on another scaffold): re-reads predicted "
                         f"{look['predicted']:.2f}, observed {look['observed']:.0f} (mean absolute error per "
                         f"compaction {look['mean_abs_error']:.2f})")
    if rep["transcripts"]:
        cv = rep["cross_validated"]
        what = (f"cross-validated over {rep['folds']} folds" if rep["headline"] == "cross_validated" else
                f"as imported; {cv['transcripts']} transcript(s) cross-validated, too few to lead")
        lines.append(f"median error {_pct(rep['median_error'])}, p90 error {_pct(rep['p90_error'])} ({what})")
    return "\n".join(lines)
