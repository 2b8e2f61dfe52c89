"""A user's policy that raises, or calls sys.exit(), is bad input: one line naming it, exit 2, nothing written.

``sys.exit(0)`` in a policy's ``decide`` once ended prunesim with exit code 0 and no result, as if it were
done; in a sweep's worker, an exception reached the sweep as a copy without the policy's frames and was
reported as a prunesim bug. Wherever the policy runs (the command's process, a sweep's workers), whatever it
raises, the user sees the same line.
"""

from __future__ import annotations

import pytest
from cli_capture import cli
from prunesim.runner import streams

POLICY = '''
import sys
from prunesim.policies import Policy


class Faulty(Policy):
    name = "faulty"
    summary = "raises at a turn, on some seeds only"

    def __init__(self, scenario, rng):
        super().__init__(scenario, rng)
        self.fails = {fails}

    def decide(self, view):
        if view.turn == 4 and self.fails:
            {statement}
        return []
'''
RAISES = {
    "sys.exit(0)": "SystemExit: 0",
    "sys.exit()": "SystemExit",
    "sys.exit('bye')": "SystemExit: bye",
    "raise SystemExit(3)": "SystemExit: 3",
    "raise ValueError('boom')": "ValueError: boom",
}
COMMANDS = {
    "run": ("run", "oscillation-40", "--set", "turns=10"),
    "run --out": ("run", "oscillation-40", "--set", "turns=10", "--out", "{out}"),
    "sweep, one job": ("sweep", "oscillation-40", "--seeds", "0:12", "--set", "turns=10", "--jobs", "1", "--quiet",
                       "--out", "{out}"),
    "sweep, workers": ("sweep", "oscillation-40", "--seeds", "0:12", "--set", "turns=10", "--jobs", "2", "--quiet",
                       "--out", "{out}"),
    "leaderboard": ("leaderboard", "--scenario", "oscillation-40", "--seeds", "0:4", "--set", "turns=10", "--out",
                    "{out}"),
}


@pytest.mark.parametrize("statement", sorted(RAISES))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_policy_that_raises_or_exits_is_one_line_and_exit_2(tmp_path, monkeypatch, statement, command):
    monkeypatch.chdir(tmp_path)
    # In a sweep the first run of each policy (seed 0) runs in the sweep's own process: failing on later seeds
    # only (its first draw below seed 0's), the policy fails in a worker.
    first = {seed: streams(seed)["policy"].random() for seed in range(12)}
    assert any(first[s] < first[0] for s in range(1, 12))
    fails = f"rng.random() < {first[0]!r}" if command.startswith("sweep") else "True"
    (tmp_path / "mine.py").write_text(POLICY.format(fails=fails, statement=statement))
    policy_flag = "--policies" if command.split(",")[0] in ("sweep", "leaderboard") else "--policy"
    names = "noop,mine.py:Faulty" if command == "leaderboard" else "mine.py:Faulty"
    argv = [a.format(out=tmp_path / "out") for a in COMMANDS[command]]
    code, out, err = cli(*argv, policy_flag, names)
    lines = [line for line in err.splitlines() if line.startswith("prunesim:")]
    assert code == 2, (code, err)
    assert lines == [f"prunesim: error: --policy: mine.py:Faulty: the policy raised {RAISES[statement]} (mine.py, "
                     "line 16, in decide)"], err
    if command in ("run --out", "leaderboard"):
        assert not (tmp_path / "out").exists()
