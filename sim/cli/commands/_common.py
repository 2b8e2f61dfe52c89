"""Argument helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from prunesim.cli import crash
from prunesim.errors import ResourceError, UserError
from prunesim.io import output
from prunesim.io.scenario_files import parse_set, replace
from prunesim.kernel.choice import ENGINES, EngineChoice
from prunesim.model.scenario import MAX_SEED, seed_problem
from prunesim.policies import REGISTRY, user_policy_fault

# Seeds in one command: a million runs of the smallest shipped scenario already take hours; a range of
# billions is a typo that would otherwise end in "out of memory" after filling it.
MAX_SEEDS = 1_000_000


def parse_seeds(text: str, flag: str = "--seeds") -> list[int]:
    """``A:B`` (B excluded), ``A,B,C`` or ``N``."""
    try:
        if ":" in text:
            a, b = text.split(":", 1)
            lo, hi = int(a), int(b)
            if lo < 0 or hi <= lo:
                raise UserError(flag, text, "range must be A:B with 0 <= A < B")
            if hi - lo > MAX_SEEDS:
                raise UserError(flag, text, f"{hi - lo:,} seeds; at most {MAX_SEEDS:,} in one command")
            if problem := seed_problem(hi - 1):
                raise UserError(flag, text, f"the last seed, {problem}")
            return list(range(lo, hi))
        seeds = [int(x) for x in text.split(",")]
    except ValueError:
        raise UserError(flag, text, "expected A:B, a comma-separated list, or one integer") from None
    if any(s < 0 for s in seeds):
        raise UserError(flag, text, "seeds must not be negative")
    for seed in seeds:
        if problem := seed_problem(seed):
            raise UserError(flag, text, problem)
    seen: set[int] = set()
    for seed in seeds:
        if seed in seen:  # the same run counted twice would narrow every interval over seeds
            raise UserError(flag, text, f"a seed is given twice ({seed})")
        seen.add(seed)
    return seeds


def parse_sets(items: list[str] | None) -> dict:
    out = {}
    for item in items or []:
        key, value = parse_set(item)
        out[key] = value
    return out


def add_set(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario parameter (dotted for tables, e.g. workload.tool_output.mean=300); repeatable",
    )


def add_prices(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prices", metavar="FILE",
        help="a price file: [models.NAME] entries in prices.toml's format, any key optional (what it leaves out "
             "comes from prices.toml or genai-prices); its values are the user's and win over both",
    )


def add_reaction(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--reaction", choices=("closed", "none"),
        help="closed (default): a replayed transcript's agent re-fetches content the policy removed before a "
             "recorded call uses it; none: the recorded calls only (the open loop). Sets [reaction] mode",
    )


def add_agent(parser: argparse.ArgumentParser) -> None:
    from prunesim.model.agent_profiles import AUTO, NONE, shipped_profiles

    names = (AUTO, NONE, *shipped_profiles())
    parser.add_argument(
        "--agent", choices=names, metavar="NAME",
        help=f"the agent model's profile ({', '.join(names)}): how the agent reacts to what the policy removed "
             "(re-fetch, redo, its turn cap, success; docs/agent.md). auto (default): a replayed transcript's "
             "scaffold, none for a synthetic run. Sets [agent] profile",
    )


def scenario_sets(args) -> dict:
    """The scenario overrides of ``--set``, ``--reaction`` (which sets ``reaction.mode``) and ``--agent`` (which
    sets ``agent.profile``)."""
    out = parse_sets(args.set)
    for flag, key in (("reaction", "reaction.mode"), ("agent", "agent.profile")):
        value = getattr(args, flag, None)
        if value is None:
            continue
        given = out.get(key, value)
        if given != value:
            raise UserError(f"--{flag}", value, f"contradicts --set {key}={given}")
        out[key] = value
    return out


def _int_at_least(text: str, low: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a {what} integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected a {what} integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    return _int_at_least(text, 0, "non-negative")


def positive_int(text: str) -> int:
    return _int_at_least(text, 1, "positive")


def seed_arg(text: str) -> int:
    """A ``--seed``-like flag: an integer from 0 to MAX_SEED, as a seed is everywhere."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to {MAX_SEED:,}, got {text!r}") from None
    problem = seed_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def check_seed_blocks(first: int, blocks: int, size: int) -> None:
    """--first-seed, --blocks and --block-size: every seed of the blocks is a seed (one command's worth)."""
    if blocks * size > MAX_SEEDS:  # each block holds its seeds: refuse before running any
        raise UserError("--blocks", None, f"{blocks:,} blocks of {size:,} seeds (--block-size) are "
                        f"{blocks * size:,} seeds; at most {MAX_SEEDS:,} in one command")
    if problem := seed_problem(first + blocks * size - 1):
        raise UserError("--first-seed", str(first), f"the last seed of the blocks, {problem}")


def out_arg(text: str) -> str:
    """An ``--out`` value: kept as typed (a trailing ``/`` means a folder); an empty one is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path (use . for the current folder)")
    return text


def out_file_arg(text: str) -> Path:
    """A flag that names one file to write (``--fit-out``, ``calibrate --out``): a name ending with ``/`` means a
    folder, which ``Path()`` would silently turn into a file of that name; refused."""
    if output.names_folder(out_arg(text)):
        raise argparse.ArgumentTypeError(f"{text}: names a folder; give a file name")
    return Path(text)


class Tally:
    """Per-file isolation in folder commands: a bad file is one line and a count; the rest is still read.

    A file that is bad input is reported as ``prunesim: error: PATH: problem``;
    a file on which prunesim itself failed (a bug) gets a crash report and the
    line says so. Every file is read, so one run names every bad file. The
    result is all or nothing (:meth:`complete`): a command writes its output
    only when every file went through, or with ``--skip-bad`` when at least one
    did. :meth:`exit_code` is 70 when prunesim failed on a file, 2 when a file
    was bad (with ``--skip-bad``: when none went through), else 0.
    """

    def __init__(self, bar=None, skip_bad: bool = False) -> None:
        self.done = 0
        self.bad = 0
        self.bugs = 0
        self.bar = bar  # a progress bar to print above, if one is shown
        self.skip_bad = skip_bad

    def ok(self) -> None:
        self.done += 1

    def failed(self, path, err: BaseException) -> None:
        if not isinstance(err, UserError):
            err = user_policy_fault(err) or err  # a user's policy that raised is bad input, not a bug
        if isinstance(err, UserError):
            self.bad_line(str(err))
            return
        self.bugs += 1
        self._print(crash.one_line(err, where=str(path)))

    def bad_line(self, text: str) -> None:
        """A bad file already worded as one line (``PATH: problem``)."""
        self.bad += 1
        self._print(f"prunesim: error: {text}")

    def _print(self, line: str) -> None:
        if self.bar is None:
            print(line, file=sys.stderr)
        else:
            say(self.bar, line, err=True)

    @property
    def failures(self) -> int:
        return self.bad + self.bugs

    def complete(self) -> bool:
        """May the command write its result? Every file went through, or ``--skip-bad`` and some did."""
        return self.done > 0 and (self.skip_bad or not self.failures)

    def says_more(self) -> bool:
        """Whether the closing summary adds to the error lines: not when the one file given failed."""
        return bool(self.done) or self.failures > 1

    def summary(self) -> str:
        """``N file(s) failed`` (how many on a prunesim bug), and why nothing was written when nothing was."""
        bugs = f" ({self.bugs} on a prunesim bug)" if self.bugs else ""
        text = f"{self.failures} file(s) failed{bugs}"
        if self.failures and self.skip_bad and self.done:
            return text + " and were skipped (--skip-bad)"
        if self.failures and self.done:
            return text + "; nothing written (fix or move them, or give --skip-bad to leave them out)"
        return text + ("; nothing written" if self.failures else "")

    def exit_code(self) -> int:
        """70 when prunesim failed on a file (a bug); 2 when a file was bad input (with --skip-bad: when no
        file went through); else 0."""
        if self.bugs:
            return 70
        return 0 if self.complete() else 2

    def per_file(self, sources, process, commit, discard=None, tick=None, jobs: int = 1, seen=None,
                 kept=None) -> None:
        """Process ``(path, workload or error)`` pairs, committing each file's results only when all its runs
        went through: a JSON-lines file with a bad run in it contributes nothing, as a bad file of one run.

        ``process(data)`` returns a result or raises (a UserError is bad input, anything else a bug);
        ``commit(path, results)`` gives a file's results out; ``discard(path)`` drops what a failed file made;
        ``tick()`` is called once per file, done or failed (a progress bar). ``jobs`` processes run
        ``process`` ahead (:func:`prunesim.studies.pool.sources_ahead`), which then must change nothing
        outside what it returns (``kept(outcome)`` hears each result, or :class:`Failed`, in order); with
        ``seen``, ``sources`` are read without it and repeats are left out here, in order.
        """
        from prunesim.studies.pool import sources_ahead

        current, results, dead = None, [], None

        def close() -> None:
            if current is not None and current != dead:
                commit(current, results)
                self.ok()
                if tick is not None:
                    tick()

        for path, data, outcome in sources_ahead(sources, caught(process), jobs, seen):
            if path != current:
                close()
                current, results = path, []
            if path == dead:
                continue
            if kept is not None and not isinstance(data, Exception):
                kept(outcome)
            if isinstance(data, Exception):
                err = data
            elif not isinstance(outcome, Failed):
                results.append(outcome)
                continue
            else:
                err = outcome.error
            self.failed(path, err)
            dead, results = path, []
            if discard is not None:
                discard(path)
            if tick is not None:
                tick()
        close()


class Failed:
    """What ``process`` raised on one run (told apart from any result it may return), and what it had done by
    then (``partial``: the process's own account, for ``kept``)."""

    def __init__(self, error: Exception, partial=None):
        self.error = error
        self.partial = partial


def caught(process):
    """``process``, returning what it raises on a run as :class:`Failed` (a failure of the machine is raised)."""
    from prunesim.studies.pool import portable

    def run(data):
        try:
            return process(data)
        except (ResourceError, MemoryError):
            raise
        except Exception as caught:  # noqa: BLE001 - one file's failure, reported; the rest goes on
            return Failed(portable(caught))

    return run


# Memory a recorded trace takes per simulated turn: about 2.7 KB under naive on oscillation-40,
# measured with tracemalloc at 5,000 and 20,000 turns. (A run that records nothing is the
# long-sessions work's to keep in constant memory.)
TRACE_BYTES_PER_TURN = 3_000


def machine_memory() -> int | None:
    """Physical memory in bytes, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def warn_memory(turns: int, recorded: bool, runs_at_once: int = 1) -> None:
    """A warning on stderr when ``runs_at_once`` recorded runs of ``turns`` turns would not fit in memory."""
    if not recorded:
        return
    need = turns * TRACE_BYTES_PER_TURN * max(1, runs_at_once)
    have = machine_memory()
    if have is None or need <= have:
        return
    runs = f" ({runs_at_once} runs at once)" if runs_at_once > 1 else ""
    print(f"prunesim: warning: turns={turns:,} with the trace recorded needs about {_size(need)} of memory{runs}; "
          f"this machine has {_size(have)}: expect the run to fail or swap", file=sys.stderr)


def warn_kernel_memory(record_bytes: int, turns: int, runs_at_once: int) -> None:
    """A warning on stderr when ``runs_at_once`` kernel runs, each holding ``record_bytes`` of its record
    (:func:`prunesim.kernel.choice.record_bytes`, ``turns`` turns), would not fit in memory."""
    need = record_bytes * max(1, runs_at_once)
    have = machine_memory()
    if have is None or need <= have:
        return
    runs = f" ({runs_at_once} runs at once)" if runs_at_once > 1 else ""
    print(f"prunesim: warning: turns={turns:,} on the kernel holds up to {_size(need)} of run records{runs}; this "
          f"machine has {_size(have)}: expect workers to fail or swap (fewer --jobs, or --engine simpy, which "
          "streams a run)", file=sys.stderr)


def _size(n: int) -> str:
    for unit, scale in (("PB", 2**50), ("TB", 2**40), ("GB", 2**30)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n / 2**20:,.0f} MB"


# -- folders of transcripts -----------------------------------------------------------
PROGRESS_MIN_FILES = 5  # a folder of more files than this shows a progress bar (on a terminal)


def add_transcript_options(parser: argparse.ArgumentParser) -> None:
    """--tokenizer, --calibration and --sidechains: how transcripts are read and sized; --skip-bad: whether a
    folder with a bad file in it still gives a result."""
    from prunesim.io.transcripts import tokens

    parser.add_argument("--tokenizer", default=tokens.DEFAULT, help=f"one of: {', '.join(tokens.NAMES)}")
    parser.add_argument("--calibration", default="auto", metavar="auto|none|FILE",
                        help="size parts for the transcript's model: auto (the shipped profiles, default), "
                             "none (raw counts) or a calibration file from fidelity --fit-out")
    parser.add_argument("--sidechains", default="separate", choices=("separate", "skip"),
                        help="Claude Code subagent conversations: their own workloads (default) or left out")
    parser.add_argument("--skip-bad", action="store_true",
                        help="leave out the files that cannot be read and write the result of the others "
                             "(default: a bad file means nothing is written and exit code 2)")
    parser.add_argument("--no-cache", action="store_true",
                        help="import every transcript afresh, and keep no import for the next command (default: "
                             "imports are kept in $PRUNESIM_CACHE_DIR or $XDG_CACHE_HOME/prunesim, by the file's "
                             "content and these settings; PRUNESIM_NO_CACHE=1 does the same)")


def check_distinct(files: list) -> None:
    """Refuse a file reached twice (named twice, or a link beside the file it points to): its runs would be
    counted twice, narrowing every interval over them, as a seed given twice would."""
    seen: dict[tuple[int, int], str] = {}
    for path in files:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue  # the reader says what is wrong with it
        key = (st.st_dev, st.st_ino)
        if key in seen:
            what = "is named twice" if seen[key] == str(path) else f"is the same file as {seen[key]} (a link)"
            raise UserError(str(path), None, f"{what}: its runs would be counted twice")
        seen[key] = str(path)


def option_files(args) -> list[str]:
    """The files named by --calibration FILE and --scenario FILE: inputs an output must not replace."""
    named = [getattr(args, "calibration", None), getattr(args, "scenario", None)]
    return [name for name in named if isinstance(name, str) and name not in ("auto", "none") and
            os.path.isfile(name)]


def check_transcript_options(args) -> None:
    from prunesim.io.transcripts import calibration, import_cache, tokens

    import_cache.configure(enabled=not getattr(args, "no_cache", False))
    tokens.get_counter(args.tokenizer)
    calibration.check_setting(args.calibration, args.tokenizer)


def progress(total: int, unit: str = "file"):
    """A tqdm bar on stderr for a folder of more than a few files (when stderr is a terminal), else a no-op."""
    import sys

    if total <= PROGRESS_MIN_FILES or not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def report_line(bar, kind: str, text: str) -> None:
    """One line on stderr (``prunesim: error: ...``) that does not break the progress bar."""
    say(bar, f"prunesim: {kind}: {text}", err=True)


def say(bar, line: str, err: bool = False) -> None:
    """Print a line to stdout (or stderr) above the progress bar, if one is shown."""
    import sys

    stream = sys.stderr if err else sys.stdout
    if isinstance(bar, _NoBar):
        print(line, file=stream)
    else:
        from tqdm import tqdm

        tqdm.write(line, file=stream)


def print_notes(policies: list[str], scenario, tools: frozenset[str] | None = None) -> None:
    """Each policy's warnings about this scenario (and the transcripts' tools), one line each on stderr."""
    from prunesim.policies import get_policy

    for name in policies:
        for note in get_policy(name).notes(scenario, tools):
            print(f"prunesim: warning: {note}", file=sys.stderr)


def add_engine(parser: argparse.ArgumentParser) -> None:
    """--engine simpy|kernel|auto, for the study commands."""
    parser.add_argument("--engine", choices=ENGINES, default="simpy",
                        help="simpy (the reference, default); kernel: the compiled loop (the prunesim[kernel] "
                             "extra; synthetic noop, naive, recency and slack-gated runs only, anything else "
                             "refused); auto: the kernel "
                             "for the variants it covers when the work pays for loading it, SimPy for the rest. "
                             "The summaries are the same byte for byte")


def engine_choice(args, command: str, base, variants, runs: int) -> EngineChoice:
    """The engine of each of ``variants`` on ``base`` for ``runs`` runs each, chosen before any run; which
    engine runs which variant is said on stderr (unless --engine is left at simpy)."""
    work = {v.label: (replace(base, v.overrides) if v.overrides else base, v.policy) for v in variants
            if v.policy in REGISTRY}
    choice = EngineChoice(args.engine, work, runs * base.turns,
                          note=lambda line: print(f"{command}: {line}", file=sys.stderr, flush=True))
    if args.engine != "simpy":
        print(f"{command}: {choice.describe()}", file=sys.stderr, flush=True)
    return choice
