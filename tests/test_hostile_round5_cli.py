"""Round five of hostile input: folder commands (one all-or-nothing rule), malformed JSON named whole, one rule
for seeds, output paths that cannot be written, a file policy's name, and the flags and files of fidelity,
leaderboard, replay-dir, import, calibrate, sensitivity and ablation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_capture import cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _folder_with_a_bad_file(tmp_path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(FIXTURES / "mini.traj.json", folder)
    shutil.copy(FIXTURES / "openai.json", folder)
    (folder / "cut.traj.json").write_text('{"messages": [{"role": "user", "content": "fi')  # a truncated file
    return folder


FOLDER_COMMANDS = {
    "import": lambda src, out: ["import", src, "--out", f"{out}/"],
    "replay-dir": lambda src, out: ["replay-dir", src, "--policies", "noop", "--out", out / "rows.csv"],
    "fidelity": lambda src, out: ["fidelity", src, "--fit-out", out / "fit.toml"],
    "leaderboard": lambda src, out: ["leaderboard", src, "--policies", "noop,naive", "--out", out],
}


@pytest.mark.parametrize("command", sorted(FOLDER_COMMANDS))
def test_every_folder_command_with_a_bad_file_writes_nothing_and_exits_2_unless_told_to_skip_it(tmp_path, command):
    folder = _folder_with_a_bad_file(tmp_path)
    out = tmp_path / "out"
    argv = FOLDER_COMMANDS[command](folder, out)
    code, stdout, err = cli(*argv)
    assert code == 2 and "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("prunesim: error:")]
    assert len(errors) == 1 and str(folder / "cut.traj.json") in errors[0], err
    assert "--skip-bad" in err + stdout  # the way to the other files' result is named
    assert not out.exists(), sorted(out.rglob("*"))
    if command == "fidelity":
        assert stdout == ""  # no report over part of the folder either
    code, stdout, err = cli(*argv, "--skip-bad")
    assert code == 0, err
    assert sum(line.startswith("prunesim: error:") for line in err.splitlines()) == 1
    assert out.exists() and any(p.is_file() for p in out.rglob("*"))
    if command == "leaderboard":
        meta = json.loads((out / "leaderboard.json").read_text())
        assert meta["skipped"] == [str(folder / "cut.traj.json")] and meta["units"] == 2
        assert "1 file(s) that failed left out" in stdout


@pytest.mark.parametrize("command", sorted(FOLDER_COMMANDS))
def test_a_failed_folder_command_keeps_an_earlier_result(tmp_path, command):
    folder = _folder_with_a_bad_file(tmp_path)
    out = tmp_path / "out"
    good = folder.parent / "good"
    good.mkdir()
    shutil.copy(FIXTURES / "mini.traj.json", good)
    shutil.copy(FIXTURES / "openai.json", good)
    assert cli(*FOLDER_COMMANDS[command](good, out))[0] == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert before
    assert cli(*FOLDER_COMMANDS[command](folder, out))[0] == 2
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_replay_dir_to_standard_output_prints_no_rows_when_a_file_is_bad(tmp_path):
    folder = _folder_with_a_bad_file(tmp_path)
    code, stdout, err = cli("replay-dir", folder, "--policies", "noop")
    assert code == 2 and stdout == "" and "cut.traj.json" in err
    code, stdout, _ = cli("replay-dir", folder, "--policies", "noop", "--skip-bad")
    assert code == 0 and len(stdout.splitlines()) == 1 + 2  # the header and the two good files' rows


def test_skip_bad_still_exits_2_when_no_file_went_through(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_bytes(b"\x00\xff" * 100)
    (folder / "b.jsonl").write_text("")
    for argv in (["import", folder, "--out", f"{tmp_path}/wl/"], ["fidelity", folder],
                 ["replay-dir", folder, "--policies", "noop"], ["leaderboard", folder, "--out", tmp_path / "lb"]):
        code, _, err = cli(*argv, "--skip-bad")
        assert code == 2 and "Traceback" not in err, (argv, err)
        assert sum(line.startswith("prunesim: error:") for line in err.splitlines()) == 2, (argv, err)
    assert not (tmp_path / "wl").exists() and not (tmp_path / "lb").exists()


# -- malformed JSON: one sentence, built in one place ------------------------------------------------
BROKEN_JSON = ['{', '{"a": "x', '{"a" 1}', '[1,]', '{"a": 1} x', '"a\tb"', '"\\q"', '"\\u12"', '{1: 2}', '[1 2]',
               '{"a": 1,}', '{"a": [1, 2}']


@pytest.mark.parametrize("text", BROKEN_JSON)
def test_each_decoder_message_becomes_a_whole_sentence_with_line_and_column(text):
    from prunesim.io.inputs import malformed_json

    try:
        json.loads(text)
    except ValueError as err:
        message = str(malformed_json("f.json", err))
    assert message.startswith("f.json: malformed JSON at line 1, column "), message
    sentence = message.split(": ", 2)[2]
    assert not sentence.endswith((" at", ":", "starting")) and len(sentence.split()) >= 4, message
    assert not sentence.startswith(("Expecting", "Unterminated", "Invalid")), message  # ours, not the decoder's


def test_malformed_json_is_worded_alike_by_every_reader(tmp_path):
    cut = tmp_path / "cut.traj.json"
    cut.write_text('{"messages": [{"role": "user", "content": "fi')
    code, _, err = cli("import", cut, "--out", tmp_path / "w.jsonl")
    assert code == 2 and err == (f"prunesim: error: {cut}: malformed JSON at line 1, column 43: the string that "
                                 "starts here is never closed\n")
    lines = (FIXTURES / "openhands.jsonl").read_text().splitlines()
    middle = tmp_path / "oh.jsonl"
    middle.write_text("\n".join([lines[0], lines[1][:30], lines[1]]) + "\n")
    code, _, err = cli("import", middle, "--out", f"{tmp_path}/wl/")
    assert code == 2 and err.startswith(f"prunesim: error: {middle}:2: malformed JSON at column "), err
    workload = tmp_path / "m.workload.jsonl"
    assert cli("import", FIXTURES / "mini.traj.json", "--out", workload)[0] == 0
    text = workload.read_text().splitlines()
    workload.write_text("\n".join([text[0], text[1].replace('"', "", 1), *text[2:]]) + "\n")
    code, _, err = cli("run", "--workload", workload, "--policy", "noop")
    assert code == 2 and err.startswith(f"prunesim: error: {workload}:2: malformed JSON at column 2: "), err
    calibration = tmp_path / "cal.json"
    calibration.write_text('{"prunesim_calibration": ')
    code, _, err = cli("import", FIXTURES / "mini.traj.json", "--calibration", calibration, "--out", tmp_path / "x")
    assert code == 2 and err == (f"prunesim: error: {calibration}: not a calibration file: malformed JSON at line 1, "
                                 "column 25: the text ends before the JSON value does (a truncated file?)\n"), err
    empty = tmp_path / "empty.json"
    empty.write_text("")
    code, _, err = cli("import", empty, "--out", tmp_path / "e.jsonl")
    assert code == 2 and err == f"prunesim: error: {empty}: malformed JSON: the file is empty\n", err


# -- one rule for seeds ------------------------------------------------------------------------------
TOO_BIG = str(10**400)


@pytest.mark.parametrize("argv", [
    ["run", "oscillation-40", "--seed", TOO_BIG],
    ["run", "oscillation-40", "--seed", str(10**12 + 1)],
    ["run", "oscillation-40", "--set", f"seed={TOO_BIG}"],
    ["run", "oscillation-40", "--set", "seed=-1"],
    ["sweep", "oscillation-40", "--seeds", f"{10**12}:{10**12 + 2}", "--out", "{tmp}/sw"],
    ["compare", "oscillation-40", "--policies", "naive", "--seeds", f"3,{TOO_BIG}"],
    ["replay", "oscillation", "--seeds", TOO_BIG],
    ["replay-dir", str(FIXTURES / "mini.traj.json"), "--policies", "noop", "--seed", TOO_BIG],
    ["leaderboard", str(FIXTURES / "claude-code"), "--seed", TOO_BIG, "--out", "{tmp}/lb"],
    ["validate", "oscillation", "--first-seed", str(10**12 - 5)],
    ["ablation", "oscillation", "--first-seed", TOO_BIG],
    ["aggregate", "{tmp}", "--seed", TOO_BIG],
])
def test_a_seed_above_the_one_limit_is_refused_in_one_line_wherever_it_is_given(tmp_path, argv):
    code, out, err = cli(*[a.format(tmp=tmp_path) for a in argv])
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "a seed is an integer from 0 to 1,000,000,000,000" in err, err
    assert not (tmp_path / "sw").exists() and not (tmp_path / "lb").exists()


def test_a_scenario_files_seed_and_the_api_keep_the_same_limit(tmp_path):
    from prunesim import api
    from prunesim.errors import UserError

    scenario = tmp_path / "s.toml"
    scenario.write_text(f'extends = "oscillation-40"\nseed = {TOO_BIG}\n')
    code, _, err = cli("run", scenario)
    assert code == 2 and err == (f"prunesim: error: {scenario}: seed: a number of 401 digits is out of range (a seed "
                                 "is an integer from 0 to 1,000,000,000,000)\n"), err
    with pytest.raises(UserError, match="a seed is an integer from 0 to 1,000,000,000,000"):
        api.run("oscillation-40", policy="naive", seed=10**12 + 1)
    assert api.run("oscillation-40", policy="naive", seed=10**12, overrides={"turns": 3}).seed == 10**12


# -- output paths that cannot be written say why ---------------------------------------------------
OUTPUT_FLAGS = {  # each writing command and the flag of its output (a file), run on the smallest inputs
    "fidelity": (["fidelity", str(FIXTURES / "mini.traj.json"), "--fit-out", "{out}"], "--fit-out"),
    "calibrate": (["calibrate", "oscillation-40", "--targets", "seed-000", "--params", "trigger", "--out", "{out}"],
                  "--out"),
    "replay-dir": (["replay-dir", str(FIXTURES / "mini.traj.json"), "--policies", "noop", "--out", "{out}"], "--out"),
    "compare": (["compare", "oscillation-40", "--policies", "naive", "--seeds", "0:1", "--set", "turns=3",
                 "--out", "{out}"], "--out"),
    "replay": (["replay", "oscillation", "--seeds", "0:1", "--out", "{out}"], "--out"),
    "sensitivity": (["sensitivity", "oscillation", "--samples", "2", "--seeds", "0:1", "--out", "{out}"], "--out"),
    "ablation": (["ablation", "oscillation", "--out", "{out}"], "--out"),
}
KERNEL_FILE = Path("/proc/version")


@pytest.mark.skipif(not KERNEL_FILE.is_file(), reason="needs Linux's /proc")
@pytest.mark.parametrize("command", sorted(OUTPUT_FLAGS))
@pytest.mark.parametrize("target", ["/proc/version", "/proc/prunesim-new.out", "/proc/self/status"])
def test_an_output_onto_the_kernels_files_says_so_not_no_such_file(command, target):
    argv, flag = OUTPUT_FLAGS[command]
    code, out, err = cli(*[a.format(out=target) for a in argv])
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"prunesim: error: {flag}: {target}: ") and "kernel's /proc file system" in err, err
    assert "No such file" not in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["leaderboard", "run", "import", "sweep"])
def test_a_folder_output_in_a_folder_that_takes_no_file_names_the_folder_and_the_reason(tmp_path, monkeypatch,
                                                                                          command):
    import errno
    import tempfile

    from prunesim.io import output

    def refused(*args, dir=None, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(dir))

    monkeypatch.setattr(output.tempfile, "TemporaryFile", refused)
    monkeypatch.setattr(output.tempfile, "mkdtemp", refused)
    assert output.tempfile is tempfile
    out = tmp_path / "locked" / "res"
    (tmp_path / "locked").mkdir()
    argv = {"leaderboard": ["leaderboard", FIXTURES / "claude-code", "--out", out],
            "run": ["run", "oscillation-40", "--set", "turns=3", "--out", out],
            "import": ["import", FIXTURES / "mini.traj.json", FIXTURES / "openai.json", "--out", out],
            "sweep": ["sweep", "oscillation-40", "--grid", "trigger=16000,17000", "--seeds", "0:1", "--out", out]}
    code, _, err = cli(*argv[command])
    assert code == 2 and err == (f"prunesim: error: --out: {out}: permission denied: cannot create a file in "
                                 f"{tmp_path / 'locked'}\n"), err
    assert not out.exists()


def test_a_read_only_result_is_not_replaced_behind_the_users_back(tmp_path, monkeypatch):
    import os

    target = tmp_path / "rows.csv"
    target.write_text("kept\n")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == target and mode == os.W_OK
                        else real(p, mode, **kw))  # as a user without write permission sees it (root sees none)
    code, _, err = cli("replay-dir", FIXTURES / "mini.traj.json", "--policies", "noop", "--out", target)
    assert code == 2 and err == f"prunesim: error: --out: {target}: permission denied: the file is read-only\n", err
    assert target.read_text() == "kept\n"


def test_a_write_error_on_a_device_names_the_flag(tmp_path):
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    code, _, err = cli("import", FIXTURES / "mini.traj.json", "--out", "/dev/full")
    assert code == 1 and err == "prunesim: error: --out: /dev/full: No space left on device\n", err
    if KERNEL_FILE.is_file():  # one workload file (a .jsonl name) in a folder that takes none
        code, _, err = cli("import", FIXTURES / "mini.traj.json", "--out", "/proc/w.jsonl")
        assert code == 2 and err == ("prunesim: error: --out: /proc/w.jsonl: /proc is in the kernel's /proc file "
                                     "system, which takes no new file\n"), err
    run = tmp_path / "r"
    assert cli("run", "oscillation-40", "--set", "turns=3", "--out", run)[0] == 0
    code, _, err = cli("plot", "trace", run, "--out", "/dev/full")
    assert code == 1 and err == "prunesim: error: --out: /dev/full: No space left on device\n", err


def test_replay_dir_into_a_pipe_sends_no_rows_when_a_file_is_bad(tmp_path):
    import os
    import threading

    folder = _folder_with_a_bad_file(tmp_path)
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    try:
        code, _, err = cli("replay-dir", folder, "--policies", "noop", "--out", fifo)
    finally:
        if reader.is_alive():  # nothing opened the pipe for writing: let the reader see its end
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert code == 2 and got == [b""] and "cut.traj.json" in err, (got, err)


# -- a policy from a file is named by its class wherever a command prints it ----------------------
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "policies" / "keep_last_outputs.py"


def test_a_file_policy_is_printed_by_its_class_and_recorded_by_its_whole_name(tmp_path):
    spec = f"{EXAMPLE}:KeepLastOutputs"
    code, out, _ = cli("run", "oscillation-40", "--set", "turns=20", "--policy", spec, "--out", tmp_path / "r")
    assert code == 0 and out.splitlines()[0].startswith("oscillation-40 under KeepLastOutputs, seed 0:"), out
    assert str(EXAMPLE) not in out
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["policy"] == spec  # how to load it again
    code, _, err = cli("sweep", "oscillation-40", "--set", "turns=20", "--grid", "trigger=16000,17000",
                       "--policies", f"naive,{spec}", "--seeds", "0:1", "--out", tmp_path / "sw")
    assert code == 0 and "may not affect KeepLastOutputs:" in err and str(EXAMPLE) not in err, err
    assert spec in (tmp_path / "sw" / "runs.csv").read_text()
    code, _, err = cli("replay-dir", FIXTURES / "mini.traj.json", "--policies", spec, "--out", tmp_path / "rd.csv")
    assert code == 0 and str(EXAMPLE) not in err, err
    assert f",{spec}," in (tmp_path / "rd.csv").read_text()


def test_a_file_name_that_is_no_policy_class_is_worded_without_the_loaders_module_name(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("class Thing:\n    pass\n\nvalue = 3\n")
    code, _, err = cli("run", "oscillation-40", "--policy", f"{plain}:Thing")
    assert code == 2 and err == (f"prunesim: error: --policy {plain}:Thing: class Thing is not a policy: a policy "
                                 "subclasses prunesim.policies.Policy\n"), err
    code, _, err = cli("run", "oscillation-40", "--policy", f"{plain}:value")
    assert code == 2 and "names a value of type int, not a class" in err and "prunesim_user" not in err, err


# -- the attack on the folder commands' files -----------------------------------------------------
@pytest.mark.parametrize("fixture, index, fmt", [("mini.traj.json", 2, "mini-swe-agent"), ("openai.json", 1, "openai")])
def test_a_role_that_is_not_text_is_refused_not_read_as_a_users_message(tmp_path, fixture, index, fmt):
    data = json.loads((FIXTURES / fixture).read_text())
    messages = data["messages"] if isinstance(data, dict) else data
    messages[index]["role"] = ["assistant"]
    path = tmp_path / fixture
    path.write_text(json.dumps(data))
    code, out, err = cli("import", path, "--out", tmp_path / "w.jsonl")
    assert code == 2 and out == "" and not (tmp_path / "w.jsonl").exists()
    assert err == f"prunesim: error: {path}: {fmt}: 'role' in message {index} is list, expected a string\n", err


@pytest.mark.parametrize("command", ["import", "replay-dir", "fidelity"])
def test_one_bad_file_given_alone_is_one_line_and_no_summary(tmp_path, command):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\x00\xff" * 500)
    argv = {"import": ["import", path, "--out", f"{tmp_path}/wl/"], "fidelity": ["fidelity", path],
            "replay-dir": ["replay-dir", path, "--policies", "noop", "--out", tmp_path / "r.csv"]}[command]
    code, out, err = cli(*argv)
    assert code == 2 and out == "" and err == f"prunesim: error: {path}: binary file, not a transcript\n", (out, err)


@pytest.mark.parametrize("argv", [
    ["calibrate", "oscillation-40", "--targets", "seed-000", "--params", "trigger=16000:23000", "--max-evals", "1",
     "--seeds", "0:1", "--out", "{tmp}/c.toml"],
    ["sensitivity", "oscillation", "--samples", "2", "--seeds", "0:1", "--out", "{tmp}/s.csv"],
    ["ablation", "oscillation", "--seeds", "0:1", "--max-evals", "1", "--blocks", "1", "--block-size", "1",
     "--out", "{tmp}/a.csv"],
])
def test_engine_kernel_without_numba_is_one_line_before_any_run_and_writes_nothing(tmp_path, monkeypatch, argv):
    import sys

    monkeypatch.setitem(sys.modules, "numba", None)  # an install without the kernel extra: import numba fails
    code, out, err = cli(*[a.format(tmp=tmp_path) for a in argv], "--engine", "kernel")
    assert code == 2 and out == "" and list(tmp_path.iterdir()) == []
    assert err == ("prunesim: error: --engine: the kernel does not cover this install: numba is not installed "
                   "(pip install 'prunesim[kernel]'): use --engine simpy or auto\n"), err


@pytest.mark.parametrize("grid, words", [
    ("budget=99999999999999", "--grid: budget: 99999999999999 is out of range"),
    ("trigger=16000:23500:0.5", "trigger: must be an integer, got a number 16000.5"),
    ("nopolicy:trigger=1,2", "names the policy 'nopolicy', which is not swept"),
    ("seed=1,2", "cannot be a leaderboard's axis"),
])
def test_a_bad_leaderboard_grid_is_one_line_naming_the_setting_the_user_gave(tmp_path, grid, words):
    code, out, err = cli("leaderboard", FIXTURES / "claude-code", "--policies", "noop,naive", "--grid", grid,
                         "--out", tmp_path / "lb")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and words in err, err
    assert not (tmp_path / "lb").exists()


# -- outputs onto inputs, fits onto what they judge ---------------------------------------------------
def test_replay_dir_refuses_a_table_named_like_a_transcript_inside_the_folder_it_reads(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(FIXTURES / "mini.traj.json", folder)
    for name in ("rows.json", "rows.jsonl"):
        code, _, err = cli("replay-dir", folder, "--policies", "noop", "--out", folder / name)
        assert code == 2 and "is inside the folder it reads" in err and len(err.splitlines()) == 1, err
    assert sorted(p.name for p in folder.iterdir()) == ["mini.traj.json"]
    assert cli("replay-dir", folder, "--policies", "noop", "--out", folder / "rows.csv")[0] == 0  # read by nothing


@pytest.mark.parametrize("share", ["copy", "link"])
def test_fidelity_refuses_to_fit_on_a_folder_that_holds_a_run_it_judges(tmp_path, share):
    judged, fit = tmp_path / "judged", tmp_path / "fit"
    judged.mkdir()
    fit.mkdir()
    shutil.copy(FIXTURES / "mini.traj.json", judged)
    shutil.copy(FIXTURES / "openai.json", fit)
    if share == "copy":
        shutil.copy(judged / "mini.traj.json", fit / "same-run.traj.json")
    else:
        (fit / "same-run.traj.json").symlink_to(judged / "mini.traj.json")
    code, out, err = cli("fidelity", judged, "--fit-on", fit)
    assert code == 2 and out == "" and err == (
        f"prunesim: error: --fit-on: {fit}: holds 1 run(s) of {judged} (the first: {judged / 'mini.traj.json'}; the "
        "same content): they would be judged by parameters fitted on them; give a folder apart, or leave --fit-on "
        "out to fit leaving each run out\n"), err


def test_a_bad_file_in_the_fit_on_folder_counts_as_a_bad_file(tmp_path):
    judged, fit = tmp_path / "judged", tmp_path / "fit"
    judged.mkdir()
    fit.mkdir()
    shutil.copy(FIXTURES / "claude-code" / "session.jsonl", judged)
    shutil.copy(FIXTURES / "mini.traj.json", fit)
    (fit / "bin.json").write_bytes(bytes(range(256)) * 8)
    code, out, err = cli("fidelity", judged, "--fit-on", fit, "--fit-out", tmp_path / "cal.json")
    assert code == 2 and out == "" and not (tmp_path / "cal.json").exists(), err
    assert f"prunesim: error: {fit / 'bin.json'}: binary file, not a transcript" in err.splitlines()


@pytest.mark.parametrize("command", sorted(FOLDER_COMMANDS))
def test_a_file_reached_twice_is_refused_before_it_is_counted_twice(tmp_path, command):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(FIXTURES / "mini.traj.json", folder)
    shutil.copy(FIXTURES / "openai.json", folder)
    (folder / "alias.traj.json").symlink_to("mini.traj.json")
    code, out, err = cli(*FOLDER_COMMANDS[command](folder, tmp_path / "out"))
    assert code == 2 and out == "" and not (tmp_path / "out").exists()
    assert err == (f"prunesim: error: {folder / 'mini.traj.json'}: is the same file as {folder / 'alias.traj.json'} "
                   "(a link): its runs would be counted twice\n"), err


def test_import_of_one_file_named_twice_is_refused(tmp_path):
    path = FIXTURES / "mini.traj.json"
    code, _, err = cli("import", path, path, "--out", f"{tmp_path}/wl/")
    assert code == 2 and err == f"prunesim: error: {path}: is named twice: its runs would be counted twice\n", err
    assert not (tmp_path / "wl").exists()


# -- studies too large to be meant --------------------------------------------------------------------
def test_two_grid_axes_whose_product_is_a_typo_are_refused_at_once(tmp_path):
    code, _, err = cli("sweep", "oscillation-40", "--grid", "trigger=0:100000:1", "--grid", "budget=20000:30000:1",
                       "--seeds", "0:2", "--out", tmp_path / "sw")
    assert code == 2 and err == ("prunesim: error: sweep: 1,000,110,001 grid points and policies x 2 seeds are "
                                 "2,000,220,002 runs; at most 10,000,000 in one command\n"), err
    assert not (tmp_path / "sw").exists()
    from prunesim.studies.grid import expand_grid

    with pytest.raises(Exception, match="1,001 x 1,001 values are 1,002,001 grid points"):
        expand_grid({"a": range(1001), "b": range(1001)})


def test_a_sensitivity_of_a_typo_of_samples_is_refused_not_out_of_memory():
    code, out, err = cli("sensitivity", "oscillation", "--samples", str(2**40))
    assert code == 2 and out == "" and "runs; at most 10,000,000 in one command" in err, err
    assert err.startswith("prunesim: error: --samples: ") and len(err.splitlines()) == 1


def test_a_leaderboard_with_skip_bad_leaves_out_every_run_of_a_json_lines_file_with_a_bad_one(tmp_path):
    lines = (FIXTURES / "openhands.jsonl").read_text().splitlines()
    bad = json.loads(lines[1])
    bad["history"] = 5
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "runs.jsonl").write_text("\n".join([lines[0], json.dumps(bad), lines[1]]) + "\n")
    shutil.copy(FIXTURES / "mini.traj.json", folder)
    code, _, err = cli("leaderboard", folder, "--policies", "noop", "--out", tmp_path / "lb", "--skip-bad")
    assert code == 0 and f"prunesim: error: {folder / 'runs.jsonl'}:2: " in err, err
    meta = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert meta["units"] == 1 and meta["skipped"] == [str(folder / "runs.jsonl")]  # not its good first run


@pytest.mark.parametrize("command", ["fidelity", "import"])
def test_a_file_output_replaces_its_own_kind_never_a_file_of_the_users(tmp_path, command):
    mine = tmp_path / ("notes.json" if command == "fidelity" else "notes.jsonl")
    mine.write_text("the user's own notes\n")
    flag = "--fit-out" if command == "fidelity" else "--out"
    argv = [command, FIXTURES / "mini.traj.json"]
    code, out, err = cli(*argv, flag, mine)
    kind = "a prunesim calibration file" if command == "fidelity" else "a prunesim workload file"
    assert code == 2 and out == "" and err == (f"prunesim: error: {flag}: {mine}: exists and is not {kind}, so it is "
                                               "not replaced; give another name or remove it\n"), err
    assert mine.read_text() == "the user's own notes\n"
    result = tmp_path / ("fit.json" if command == "fidelity" else "w.jsonl")
    assert cli(*argv, flag, result)[0] == 0
    first = result.read_bytes()
    assert cli(*argv, flag, result)[0] == 0 and result.read_bytes() == first  # a result of its kind: rewritten
