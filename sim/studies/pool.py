"""Independent units of a study on a pool of processes, their results in the order they were given.

A study over many units (transcripts, seeds) computes each one alone: the same
function of the same inputs, whichever process runs it. :func:`ordered` runs
them on ``jobs`` processes and hands the results back in the units' order, so
that what a command prints or writes is byte for byte what one process gives;
``jobs=1`` runs them here, one after the other, with no process started.

Workers are forked (the code is already imported, and the task need not be
picklable: only the units and the results cross). A warning a unit raises in a
worker is said by this process, in the unit's turn. A system that refuses a
worker (past ``ulimit -u``, or out of memory) is one :class:`UserError` naming
``--jobs``.
"""

from __future__ import annotations

import itertools
import os
import signal
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from prunesim.errors import OneLineError, ResourceError, UserError
from prunesim.policies import user_policy_fault
from prunesim.studies.workers import refused, worker_start

AHEAD = 1  # units handed to each worker: one, so that what the parent holds stays the units in flight (flat memory)


def default_jobs(jobs: int | None) -> int:
    """``--jobs`` as given, or every core; at least 1 (a :class:`UserError` naming ``--jobs`` otherwise)."""
    if jobs is None:
        return os.cpu_count() or 1
    if jobs < 1:
        raise UserError("--jobs", str(jobs), "must be at least 1")
    return jobs


_TASK: Callable | None = None  # the task of the pool being forked: workers inherit it rather than unpickle it


def _run(item) -> tuple:
    """In a worker: the task's result on ``item``, and the warnings it raised (said by the parent).

    What a user's policy raised (``sys.exit()`` too) is worded here, where its frames are, as one process
    words it: the parent gets a copy without them, and a SystemExit would end the command as if it were done.
    """
    global _in_worker
    _in_worker = True
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")  # every one: the parent's filters decide which are shown
        try:
            result = _TASK(item)
        except (OneLineError, MemoryError):
            raise  # the command words these before asking whether a policy raised them (prunesim.cli.main)
        except (Exception, SystemExit) as err:
            fault = user_policy_fault(err)
            if fault is None:
                raise  # a bug: its traceback reaches the parent as the cause of its copy
            raise fault from None
    return result, [(w.message, w.category, w.filename, w.lineno) for w in said]


_in_worker = False


class WorkerTraceback(Exception):
    """Where an exception a worker hands back as a value was raised (its frames stay in the worker)."""


def portable(err: BaseException) -> BaseException:
    """``err`` as a result that may cross to the parent: in a worker, its traceback goes with it as its cause
    (a crash report shows it), and a user's policy that raised is worded where its frames are. Here, as is."""
    if not _in_worker:
        return err
    fault = user_policy_fault(err)
    if fault is not None:
        return fault
    err.__cause__ = WorkerTraceback("".join(traceback.format_exception(err)))
    return err


_SHOWN: dict = {}  # the warnings registry of those said for workers (a warning shown once, as in one process)


def ordered(task: Callable, items: Iterable, jobs: int, fork_advice: str = "") -> Iterator:
    """``task(item)`` for each of ``items``, in their order, computed on up to ``jobs`` processes.

    ``items`` is read as results are taken (at most ``AHEAD`` per worker ahead of the one awaited), so that a
    long input is never held whole. No more workers start than there are units: the first ``jobs * AHEAD``
    are read before any, so that a ``--jobs`` far above a folder's files forks no idle processes (nor asks
    the system for a pool it cannot describe). ``fork_advice`` says, when the system refuses a worker, what
    the user keeps.
    """
    if jobs <= 1 or "fork" not in _start_methods():
        yield from map(task, items)
        return
    source = iter(items)
    first: deque = deque()
    for item in source:
        first.append(item)
        if len(first) >= jobs * AHEAD:
            break
    workers = min(jobs, len(first))
    if workers <= 1:  # one unit in all: computed here, as --jobs 1 would
        yield from map(task, first)
        return
    global _TASK
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pending: deque = deque()
    _TASK = task
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=worker_start)
    launched: list = []  # the workers, read once they are started (the pool forgets them when one dies)
    finished = False
    try:
        for item in itertools.chain(_drain(first), source):
            pending.append(_submit(pool, item, jobs, workers, fork_advice))
            launched = launched or list((pool._processes or {}).values())
            if len(pending) >= workers * AHEAD:
                yield _take(pending.popleft())
        while pending:
            yield _take(pending.popleft())
        finished = True
    except BrokenProcessPool:
        raise ended(launched, jobs) from None
    finally:
        _TASK = None
        if finished:
            pool.shutdown(wait=True)
        else:  # the consumer stopped (an error, Ctrl-C): the units in flight are not wanted
            stop_workers(pool)


def _drain(held: deque) -> Iterator:
    """``held``'s items, each let go of as it is handed on (the parent holds the units in flight only)."""
    while held:
        yield held.popleft()


def sources_ahead(sources: Iterable[tuple], task: Callable, jobs: int, seen=None) -> Iterator[tuple]:
    """``(path, workload or error, task's result)`` for each of ``sources`` (:func:`iter_sources`'s pairs, read
    without ``seen``), the results computed ahead on ``jobs`` processes and given in the sources' order.

    ``task`` returns what a unit gives, or the exception that fails its file, rather than raising it. With
    ``seen`` (:class:`~prunesim.io.transcripts.identity.Seen`), a run met before is left out, and a file that
    failed to import is forgotten by it, each decided in order, when the run's turn comes, as
    ``iter_sources(..., seen=seen)`` decides them one run at a time: a consumer that forgets a file that
    failed later (its ``discard``) does so before the next run is judged. A run that looked like a repeat
    when it was read is not computed ahead; it is computed here should it count after all.
    """
    from prunesim.io.transcripts.identity import Seen

    read: deque = deque()
    guess = Seen() if seen is not None else None

    def units():
        for path, data in sources:
            read.append((path, data))
            skip = isinstance(data, Exception) or (guess is not None and guess.is_repeat(data))
            yield None if skip else data

    for result in ordered(lambda data: None if data is None else task(data), units(), jobs):
        path, data = read.popleft()
        if isinstance(data, Exception):
            if seen is not None:
                seen.forget(path)
        elif seen is not None and seen.is_repeat(data):
            continue
        elif result is None:
            result = task(data)
        yield path, data, result


def _start_methods() -> list[str]:
    import multiprocessing

    return multiprocessing.get_all_start_methods()


def _submit(pool, item, jobs: int, workers: int, fork_advice: str):
    try:
        return pool.submit(_run, item)
    except OSError as err:  # workers start at a submit: fork() refused
        raise refused(err, jobs, workers, len(pool._processes or {}), fork_advice) from None


def _take(future):
    result, said = future.result()
    for message, category, filename, lineno in said:
        warnings.warn_explicit(message, category, filename, lineno, registry=_SHOWN)
    return result


def ended(launched: list, jobs: int) -> ResourceError:
    """One line for a worker that ended without handing its unit's result back: how it ended (a signal, an exit
    code), and what ends a process so. Not a bug of prunesim's: the system's out-of-memory killer, or a user's
    policy that ended its own process, as it would end the command on one process."""
    gone = [p for p in launched if p.exitcode not in (None, -signal.SIGTERM)]  # the pool terminates the rest
    code = gone[0].exitcode if gone else None
    how = ("" if code is None else f" (killed by {signal.Signals(-code).name})" if code < 0
           else f" (exit code {code})")
    return ResourceError("--jobs", str(jobs), f"a worker process ended before its unit was done{how}: the "
                         "system's out-of-memory killer ends one so, and so does a policy that ends its own "
                         "process (os._exit, a signal); nothing is written; give fewer --jobs if memory is short")


def stop_workers(pool) -> None:
    """End a process pool's workers now, and wait until they have ended.

    ``shutdown(cancel_futures=True)`` cancels the units not started but waits
    for the running ones, which may take minutes; the workers never see the
    command's SIGTERM (it reaches the parent only). SIGTERM makes a worker die at
    once (the handler in prunesim.cli re-raises it as the default action); one
    that does not within a few seconds is killed, so this cannot hang.
    """
    if hasattr(pool, "terminate_workers"):  # Python 3.14+
        pool.terminate_workers()
        return
    processes = list((pool._processes or {}).values())  # no public handle before 3.14; read before shutdown
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        proc.terminate()
    for proc in processes:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join()
