"""Imported transcripts kept between commands: a hit gives the bytes an import gives, a changed file or importer
is imported again, and a damaged entry is imported again without a word."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pytest
from cli_capture import cli
from prunesim.io.transcripts import formats, import_cache
from prunesim.studies import transcript_replay

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def folder(tmp_path) -> Path:
    found = tmp_path / "transcripts"
    found.mkdir()
    for name in ("mini.traj.json", "tiny.traj", "openai.json", "openhands.jsonl"):
        shutil.copy(FIXTURES / name, found / name)
    shutil.copytree(FIXTURES / "claude-code", found / "claude-code")
    return found


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("PRUNESIM_CACHE_DIR", str(where))
    return where / "imports"


def leaderboard(tmp_path: Path, folder: Path, *flags) -> tuple:
    """(exit code, stdout, stderr, files) of a leaderboard of ``folder``, the folder it wrote named OUT."""
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    with warnings.catch_warnings():  # a fresh registry, as a new process has
        warnings.simplefilter("default")
        code, stdout, err = cli("leaderboard", folder, "--jobs", "1", "--out", out, *flags)
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "reproduce.json"}
    return code, stdout.replace(str(out), "OUT"), err, files


def test_a_hit_gives_the_bytes_of_an_import_and_imports_nothing(tmp_path, folder, cache, monkeypatch):
    fresh = leaderboard(tmp_path, folder, "--no-cache")
    assert fresh[0] == 0, fresh[2]
    assert not cache.exists()  # --no-cache keeps nothing
    first = leaderboard(tmp_path, folder)
    assert len(list(cache.iterdir())) == 6  # one entry a file
    monkeypatch.setattr(formats, "iter_transcripts", _no_import)
    again = leaderboard(tmp_path, folder)
    assert first == fresh and again == fresh


def test_a_changed_file_is_imported_again(tmp_path, folder, cache):
    before = leaderboard(tmp_path, folder)
    path = folder / "tiny.traj"
    path.write_text(path.read_text().replace("a.py\\n(Open file: n/a)", "a.py b.py " * 4000 + "\\n(Open file: n/a)"))
    after = leaderboard(tmp_path, folder)
    assert after != before
    assert after == leaderboard(tmp_path, folder, "--no-cache")


def test_another_importer_misses(tmp_path, folder, cache, monkeypatch):
    leaderboard(tmp_path, folder)
    monkeypatch.setattr(import_cache, "importer_version", lambda: "a later importer")
    calls = []
    real = formats.iter_transcripts

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(formats, "iter_transcripts", counted)
    leaderboard(tmp_path, folder)
    assert len(calls) == 6


@pytest.mark.parametrize("damage", ["cut", "flipped", "empty", "not an entry"])
def test_a_damaged_entry_is_imported_again_without_a_word(tmp_path, folder, cache, damage):
    first = leaderboard(tmp_path, folder)
    for entry in cache.iterdir():
        blob = entry.read_bytes()
        entry.write_bytes({"cut": blob[: len(blob) // 2], "flipped": blob[:-40] + bytes(b ^ 1 for b in blob[-40:]),
                           "empty": b"", "not an entry": b"\x80\x04K\x01."}[damage])
    again = leaderboard(tmp_path, folder)
    assert again == first  # the same stderr too: no traceback, no warning
    assert all(import_cache.load(e.name) is not None for e in cache.iterdir())  # written again, whole


def test_a_cache_that_cannot_be_written_changes_nothing(tmp_path, folder, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("PRUNESIM_CACHE_DIR", str(blocked))
    assert leaderboard(tmp_path, folder) == leaderboard(tmp_path, folder, "--no-cache")


def test_the_environment_turns_it_off(tmp_path, folder, cache, monkeypatch):
    monkeypatch.setenv("PRUNESIM_NO_CACHE", "1")
    assert leaderboard(tmp_path, folder)[0] == 0
    assert not cache.exists()


def _no_import(*args, **kwargs):
    raise AssertionError("imported, where the cache held the file")


def _rotated(cache: Path) -> None:
    """Each entry replaced by the next one's bytes: every entry whole, each another file's."""
    entries = sorted(cache.iterdir())
    blobs = [e.read_bytes() for e in entries]
    for entry, blob in zip(entries, blobs[1:] + blobs[:1], strict=True):
        entry.write_bytes(blob)


def test_another_files_entry_in_its_place_is_imported_again(tmp_path, folder, cache):
    first = leaderboard(tmp_path, folder)
    _rotated(cache)
    assert leaderboard(tmp_path, folder) == first
    assert all(import_cache.load(e.name) is not None for e in cache.iterdir())  # each written again as its own


@pytest.mark.parametrize("kind", ["link to another entry", "link to a device", "pipe", "folder"])
def test_what_is_no_regular_entry_is_never_read(tmp_path, folder, cache, kind):
    first = leaderboard(tmp_path, folder)
    entries = sorted(cache.iterdir())
    kept = tmp_path / "kept"
    kept.mkdir()
    for entry in entries:  # every entry copied aside before any is replaced (never through a link)
        (kept / entry.name).write_bytes(entry.read_bytes())
    for entry, other in zip(entries, entries[1:] + entries[:1], strict=True):
        entry.unlink()
        if kind == "link to another entry":
            entry.symlink_to(kept / other.name)
        elif kind == "link to a device":
            entry.symlink_to("/dev/zero")  # read whole, it would never end
        elif kind == "pipe":
            os.mkfifo(entry)  # opened to read, it would block the command
        else:
            entry.mkdir()
    assert leaderboard(tmp_path, folder) == first


def test_a_file_changed_while_it_is_imported_is_not_kept(tmp_path, folder, cache, monkeypatch):
    path = folder / "tiny.traj"
    before = path.read_bytes()
    real = formats.iter_transcripts

    def written_meanwhile(*args, **kwargs):
        yield from real(*args, **kwargs)
        path.write_bytes(before.replace(b"a.py", b"b.py"))  # a session log appended to, a file saved again

    monkeypatch.setattr(formats, "iter_transcripts", written_meanwhile)
    list(transcript_replay.iter_workloads(path))
    assert not cache.exists() or not list(cache.iterdir())  # neither the old bytes' key nor the new one's
    monkeypatch.setattr(formats, "iter_transcripts", real)
    path.write_bytes(before)
    assert len(list(transcript_replay.iter_workloads(path))) == 1
    assert len(list(cache.iterdir())) == 1  # read whole and unchanged: kept
