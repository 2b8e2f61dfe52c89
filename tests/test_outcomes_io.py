"""Outcome files: both column sets, failed starts counted unsolved, and one line for every malformed input."""

from __future__ import annotations

import numpy as np
import pytest
from prunesim.errors import UserError
from prunesim.io import outcomes

HEAD_SWE = ("experiment,strategy,instance_id,cost,summary_cost,has_summary,summary_count,turn_count,"
            "mean_reasoning_tokens,mean_completion_tokens,mean_prompt_tokens,outcome")
HEAD_OH = ("experiment,instance_id,cost,summary_cost,has_summary,summary_count,turn_count,mean_reasoning_tokens,"
           "mean_completion_tokens,mean_prompt_tokens,outcome")


def write(tmp_path, text: str, name: str = "runs.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_both_column_sets_read_into_arms_in_order(tmp_path):
    swe = write(tmp_path, HEAD_SWE + "\n"
                "m-baseline_raw,Raw Agent,a,0.5,0,False,0,10,0,20,3000,1\n"
                "m-baseline_raw,Raw Agent,b,0.7,0,False,0,14,0,30,4000,0\n"
                "m-baseline_N_1_M_10,Observation Masking,a,0.2,0,False,0,9,0,20,2500,1\n", "swe.csv")
    oh = write(tmp_path, HEAD_OH + "\n"
               "g_maxiter_250-raw_agent-run_1,x,1.5,0,False,0,58,12,300,40000,1\n", "oh.csv")
    s, o = outcomes.read(swe), outcomes.read(oh)
    assert [a.experiment for a in s.arms] == ["m-baseline_raw", "m-baseline_N_1_M_10"]
    raw = s.arms[0]
    assert raw.strategy == "Raw Agent" and raw.instances == ("a", "b")
    assert raw.turns.tolist() == [10, 14] and raw.solved.tolist() == [True, False]
    assert raw.total_cost() == pytest.approx(1.2)
    assert o.arms[0].strategy == "" and o.arms[0].reasoning.tolist() == [12.0]
    assert len(s.sha256) == 64 and s.sha256 != o.sha256


def test_a_run_that_failed_to_start_is_unsolved_whatever_its_outcome(tmp_path):
    f = write(tmp_path, HEAD_OH + "\nx_maxiter-raw_agent,a,0,0,False,0,1,0,0,0,1\n"
              "x_maxiter-raw_agent,b,0,0,False,0,5,0,10,100,1\n")
    arm = outcomes.read(f).arms[0]
    assert arm.started.tolist() == [False, True]  # cost 0 with five turns is not a failed start
    assert arm.solved.tolist() == [False, True]
    assert arm.failed_to_start == 1


def test_subset_keeps_rows_in_the_order_asked(tmp_path):
    f = write(tmp_path, HEAD_OH + "\n" + "\n".join(f"e_maxiter,i{k},{k},0,False,0,{k + 2},0,1,10,{k % 2}"
                                                   for k in range(4)) + "\n")
    arm = outcomes.read(f).arms[0]
    sub = arm.subset(np.array([3, 1]))
    assert sub.instances == ("i3", "i1") and sub.turns.tolist() == [5, 3]
    assert arm.subset(np.array([True, False, True, False])).instances == ("i0", "i2")


BAD = [
    ("", "empty file"),
    (HEAD_OH + "\n", "no rows"),
    (HEAD_OH.replace("turn_count,", ""), "missing column(s) turn_count"),
    (HEAD_OH.replace("cost,summary_cost", "cost,cost"), "column named twice"),
    (HEAD_OH + "\ne,a,x,0,False,0,3,0,1,10,1\n", ":2: cost: expected a number (got 'x')"),
    (HEAD_OH + "\ne,a,-1,0,False,0,3,0,1,10,1\n", ":2: cost: must be a finite number >= 0"),
    (HEAD_OH + "\ne,a,nan,0,False,0,3,0,1,10,1\n", ":2: cost: must be a finite number >= 0"),
    (HEAD_OH + "\ne,a,1,0,False,0,3.5,0,1,10,1\n", ":2: turn_count: expected a whole number"),
    (HEAD_OH + "\ne,a,1,0,maybe,0,3,0,1,10,1\n", ":2: has_summary: expected True or False"),
    (HEAD_OH + "\ne,a,1,0,False,0,3,0,1,10,2\n", ":2: outcome: expected 0 (unsolved) or 1 (solved)"),
    (HEAD_OH + "\ne,a,1,0,False,0,3,0,1,10,1\ne,a,1,0,False,0,3,0,1,10,1\n", ":3: instance_id: 'a' appears twice"),
    (HEAD_OH + "\ne,a,1,0,False,0,3,0,1\n", ":2: 9 fields where the header has 11"),
    (HEAD_OH + "\n,a,1,0,False,0,3,0,1,10,1\n", ":2: experiment: empty"),
    (HEAD_SWE + "\ne,Raw Agent,a,1,0,False,0,3,0,1,10,1\ne,LLM-Summary,b,1,0,False,0,3,0,1,10,1\n",
     ":3: strategy: 'LLM-Summary' where earlier rows"),
    (HEAD_OH + '\ne,"a,1,0,False,0,3,0,1,10,1\n', "malformed CSV"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m[:30] for _, m in BAD])
def test_malformed_input_is_one_line_naming_file_line_and_column(tmp_path, text, message):
    f = write(tmp_path, text)
    with pytest.raises(UserError) as err:
        outcomes.read(f)
    line = str(err.value)
    assert "\n" not in line and str(f) in line and message in line


def test_not_utf8_and_not_a_file_are_one_line(tmp_path):
    bad = tmp_path / "bin.csv"
    bad.write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(UserError, match="not a text file"):
        outcomes.read(bad)
    with pytest.raises(UserError, match="is a directory"):
        outcomes.read(tmp_path)
    with pytest.raises(UserError, match="no such CSV file of outcomes"):
        outcomes.read(tmp_path / "missing.csv")
    with pytest.raises(UserError, match="no outcome files given"):
        outcomes.read_all([])
