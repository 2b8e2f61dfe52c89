"""The output layer (prunesim.io.output): what an output path names decides how it is written."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from prunesim.errors import ResourceError, UserError, from_os_error
from prunesim.io import output

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
HAS_DEV_FULL = Path("/dev/full").exists()


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_file_gets_the_umask_mode_and_no_temporary_is_left(tmp_path):
    old = os.umask(0o027)
    try:
        output._umask = None  # read the umask again
        output.write_text(tmp_path / "a.csv", "x\n")
        assert mode(tmp_path / "a.csv") == 0o640
    finally:
        os.umask(old)
        output._umask = None
    output.write_text(tmp_path / "b.csv", "y\n")
    assert mode(tmp_path / "b.csv") == 0o666 & ~old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "b.csv"]


def test_a_replaced_file_keeps_its_mode_and_is_replaced_whole(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("old\n")
    os.chmod(path, 0o604)
    output.write_text(path, "new\n")
    assert path.read_text() == "new\n" and mode(path) == 0o604


def test_a_link_is_written_through_and_stays_a_link(tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    output.write_text(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n"


def test_a_dangling_link_gets_its_target_created(tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "sub" / "made.csv")
    output.write_text(link, "x\n")
    assert link.is_symlink() and (tmp_path / "sub" / "made.csv").read_text() == "x\n"


def test_a_device_is_written_directly_never_renamed_over():
    before = os.stat("/dev/null")
    output.write_text("/dev/null", "x\n")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_a_pipe_is_written_directly(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        output.write_text(fifo, "row\n")
        assert os.read(reader, 100) == b"row\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_link_into_proc_is_written_through_the_descriptor(tmp_path):
    """``--out /dev/stdout`` with stdout on a file appends to that file; it never replaces it."""
    log = tmp_path / "log.txt"
    log.write_text("kept\n")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        link = tmp_path / "out.csv"
        link.symlink_to(f"/proc/self/fd/{fd}")
        assert output.kind_of(link) == "stream"
        output.write_text(link, "row\n")
    finally:
        os.close(fd)
    assert log.read_text() == "kept\nrow\n"


def test_a_folder_where_a_file_is_expected_is_refused(tmp_path):
    with pytest.raises(UserError, match="is a folder"):
        output.write_text(tmp_path, "x")


def test_an_output_not_committed_leaves_the_old_file(tmp_path):
    path = tmp_path / "result.csv"
    path.write_text("good\n")
    with output.FileOutput(path) as out:
        out.write("half")
        # no commit: a failed run
    assert path.read_text() == "good\n"
    assert [p.name for p in tmp_path.iterdir()] == ["result.csv"]
    with pytest.raises(RuntimeError), output.FileOutput(path) as out:
        out.write("half")
        raise RuntimeError("the run failed")
    assert path.read_text() == "good\n"


def test_missing_parents_are_made_and_removed_again_when_nothing_is_written(tmp_path):
    deep = tmp_path / "a" / "b" / "c.csv"
    with output.FileOutput(deep):
        assert (tmp_path / "a" / "b").is_dir()
    assert not (tmp_path / "a").exists()
    output.write_text(deep, "x")
    assert deep.read_text() == "x"


def test_a_path_under_a_file_is_one_user_error(tmp_path):
    (tmp_path / "afile").write_text("")
    with pytest.raises(UserError, match="afile is a file, not a folder"):
        output.write_text(tmp_path / "afile" / "sub" / "x.csv", "x")


@pytest.mark.skipif(not HAS_DEV_FULL, reason="needs /dev/full (Linux): a disk that is always full")
def test_a_full_disk_is_a_resource_error():
    with pytest.raises(ResourceError, match="/dev/full: No space left on device"):
        output.write_text("/dev/full", "x" * 10000)


def test_os_errors_are_sorted_into_the_users_and_the_machines():
    assert type(from_os_error(OSError(errno.EACCES, "Permission denied"), "p")) is UserError
    assert type(from_os_error(OSError(errno.EROFS, "Read-only file system"), "p")) is UserError
    assert type(from_os_error(OSError(errno.ENOTDIR, "Not a directory"), "p")) is UserError
    assert type(from_os_error(OSError(errno.ENOSPC, "No space left on device"), "p")) is ResourceError
    assert type(from_os_error(OSError(errno.EIO, "Input/output error"), "p")) is ResourceError
    err = from_os_error(OSError(errno.EDQUOT, "Disk quota exceeded"), "out/x.csv")
    assert str(err) == "out/x.csv: Disk quota exceeded" and err.exit_code == 1


def test_a_folder_output_is_complete_or_absent(tmp_path):
    dest = tmp_path / "run"
    with pytest.raises(RuntimeError), output.folder(dest) as staging:
        (staging / "trace.csv").write_text("half")
        raise RuntimeError("failed after one file")
    assert not dest.exists() and list(tmp_path.iterdir()) == []
    with output.folder(dest) as staging:
        (staging / "trace.csv").write_text("whole")
        assert not dest.exists()  # nothing shows until the end
    assert (dest / "trace.csv").read_text() == "whole"
    assert mode(dest) == 0o777 & ~output._current_umask()


def test_a_folder_output_into_an_existing_folder_replaces_only_its_own_files(tmp_path):
    dest = tmp_path / "run"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    (dest / "trace.csv").write_text("old")
    (dest / "editlog.jsonl").write_text("an earlier run's")
    with pytest.raises(RuntimeError), output.folder(dest, stale=["editlog.jsonl"]) as staging:
        (staging / "trace.csv").write_text("new")
        raise RuntimeError
    assert (dest / "trace.csv").read_text() == "old" and (dest / "editlog.jsonl").exists()
    with output.folder(dest, stale=["editlog.jsonl"]) as staging:
        (staging / "trace.csv").write_text("new")
    assert (dest / "trace.csv").read_text() == "new" and (dest / "notes.txt").read_text() == "mine"
    assert not (dest / "editlog.jsonl").exists()
    assert sorted(p.name for p in dest.iterdir()) == ["notes.txt", "trace.csv"]


def test_a_folder_output_refuses_a_file_a_broken_link_and_a_path_under_a_file(tmp_path):
    (tmp_path / "afile").write_text("")
    (tmp_path / "broken").symlink_to(tmp_path / "nowhere")
    for path, problem in [(tmp_path / "afile", "exists and is not a folder"),
                          (tmp_path / "broken", "broken symbolic link"),
                          (tmp_path / "afile" / "sub", "afile is a file, not a folder")]:
        with pytest.raises(UserError, match=problem):
            output.check_folder(path, "--out")
        with pytest.raises(UserError, match=problem), output.folder(path, "--out"):
            pass


def test_a_link_to_a_folder_is_written_into(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with output.folder(tmp_path / "link") as staging:
        (staging / "summary.json").write_text("{}")
    assert (real / "summary.json").read_text() == "{}" and (tmp_path / "link").is_symlink()


@pytest.mark.skipif(IS_ROOT,
                    reason="needs a user other than root (root writes into read-only folders)")
def test_a_read_only_folder_is_one_user_error(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    try:
        with pytest.raises(UserError, match="Permission denied"):
            output.write_text(ro / "x.csv", "x")
    finally:
        os.chmod(ro, 0o755)
