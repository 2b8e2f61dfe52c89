"""Names cut to a table column stay distinct: sessions of one project differ only at their end."""

from prunesim.cli.commands.fidelity import format_report
from prunesim.io.labels import fitted_names

HEAD = "-home-someone-projects-a-long-shared-project-path__"
SESSIONS = [f"{HEAD}{i:08x}-0000-4000-8000-{i:012x}.jsonl" for i in (1, 2, 3)]


def test_long_names_sharing_a_head_stay_distinct_within_the_width():
    shown = fitted_names(SESSIONS, 48)
    assert len(set(shown.values())) == 3
    assert all(len(s) <= 48 and "..." in s for s in shown.values())
    assert all(s.endswith(n[-20:]) for n, s in shown.items())


def test_a_name_that_fits_is_shown_whole():
    assert fitted_names(["short.traj.json", SESSIONS[0]], 48)["short.traj.json"] == "short.traj.json"


def test_names_that_would_elide_alike_are_kept_whole():
    twins = [f"a{'x' * 60}b{'y' * 60}", f"a{'x' * 60}c{'y' * 60}"]
    assert fitted_names(twins, 20) == {n: n for n in twins}


def test_fidelity_table_shows_each_session_apart():
    rows = [{"transcript": name, "calls": 10, "error": 0.01, "error_as_imported": 0.02} for name in SESSIONS]
    rep = {"tokenizer": "t", "calibration": "c", "transcripts": 0, "skipped": 0, "failed": 0,
           "anchored_calls": 0, "calls": 30, "per_transcript": rows, "profiles": [], "compactions": [],
           "reaction": {}}
    lines = format_report(rep).splitlines()[1:4]
    assert len({line.split()[0] for line in lines}) == 3
