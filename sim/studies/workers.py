"""Worker processes: how each starts (:func:`worker_start`), and one the system refused, named as the ``--jobs``
that asked for it.

fork() (or spawn) refuses a process past the limit on a user's processes (``ulimit -u``: EAGAIN) or without
memory for one (ENOMEM). Every pool a ``--jobs`` starts (a sweep's, on this machine or on a local Dask cluster,
and ``outcomes``') says so in one line naming the flag, not with the system's bare "Resource temporarily
unavailable".
"""

from __future__ import annotations

import errno
import os
import signal

from prunesim.errors import OneLineError, UserError, from_os_error

REFUSALS = (errno.EAGAIN, errno.ENOMEM)


def refusal_in(err: BaseException) -> OSError | None:
    """The EAGAIN or ENOMEM ``OSError`` that ``err`` is, or that caused it (a cluster wraps what its workers met)."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno in REFUSALS:
            return err
        err = err.__cause__ or err.__context__
    return None


def refused(err: OSError, jobs: int, workers: int | None = None, started: int | None = None,
            after: str = "") -> OneLineError:
    """One line for ``err``, met starting worker ``started + 1`` of ``workers`` for ``--jobs jobs`` (either unknown:
    None); ``after`` says what the user keeps (a sweep's runs done)."""
    if err.errno not in REFUSALS:
        return from_os_error(err, "--jobs")
    import resource

    limit = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    shown = "unlimited" if limit == resource.RLIM_INFINITY else f"{limit:,}"
    why = (f"past the limit on your processes (ulimit -u: {shown})" if err.errno == errno.EAGAIN
           else "there is no memory for another process")
    which = "a worker" if started is None or workers is None else f"worker {started + 1} of {workers}"
    return UserError("--jobs", str(jobs), f"the system refused to start {which}: {why}; give fewer --jobs"
                     + (f" ({after})" if after else ""))


def worker_start() -> None:
    """In a newly started worker (every pool's initializer): leave Ctrl-C to the command, and die with it.

    Ctrl-C reaches every process of the terminal's foreground group; the command stops its workers itself and
    says "interrupted" once, where a worker interrupted on its own would print multiprocessing's traceback.
    A command killed outright (SIGKILL, the OOM killer) runs no cleanup: without the parent-death signal its
    workers would go on computing units nobody takes, as orphans, until they were killed one by one.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # Linux only; elsewhere a killed command's workers end when their queue is gone
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the command died before the line above: nothing will take this worker's results
        os._exit(1)


PR_SET_PDEATHSIG = 1  # prctl(2)
