"""The less-travelled commands under hostile input: one line naming the file or flag, exit 2, nothing written."""

from cli_capture import cli


def test_replay_dir_on_an_empty_folder_names_the_folder(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "rows.csv"
    code, stdout, err = cli("replay-dir", empty, "--policies", "noop", "--out", out)
    assert code == 2 and stdout == "" and not out.exists()
    assert err.splitlines() == [f"prunesim: error: {empty}: no transcript or workload files found"]
