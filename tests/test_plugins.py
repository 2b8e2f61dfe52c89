"""Policies from outside the package: an installed plugin's entry point, and path/to/file.py:ClassName.

The plugin is the example package in ``examples/plugin``, made visible the
way an installation makes it: its own ``entry_points.txt`` (from its
pyproject.toml) in a ``.dist-info`` folder on a temporary ``sys.path``, its code
beside it. Each command runs in a fresh interpreter, as a user's would.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_fixtures import install_like_pip
from prunesim.cli import main

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "plugin"
FILE_POLICY = ROOT / "examples" / "policies" / "keep_last_outputs.py"
FILE_SPEC = f"{FILE_POLICY}:KeepLastOutputs"


def prunesim(args: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "prunesim", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    install_like_pip(site, PLUGIN)
    return site


def test_an_installed_plugins_policy_runs_in_run_compare_and_sweep(site, tmp_path):
    listed = prunesim(["list"], site, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "keep-outputs-under" in listed.stdout and "over 500 tokens" in listed.stdout
    run = prunesim(["run", "oscillation-40", "--policy", "keep-outputs-under", "--seed", "3", "--json"], site, tmp_path)
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout)
    assert record["policy"] == "keep-outputs-under"
    m = record["metrics"]
    assert m["non_model_evictions"] > 0 and m["fallback_evictions"] == 0 and m["passes"] == 0
    cmp = prunesim(["compare", "oscillation-40", "--policies", "recency,keep-outputs-under", "--seeds", "0:3",
                    "--metrics", "non_model_evictions", "--json"], site, tmp_path)
    assert cmp.returncode == 0, cmp.stderr
    assert json.loads(cmp.stdout)["metrics"]["keep-outputs-under"]["non_model_evictions"]["median"] > 0
    sweep = prunesim(["sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies",
                      "naive,keep-outputs-under", "--seeds", "0:3", "--jobs", "2", "--quiet", "--out", "s"],
                     site, tmp_path)
    assert sweep.returncode == 0, sweep.stderr
    with open(tmp_path / "s" / "runs.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["policy"] == "keep-outputs-under"]
    assert len(rows) == 6 and all(int(r["non_model_evictions"]) > 0 for r in rows)


def test_a_broken_plugin_is_named_and_the_rest_still_work(tmp_path):
    site = tmp_path / "site"
    info = site / "broken_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[prunesim.policies]\nbroken = no_such_module:Nope\nnaive = x:Y\n")
    listed = prunesim(["list"], site, tmp_path)
    assert listed.returncode == 0 and "naive" in listed.stdout
    assert "entry point 'broken' of broken-plugin: no_such_module:Nope: cannot load: ModuleNotFoundError" in \
        listed.stdout
    assert "the name 'naive' is a built-in policy's" in listed.stdout
    run = prunesim(["run", "oscillation-40", "--policy", "broken"], site, tmp_path)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "cannot load" in run.stderr
    ok = prunesim(["run", "oscillation-40", "--policy", "naive", "--json"], site, tmp_path)
    assert ok.returncode == 0 and json.loads(ok.stdout)["policy"] == "naive"


# -- path/to/file.py:ClassName ------------------------------------------------------
def test_a_policy_from_a_file_runs_in_run_compare_and_sweep(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "oscillation-40", "--policy", FILE_SPEC, "--set", "keep_last.outputs=3", "--seed", "2",
                 "--out", str(out)]) == 0
    record = json.loads((out / "summary.json").read_text())
    assert record["policy"] == FILE_SPEC and record["metrics"]["non_model_evictions"] > 0
    assert json.loads((out / "scenario.json").read_text())["keep_last"] == {"outputs": 3}
    assert main(["compare", "oscillation-40", "--policies", f"recency,{FILE_SPEC}", "--seeds", "0:3",
                 "--metrics", "non_model_evictions,eviction_precision", "--json"]) == 0
    assert main(["sweep", "oscillation-40", "--grid", f"{FILE_SPEC}:keep_last.outputs=2,6", "--policies",
                 f"recency,{FILE_SPEC}", "--seeds", "0:2", "--jobs", "2", "--quiet", "--out", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    with open(tmp_path / "s" / "runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    mine = [r for r in rows if r["policy"] == FILE_SPEC]
    assert sorted({r[f"{FILE_SPEC}:keep_last.outputs"] for r in mine}) == ["2", "6"] and len(mine) == 4


def test_a_policy_class_is_accepted_by_the_api(oscillation):
    from prunesim import api
    from prunesim.policies import load_file_policy

    cls = load_file_policy(FILE_SPEC)
    result = api.run("oscillation-40", policy=cls, seed=1)
    assert result.policy == "keep-last-outputs" and result.summary["non_model_evictions"] > 0
    assert result.scenario.keep_last.outputs == 5  # its own table, with its defaults


@pytest.mark.parametrize("spec,needle", [
    ("nope", "unknown policy 'nope' (known: clear-tool-uses, "),
    ("missing.py:Thing", "no such file 'missing.py'"),
    ("{file}:Nope", "has no class 'Nope' (policies it defines: KeepLastOutputs)"),
    ("{file}:KeepLast", "class KeepLast is not a policy: a policy subclasses prunesim.policies.Policy"),
    ("{bad}:X", "cannot load"),
    ("{syntax}:X", "SyntaxError"),
])
def test_bad_policy_names_are_one_line(tmp_path, capsys, spec, needle):
    bad = tmp_path / "bad.py"
    bad.write_text("import prunesim\nraise RuntimeError('broken on purpose')\n")
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def broken(:\n")
    spec = spec.format(file=FILE_POLICY, bad=bad, syntax=syntax)
    assert main(["run", "oscillation-40", "--policy", spec, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err
    assert not (tmp_path / "out").exists()
    if spec.startswith(str(bad)):
        assert "RuntimeError: broken on purpose (line 2)" in err


def test_loading_a_policy_from_a_file_changes_no_other_scenario():
    from prunesim.io import scenario_files as sc
    from prunesim.policies import load_file_policy

    load_file_policy(FILE_SPEC)
    # a scenario that neither names the policy nor sets its table is what it always was (same run ids)
    plain = sc.load("oscillation-40").to_dict()
    assert "keep_last" not in plain
    assert sc.load("oscillation-40", {"policy": FILE_SPEC}).to_dict()["keep_last"] == {"outputs": 5}
    assert sc.load("oscillation-40", {"keep_last.outputs": 2}).to_dict()["keep_last"] == {"outputs": 2}
