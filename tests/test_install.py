"""The installed package ships its scenarios: `prunesim list` works from any folder.

Runs when a `prunesim` console script is on PATH (CI installs the project
with a plain `pip install '.[test]'`); skipped otherwise.
"""

import shutil
import subprocess

import pytest

PRUNESIM = shutil.which("prunesim")


@pytest.mark.skipif(PRUNESIM is None, reason="prunesim is not installed on PATH")
def test_installed_prunesim_lists_shipped_scenarios_from_anywhere(tmp_path):
    proc = subprocess.run([PRUNESIM, "list"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "oscillation-40" in proc.stdout and "naive" in proc.stdout


@pytest.mark.skipif(PRUNESIM is None, reason="prunesim is not installed on PATH")
def test_installed_prunesim_runs_a_shipped_scenario_by_name(tmp_path):
    proc = subprocess.run([PRUNESIM, "run", "oscillation-40", "--json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"passes"' in proc.stdout
