"""prunesim report: the page's structure, what it says was run, and bad input.

The results are made by the real commands (a run, a sweep, a leaderboard, a
replay) in a temporary folder; the page is parsed with the standard library's
HTML parser. That the page renders in a real browser is tests/test_report_browser.py.
"""

from __future__ import annotations

import json
import shlex
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_capture import cli

SEEDS = "1000:1004"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("results")
    out = {"run": tmp / "run", "sweep": tmp / "sweep", "leaderboard": tmp / "board", "replay": tmp / "replay.json",
           "story": tmp / "story", "recommend": tmp / "recommend"}
    commands = [
        ("run", "oscillation-40", "--policy", "naive", "--seed", "3", "--set", "trigger=21000", "--out", out["run"]),
        ("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive,recency", "--seeds", "0:3",
         "--jobs", "1", "--quiet", "--out", out["sweep"]),
        # A need model, so that re-retrievals can happen (without one they are unobservable and left out).
        ("leaderboard", "--scenario", "oscillation-40", "--seeds", "0:3", "--policies", "noop,naive,recency",
         "--set", "need.relevant=0.05", "--out", out["leaderboard"]),
        ("replay", "oscillation", "--seeds", SEEDS, "--out", out["replay"]),
        ("replay", "oscillation", "--seeds", SEEDS, "--plot", out["story"], "--format", "svg"),
        ("recommend", "--scenario", "oscillation-40", "--seeds", "0:3", "--policies", "naive,recency", "--draws", "100",
         "--out", out["recommend"]),
    ]
    for argv in commands:
        code, _, err = cli(*argv)
        assert code == 0, err
    return out


class Page(HTMLParser):
    """What the tests look at: sections, figures, svg elements, ids, commands, tables, external references."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.sections: list[dict] = []
        self.ids: list[str] = []
        self.external: list[str] = []
        self.stack: list[str] = []
        self.title = ""
        self.h1 = ""
        self.commands: list[tuple[str, bool]] = []
        self.tables: list[dict] = []
        self.figures = 0
        self.svgs_in_figures = 0
        self.disagreements: list[str] = []
        self._text: list[str] | None = None
        self._command_exact = False
        self.heading = ""  # the latest h3: a table's title
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.stack.append(tag)
        if "id" in a:
            self.ids.append(a["id"])
        for key in ("src", "href", "xlink:href"):
            value = a.get(key) or ""
            if value and not value.startswith("#"):
                self.external.append(f"{tag} {key}={value}")
        if tag in ("link", "iframe", "object", "embed", "img"):
            self.external.append(tag)
        if tag == "section":
            self.sections.append({"kind": a.get("data-kind"), "figures": 0, "commands": []})
        if tag == "figure":
            self.figures += 1
            self.sections[-1]["figures"] += 1
        if tag == "svg" and "figure" in self.stack[:-1]:
            self.svgs_in_figures += 1
        if tag == "table":
            self.tables.append({"sortable": "sortable" in (a.get("class") or ""), "rows": 0, "header": [],
                                "title": self.heading, "cells": []})
        if tag == "tr" and "tbody" in self.stack:
            self.tables[-1]["rows"] += 1
            self.tables[-1]["cells"].append([])
        if tag in ("title", "h1", "h3", "pre", "th", "td") or (tag == "li" and "ul" in self.stack):
            self._text = []
            self._command_exact = "rebuilt" not in (a.get("class") or "")

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass
        if self._text is None or tag not in ("title", "h1", "h3", "pre", "th", "td", "li"):
            return
        text, self._text = "".join(self._text), None
        if tag == "h3":
            self.heading = text
        elif tag == "td" and self.tables and self.tables[-1]["cells"]:
            self.tables[-1]["cells"][-1].append(text.strip())
        elif tag == "title":
            self.title = text
        elif tag == "h1":
            self.h1 = text
        elif tag == "pre":
            self.commands.append((text, self._command_exact))
            self.sections[-1]["commands"].append((text, self._command_exact))
        elif tag == "th":
            self.tables[-1]["header"].append(text)
        elif tag == "li" and self.sections:
            self.disagreements.append(text)

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)


def report(paths, out: Path, *extra) -> tuple[Page, str]:
    code, stdout, err = cli("report", *paths, "--out", out, *extra)
    assert code == 0, err
    assert stdout.strip() == str(out)
    html = out.read_text()
    return Page(html), html


def test_one_page_of_every_kind_with_its_figures_inline_and_nothing_loaded(results, tmp_path):
    page, html = report([results[k] for k in ("run", "sweep", "leaderboard", "replay", "story", "recommend")],
                        tmp_path / "r.html")
    assert page.h1 == "prunesim report"
    assert [s["kind"] for s in page.sections] == ["run", "sweep", "leaderboard", "replay", "replay", "recommend"]
    # run: trace and ledger; sweep: the six headline metrics; leaderboard: the dollars against noop, paired, then
    # the Pareto plots of dollars and of tokens; replay without runs: no figure; replay --plot: the story figure;
    # recommend: the dollars against noop, paired.
    assert [s["figures"] for s in page.sections] == [2, 6, 3, 0, 1, 1]
    assert page.svgs_in_figures == page.figures == 13
    assert page.external == [], page.external
    assert "@import" not in html and "url(http" not in html and "<link" not in html
    dupes = sorted({i for i in page.ids if page.ids.count(i) > 1})
    assert not dupes, f"an id is used twice on the page: one figure would clip another: {dupes}"
    assert "xlink:href=\"#" in html or "href=\"#" in html  # the SVGs' references survived the prefixing


def test_a_recommendation_leads_with_its_decision_paired_dollars_and_assumptions(results, tmp_path):
    page, html = report([results["recommend"]], tmp_path / "r.html")
    titles = [t["title"] for t in page.tables]
    assert titles[0] == "dollars against noop on the same units (paired)"
    assert "assumptions" in titles and any(t.startswith("ranking over draws") for t in titles)
    assert "recommendation" in html and "noop" in html
    data = json.loads((results["recommend"] / "recommend.json").read_text())
    assert data["recommendation"] in html
    command = page.sections[0]["commands"][0][0]
    assert "--scenario oscillation-40" in command and "--seeds 0:3" in command and "--policies naive,recency" in command


@pytest.mark.parametrize("edit", [
    lambda d: d.pop("policies"),
    lambda d: d.update(policies="noop"),
    lambda d: d["policies"][0].update(total_usd="lots"),
    lambda d: d["policies"][0]["diff_vs_noop"].update(interval=[0]),
    lambda d: d["policies"][0].update(rank_interval=None),
])
def test_a_broken_recommend_json_is_one_line_and_no_page(results, tmp_path, edit):
    folder = tmp_path / "rec"
    folder.mkdir()
    data = json.loads((results["recommend"] / "recommend.json").read_text())
    edit(data)
    (folder / "recommend.json").write_text(json.dumps(data))
    code, _, err = cli("report", folder, "--out", tmp_path / "r.html")
    assert code == 2 and "recommend.json" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


def test_the_sweep_table_gives_a_yes_no_figure_as_a_share_of_runs(results, tmp_path):
    page, _ = report([results["sweep"]], tmp_path / "r.html")
    table = next(t for t in page.tables if t["title"].startswith("each figure by"))
    assert table["header"][:2] == ["metric", "statistic"]
    stats = {row[0]: row[1] for row in table["cells"]}
    assert stats["oscillating"] == "share" and stats["passes"] == "median"


def test_long_tables_are_sortable_and_short_ones_are_not(results, tmp_path):
    page, _ = report([results["run"]], tmp_path / "r.html")
    metrics = page.tables[0]
    assert metrics["header"][:2] == ["metric", "value"] and metrics["sortable"] and metrics["rows"] > 50
    page, _ = report([results["replay"]], tmp_path / "r2.html")
    variants = next(t for t in page.tables if t["header"][0] == "variant" and t["rows"] == 3)
    assert not variants["sortable"]


def test_the_replay_records_the_command_as_typed_and_the_page_shows_it(results, tmp_path):
    record = json.loads(results["replay"].read_text())
    assert record["command"] == ["prunesim", "replay", "oscillation", "--seeds", SEEDS, "--out",
                                 str(results["replay"])]
    assert record["seeds"] == list(range(1000, 1004))
    page, _ = report([results["replay"]], tmp_path / "r.html")
    assert page.commands == [(shlex.join(record["command"]), True)]


def test_disagreements_are_exactly_the_judged_figures_not_counted_and_the_contrasts_out_of_range(results, tmp_path):
    record = json.loads(results["replay"].read_text())
    misses = [(f["variant"], f["figure"]) for f, j in zip(record["report"]["figures"], record["judging"], strict=True)
              if j["judged"] and not f["counted"]]
    contrasts = [c["contrast"] for c in record["report"]["contrasts"] if not c["ok"]]
    assert misses and contrasts, "this replay over 4 seeds disagrees somewhere; the test needs a disagreement"
    page, _ = report([results["replay"]], tmp_path / "r.html")
    figures, rest = page.disagreements[:len(misses)], page.disagreements[len(misses):]
    assert [tuple(d.split(": ")[:2]) for d in figures] == misses
    assert [d.split(": ")[0] for d in rest] == [f"contrast {c}" for c in contrasts]
    # each with the reason the replay computed from its runs
    missed = [f for f, j in zip(record["report"]["figures"], record["judging"], strict=True)
              if j["judged"] and not f["counted"]]
    assert all(f["why"] and d.endswith(f["why"]) for d, f in zip(figures, missed, strict=True))


def rerun(page: Page, again: Path, *extra: str, exact: bool = False) -> list[str]:
    """Run the page's one command (recorded when ``exact``, else rebuilt), with its --out moved to ``again``."""
    [(text, shown_exact)] = page.commands
    assert shown_exact == exact
    words = shlex.split(text)
    words[words.index("--out") + 1] = str(again)
    code, _, err = cli(*words[1:], *extra)
    assert code == 0, err
    return words


def unrecorded(result: Path, tmp_path: Path) -> Path:
    """A copy of a result folder as prunesim wrote them before reproduce.json: the page rebuilds its command."""
    copy = tmp_path / f"old-{result.name}"
    shutil.copytree(result, copy)
    (copy / "reproduce.json").unlink()
    return copy


def test_a_rebuilt_run_command_runs_the_same_run(results, tmp_path):
    """A run that records no command: the one the page rebuilds (with --set) makes a byte-identical summary."""
    page, _ = report([unrecorded(results["run"], tmp_path)], tmp_path / "r.html")
    words = rerun(page, tmp_path / "again")
    assert words[:2] == ["prunesim", "run"] and "trigger=21000" in words
    assert (tmp_path / "again" / "summary.json").read_bytes() == (results["run"] / "summary.json").read_bytes()


def test_a_rebuilt_sweep_command_runs_the_same_runs(results, tmp_path):
    page, _ = report([unrecorded(results["sweep"], tmp_path)], tmp_path / "r.html", "--metric", "passes")
    rerun(page, tmp_path / "again", "--quiet", "--jobs", "1")
    rows = lambda p: sorted((p / "runs.csv").read_text().splitlines()[1:])  # noqa: E731 - order is completion order
    assert rows(tmp_path / "again") == rows(results["sweep"])


def test_a_rebuilt_leaderboard_command_makes_the_same_table(results, tmp_path):
    page, _ = report([unrecorded(results["leaderboard"], tmp_path)], tmp_path / "r.html")
    rerun(page, tmp_path / "again")
    table = "leaderboard.csv"
    assert (tmp_path / "again" / table).read_bytes() == (results["leaderboard"] / table).read_bytes()


@pytest.mark.parametrize("kind, same", [("run", "summary.json"), ("sweep", "runs.csv"),
                                        ("leaderboard", "leaderboard.csv")])
def test_the_recorded_command_is_shown_exactly_and_makes_the_same_result(results, tmp_path, kind, same):
    page, _ = report([results[kind]], tmp_path / "r.html", *(("--metric", "passes") if kind == "sweep" else ()))
    record = json.loads((results[kind] / "reproduce.json").read_text())
    assert page.commands == [(shlex.join(record["command"]), True)]
    rerun(page, tmp_path / "again", exact=True)
    assert (tmp_path / "again" / same).read_bytes() == (results[kind] / same).read_bytes()
    files = next(t for t in page.tables if t["header"] == ["file", "SHA-256", "here and now"])
    assert files["rows"] == len(record["inputs"]) >= 1


def test_the_scenario_hash_names_the_scenario_not_its_label(results, tmp_path):
    """The run (trigger set to 21000) and the leaderboard (a need model set) ran other scenarios under the shipped
    one's name: other hashes; the sweep (its base scenario) and the replay ran the shipped one: the same hash."""
    from prunesim.io.scenario_files import load
    from prunesim.plots.report import scenario_hash

    shipped = scenario_hash(load("oscillation-40").to_dict())
    _, html = report([results[k] for k in ("run", "sweep", "leaderboard", "replay")], tmp_path / "r.html",
                     "--metric", "passes")
    assert html.count(f"hash {shipped}") == 2
    board_hash = scenario_hash(json.loads((results["leaderboard"] / "leaderboard.json").read_text())["scenario"])
    assert board_hash != shipped and html.count(f"hash {board_hash}") == 1
    run_hash = scenario_hash(json.loads((results["run"] / "scenario.json").read_text()))
    assert run_hash != shipped and html.count(f"hash {run_hash}") == 1


def test_each_figure_says_which_file_its_data_is_in(results, tmp_path):
    _, html = report([results["run"], results["leaderboard"]], tmp_path / "r.html")
    assert f"Data: {results['run'] / 'trace.csv'}" in html
    assert f"Data: {results['run'] / 'ledger.csv'}" in html
    assert f"Data: {results['leaderboard'] / 'leaderboard.csv'}" in html


def test_the_same_results_make_the_same_bytes(results, tmp_path):
    paths = [results[k] for k in ("run", "sweep", "leaderboard")]
    _, first = report(paths, tmp_path / "a.html", "--metric", "passes")
    _, second = report(paths, tmp_path / "b.html", "--metric", "passes")
    assert first == second


def test_a_sweep_metric_can_be_chosen(results, tmp_path):
    page, _ = report([results["sweep"]], tmp_path / "r.html", "--metric", "passes", "--metric", "band_floor")
    assert page.sections[0]["figures"] == 2


def _refused(argv, out: Path) -> str:
    before = out.read_bytes() if out.is_file() else None
    code, stdout, err = cli("report", *argv, "--out", out)
    assert code == 2, (argv, err)
    assert stdout == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("prunesim: error: ") and "Traceback" not in err
    assert (out.read_bytes() if out.is_file() else None) == before
    assert not [p for p in out.parent.glob(f".{out.name}.*")], "a staging file was left behind"
    return err


def test_bad_input_is_one_line_exit_2_and_nothing_written(results, tmp_path):
    out = tmp_path / "r.html"
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "other.json").write_text('{"a": 1}')
    (tmp_path / "notes.txt").write_text("x")
    assert "no such file or folder" in _refused([tmp_path / "missing"], out)
    assert "not a prunesim result folder" in _refused([tmp_path / "empty"], out)
    assert "malformed JSON at line 1, column 2" in _refused([tmp_path / "broken.json"], out)
    assert "not a replay result" in _refused([tmp_path / "other.json"], out)
    assert "not a prunesim result" in _refused([tmp_path / "notes.txt"], out)
    assert "give the folder" in _refused([results["run"] / "summary.json"], out)
    assert "not a column of runs.csv" in _refused([results["sweep"], "--metric", "nope"], out)
    # a good result and a bad one: nothing is written for either
    assert "no such file" in _refused([results["run"], tmp_path / "missing"], out)


def test_the_report_never_replaces_an_input_or_a_folder(results, tmp_path):
    for target in (results["run"] / "summary.json", results["sweep"] / "runs.csv", results["replay"]):
        assert "is an input of this command" in _refused([results["run"], results["sweep"], results["replay"]],
                                                         target)
    story = results["story"] / "runs" / "naive-22k" / "trace.csv"  # read only once the replay's runs are known
    assert "is an input of this command" in _refused([results["story"], "--metric", "passes"], story)
    assert "is a folder" in _refused([results["run"]], results["run"])


def test_an_existing_page_is_kept_when_the_new_one_fails(results, tmp_path):
    out = tmp_path / "r.html"
    out.write_text("the page from yesterday")
    _refused([tmp_path / "missing"], out)
    assert out.read_text() == "the page from yesterday"


def test_an_unwritable_place_is_refused_before_anything_is_read(results, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    err = _refused([results["run"]], blocker / "r.html")
    assert str(blocker) in err



def test_names_from_the_files_are_text_never_markup(results, tmp_path):
    """A policy or scenario name in a result file is shown as text, in the page and inside the figures' SVG."""
    import shutil

    evil = tmp_path / "evil"
    shutil.copytree(results["run"], evil)
    summary = json.loads((evil / "summary.json").read_text())
    summary["policy"] = "--></g></svg><script>alert(1)</script><!--"
    summary["scenario"] = "<b>bold</b>"
    (evil / "summary.json").write_text(json.dumps(summary))
    page, html = report([evil], tmp_path / "r.html")
    assert "<script>alert" not in html and "<b>bold" not in html
    assert page.title.startswith("prunesim report: run: <b>bold</b> under --></g>")  # the parser unescapes it
    assert page.svgs_in_figures == 2


def test_a_page_sent_to_standard_output_is_all_that_is_printed(results, tmp_path, capfd):
    code, stdout, err = cli("report", results["leaderboard"], "--out", "/dev/stdout")
    assert code == 0, err
    printed = capfd.readouterr().out + stdout
    assert printed.startswith("<!DOCTYPE html>") and printed.rstrip().endswith("</html>")


def test_an_out_that_names_a_folder_is_refused(results, tmp_path):
    code, stdout, err = cli("report", results["run"], "--out", f"{tmp_path / 'new'}/")
    assert (code, stdout) == (2, "") and "names a folder" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "new").exists()
