"""Every command that writes, with its output pointing at a symlink, an unwritable folder and /dev/full.

* a symbolic link is written through: what it points to gets the output and the link stays a link;
* an unwritable place is one line and exit 2, with nothing left behind;
* /dev/full is one line (exit 1 when written to and full; exit 2 where a folder was expected) and
  stays the device it was, never renamed over.

Unwritable places: a path inside /proc (where nobody can create files, root included) and, when the
tests do not run as root (root writes anywhere), a folder with its write permission taken away.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cli_capture import cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
HAS_DEV_FULL = Path("/dev/full").exists()
HAS_PROC = Path("/proc/self").exists()



@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("inputs")
    assert cli("run", "oscillation-40", "--set", "turns=30", "--out", root / "run")[0] == 0
    assert cli("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--grid", "budget=23000,24000",
               "--policies", "naive", "--seeds", "0:2", "--set", "turns=30", "--jobs", "1", "--quiet",
               "--out", root / "sweep")[0] == 0
    (root / "tr").mkdir()
    (root / "tr" / "mini.traj.json").write_bytes((FIXTURES / "mini.traj.json").read_bytes())
    return {"run": root / "run", "sweep": root / "sweep", "tr": root / "tr", "mini": root / "tr" / "mini.traj.json"}


# (name, argv with {out}, the output is a "file" or a "folder", what a successful run puts there)
COMMANDS = [
    ("run", ["run", "oscillation-40", "--set", "turns=30", "--out", "{out}"], "folder", "summary.json"),
    ("sweep", ["sweep", "oscillation-40", "--seeds", "0:2", "--set", "turns=30", "--jobs", "1", "--quiet",
               "--out", "{out}"], "folder", "runs.csv"),
    ("import to a file", ["import", "{mini}", "--out", "{out}"], "file", b'{"anchor_fallbacks"'),
    ("import to a folder", ["import", "{tr}", "--out", "{out}"], "folder", "mini.workload.jsonl"),
    ("replay-dir", ["replay-dir", "{tr}", "--policies", "noop", "--out", "{out}"], "file", b"transcript,"),
    ("replay --plot", ["replay", "oscillation", "--seeds", "0:2", "--plot", "{out}"], "folder", "oscillation.png"),
    ("plot trace", ["plot", "trace", "{run}", "--out", "{out}"], "file", b"\x89PNG"),
    ("plot ledger", ["plot", "ledger", "{run}", "--out", "{out}"], "file", b"\x89PNG"),
    ("plot sweep", ["plot", "sweep", "{sweep}", "--metric", "passes", "--x", "trigger", "--out", "{out}"],
     "file", b"\x89PNG"),
    ("plot phase", ["plot", "phase", "{sweep}", "--x", "trigger", "--y", "budget", "--metric", "passes",
                    "--out", "{out}"], "file", b"\x89PNG"),
]
IDS = [c[0] for c in COMMANDS]


def argv_for(template, inputs, out) -> list[str]:
    return [a.format(out=out, **{k: str(v) for k, v in inputs.items()}) for a in template]


def _suffix(name: str, kind: str) -> str:
    if kind == "folder":
        return ""
    return ".png" if name.startswith("plot") else ".jsonl" if name.startswith("import") else ".csv"


@pytest.mark.parametrize("name, template, kind, made", COMMANDS, ids=IDS)
def test_out_through_a_symlink_reaches_its_target(name, template, kind, made, inputs, tmp_path):
    target = tmp_path / ("real" + _suffix(name, kind))
    mine = kind == "folder" and name != "sweep"  # a sweep wants an empty folder (or its own)
    if kind == "folder":
        target.mkdir()
        if mine:
            (target / "mine.txt").write_text("kept")
    elif name == "import to a file":  # a workload file replaces only an earlier one
        target.write_bytes(b'{"prunesim_workload": 1, "old": true}\n')
    else:
        target.write_bytes(b"old")
    link = tmp_path / ("link" + _suffix(name, kind))
    link.symlink_to(target)
    code, _, err = cli(*argv_for(template, inputs, link))
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    if kind == "folder":
        assert (target / made).is_file() and (not mine or (target / "mine.txt").read_text() == "kept")
    else:
        assert target.read_bytes().startswith(made)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def unwritable_places(tmp_path: Path) -> list[Path]:
    places = []
    if HAS_PROC:
        places.append(Path("/proc/prunesim-no-such-place/out"))
    if not IS_ROOT:
        ro = tmp_path / "read-only"
        ro.mkdir()
        os.chmod(ro, 0o555)
        places.append(ro / "out")
    return places


@pytest.mark.skipif(IS_ROOT and not HAS_PROC,
                    reason="needs /proc, or a user other than root: as root only /proc gives an unwritable place")
@pytest.mark.parametrize("name, template, kind, made", COMMANDS, ids=IDS)
def test_out_in_an_unwritable_place_is_one_line_exit_2(name, template, kind, made, inputs, tmp_path):
    for place in unwritable_places(tmp_path):
        out = Path(str(place) + _suffix(name, kind))
        code, _, err = cli(*argv_for(template, inputs, out))
        lines = [line for line in err.splitlines() if line.startswith("prunesim:")]
        assert code == 2, err
        assert len(lines) == 1 and lines[0].startswith("prunesim: error:") and "Traceback" not in err
        assert str(out.parent).split("/")[1] in lines[0] or str(out) in lines[0]
        assert not out.exists()
    if not IS_ROOT:
        os.chmod(tmp_path / "read-only", 0o755)
        assert list((tmp_path / "read-only").iterdir()) == []


@pytest.mark.skipif(not HAS_DEV_FULL, reason="needs /dev/full (Linux): a disk that is always full")
@pytest.mark.parametrize("name, template, kind, made", COMMANDS, ids=IDS)
def test_out_on_dev_full_is_one_line_and_leaves_the_device(name, template, kind, made, inputs):
    before = os.stat("/dev/full")
    code, _, err = cli(*argv_for(template, inputs, "/dev/full"))
    lines = [line for line in err.splitlines() if line.startswith("prunesim:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    if kind == "file" or name.startswith("import"):  # import writes its one workload to a device
        assert code == 1 and lines[0] == "prunesim: error: --out: /dev/full: No space left on device"
    else:
        assert code == 2 and "/dev/full" in lines[0] and "not a folder" in lines[0]
    after = os.stat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_aggregate_writes_through_a_linked_aggregate_csv_and_fails_cleanly_on_dev_full(inputs, tmp_path):
    import shutil

    sweep = tmp_path / "sweep"
    shutil.copytree(inputs["sweep"], sweep)
    (tmp_path / "elsewhere.csv").write_text("old")
    (sweep / "aggregate.csv").symlink_to(tmp_path / "elsewhere.csv")
    assert cli("aggregate", sweep)[0] == 0
    assert (sweep / "aggregate.csv").is_symlink()
    assert (tmp_path / "elsewhere.csv").read_text().startswith("policy,trigger,budget,metric")
    if HAS_DEV_FULL:
        (sweep / "aggregate.csv").unlink()
        (sweep / "aggregate.csv").symlink_to("/dev/full")
        code, _, err = cli("aggregate", sweep)
        assert code == 1 and err.strip().splitlines() == [
            f"prunesim: error: {sweep / 'aggregate.csv'}: No space left on device"]
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


# -- a name ending with / is a folder, never a file of that name ----------------------------------------------
FILE_FLAGS = {
    "fidelity --fit-out": ("fidelity", FIXTURES / "mini.traj.json", "--fit-out"),
    "replay --out": ("replay", "oscillation", "--seeds", "0:2", "--out"),
    "calibrate --out": ("calibrate", "oscillation-40", "--targets", "seed-000", "--params", "trigger=20000:22000",
                        "--seeds", "0:2", "--max-evals", "2", "--out"),
    "ablation --out": ("ablation", "oscillation", "--seeds", "0:2", "--blocks", "1", "--block-size", "2", "--out"),
    "compare --out": ("compare", "oscillation-40", "--seeds", "0:2", "--out"),
    "report --out": ("report", "RUN", "--out"),
    "replay-dir --out": ("replay-dir", FIXTURES / "mini.traj.json", "--policies", "noop", "--out"),
}


@pytest.mark.parametrize("flag", sorted(FILE_FLAGS))
def test_a_file_flag_given_a_folder_name_writes_no_file_of_that_name(tmp_path, flag):
    run = tmp_path / "run"
    if flag.startswith("report"):
        assert cli("run", "oscillation-40", "--set", "turns=5", "--out", run)[0] == 0
    argv = [run if a == "RUN" else a for a in FILE_FLAGS[flag]]
    target = tmp_path / "wanted"
    code, out, err = cli(*argv, f"{target}/")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "names a folder" in err, err
    assert not target.exists()
