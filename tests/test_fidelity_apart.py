"""fidelity never judges a run by parameters fitted on it: a --fit-on folder that holds any run of the judged
folder is refused in one line, whatever file holds it (a copy, a link, or the same run rewritten in other
bytes: re-indented, another line ending, blank lines, another name), and a folder of other runs is not.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cli_capture import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FEW = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# What a user's tools do to a transcript's bytes without changing the run it holds.
REWRITES = {
    "crlf": lambda name, data: data.replace(b"\n", b"\r\n"),
    "blank lines": lambda name, data: data + b"\n\n",
    "reindented": lambda name, data: (json.dumps(json.loads(data), indent=3).encode() if name.endswith(".json")
                                      else data),
    "as it is": lambda name, data: data,
}
RUNS = ["mini.traj.json", "claude-code/session.jsonl"]


@FEW
@given(run=st.sampled_from(RUNS), rewrites=st.lists(st.sampled_from(sorted(REWRITES)), min_size=1, max_size=3),
       renamed=st.booleans())
def test_a_fit_folder_holding_a_judged_run_in_any_bytes_is_refused(tmp_path_factory, run, rewrites, renamed):
    root = tmp_path_factory.mktemp("apart")
    judged, fit = root / "judged", root / "fit"
    judged.mkdir()
    fit.mkdir()
    source = FIXTURES / run
    shutil.copy(source, judged / source.name)
    shutil.copy(FIXTURES / "openai.json", fit)  # another run beside it
    data = source.read_bytes()
    for name in rewrites:
        data = REWRITES[name](source.name, data)
    (fit / (("other-name" + "".join(source.suffixes)) if renamed else source.name)).write_bytes(data)
    code, out, err = cli("fidelity", judged, "--fit-on", fit)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith(f"prunesim: error: --fit-on: {fit}: holds 1 run(s) of {judged} (the first: "
                          f"{judged / source.name}; the same content)"), err


def test_a_fit_folder_of_other_runs_is_not_refused_for_it(tmp_path):
    judged, fit = tmp_path / "judged", tmp_path / "fit"
    judged.mkdir()
    fit.mkdir()
    shutil.copy(FIXTURES / "claude-code" / "session.jsonl", judged)
    shutil.copy(FIXTURES / "mini.traj.json", fit)
    code, out, err = cli("fidelity", judged, "--fit-on", fit, "--folds", "0")
    assert code == 0 and "the same content" not in err and "1 run(s), 0 judged out of sample" in out, err
