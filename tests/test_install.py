"""The installed package: one importable name, `prunesim`, its scenarios shipped, every documented import working.

The console-script tests run when a `prunesim` script is on PATH (CI installs
the project with a plain `pip install '.[test]'`); skipped otherwise. The
import tests run the test's own interpreter from an empty folder, so that only
what is installed can be imported.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PRUNESIM = shutil.which("prunesim")


@pytest.mark.skipif(PRUNESIM is None,
                    reason="needs the prunesim command on PATH: pip install . (or -e .) into the active environment")
def test_installed_prunesim_lists_shipped_scenarios_from_anywhere(tmp_path):
    proc = subprocess.run([PRUNESIM, "list"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "oscillation-40" in proc.stdout and "naive" in proc.stdout


@pytest.mark.skipif(PRUNESIM is None,
                    reason="needs the prunesim command on PATH: pip install . (or -e .) into the active environment")
def test_installed_prunesim_runs_a_shipped_scenario_by_name(tmp_path):
    proc = subprocess.run([PRUNESIM, "run", "oscillation-40", "--json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"passes"' in proc.stdout


# -- one importable name ----------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The repository's folders, which must not be importable under their own names once installed.
FOLDER_NAMES = ("sim", "policies", "plots", "scenarios")


def documented_imports() -> list[str]:
    """Every ``import``/``from ... import`` line of the docs' Python blocks, and every `prunesim.x.y` they name."""
    found: list[str] = []
    for doc in DOCS:
        text = doc.read_text()
        for block in re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
            found += [ln.split("#")[0].strip() for ln in block.splitlines()
                      if re.match(r"\s*(from prunesim[\w.]* import |import prunesim)", ln)]
        for name in re.findall(r"`(prunesim(?:\.\w+)+)", text):
            module, _, attr = name.rpartition(".")
            found.append(f"import {name}" if _is_module(name) else f"from {module} import {attr}")
    return sorted(set(found))


def _is_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # only what is installed
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("name", FOLDER_NAMES)
def test_the_repository_folders_are_not_importable_by_their_own_names(name, tmp_path):
    proc = run_python(f"import {name}", tmp_path)
    assert proc.returncode != 0 and f"No module named '{name}'" in proc.stderr


def test_a_users_own_module_named_like_a_folder_shadows_nothing(tmp_path):
    (tmp_path / "plots.py").write_text("MINE = True\n")
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "__init__.py").write_text("MINE = True\n")
    proc = run_python("import plots, sim; from prunesim import api; import prunesim.plots.trace; "
                      "assert plots.MINE and sim.MINE; print(api.run('oscillation-40', seed=1).summary['turns'])",
                      tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "40"


def test_every_documented_import_works_from_anywhere(tmp_path):
    imports = documented_imports()
    assert "from prunesim import api" in imports and len(imports) > 5
    code = "\n".join(imports) + "\nprint('ok')"
    proc = run_python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
