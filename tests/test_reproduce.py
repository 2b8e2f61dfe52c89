"""Every result records what reproduces it, and a resume never mixes code.

``reproduce.json`` (run, sweep and leaderboard folders; ``replay.json``'s ``reproduce``) holds the command as
typed, the prunesim version, the SHA-256 of every input file and the seeds; scenario.json records the seed the
run ran; a sweep run again after any of its inputs changed refuses in one line naming the file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cli_capture import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from policy_files import evicting
from prunesim import api
from prunesim.io import reproduce

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
POLICY = evicting("KeepLastOutputs", "keep-last-two")
FEW = settings(max_examples=6, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.function_scoped_fixture])


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def record_of(folder: Path) -> dict:
    return json.loads((folder / reproduce.FILE).read_text())


def _inputs(tmp_path: Path) -> dict[str, Path]:
    """A scenario that extends another, and a policy of the user's own, in a folder of their own."""
    base = tmp_path / "base.toml"
    base.write_text((ROOT / "scenarios" / "oscillation-40.toml").read_text())
    scenario = tmp_path / "mine.toml"
    scenario.write_text('extends = "base.toml"\nturns = 12\n')
    policy = tmp_path / "mine.py"
    policy.write_text(POLICY)
    return {"base": base, "scenario": scenario, "policy": policy}


def _sweep(files: dict[str, Path], out: Path, seeds: str = "0:3") -> tuple[int, str, str]:
    return cli("sweep", files["scenario"], "--grid", "trigger=20000,22000", "--policies",
               f"naive,{files['policy']}:KeepLastOutputs", "--seeds", seeds, "--jobs", "1", "--quiet", "--out", out)


# -- what is recorded -------------------------------------------------------------------------------------
def test_a_run_records_its_command_version_inputs_and_seed(tmp_path):
    files = _inputs(tmp_path)
    argv = ["run", str(files["scenario"]), "--policy", f"{files['policy']}:KeepLastOutputs", "--seed", "3",
            "--out", str(tmp_path / "run")]
    assert cli(*argv)[0] == 0
    record = record_of(tmp_path / "run")
    assert record == {"format": 1, "command": ["prunesim", *argv], "prunesim_version": api_version(),
                      "inputs": {str(files[k]): sha(files[k]) for k in ("base", "policy", "scenario")},
                      "seeds": [3]}


def api_version() -> str:
    from prunesim import __version__

    return __version__


def test_scenario_json_records_the_seed_the_run_ran_and_runs_it_again(tmp_path):
    assert cli("run", "oscillation-40", "--policy", "naive", "--seed", "3", "--set", "turns=15", "--out",
               tmp_path / "a")[0] == 0
    scenario = json.loads((tmp_path / "a" / "scenario.json").read_text())
    assert scenario["seed"] == 3
    (tmp_path / "again.toml").write_text(_toml(scenario))
    assert cli("run", tmp_path / "again.toml", "--policy", "naive", "--out", tmp_path / "b")[0] == 0  # no --seed
    metrics = [json.loads((tmp_path / d / "summary.json").read_text())["metrics"] for d in ("a", "b")]
    assert metrics[0] == metrics[1]


def _toml(scenario: dict) -> str:
    import tomli_w

    data = {k: v for k, v in scenario.items() if k not in ("name", "description") and v is not None}
    return tomli_w.dumps(_no_nulls(data))


def _no_nulls(value):
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    return value


def test_a_replayed_transcript_records_the_transcript_and_the_report_names_it(tmp_path):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text((FIXTURES / "codex" / "rollout-later.jsonl").read_text())
    assert cli("run", "--workload", transcript, "--policy", "noop", "--out", tmp_path / "r")[0] == 0
    record = record_of(tmp_path / "r")
    assert record["inputs"][str(transcript)] == sha(transcript) and record["command"][2:4] == ["--workload",
                                                                                               str(transcript)]
    code, _, err = cli("report", tmp_path / "r", "--out", tmp_path / "page.html")
    page = (tmp_path / "page.html").read_text()
    assert code == 0, err
    assert f"--workload {transcript}" in page and "<dt>transcript</dt><dd>session</dd>" in page


def test_the_record_is_the_same_bytes_for_the_same_command(tmp_path):
    files = _inputs(tmp_path)
    argv = ("run", files["scenario"], "--policy", f"{files['policy']}:KeepLastOutputs", "--out", tmp_path / "r")
    assert cli(*argv)[0] == 0
    first = (tmp_path / "r" / reproduce.FILE).read_bytes()
    assert cli(*argv)[0] == 0
    assert (tmp_path / "r" / reproduce.FILE).read_bytes() == first


def test_a_leaderboard_records_every_transcript_it_read(tmp_path):
    folder = tmp_path / "tr"
    folder.mkdir()
    for name in ("openai.json", "mini.traj.json"):
        (folder / name).write_bytes((FIXTURES / name).read_bytes())
    assert cli("leaderboard", folder, "--policies", "noop", "--out", tmp_path / "lb")[0] == 0
    record = record_of(tmp_path / "lb")
    assert {k: v for k, v in record["inputs"].items() if not k.startswith(reproduce.SHIPPED)} == {
        str(folder / n): sha(folder / n) for n in ("mini.traj.json", "openai.json")}
    assert record["seeds"] == [0]


def test_a_replay_json_holds_the_record(tmp_path):
    assert cli("replay", "oscillation", "--seeds", "0:2", "--out", tmp_path / "r.json")[0] == 0
    record = json.loads((tmp_path / "r.json").read_text())["reproduce"]
    assert reproduce.valid(record) and record["seeds"] == [0, 1]
    assert record["inputs"] and all(k.startswith(reproduce.SHIPPED) for k in record["inputs"])


def test_written_from_python_the_record_says_so_and_an_old_record_is_not_left(tmp_path):
    assert cli("run", "oscillation-40", "--set", "turns=10", "--out", tmp_path / "r")[0] == 0
    result = api.run("oscillation-40", seed=4, overrides={"turns": 10})
    api.write(result, tmp_path / "r")
    record = record_of(tmp_path / "r")
    assert record["command"] is None and record["seeds"] == [4]
    from prunesim.io.results import write_run

    write_run(result, tmp_path / "r")  # no record given: none written, and the earlier one is not this run's
    assert not (tmp_path / "r" / reproduce.FILE).exists()


# -- a resume never mixes code ----------------------------------------------------------------------------
def _stop(out: Path, keep: int) -> None:
    """The sweep as a SIGKILL after ``keep`` runs leaves it: runs.csv cut after that many rows."""
    lines = (out / "runs.csv").read_text().splitlines(keepends=True)
    (out / "runs.csv").write_text("".join(lines[: 1 + keep]))


EDITS = {
    "a comment": lambda text: text + "\n# edited\n",
    "a value": lambda text: text.replace("turns = 12", "turns = 13") if "turns = 12" in text else text + "\n",
}


@FEW
@given(which=st.sampled_from(["policy", "scenario", "base"]), edit=st.sampled_from(sorted(EDITS)),
       keep=st.integers(0, 5))
def test_a_resume_after_an_input_changed_refuses_naming_it(tmp_path, which, edit, keep):
    root = tmp_path / f"{which}-{edit.replace(' ', '')}-{keep}"
    root.mkdir()
    files = _inputs(root)
    out = root / "out"
    assert _sweep(files, out)[0] == 0
    _stop(out, keep)
    before = (out / "runs.csv").read_bytes()
    path = files[which]
    path.write_text(EDITS[edit](path.read_text()))
    code, stdout, err = _sweep(files, out)
    lines = [line for line in err.splitlines() if not line.startswith("note:")]
    assert code == 2 and stdout == "", err
    assert len(lines) == 1 and lines[0].startswith(f"prunesim: error: {out / reproduce.FILE}: inputs: {path} "
                                                   "changed since these runs were made"), lines
    assert (out / "runs.csv").read_bytes() == before  # nothing run, nothing appended


def test_a_resume_with_the_same_inputs_completes_the_sweep(tmp_path):
    files = _inputs(tmp_path)
    out = tmp_path / "out"
    assert _sweep(files, out)[0] == 0
    whole = (out / "runs.csv").read_bytes()
    _stop(out, 3)
    code, stdout, err = _sweep(files, out)
    assert code == 0 and "3 already done" in stdout and "complete" in stdout
    assert (out / "runs.csv").read_bytes() == whole


def test_a_resume_under_another_version_refuses(tmp_path, monkeypatch):
    files = _inputs(tmp_path)
    out = tmp_path / "out"
    assert _sweep(files, out)[0] == 0
    _stop(out, 2)
    monkeypatch.setattr(reproduce, "__version__", "99.0")
    code, _, err = _sweep(files, out)
    assert code == 2 and f"prunesim: error: {out / reproduce.FILE}: prunesim_version: written by prunesim " in err


def test_a_resume_without_the_policy_file_it_ran_refuses(tmp_path):
    files = _inputs(tmp_path)
    out = tmp_path / "out"
    assert _sweep(files, out)[0] == 0
    _stop(out, 1)
    moved = tmp_path / "elsewhere.py"
    files["policy"].rename(moved)
    code, _, err = cli("sweep", files["scenario"], "--grid", "trigger=20000,22000", "--policies",
                       f"naive,{files['policy']}:KeepLastOutputs", "--seeds", "0:3", "--jobs", "1", "--quiet",
                       "--out", out)
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(files["policy"]) in err


def test_a_sweep_record_that_was_edited_into_nonsense_is_not_trusted(tmp_path):
    files = _inputs(tmp_path)
    out = tmp_path / "out"
    assert _sweep(files, out)[0] == 0
    (out / reproduce.FILE).write_text('{"inputs": 5}')
    code, _, err = _sweep(files, out)
    assert code == 0 and "whether its inputs changed since cannot be checked" in err


@pytest.mark.parametrize("name", ["prunesim:scenarios/oscillation-40.toml", "prunesim:io/prices.toml"])
def test_a_shipped_input_is_named_the_same_on_every_machine_and_found_again(name):
    path = reproduce.path_of(name)
    assert Path(path).is_file() and reproduce.name_of(path) == name
    assert reproduce.now(name, reproduce.sha256(path)) == "same"
    assert reproduce.now(name, "0" * 64) == "changed" and reproduce.now("no/such/file", "0") == "not found"


def test_a_name_that_is_not_utf8_is_recorded_and_reported_as_escapes(tmp_path):
    """Linux allows any bytes in a name; the record is JSON text and the report HTML: \\xff, as typed bytes."""
    import os

    folder = os.fsencode(tmp_path)
    scenario = os.fsdecode(folder + b"/x\xff.toml")
    Path(scenario).write_text((ROOT / "scenarios" / "oscillation-40.toml").read_text())
    out = os.fsdecode(folder + b"/r\xff")
    assert cli("run", scenario, "--set", "turns=10", "--out", out)[0] == 0
    record = json.loads(Path(out, reproduce.FILE).read_text())
    assert record["command"][2].endswith("x\\xff.toml") and any(k.endswith("x\\xff.toml") for k in record["inputs"])
    code, _, err = cli("report", out, "--out", tmp_path / "page.html")
    assert code == 0, err
    assert "x\\xff" in (tmp_path / "page.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("argv", [("recommend", "--policies", "noop,naive", "--draws", "200"),
                                  ("tune", "--policy", "naive", "--trials", "3")], ids=["recommend", "tune"])
def test_recommend_and_tune_folders_record_what_reproduces_them(tmp_path, argv):
    if argv[0] == "tune":
        pytest.importorskip("optuna", reason="tune needs the tune extra: pip install 'prunesim[tune]'")
    full = [*argv, "--scenario", "oscillation-40", "--seeds", "0:3", "--set", "turns=20", "--out", str(tmp_path / "o")]
    assert cli(*full)[0] == 0
    record = record_of(tmp_path / "o")
    assert record["command"] == ["prunesim", *full] and record["seeds"] == [0, 1, 2]
    assert list(record["inputs"]) == ["prunesim:scenarios/oscillation-40.toml"]


# -- a policy file's own imports -----------------------------------------------------------------------------
def _policy_with_helper(root: Path, monkeypatch) -> tuple[Path, Path]:
    """A policy file that takes its number from a module beside it, in a folder on the path (as a user's folder
    is when prunesim runs from it); the module's name is the folder's own, so that no other test's is reused."""
    folder = root / "pol"
    folder.mkdir(parents=True)
    name = "helper_" + hashlib.sha256(str(root).encode()).hexdigest()[:10]
    helper = folder / f"{name}.py"
    helper.write_text(f"from {name}_parts.rule import KEEP\n")
    (folder / f"{name}_parts").mkdir()
    (folder / f"{name}_parts" / "__init__.py").write_text("")
    (folder / f"{name}_parts" / "rule.py").write_text("KEEP = 2\n")
    policy = folder / "mine.py"
    policy.write_text(f"from {name} import KEEP\n" + evicting("KeepSome", "keep-some", "outputs[:-KEEP]"))
    monkeypatch.syspath_prepend(str(folder))
    return policy, helper


def test_a_policy_files_own_imports_are_hashed_beside_it(tmp_path, monkeypatch):
    policy, helper = _policy_with_helper(tmp_path, monkeypatch)
    rule = helper.parent / f"{helper.stem}_parts" / "rule.py"
    assert cli("run", "oscillation-40", "--policy", f"{policy}:KeepSome", "--set", "turns=12", "--out",
               tmp_path / "r")[0] == 0
    recorded = record_of(tmp_path / "r")["inputs"]
    for path in (policy, helper, rule, rule.parent / "__init__.py"):
        assert recorded[str(path)] == sha(path), path
    assert not any("site-packages" in name or name.startswith("prunesim:policies") for name in recorded)


@pytest.mark.parametrize("edit", ["helper", "rule"])
def test_a_resume_after_a_policy_files_own_import_changed_refuses_naming_it(tmp_path, monkeypatch, edit):
    policy, helper = _policy_with_helper(tmp_path, monkeypatch)
    files = _inputs(tmp_path)
    argv = ("sweep", files["scenario"], "--grid", "trigger=20000,22000", "--policies", f"naive,{policy}:KeepSome",
            "--seeds", "0:3", "--jobs", "1", "--quiet", "--out", tmp_path / "out")
    assert cli(*argv)[0] == 0
    _stop(tmp_path / "out", 2)
    before = (tmp_path / "out" / "runs.csv").read_bytes()
    changed = helper if edit == "helper" else helper.parent / f"{helper.stem}_parts" / "rule.py"
    changed.write_text(changed.read_text() + "# edited: the next import would run other code\n")
    code, stdout, err = cli(*argv)
    lines = [line for line in err.splitlines() if not line.startswith("note:")]
    assert code == 2 and stdout == "" and len(lines) == 1, err
    assert lines[0].startswith(f"prunesim: error: {tmp_path / 'out' / reproduce.FILE}: inputs: {changed} changed "
                               "since these runs were made"), lines
    assert (tmp_path / "out" / "runs.csv").read_bytes() == before
