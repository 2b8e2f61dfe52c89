"""One self-contained HTML page of result files: what was run, the tables, the figures, where the data is.

``prunesim report RESULTS... --out report.html`` reads each result and never
simulates. A result is one of:

* a run folder (``summary.json``, as ``prunesim run --out`` writes it);
* a sweep folder (``sweep.json`` and ``runs.csv``);
* a leaderboard folder (``leaderboard.csv`` and ``leaderboard.json``), or its ``leaderboard.csv``;
* a recommendation's folder (``recommend.json``, as ``prunesim recommend --out`` writes it);
* a replay's ``replay.json`` (``prunesim replay NAME --out FILE``), or the folder
  ``replay --plot DIR`` wrote (``replay.json`` beside the runs the story figure is drawn from).

Each becomes a section of the page: the command that made it (the exact one
where the result records it in ``reproduce.json``, else one rebuilt from what it
records, and the page says which), the input files it read with their
SHA-256, the scenario with its hash, seeds and version; its
tables, sortable by any column; its figures, drawn by the ``prunesim.plots``
functions as SVG and inlined; the figures that disagree with the seed, for a
replay; and, under each figure, the files and columns it was drawn from. A
recommendation and a leaderboard lead with the decision's own figure: each
policy's dollars against noop's on the same units, paired, with its 95%
interval (:mod:`prunesim.plots.paired`); token ratios come after. A sweep's
table gives a yes/no figure (or a count that is mostly zero) as the share of
runs with its Wilson interval, as the figures do, not as a median. The
page loads nothing from anywhere: its style and the few lines of script that
sort the tables are inside it. The HTML comes from the Jinja2 template
``templates/report.html.j2`` (autoescaped).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from prunesim.errors import UserError
from prunesim.io import output, reproduce, scenario_files, sweep_files
from prunesim.io.sweep_files import MAX_SEED
from prunesim.observe.metrics import METRICS
from prunesim.observe.metrics.intervals import wilson
from prunesim.plots import style
from prunesim.plots.io import read_json, read_run, read_sweep
from prunesim.plots.paired import (
    RECOMMEND_FILE,
    Paired,
    from_leaderboard,
    from_recommendation,
    paired_figure,
    read_recommendation,
)
from prunesim.plots.pareto import META_FILE as LEADERBOARD_META
from prunesim.plots.pareto import TABLE_FILE as LEADERBOARD_TABLE
from prunesim.plots.pareto import pareto_figure, read_leaderboard

REPLAY_FILE = "replay.json"
TITLE = "prunesim report"
# Sweep metrics drawn when the report is not told which (those the sweep has): the story's headline figures.
SWEEP_METRICS = ("oscillating", "passes", "overhead_ratio", "input_tokens_billed", "forced_truncations",
                 "re_retrievals")
SORTABLE_ROWS = 8  # a table of more rows than this can be sorted by clicking a column's header
# replay name -> (story-figure function in prunesim.plots.stories, what it shows)
STORIES = {"oscillation": "oscillation_figures", "reentrancy": "reentrancy_figures"}


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list]  # cells: numbers or text; numbers sort as numbers
    note: str = ""

    @property
    def sortable(self) -> bool:
        return len(self.rows) > SORTABLE_ROWS


@dataclass
class Figure:
    title: str
    svg: str  # an <svg> element, its ids prefixed so that figures on one page never share one
    data: str  # the result files and columns it was drawn from


@dataclass
class Command:
    text: str
    exact: bool  # recorded by the command that wrote the result, not rebuilt from what it records


@dataclass
class Section:
    kind: str
    path: str
    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    inputs: list[Path] = field(default_factory=list)  # the files read, which the report must never replace


# -- what a result is ---------------------------------------------------------------
def kind_of(path: Path) -> str:
    """``run``, ``sweep``, ``leaderboard``, ``recommend`` or ``replay``; anything else is one line naming it."""
    path = Path(path)
    if not path.exists():
        raise UserError(str(path), None, "no such file or folder")
    if path.is_file() and path.name in ("summary.json", sweep_files.SWEEP_FILE):
        raise UserError(str(path), None, "give the folder that holds it")
    if path.is_file():
        if path.name == LEADERBOARD_TABLE:
            return "leaderboard"
        if path.name == RECOMMEND_FILE:
            return "recommend"
        if path.suffix == ".json":
            return "replay"
        raise UserError(str(path), None, "not a prunesim result (give a result folder, a replay's JSON file or "
                                         "a leaderboard.csv)")
    for name, kind in (("summary.json", "run"), (sweep_files.SWEEP_FILE, "sweep"),
                       (LEADERBOARD_TABLE, "leaderboard"), (RECOMMEND_FILE, "recommend"), (REPLAY_FILE, "replay")):
        if (path / name).exists():
            return kind
    raise UserError(str(path), None, "not a prunesim result folder (no summary.json, sweep.json, leaderboard.csv, "
                                     "recommend.json or replay.json in it)")


def scenario_hash(scenario: dict) -> str:
    """The first 16 hex digits of the SHA-256 of the scenario as its result file records it (keys sorted).

    Two results with the same hash ran the same scenario, whatever it was called.
    """
    blob = json.dumps(scenario, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _seeds(value) -> list[int]:
    """The seeds a result file records: a list of seeds; anything else (an edited file) is none."""
    ok = isinstance(value, list) and all(type(s) is int and 0 <= s <= MAX_SEED for s in value)
    return list(value) if ok else []


def _seeds_text(seeds: list[int]) -> str:
    """Seeds as the command line takes them: A:B for a range, else a list."""
    seeds = [int(s) for s in seeds]
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}:{seeds[-1] + 1}"
    return ",".join(map(str, seeds))


def _set_flags(scenario: dict) -> tuple[list[str], list[str]]:
    """``--set`` flags that turn the shipped scenario of this name into the recorded one, and the keys that
    differ in a way ``--set`` cannot give (lists); ([], []) when the name is not a shipped scenario."""
    name = scenario.get("name")
    try:
        shipped = scenario_files.load(str(name)).to_dict() if name in scenario_files.shipped_scenarios() else None
    except UserError:
        shipped = None
    if shipped is None:
        return [], []
    recorded, base = scenario_files._flatten(scenario), scenario_files._flatten(shipped)
    flags, other = [], []
    for key, value in recorded.items():
        if key in ("name", "description") or base.get(key) == value:
            continue
        if isinstance(value, (list, dict)):
            other.append(key)
        else:
            flags += ["--set", f"{key}={_value_text(value)}"]
    return flags, other


def _value_text(value) -> str:
    """A value as --set and --grid take it."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _scenario_facts(section: Section, scenario: dict | None, where: str, limits: bool = True) -> None:
    """The scenario's name and hash, and (``limits``: not for replays of recordings, whose window and prices are
    each recording's) its window, budget and trigger."""
    if not isinstance(scenario, dict):
        section.notes.append(f"{where} records no scenario: its hash cannot be given")
        return
    section.facts.append(("scenario", f"{scenario.get('name', '?')} (hash {scenario_hash(scenario)}, "
                                      f"recorded whole in {where})"))
    limits = limits and [f"{k} {scenario[k]:,}" for k in ("window", "budget", "trigger")
                         if isinstance(scenario.get(k), int)]
    if limits:
        section.facts.append(("limits", ", ".join(limits) + f" tokens ({scenario.get('budget_kind', '?')} budget)"))


def _runtime_facts(section: Section, meta: dict) -> None:
    """The model and price table each unit was billed on, and what no recording gave (leaderboard.json)."""
    runtime = meta.get("runtime")
    if not isinstance(runtime, dict):
        section.notes.append(f"{LEADERBOARD_META} records no runtime (written before prunesim named it): the model "
                             "and prices the units were billed on are not known here")
        return
    for model, r in runtime.items():
        if not isinstance(r, dict):
            continue
        windows = ", ".join(f"{w:,}" for w in r.get("windows", ()) if isinstance(w, int))
        section.facts.append(("billed as", f"{model} ({'; '.join(map(str, r.get('price_tables', ())))}) on "
                                           f"{r.get('units', '?')} unit(s), window {windows} tokens"))
        if meta.get("source") and r.get("not_recorded"):
            section.facts.append(("not recorded", ", ".join(map(str, r["not_recorded"]))))
    for figure, why in (meta.get("unobservable") or {}).items():
        section.notes.append(f"{figure} is unobservable here and left out: {why}")
    cache = meta.get("cache_assumption")
    if isinstance(cache, dict) and cache.get("sign_depends_on_cache"):
        section.notes.append("the prompt cache decides the sign of the saving of "
                             + ", ".join(map(str, cache["sign_depends_on_cache"]))
                             + " (uncached_cost_ratio beside cost_ratio)")


def _rebuilt(words: list[str], scenario: dict | None, section: Section) -> Command:
    """A command rebuilt from what a result records; lists that --set cannot give are named in a note."""
    flags, other = _set_flags(scenario) if isinstance(scenario, dict) else ([], [])
    name = scenario.get("name") if isinstance(scenario, dict) else None
    if name is not None and name not in scenario_files.shipped_scenarios():
        section.notes.append(f"{name} is not a shipped scenario: give the command the scenario file it was "
                             "loaded from (the result files record the whole scenario)")
    if other:
        section.notes.append("the recorded scenario also differs from the shipped one in "
                             f"{', '.join(other)}, which --set cannot give: use the recorded scenario")
    return Command(shlex.join(["prunesim", *words, *flags]), exact=False)


def _recorded(command) -> Command | None:
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        return Command(shlex.join(command), exact=True)
    return None


def _reproduction(section: Section, record: dict | None, where: str) -> Command | None:
    """What a result's record (reproduce.json) adds to its section: the input files with their SHA-256, as its
    last table (:func:`_inputs_last`); returns the exact command it records, or None (a result written before
    prunesim kept a record, or from Python)."""
    if record is None or not reproduce.valid(record):
        section.notes.append(f"{where}: no record of the input files (a result written before prunesim kept "
                             "reproduce.json, or one edited): which files it read, and whether they are the same "
                             "now, cannot be told")
        return None
    if record["inputs"]:
        rows = [[name, digest, reproduce.now(name, digest)] for name, digest in record["inputs"].items()]
        section.tables.append(Table(f"input files ({where})", ["file", "SHA-256", "here and now"], rows,
                                    "prunesim:... is a file shipped with prunesim; a path is as the command "
                                    "read it, from the folder it ran in"))
        for name, _, state in rows:
            if state == "changed":
                section.notes.append(f"{name} has changed since this result was made: the command above, run "
                                     "now, would not make it again")
    if record["command"] is None:
        section.notes.append(f"{where}: written from Python (prunesim.api), not by a command: no command line")
    return _recorded(record["command"])


# -- figures ------------------------------------------------------------------------
def _svg(fig, prefix: str) -> str:
    """The figure as an inline <svg> element: no XML prolog, every id (and reference to one) prefixed."""
    text = style.render(fig, "svg").decode("utf-8")
    text = text[text.index("<svg"):]
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', text)
    text = re.sub(r'url\(#([^)]+)\)', lambda m: f"url(#{prefix}-{m.group(1)})", text)
    return re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m.group(1)}"', text)


class _Figures:
    """Numbers the page's figures, so that the ids inside their SVGs are unique on the page."""

    def __init__(self) -> None:
        self.count = 0

    def add(self, section: Section, title: str, fig, data: str) -> None:
        self.count += 1
        section.figures.append(Figure(title, _svg(fig, f"f{self.count}"), data))


# -- one section per kind -----------------------------------------------------------
def _number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else ("yes" if v is True else
                                                                              "no" if v is False else v)


def _inputs_last(section: Section) -> Section:
    """The input files' table after the result's own tables: what was found first, what it was made from after."""
    inputs = [t for t in section.tables if t.title.startswith("input files")]
    section.tables = [t for t in section.tables if t not in inputs] + inputs
    return section


def run_section(path: Path, figures: _Figures) -> Section:
    from prunesim.plots.ledger import ledger_figure
    from prunesim.plots.trace import trace_figure

    run = read_run(path, need=(), optional=("trace", "ledger", "events"))
    s = run.summary
    section = Section("run", str(path), f"run: {run.scenario} under {run.policy}, seed {run.seed}")
    section.inputs += [path / "summary.json", path / "scenario.json", path / "trace.csv", path / "ledger.csv",
                       path / "events.csv"]
    section.inputs.append(path / reproduce.FILE)
    scenario = read_json(path / "scenario.json") if (path / "scenario.json").is_file() else None
    transcript = s.get("transcript") if isinstance(s.get("transcript"), str) else None
    exact = _reproduction(section, reproduce.read(path), reproduce.FILE)
    if exact is not None:
        section.commands.append(exact)
    elif transcript is not None:  # a replay of a transcript: rebuilt with --workload, which only the name recalls
        section.notes.append(f"summary.json names the transcript {transcript!r}, not its file: give --workload "
                             "the file it was read from")
        section.commands.append(Command(shlex.join(["prunesim", "run", "--workload", transcript, "--policy",
                                                    run.policy, "--seed", str(run.seed), "--out", str(path)]),
                                        False))
    else:
        section.commands.append(_rebuilt(["run", run.scenario, "--policy", run.policy, "--seed", str(run.seed),
                                          "--out", str(path)], scenario, section))
    if transcript is not None:
        section.facts.append(("transcript", transcript))
    section.facts += [("policy", run.policy), ("seed", str(run.seed)),
                      ("prunesim version", str(s.get("prunesim_version", "not recorded")))]
    _scenario_facts(section, scenario, "scenario.json")
    definitions = {m.name: (m.unit, m.definition) for m in METRICS}
    section.tables.append(Table("metrics (summary.json)", ["metric", "value", "unit", "definition"],
                                [[k, _number(v), *definitions.get(k, ("", ""))] for k, v in run.metrics.items()]))
    if run.ledger:
        columns = list(run.ledger[0])
        section.tables.append(Table(f"prune passes (ledger.csv, {len(run.ledger)} rows)", columns,
                                    [[_number(r.get(c)) for c in columns] for r in run.ledger]))
    if run.trace:
        figures.add(section, "utilization", trace_figure([run]),
                    f"{path / 'trace.csv'}: columns turn and utilization (one row per change); budget, trigger and "
                    f"window from summary.json; pass and eviction markers from ledger.csv and events.csv")
    else:
        section.notes.append("trace.csv is missing or empty (run with --trace all or turns): no utilization figure")
    if run.ledger:
        figures.add(section, "prune passes", ledger_figure(run),
                    f"{path / 'ledger.csv'}: columns index, rationale, evicted and net, one row per pass")
    return _inputs_last(section)


def sweep_section(path: Path, figures: _Figures, metrics: list[str] | None) -> Section:
    from prunesim.plots.stats import default_stat
    from prunesim.plots.sweep import choose_x, curves, sweep_figure

    sweep = read_sweep(path)
    meta = sweep.meta
    section = Section("sweep", str(path), f"sweep: {sweep.scenario_name}, {len(sweep.runs)} runs")
    section.inputs += [path / sweep_files.SWEEP_FILE, path / sweep_files.RUNS_FILE, path / sweep_files.AGGREGATE_FILE]
    words = ["sweep", sweep.scenario_name]
    for axis, values in sweep.grid.items():
        words += ["--grid", f"{axis}={','.join(_value_text(v) for v in values)}"]
    words += ["--policies", ",".join(sweep.policies), "--seeds", _seeds_text(meta.get("seeds", sweep.seeds))]
    for key, value in (meta.get("overrides") or {}).items():
        words += ["--set", f"{key}={_value_text(value)}"]
    section.inputs.append(path / reproduce.FILE)
    exact = _reproduction(section, reproduce.read(path), reproduce.FILE)
    if exact is not None:
        section.commands.append(exact)
    else:
        if sweep.scenario_name not in scenario_files.shipped_scenarios():
            section.notes.append(f"{sweep.scenario_name} is not a shipped scenario: give the command the scenario "
                                 "file it was loaded from (sweep.json records the whole scenario)")
        section.commands.append(Command(shlex.join(["prunesim", *words, "--out", str(path)]), exact=False))
    section.facts += [("grid", "; ".join(f"{a} = {', '.join(map(str, v))}" for a, v in sweep.grid.items())),
                      ("policies", ", ".join(sweep.policies)),
                      ("seeds", style.seeds_text(meta.get("seeds", sweep.seeds))),
                      ("prunesim version", str(meta.get("prunesim_version", "not recorded")))]
    _scenario_facts(section, meta.get("scenario"), sweep_files.SWEEP_FILE)
    columns = set(sweep.runs[0])
    chosen = metrics or [m for m in SWEEP_METRICS if m in columns]
    try:
        x = choose_x(sweep, None)
    except UserError:  # several grid axes: the first across, the others as lines of their own
        x = choose_x(sweep, next(iter(sweep.grid)))
        section.notes.append(f"the sweep has {len(sweep.grid)} grid parameters: {x} is across, the others are "
                             "lines of their own")
    rows = []
    for metric in chosen:
        sweep.check_metric(metric)
        stat = default_stat(metric, (r.get(metric) for r in sweep.runs))  # a yes/no figure is a share of runs
        lines, source = curves(sweep, metric, x, stat)
        figures.add(section, metric, sweep_figure(sweep, metric, x, stat),
                    f"{path / sweep_files.RUNS_FILE}: column {metric} by policy and {x}; "
                    f"the figure's numbers come from {source}")
        for (policy, others), by_x in lines.items():
            for xv, (value, low, high, n) in sorted(by_x.items(), key=lambda kv: str(kv[0])):
                rows.append([metric, stat, policy, ", ".join(f"{a}={v}" for a, v in others), _number(xv), n,
                             value, low, high])
    section.tables.append(Table(f"each figure by {x}, with its 95% interval", ["metric", "statistic", "policy",
                                "other axes", x, "n", "value", "low", "high"], rows,
                                "as drawn in the figures above: a share of runs (Wilson interval) for a yes/no "
                                "figure or a count mostly zero, else the median (bootstrap interval); every run is "
                                "a row of runs.csv"))
    return _inputs_last(section)


def leaderboard_section(path: Path, figures: _Figures) -> Section:
    board = read_leaderboard(path)
    folder = board.path.parent
    meta = board.meta
    section = Section("leaderboard", str(folder), f"leaderboard: {len(board.policies())} policies")
    section.inputs += [board.path, folder / LEADERBOARD_META]
    words = ["leaderboard"]
    if meta.get("source"):
        words += [str(meta["source"])]
    scenario = meta.get("scenario") if isinstance(meta.get("scenario"), dict) else {}
    if scenario.get("name"):
        words += ["--scenario", str(scenario["name"])]
    named = meta.get("policies")
    words += ["--policies", ",".join(map(str, named) if isinstance(named, list) and named else board.policies())]
    seeds = _seeds(meta.get("seeds"))
    if seeds:
        words += ["--seeds", _seeds_text(seeds)]
    for flag in ("seed", "tokenizer", "calibration", "sidechains"):
        if meta.get(flag) is not None:
            words += [f"--{flag}", str(meta[flag])]
    section.inputs.append(folder / reproduce.FILE)
    exact = _reproduction(section, reproduce.read(folder), reproduce.FILE)
    section.commands.append(exact or _rebuilt([*words, "--out", str(folder)], scenario or None, section))
    what = f"transcripts in {meta['source']}" if meta.get("source") else "seeds"
    section.facts += [("over", f"{meta.get('units', '?')} {what}"), ("reference", str(meta.get("reference", "?"))),
                      ("prunesim version", str(meta.get("prunesim_version", "not recorded")))]
    if seeds:
        section.facts.append(("seeds", style.seeds_text(seeds)))
    _scenario_facts(section, meta.get("scenario"), LEADERBOARD_META, limits=not meta.get("source"))
    _runtime_facts(section, meta)
    paired = from_leaderboard(meta, str(folder / LEADERBOARD_META))
    if paired:
        _paired_table(section, paired, f"{folder / LEADERBOARD_META}: paired")
        figures.add(section, "dollars against noop, paired", paired_figure(paired),
                    f"{folder / LEADERBOARD_META}: paired (each documented row's cost_usd minus noop's on the same "
                    "units, summed, with its 95% interval)")
    else:
        section.notes.append("this leaderboard.json records no paired dollars (a leaderboard written before "
                             "prunesim recorded them): run it again for the decision's figure")
    names = sorted(board.figures(), key=lambda n: (n not in DOLLAR_FIGURES, DOLLAR_FIGURES.index(n)
                                                   if n in DOLLAR_FIGURES else 0))
    cells = []
    for policy in board.policies():
        row: list = [policy]
        for name in names:
            point = board.point(policy, name)
            row.append(point[0] if point else "")
        cells.append(row)
    section.tables.append(Table("medians per policy (leaderboard.csv): dollars first, token ratios after",
                                ["policy", *names], cells,
                                "intervals are in leaderboard.csv (ci_low, ci_high) and drawn in the figures"))
    for x in ("cost_ratio", "input_ratio"):  # the decision's own figure, then the tokens
        if x in names and "re_retrievals" in names:
            figures.add(section, f"{x} against breakage", pareto_figure(board, x=x),
                        f"{board.path}: rows of figure {x} and re_retrievals, columns median, ci_low, ci_high")
    return _inputs_last(section)


DOLLAR_FIGURES = ("cost_ratio", "cost_usd", "cost_vs_recorded", "recorded_cost_usd")


def _paired_table(section: Section, rows: list[Paired], data: str) -> None:
    cells = [[r.policy, r.total, r.diff, r.low, r.high,
              "" if r.wins is None else f"{r.wins}/{r.losses}/{r.ties}", "" if r.acted is None else r.acted]
             for r in rows]
    section.tables.append(Table("dollars against noop on the same units (paired)",
                                ["policy", "total_usd", "diff_usd", "low", "high", "W/L/T acted", "acted share"],
                                cells, f"{data}; an interval that crosses zero is a tie; W/L/T: wins, losses and "
                                "ties (within 0.1% of noop's bill) on the units where the policy acted"))


def recommend_section(path: Path, figures: _Figures) -> Section:
    data = read_recommendation(path)
    folder = path if path.is_dir() else path.parent
    section = Section("recommend", str(folder), f"recommendation: {data['recommendation']}")
    section.inputs += [folder / RECOMMEND_FILE, folder / "recommend.csv"]
    words = ["recommend"]
    if data.get("source") and not data.get("seeds"):
        words.append(str(data["source"]))
    if data.get("scenario"):
        words += ["--scenario", str(data["scenario"])]
    if data.get("seeds"):
        words += ["--seeds", _seeds_text(data["seeds"])]
    if data.get("seed") is not None:
        words += ["--seed", str(data["seed"])]
    if data.get("asked"):
        words += ["--policies", ",".join(data["asked"])]
    for key, value in (data.get("overrides") or {}).items():
        words += ["--set", f"{key}={_value_text(value)}"]
    if data.get("prices"):
        words += ["--prices", str(data["prices"])]
    words += ["--objective", str(data["objective"]), "--draws", str(data["draws"])]
    section.inputs.append(folder / reproduce.FILE)
    exact = _reproduction(section, reproduce.read(folder), reproduce.FILE)
    section.commands.append(exact or Command(shlex.join(["prunesim", *words, "--out", str(folder)]), exact=False))
    by = {p["policy"]: p for p in data["policies"]}
    winner = data.get("winner")
    headline = (f"{winner}: the cheapest in {by[winner]['p_best']:.1%} of {data['draws']:,} draws" if winner else
                f"no clear winner (a policy is named at p_best >= {data.get('clear_at', 0.9)}); tied: "
                f"{', '.join(data.get('tied') or [])}")
    section.facts += [("recommendation", headline), ("objective", str(data["objective"])),
                      ("over", f"{data.get('units', '?')} units of {data.get('source', '?')}"),
                      ("prunesim version", str(data.get("prunesim_version", "not recorded")))]
    if data.get("clairvoyant"):
        c = data["clairvoyant"]
        section.facts.append(("clairvoyant optimum", f"{_fmt(c['total_usd'])} dollars, {_fmt(c['saving_usd'])} "
                                                     "below noop"))
    section.notes += list(data.get("notes") or [])
    paired = from_recommendation(data)
    _paired_table(section, paired, f"{folder / RECOMMEND_FILE}: policies, diff_vs_noop")
    figures.add(section, "dollars against noop, paired", paired_figure(paired),
                f"{folder / RECOMMEND_FILE}: each policy's diff_vs_noop (diff_usd, interval)")
    section.tables.append(Table("ranking over draws of the units and the assumptions",
                                ["policy", "p_best", "rank low", "rank high", "oracle_gap", "oracle_gap low",
                                 "oracle_gap high", "break-even turns"],
                                [[p["policy"], p["p_best"], p["rank_interval"][0], p["rank_interval"][1],
                                  p.get("oracle_gap", ""), *(p.get("oracle_gap_interval") or ("", "")),
                                  (p.get("break_even") or {}).get("turns", "")]
                                 for p in data["policies"]],
                                "p_best: the share of draws in which the policy is the cheapest; oracle_gap: its "
                                "share of the clairvoyant optimum's saving over noop, with its 95% interval over "
                                "the same draws"))
    section.tables.append(Table("assumptions", ["name", "value", "source", "range", "how", "basis"],
                                [[a["name"], _fmt(a["value"]), a["source"],
                                  "" if a.get("range") is None else " to ".join(map(_fmt, a["range"])),
                                  a.get("how", ""), a.get("basis", "")] for a in data["assumptions"]]))
    flips = data.get("sensitivity") or []
    if flips:
        section.tables.append(Table("which assumption, at either end of its range, changes the cheapest policy",
                                    ["assumption", "at low", "cheapest", "at high", "cheapest", "changes the top"],
                                    [[f["name"], _fmt(f["at_lo"]["value"]), ", ".join(f["at_lo"]["top"]),
                                      _fmt(f["at_hi"]["value"]), ", ".join(f["at_hi"]["top"]),
                                      "yes" if f["changes_top"] else "no"] for f in flips]))
    return _inputs_last(section)


def _fmt(v) -> str:
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"
    return str(v)


def _spread(row: dict, statistic: str, n: int) -> tuple:
    """The spread shown beside a replay's figure: p10..p90 of a median, the Wilson 95% interval of a share."""
    value = row.get("median")
    if statistic == "share" and n and isinstance(value, (int, float)) and math.isfinite(value):
        low, high = wilson(round(value * n), n)
        return low, high, "Wilson 95%"
    return row.get("p10"), row.get("p90"), "p10..p90"


def replay_section(path: Path, figures: _Figures) -> Section:
    file = path / REPLAY_FILE if path.is_dir() else path
    record = read_json(file)
    report = record.get("report")
    if record.get("kind") != "replay" or not isinstance(report, dict):
        raise UserError(str(file), None, "not a replay result (write one with prunesim replay NAME --out FILE)")
    name = str(report.get("replay", "?"))
    section = Section("replay", str(file), f"replay: {name}")
    section.inputs.append(file)
    recorded = _recorded(record.get("command"))
    if "reproduce" in record:
        _reproduction(section, record.get("reproduce"), file.name)
    seeds = _seeds(record.get("seeds"))
    section.commands.append(recorded or Command(shlex.join(["prunesim", "replay", name, "--seeds",
                                                            _seeds_text(seeds), "--out", str(file)]), False))
    section.facts += [("seeds", style.seeds_text(seeds)),
                      ("prunesim version", str(record.get("prunesim_version", "not recorded")))]
    _scenario_facts(section, record.get("scenario"), file.name)
    variants = record.get("variants") or []
    if variants:
        section.tables.append(Table("variants", ["variant", "policy", "overrides"],
                                    [[v.get("label"), v.get("policy"), json.dumps(v.get("overrides") or {})]
                                     for v in variants if isinstance(v, dict)]))
    rows = report.get("figures")
    if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
        judging = record.get("judging") if isinstance(record.get("judging"), list) else []
        judging = [j if isinstance(j, dict) else {} for j in judging] or [{}] * len(rows)
        table = []
        for r, j in zip(rows, judging, strict=False):
            judged = j.get("judged", r.get("accepted") is not None)
            verdict = ("yes" if r.get("ok") else "NO") if judged else "not judged"
            stat = j.get("statistic", "median")
            low, high, spread = _spread(r, stat, len(seeds))
            counted = r.get("counted", r.get("ok"))  # (a replay written before figures were counted: in range)
            table.append([r.get("variant"), r.get("figure"), r.get("published"), stat, r.get("median"), low, high,
                          spread, j.get("accepted", r.get("accepted")), verdict,
                          ("yes" if counted else "NO") if judged else "not judged"])
            if judged and not counted:
                section.disagreements.append(
                    f"{r.get('variant')}: {r.get('figure')}: published {r.get('published')}, the replay's "
                    f"{stat} {_fmt(r.get('median'))} ({spread} {_fmt(low)}..{_fmt(high)}), accepted "
                    f"{j.get('accepted', r.get('accepted'))}" + (f"; {r['why']}" if r.get("why") else ""))
        section.tables.append(Table("published figures against the replay", ["variant", "figure", "published",
                                    "statistic", "value", "low", "high", "low..high is", "accepted", "in range",
                                    "counted"],
                                    table, "a median's spread is its seeds' 10th..90th percentile; a share's is "
                                    "its Wilson 95% interval over the seeds; counted: in range, telling the seed's "
                                    "settings apart and specific where a verdict"))
        contrasts = [c for c in report.get("contrasts") or [] if isinstance(c, dict)]
        if contrasts:
            section.tables.append(Table("the seed's contrasts, paired over the same seeds",
                                        ["contrast", "first", "second", "published", "difference", "low", "high",
                                         "accepted", "in range"],
                                        [[c.get("contrast"), c.get("variant"), c.get("against"), c.get("published"),
                                          c.get("difference"), *(c.get("interval") or [None, None]),
                                          c.get("accepted"), "yes" if c.get("ok") else "NO"] for c in contrasts],
                                        "share of runs under the first minus under the second, with its paired 95% "
                                        "interval"))
            section.disagreements += [f"contrast {c.get('contrast')}: {c.get('why')}" for c in contrasts
                                      if not c.get("ok") and c.get("why")]
    else:
        section.tables.append(Table("report", ["field", "value"],
                                    [[k, json.dumps(v) if isinstance(v, (list, dict)) else v]
                                     for k, v in report.items()]))
    runs = record.get("runs")
    if isinstance(runs, dict) and name in STORIES:
        from prunesim.plots import stories

        run_dirs = {str(label): file.parent / str(rel) for label, rel in runs.items()}
        section.inputs += [d / f for d in run_dirs.values() for f in ("summary.json", "trace.csv", "ledger.csv",
                                                                     "events.csv")]
        with tempfile.TemporaryDirectory(prefix="prunesim-report-") as scratch:  # the story writes its own file
            drawn = getattr(stories, STORIES[name])(run_dirs, Path(scratch), fmt="svg")
        for title, fig in drawn.items():
            figures.add(section, f"{title}, seed {record.get('plot_seed', '?')}", fig,
                        "trace.csv, ledger.csv and events.csv of "
                        + ", ".join(f"{label} ({d})" for label, d in run_dirs.items()))
    elif name in STORIES:
        section.notes.append(f"no story figure: {file.name} has no runs beside it (prunesim replay {name} "
                             "--plot DIR writes DIR/replay.json with them)")
    return _inputs_last(section)


# -- the page -----------------------------------------------------------------------
def build(paths: list[Path], metrics: list[str] | None = None) -> list[Section]:
    figures = _Figures()
    sections = []
    for path in paths:
        kind = kind_of(Path(path))
        if kind == "run":
            sections.append(run_section(Path(path), figures))
        elif kind == "sweep":
            sections.append(sweep_section(Path(path), figures, metrics))
        elif kind == "leaderboard":
            sections.append(leaderboard_section(Path(path), figures))
        elif kind == "recommend":
            sections.append(recommend_section(Path(path), figures))
        else:
            sections.append(replay_section(Path(path), figures))
    return sections


def render(sections: list[Section], version: str) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("prunesim.plots", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["cell"] = _cell
    env.filters["sort_key"] = _sort_key
    return env.get_template("report.html.j2").render(title=TITLE, sections=sections, version=version,
                                                     figure_count=sum(len(s.figures) for s in sections))


def _cell(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return _fmt(v) if abs(v) >= 100 or not math.isfinite(v) else f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    return "" if v is None else str(v)


def _sort_key(v) -> str:
    """What a cell sorts by: a number as itself, anything else as its text (the script tells them apart)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return repr(float(v))
    return "" if v is None else str(v)


def write(paths: list[Path], out: Path, version: str, metrics: list[str] | None = None) -> Path:
    """Build the page from ``paths`` and write it to ``out`` atomically; refuses to replace an input."""
    output.check_file(out, "--out")
    given = [Path(p) for p in paths]
    # Before anything is read: the files given and those at the top of the folders given ...
    output.check_not_input(out, [f for p in given for f in (p.iterdir() if p.is_dir() else [p]) if f.is_file()],
                           "--out")
    sections = build(paths, metrics)
    # ... and, once they are known, the files the sections read below them (a replay's runs).
    output.check_not_input(out, [p for s in sections for p in s.inputs if p.exists()], "--out")
    page = render(sections, version)  # a folder named in bytes that are not UTF-8 (legal on Linux) shows as \xff
    output.write_text(out, page.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"), "--out")
    return out
