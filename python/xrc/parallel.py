"""Independent runs on local worker processes that stop on Ctrl-C.

``concurrent.futures`` alone does not stop: on Ctrl-C its ``with`` block
waits for every queued run, and a worker that catches the interrupt inside
one run simply takes the next. Here the workers ignore SIGINT (a terminal
sends it to the whole process group); the parent, on KeyboardInterrupt,
cancels what has not started and sends SIGTERM to the workers. A worker
turns SIGTERM into an exception at its next check (the core checks
between bounded steps), so a run being written removes its staging
directory before the worker exits. Each worker also gets SIGTERM when the
parent dies (SIGKILL included). A worker killed from outside is
:class:`WorkerDied`, naming the signal. :func:`map_parallel` is the same
for a list of results in order (``xrc study``).
"""

from __future__ import annotations

import functools
import os
import signal
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable

from ._proc import die_with_parent


class WorkerDied(RuntimeError):
    """A worker process died in the middle of its work, killed from
    outside (the out-of-memory killer sends SIGKILL)."""


class _Terminated(SystemExit):
    """SIGTERM in a worker inside a run (a SystemExit: it unwinds the run's
    cleanup, then `_guarded` exits)."""


#: In a worker: whether it is inside a run (`_guarded`), and the exit
#: status of a SIGTERM received (0: none).
_in_run = False
_stopped = 0


def _on_sigterm(signum, frame):
    global _stopped
    _stopped = 128 + signum
    if not _in_run:
        # Idle, or handing a result back: concurrent.futures catches every
        # exception there (a raise was sent back as the run's result and
        # the worker took the next run, after its parent had died), and
        # there is nothing to clean up.
        os._exit(_stopped)
    raise _Terminated(_stopped)


def _worker_init(parent: int | None = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    if parent is not None:
        # A parent that dies without stopping its workers (SIGKILL, or a
        # signal while a worker was being started) takes them with it; the
        # SIGTERM lets a run being written remove its staging directory.
        die_with_parent(parent, signal.SIGTERM)


def _guarded(fn: Callable[[Any], Any], item: Any) -> Any:
    global _in_run
    _in_run = True
    try:
        return fn(item)
    except _Terminated as e:
        # Cleanup ran on the way out of fn; leave before taking another run.
        os._exit(e.code if isinstance(e.code, int) else 143)
    finally:
        _in_run = False
        if _stopped:
            # The run swallowed the SIGTERM's exception (cleanup code that
            # catches everything): leave all the same.
            os._exit(_stopped)


def _how(exitcode: int) -> str:
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


def _stop(pool: ProcessPoolExecutor) -> None:
    # The workers first, then the pool. Shut down first, the pool's manager
    # thread sent its stop messages to workers being terminated (a worker
    # once printed a traceback: EOFError on a cut message) and was still
    # closing its wake-up pipe at the interpreter's exit, when
    # concurrent.futures writes to that pipe ("Exception ignored ... Bad file
    # descriptor"). Each was a traceback on stderr, about 1 sweep in 40
    # stopped on a full disk under load.
    procs = list(getattr(pool, "_processes", {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        manager.join(timeout=10)


def run_parallel(fn: Callable[[Any], Any], items: Iterable[Any], jobs: int,
                 on_result: Callable[[Any], None]) -> None:
    """Calls ``fn(item)`` for every item on `jobs` worker processes and
    ``on_result`` with each result as it comes. On KeyboardInterrupt (or any
    error) stops every worker, then re-raises."""
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init, initargs=(os.getpid(),))
    procs: list = []
    try:
        futs = [pool.submit(_guarded, fn, it) for it in items]
        procs = list((getattr(pool, "_processes", None) or {}).values())
        for f in as_completed(futs):
            on_result(f.result())
    except BrokenProcessPool:
        # Was a traceback naming concurrent.futures' BrokenProcessPool.
        _stop(pool)
        # The others were stopped with SIGTERM (by the pool or by _stop).
        ours = (None, 0, -signal.SIGTERM, 128 + signal.SIGTERM)
        how = sorted({_how(p.exitcode) for p in procs if p.exitcode not in ours})
        raise WorkerDied(f"a worker process died in the middle of a run ({', '.join(how) or 'how is not known'}; "
                         f"the out-of-memory killer, for one, sends SIGKILL)") from None
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown()


def _indexed(fn: Callable[[Any], Any], pair: tuple[int, Any]) -> tuple[int, Any]:
    return pair[0], fn(pair[1])


def map_parallel(fn: Callable[[Any], Any], items: Iterable[Any], jobs: int | None) -> list[Any]:
    """``[fn(item) for item in items]`` on `jobs` worker processes (every
    core if None), in the items' order, stopping as :func:`run_parallel`
    does; its workers die with the parent."""
    items = list(items)
    results: list[Any] = [None] * len(items)

    def put(r: tuple[int, Any]) -> None:
        results[r[0]] = r[1]

    run_parallel(functools.partial(_indexed, fn), list(enumerate(items)), jobs or os.cpu_count() or 1, put)
    return results
