"""Round three of hostile input: every file a command reads is protected, every legal TOML form is read and
written back, and the listed defects stay fixed (one line, exit 2, nothing a user has is lost)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from cli_capture import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prunesim.io import scenario_files as sc
from prunesim.studies.calibrate import Calibration, calibrated_text

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KEEP = '''from prunesim.policies import Policy


class Keep(Policy):
    name = "keep"

    def decide(self, view):
        return []
'''


def _chain(tmp_path) -> tuple[Path, Path]:
    base = tmp_path / "base.toml"
    base.write_text('extends = "oscillation-40"\nturns = 12\n')
    child = tmp_path / "child.toml"
    child.write_text('extends = "base.toml"\n')
    return child, base


# -- 1. no output lands on a file the command read ------------------------------------------------------------
@pytest.mark.parametrize("case", ["compare onto the base of an extends chain", "compare onto the policy file",
                                  "calibrate onto the base of an extends chain", "run --workload onto the policy"])
def test_an_output_onto_any_file_the_command_read_is_refused_and_the_file_kept(tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    child, base = _chain(tmp_path)
    (tmp_path / "keep.py").write_text(KEEP)
    workload = tmp_path / "w.workload.jsonl"
    assert cli("import", FIXTURES / "mini.traj.json", "--out", workload)[0] == 0
    argv, victim = {
        "compare onto the base of an extends chain": (["compare", child, "--policies", "naive", "--seeds", "0:2",
                                                       "--format", "csv", "--out", base], base),
        "compare onto the policy file": (["compare", child, "--policies", "keep.py:Keep", "--seeds", "0:2",
                                          "--out", "keep.py"], tmp_path / "keep.py"),
        "calibrate onto the base of an extends chain": (["calibrate", child, "--targets", "seed-000", "--params",
                                                         "decision.rationale_per_span", "--seeds", "0:1",
                                                         "--max-evals", "2", "--quiet", "--force", "--out", base],
                                                        base),
        "run --workload onto the policy": (["run", "--workload", workload, "--policy", "keep.py:Keep", "--json",
                                            "--out", "keep.py/"], tmp_path / "keep.py"),
    }[case]
    before = victim.read_bytes()
    code, _, err = cli(*argv)
    assert code == 2 and victim.read_bytes() == before
    assert len(err.splitlines()) == 1 and "internal error" not in err, err
    if case != "run --workload onto the policy":  # (that one: --out DIR/ under a file, refused as such)
        assert "is an input of this command" in err


def test_a_link_to_a_file_read_through_extends_is_refused_too(tmp_path):
    child, base = _chain(tmp_path)
    link = tmp_path / "out.csv"
    link.symlink_to(base)
    before = base.read_bytes()
    code, _, err = cli("compare", child, "--policies", "naive", "--seeds", "0:2", "--format", "csv", "--out", link)
    assert code == 2 and base.read_bytes() == before
    assert err == f"prunesim: error: --out: {link}: is an input of this command ({base}); give another file\n"


# -- 2. silently wrong results ------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["run", "replay-dir", "leaderboard"])
def test_every_replay_of_transcripts_refuses_set_turns(tmp_path, command):
    workload = tmp_path / "w.workload.jsonl"
    assert cli("import", FIXTURES / "mini.traj.json", "--out", workload)[0] == 0
    argv = {"run": ["run", "--workload", workload, "--policy", "noop"],
            "replay-dir": ["replay-dir", FIXTURES / "claude-code", "--policies", "noop"],
            "leaderboard": ["leaderboard", FIXTURES / "claude-code", "--policies", "noop", "--out", tmp_path / "b"]}
    code, out, err = cli(*argv[command], "--set", "turns=3")
    assert (code, out) == (2, "") and not (tmp_path / "b").exists()
    assert err == "prunesim: error: --set: turns: cannot be set for a replay: it runs the transcript's own turns\n"


def test_aggregate_of_a_header_only_runs_file_keeps_the_earlier_aggregate(tmp_path):
    sweep = tmp_path / "s"
    assert cli("sweep", "oscillation-40", "--seeds", "0:2", "--set", "turns=10", "--out", sweep)[0] == 0
    assert cli("aggregate", sweep)[0] == 0
    good = (sweep / "aggregate.csv").read_bytes()
    runs = sweep / "runs.csv"
    runs.write_text(runs.read_text().splitlines()[0] + "\n")
    code, _, err = cli("aggregate", sweep)
    assert code == 2 and (sweep / "aggregate.csv").read_bytes() == good
    assert err == f"prunesim: error: {runs}: holds no runs yet (only its header): nothing to aggregate\n"


# -- 3. valid or user's-fault input is never a crash ---------------------------------------------------------------
def test_replay_reentrancy_plots_its_median_seed(tmp_path):
    plot = tmp_path / "figures"
    code, out, err = cli("replay", "reentrancy", "--seeds", "0:2", "--plot", plot, "--plot-seed", "median")
    assert code == 0, err
    assert "plotted seed: " in out and (plot / "reentrancy.png").is_file()


@pytest.mark.skipif(os.uname().sysname != "Linux", reason="file names of any bytes are a Linux matter")
def test_file_names_that_are_not_utf8_import_run_and_print(tmp_path):
    transcript = tmp_path / os.fsdecode(b"bad\xff.traj.json")
    transcript.write_bytes((FIXTURES / "mini.traj.json").read_bytes())
    out = tmp_path / "w"
    code, stdout, err = cli("import", transcript, "--out", out)
    assert code == 0, err
    (written,) = out.iterdir()
    header = json.loads(written.read_text().splitlines()[0])
    assert header["name"] == "bad\\xff"  # the byte that is not UTF-8, as an escape a result can hold
    scenario = tmp_path / os.fsdecode(b"s\xfe.toml")
    scenario.write_text('extends = "oscillation-40"\nturns = 10\n')
    code, stdout, err = cli("run", scenario, "--json")
    assert code == 0, err
    assert json.loads(stdout)["scenario"] == "s\\xfe"


def test_a_legal_name_close_to_the_limit_is_written_under_its_own_name(tmp_path):
    name = "a" * 246 + ".csv"  # 250 bytes: legal; the staging file beside it must not exceed 255
    out = tmp_path / name
    code, _, err = cli("compare", "oscillation-40", "--policies", "naive", "--seeds", "0:2", "--set", "turns=10",
                       "--format", "csv", "--out", out)
    assert code == 0, err
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_an_imported_workload_is_one_run_reads(tmp_path):
    """Usage whose parts are each in range but add up past the bound is refused by import, naming the line."""
    lines = []
    for line in (FIXTURES / "claude-code" / "session.jsonl").read_text().splitlines()[:-1]:
        record = json.loads(line)
        usage = record.get("message", {}).get("usage") if isinstance(record.get("message"), dict) else None
        if usage:
            usage.update(input_tokens=10**12, cache_read_input_tokens=10**12)
        lines.append(json.dumps(record))
    session = tmp_path / "big.jsonl"
    session.write_text("\n".join(lines) + "\n")
    code, _, err = cli("import", session, "--out", tmp_path / "w")
    assert code == 2 and not (tmp_path / "w").exists()
    assert err.splitlines()[0].startswith(f"prunesim: error: {session}:4: claude-code: usage prompt_tokens adds up")


@pytest.mark.parametrize("flag", ["workload", "scenario", "calibration"])
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_devices_and_pipes_are_refused_unread_by_every_reader(tmp_path, flag, special):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    target = path if special == "fifo" else Path(special)
    argv = {"workload": ["run", "--workload", target, "--policy", "noop"], "scenario": ["run", target],
            "calibration": ["import", FIXTURES / "mini.traj.json", "--calibration", target, "--out",
                            tmp_path / "w"]}[flag]
    code, _, err = cli(*argv)  # a blocking open of the pipe would hang here
    assert code == 2 and "not a regular file" in err and len(err.splitlines()) == 1


# -- every legal way of writing a TOML table -------------------------------------------------------------------
DATA = {"turns": 12, "decision": {"rationale_per_span": 120.0, "reclaim_target": 2000},
        "workload": {"tool_output": {"mean": 300.0}}}


def _render(data: dict, styles) -> str:
    """``data`` as TOML, each table written in a style drawn for it: a header, a header with spaces, dotted keys
    at its parent, an inline table; a table under a header again any of these (or a header of its own)."""
    lines = ['extends = "oscillation-40"'] + [f"{k} = {json.dumps(v)}" for k, v in data.items()
                                             if not isinstance(v, dict)]
    sections: list[str] = []
    for key, table in ((k, v) for k, v in data.items() if isinstance(v, dict)):
        style = styles.draw(st.sampled_from(["header", "spaced", "dotted", "inline"]))
        if style == "dotted":
            lines += [f"{key}.{leaf}" for leaf in _leaves(table)]
        elif style == "inline":
            lines.append(f"{key} = {_inline(table)}")
        else:
            sections += _section([key], table, style == "spaced", styles)
    return "\n".join(lines + [""] + sections) + "\n"


def _section(names: list[str], table: dict, spaced: bool, styles) -> list[str]:
    head = f"[ {' . '.join(names)} ]" if spaced else f"[{'.'.join(names)}]"
    body, later = [], []
    for key, value in table.items():
        if not isinstance(value, dict):
            body.append(f"{key} = {json.dumps(value)}")
            continue
        style = styles.draw(st.sampled_from(["header", "dotted", "inline"]))
        if style == "dotted":
            body += [f"{key}.{leaf}" for leaf in _leaves(value)]
        elif style == "inline":
            body.append(f"{key} = {_inline(value)}")
        else:
            later += _section([*names, key], value, spaced, styles)
    return [head, *body, "", *later]


def _leaves(table: dict) -> list[str]:
    out = []
    for key, value in table.items():
        out += [f"{key}.{leaf}" for leaf in _leaves(value)] if isinstance(value, dict) else [
            f"{key} = {json.dumps(value)}"]
    return out


def _inline(table: dict) -> str:
    return "{ " + ", ".join(f"{k} = {_inline(v) if isinstance(v, dict) else json.dumps(v)}"
                            for k, v in table.items()) + " }"


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(styles=st.data())
def test_every_legal_toml_form_loads_alike_and_calibrates_to_a_file_run_reads(tmp_path, styles):
    text = _render(DATA, styles)
    data = tomllib.loads(text)
    assert {k: v for k, v in data.items() if k != "extends"} == DATA, text
    path = tmp_path / "form.toml"
    path.write_text(text)
    canonical = tmp_path / "canonical.toml"
    canonical.write_text('extends = "oscillation-40"\n' + sc.dumps(DATA))
    assert sc.load(str(path)).to_dict() | {"name": ""} == sc.load(str(canonical)).to_dict() | {"name": ""}
    fitted = {"decision.rationale_per_span": 150.5, "workload.tool_output.mean": 250.0, "turns": 14}
    cal = Calibration(targets=None, params=[], seeds=[0], start={}, fitted=fitted, start_objective=1.0,
                      objective=0.5, evaluations=1)
    import prunesim.studies.calibrate as calibrate

    out = tmp_path / "sub" / "cal.toml"
    original = calibrate.header
    calibrate.header = lambda *a: "# header\n"
    try:
        written = calibrated_text(text, cal, "prunesim calibrate ...", "seed-000", path, out)
    finally:
        calibrate.header = original
    scenario = sc.resolve_text(written, out)
    assert (scenario.decision.rationale_per_span, scenario.workload.tool_output.mean, scenario.turns) == (
        150.5, 250.0, 14)


@pytest.mark.parametrize("form", ["decision.rationale_per_span = 100.0\n",
                                  "decision = { rationale_per_span = 100.0 }\n",
                                  "[ decision ]\nrationale_per_span = 100.0\n"])
@pytest.mark.parametrize("command", ["run", "compare", "sweep", "calibrate"])
def test_every_command_reads_each_toml_form(tmp_path, form, command):
    base = tmp_path / "base.toml"
    base.write_text('extends = "oscillation-40"\nturns = 10\n' + form)
    argv = {"run": ["run", base, "--json"],
            "compare": ["compare", base, "--policies", "naive", "--seeds", "0:2"],
            "sweep": ["sweep", base, "--seeds", "0:1", "--out", tmp_path / "s"],
            "calibrate": ["calibrate", base, "--targets", "seed-000", "--params", "decision.rationale_per_span",
                          "--seeds", "0:1", "--max-evals", "2", "--quiet", "--out", tmp_path / "c.toml"]}[command]
    code, _, err = cli(*argv)
    assert code == 0, err
    if command == "calibrate":
        assert cli("run", tmp_path / "c.toml", "--json")[0] == 0


# -- a user's policy ---------------------------------------------------------------------------------------------
POLICIES = '''from prunesim.policies import Policy
from prunesim.policies.base import BoundaryEvent, Truncate


class Same(Policy):
    name = "same"

    def decide(self, view):
        return [Truncate(s.id, s.tokens + 5) for s in view.spans if s.kind == "tool_output"][:3]


class NotJson(Policy):
    name = "not-json"

    def decide(self, view):
        return [BoundaryEvent("run", {"x": object()})]


class NotMapping(Policy):
    name = "not-mapping"

    def decide(self, view):
        return [BoundaryEvent("run", [1, 2])]


class NotFinite(Policy):
    name = "not-finite"

    def decide(self, view):
        return [BoundaryEvent("run", {"x": float("nan")})]
'''


def test_a_truncate_that_changes_no_span_costs_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text(POLICIES)
    runs = {}
    for policy in ("noop", "mine.py:Same"):
        code, out, err = cli("run", "oscillation-40", "--policy", policy, "--json")
        assert code == 0, err
        runs[policy] = json.loads(out)["metrics"]
    assert runs["mine.py:Same"]["cache_invalidations"] == 0
    assert runs["mine.py:Same"]["cost_usd"] == runs["noop"]["cost_usd"]


@pytest.mark.parametrize(("cls", "problem"), [("NotJson", "a object, not a JSON value"),
                                              ("NotMapping", "not a mapping of names to JSON values"),
                                              ("NotFinite", "a number that is not finite")])
def test_a_boundary_event_detail_that_is_not_json_is_one_line(tmp_path, monkeypatch, cls, problem):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text(POLICIES)
    code, _, err = cli("run", "oscillation-40", "--policy", f"mine.py:{cls}", "--out", tmp_path / "run")
    assert code == 2 and not (tmp_path / "run").exists()
    assert len(err.splitlines()) == 1 and err.startswith(f"prunesim: error: --policy: mine.py:{cls}: the policy "
                                                         "broke its contract") and problem in err


@pytest.mark.parametrize("field", ["budget", "metrics.passes"])
@pytest.mark.parametrize("kind", ["trace", "ledger"])
def test_a_400_digit_number_in_a_summary_is_one_line_for_plot(tmp_path, field, kind):
    run = tmp_path / "run"
    assert cli("run", "oscillation-40", "--set", "turns=10", "--out", run)[0] == 0
    summary = json.loads((run / "summary.json").read_text())
    node, _, key = field.rpartition(".")
    (summary[node] if node else summary)[key] = int("9" * 400)
    (run / "summary.json").write_text(json.dumps(summary))
    code, _, err = cli("plot", kind, run, "--out", tmp_path / "p.png")
    assert code == 2 and not (tmp_path / "p.png").exists()
    assert err.startswith(f"prunesim: error: {run / 'summary.json'}: {field}: must be a ") and len(
        err.splitlines()) == 1


# -- found attacking the command line again ----------------------------------------------------------------------
@pytest.mark.parametrize(("argv", "line"), [
    (["run", "{huge}"], "{huge}: malformed TOML: a number too long to read (thousands of digits)"),
    (["run", "oscillation-40", "--set", "turns=" + "9" * 5000],
     "--set: turns: a number too long to read (thousands of digits)"),
    (["run", "oscillation-40", "--set", "turns=" + "[" * 3000 + "]" * 3000],
     "--set: turns: a value nested too deeply to read"),
    (["sweep", "oscillation-40", "--grid", "turns=" + "9" * 5000, "--seeds", "0:1", "--out", "{out}"],
     "--grid: turns: a number too long to read (thousands of digits)"),
    (["import", str(FIXTURES / "mini.traj.json"), "--calibration", "{huge_json}", "--out", "{out}"],
     "{huge_json}: not a calibration file: malformed JSON: a number too long to read (thousands of digits)"),
])
def test_numbers_of_thousands_of_digits_and_deep_values_are_one_line(tmp_path, argv, line):
    names = {"huge": tmp_path / "huge.toml", "huge_json": tmp_path / "huge.json", "out": tmp_path / "out"}
    names["huge"].write_text("turns = " + "9" * 5000 + "\n")
    names["huge_json"].write_text('{"prunesim_calibration": ' + "9" * 5000 + "}")
    code, _, err = cli(*[a.format(**names) for a in argv])
    assert code == 2 and not names["out"].exists()
    assert err == f"prunesim: error: {line.format(**names)}\n"


def test_calibrate_force_may_regenerate_its_scenario_in_place_but_not_the_base_it_extends(tmp_path):
    child, base = _chain(tmp_path)
    argv = ["calibrate", child, "--targets", "seed-000", "--params", "decision.rationale_per_span", "--seeds", "0:1",
            "--max-evals", "2", "--quiet", "--force"]
    code, _, err = cli(*argv, "--out", child)
    assert code == 0, err
    assert sc.load(str(child)).turns == 12 and "calibration" in child.read_text()
    before = base.read_bytes()
    code, _, err = cli(*argv, "--out", base)
    assert code == 2 and base.read_bytes() == before and "is an input of this command" in err


def test_a_transcript_named_near_the_limit_imports_under_a_name_that_fits(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for n in "MN":  # two long names that share their first 240 characters stay apart (two runs: a copy is one)
        run = json.loads((FIXTURES / "mini.traj.json").read_text())
        run["messages"][0]["content"] += f" ({n})"
        (folder / ("L" * 240 + n + ".traj.json")).write_text(json.dumps(run))
    out = tmp_path / "out"
    code, _, err = cli("import", folder, "--out", out)
    assert code == 0, err
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 2 and all(len(os.fsencode(n)) <= 255 and n.endswith(".workload.jsonl") for n in names)
    assert ".tmp" not in err
