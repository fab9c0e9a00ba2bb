"""Independent runs on local worker processes that stop on Ctrl-C.

``concurrent.futures`` alone does not stop: on Ctrl-C its ``with`` block
waits for every queued run, and a worker that catches the interrupt inside
one run simply takes the next. Stopping its workers needed the pool's
private attributes (its process table, its manager thread). So the
workers here are plain :class:`multiprocessing.Process` objects this module
starts, feeds one item at a time over a pipe of their own, and reaps.

The workers ignore SIGINT (a terminal sends it to the whole process
group); the parent, on KeyboardInterrupt (or any error), sends SIGTERM to
the workers and gives them no more items. A worker turns SIGTERM into an
exception at its next check (the core checks between bounded steps), so a
run being written removes its staging directory before the worker exits.
Each worker also gets SIGTERM when the parent dies (SIGKILL included). A
worker killed from outside is :class:`WorkerDied`, naming the signal.
:func:`map_parallel` is the same for a list of results in order (``xrc
study``).
"""

from __future__ import annotations

import collections
import functools
import multiprocessing
import os
import pickle
import signal
import sys
import traceback
from multiprocessing.connection import wait as mp_wait
from typing import Any, Callable, Iterable

from ._proc import die_with_parent


def require_dask(address: str | None = None) -> None:
    """``--engine dask`` needs Dask, which only the ``cluster`` extra
    installs: say so (a ScenarioError, exit 2) before anything runs,
    instead of a ModuleNotFoundError traceback; and an ``--address`` Dask
    cannot parse is refused as well (it was a ValueError traceback)."""
    from .scenario import ScenarioError

    try:
        import dask.distributed  # noqa: F401
    except ImportError as e:
        raise ScenarioError(f"--engine dask needs Dask, which xrc installs with its cluster extra: "
                            f"pip install 'xrc-lab[cluster]' ({e})") from None
    if address is not None:
        from distributed.comm.addressing import parse_address, parse_host_port

        try:
            scheme, loc = parse_address(address)
            if scheme in ("tcp", "tls", "ws", "wss"):
                parse_host_port(loc)
        except (ValueError, TypeError) as e:
            raise ScenarioError(f"--address {address!r}: not a Dask scheduler's address ({e}); give HOST:PORT, "
                                "e.g. tcp://127.0.0.1:8786") from None


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
        # Idle, or handing a result back: an exception there would be sent
        # back as the run's result and the worker would wait for the next
        # run (concurrent.futures did so after its parent had died), and
        # there is nothing to clean up.
        os._exit(_stopped)
    raise _Terminated(_stopped)


def _silent_terminated(hook: Callable[[Any], None]) -> Callable[[Any], None]:
    def unraisable(u: Any) -> None:
        if isinstance(u.exc_value, _Terminated):
            return   # remembered in _stopped: the worker leaves after the run
        hook(u)

    return unraisable


def _worker_init(parent: int | None = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    # A SIGTERM landing in a finalizer (ParquetWriter.__del__) was printed
    # as "Exception ignored ... Traceback" on the sweep's stderr (found by
    # the edge fuzzer); the request is kept in _stopped all the same.
    sys.unraisablehook = _silent_terminated(sys.unraisablehook)
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


def _how(exitcode: int | None) -> str:
    if exitcode is None:
        return "how is not known"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    if exitcode > 128 and exitcode - 128 in (signal.SIGTERM, signal.SIGHUP):
        # A SIGTERM (or SIGHUP) from outside, caught by the worker's handler.
        return f"stopped by {signal.Signals(exitcode - 128).name}"
    return f"exit status {exitcode}"


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, as text (the
    exception's own traceback does not cross the pipe)."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


def _reply(conn, key: int, fn: Callable[[Any], Any], item: Any) -> None:
    try:
        reply: tuple = (key, True, _guarded(fn, item), "")
    except BaseException as e:  # noqa: BLE001 - sent back, raised in the parent
        reply = (key, False, e, "".join(traceback.format_exception(e)))
    try:
        conn.send(reply)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        # Connection.send pickles the whole message before writing any of it.
        conn.send((key, False, RuntimeError(f"the result of a run could not be sent back from its worker: {e}"),
                   reply[3]))


def _serve(conn, fn: Callable[[Any], Any], parent: int, parent_ends: tuple = ()) -> None:
    """A worker's life: runs each item the parent sends and sends back the
    result (or the exception), until the parent sends None or goes away.
    `parent_ends`: the parent's ends of the pipes, inherited by the fork;
    closed, so that the parent's going away is an end of file here."""
    _worker_init(parent)
    for c in parent_ends:
        c.close()
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        _reply(conn, job[0], fn, job[1])


class _Worker:
    """A worker process of :func:`run_parallel`, its end of their pipe and
    the item it runs (None: idle)."""

    def __init__(self, proc, conn) -> None:
        self.proc = proc
        self.conn = conn
        self.key: int | None = None


def _stop(workers: list[_Worker]) -> None:
    """SIGTERM to every worker (a run being written removes its staging
    directory), SIGKILL to one still alive 10 s later; each one reaped."""
    started = [w.proc for w in workers if w.proc.pid is not None]
    for p in started:
        if p.exitcode is None:
            p.terminate()
    for p in started:
        p.join(timeout=10)
        if p.exitcode is None:
            p.kill()
            p.join(timeout=5)
    for w in workers:
        w.conn.close()


def _finish(workers: list[_Worker]) -> None:
    """Every run is done: each worker is told to leave, then reaped."""
    for w in workers:
        try:
            w.conn.send(None)
        except OSError:
            pass
    for w in workers:
        w.proc.join(timeout=10)
    _stop(workers)  # one that did not leave (none should)


def run_parallel(fn: Callable[[Any], Any], items: Iterable[Any], jobs: int,
                 on_result: Callable[[Any], None]) -> None:
    """Calls ``fn(item)`` for every item on `jobs` worker processes and
    ``on_result`` with each result as it comes. On KeyboardInterrupt (or any
    error, the first exception of a run included) stops every worker, then
    re-raises. A worker that dies in the middle of a run is
    :class:`WorkerDied`."""
    todo = collections.deque(enumerate(items))
    # Fork, whatever the caller's default: a worker must be this process's
    # child for PR_SET_PDEATHSIG to tie it to this process. Under the
    # forkserver method (set by a caller, and Python 3.14's default on
    # Linux) a worker is the fork server's child: it took that for its
    # parent having died and stopped at once, so every xrc.sweep(jobs=2)
    # failed with "a worker process died".
    ctx = multiprocessing.get_context("fork")
    workers: list[_Worker] = []
    parent = os.getpid()
    try:
        for _ in range(min(jobs, len(todo))):
            here, there = ctx.Pipe()
            try:
                ends = tuple(w.conn for w in workers) + (here,)
                w = _Worker(ctx.Process(target=_serve, args=(there, fn, parent, ends), name="xrc-worker"), here)
                workers.append(w)
                w.proc.start()
            finally:
                there.close()
        for w in workers:
            _give(w, todo)
        while True:
            busy = [w for w in workers if w.key is not None]
            if not busy:
                break
            ready = set(mp_wait([w.conn for w in busy] + [w.proc.sentinel for w in busy]))
            for w in busy:
                if w.conn not in ready and w.proc.sentinel not in ready:
                    continue
                try:
                    key, ok, value, tb = w.conn.recv()
                except (EOFError, OSError):
                    w.proc.join(timeout=5)
                    raise WorkerDied(f"a worker process died in the middle of a run ({_how(w.proc.exitcode)}; "
                                     f"the out-of-memory killer, for one, sends SIGKILL)") from None
                w.key = None
                if not ok:
                    if tb:
                        value.__cause__ = _RemoteTraceback(tb)
                    raise value
                on_result(value)
                _give(w, todo)
    except BaseException:
        _stop(workers)
        raise
    _finish(workers)


def _give(w: _Worker, todo: collections.deque) -> None:
    if todo:
        key, item = todo.popleft()
        w.key = key
        w.conn.send((key, item))


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
