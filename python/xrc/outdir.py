"""Output directories (run directories, reports) written whole or not at all.

A directory is built under a hidden staging name beside its destination,
``.NAME.partial-PID``, and put in place at the end:

- onto a fresh destination by one ``rename``;
- onto an existing one (``--force``) by one ``renameat2(RENAME_EXCHANGE)``,
  which swaps the two atomically, so a kill at any instant leaves either
  the old or the new directory under the name; the old one, now under the
  staging name, is deleted after. Where the file system cannot exchange,
  two renames go through ``.NAME.old-PID``; a kill between them is repaired
  by the next run to the same destination (the old directory returns).

``--force`` replaces only what xrc wrote: a directory whose
``metadata.json`` xrc wrote (it carries ``core_version``). Anything else is
refused, whatever its contents.

Staging directories of processes that no longer exist (killed runs) are
removed by the next run to the same destination, or by a sweep over its
runs.

One writer at a time: a process writing a destination holds an exclusive
lock (``flock``) on ``.NAME.lock`` beside it from its checks to its commit
(:class:`DirLock`); a second process is refused at once, naming the
first. And a destination that appeared while a run without ``--force``
was running is never replaced by it (the final ``rename`` cannot replace
a non-empty directory; the run is refused then).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import re
import shutil
import weakref
from collections.abc import Callable
from pathlib import Path

from . import stopping
from .scenario import ScenarioError


class OutputError(ScenarioError):
    """The output directory cannot be used (bad input like any other: a
    ScenarioError, so that the Python API raises one kind of error for
    what the caller gave)."""


#: A file inside a staging directory, so cleanup never touches anything else.
STAGING_MARK = ".xrc-staging"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def is_xrc_output(d: Path) -> bool:
    """Whether `d` is a directory xrc wrote (its metadata says so)."""
    from .rundir import read_json

    if not (d / "metadata.json").is_file():
        return False
    try:
        # Not a plain read: a named pipe there made it wait for ever.
        meta = read_json(d / "metadata.json")
    except ValueError:
        return False
    return "core_version" in meta


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ours(d: Path) -> bool:
    return (d / STAGING_MARK).exists() or is_xrc_output(d)


def clean_stale(out: Path) -> list[Path]:
    """Removes staging directories of `out` left by dead processes and
    repairs a replacement killed halfway. Returns what it removed."""
    return clean_stale_in(out.parent, out.name)


def clean_stale_in(directory: Path, name: str | None = None) -> list[Path]:
    """:func:`clean_stale` for every destination in `directory` (or `name`)."""
    removed: list[Path] = []
    if not directory.is_dir():
        return removed
    pat = re.compile(r"^\.(" + (re.escape(name) if name else ".+") + r")\.(partial|old)-(\d+)$")
    for d in sorted(directory.iterdir()):
        m = pat.match(d.name)
        if not m or not d.is_dir() or pid_alive(int(m.group(3))):
            continue
        if not _ours(d):
            # A process killed between creating its staging directory and
            # marking it (prepare) leaves it empty; rmdir removes only that.
            try:
                d.rmdir()
                removed.append(d)
            except OSError:
                pass
            continue
        out = directory / m.group(1)
        if m.group(2) == "old" and not out.exists():
            # Killed between the two renames of the fallback: put the old back.
            os.rename(d, out)
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


def file_in_the_way(out: Path) -> Path | None:
    """The nearest of `out`'s parents that exists, if it is not a directory
    (a file where --out needs a directory): nothing can be made under it."""
    for a in Path(out).parents:
        if os.path.lexists(a):
            return None if a.is_dir() else a
    return None


def check_parents(out: Path) -> None:
    """Refuses an --out below a file (``afile/sub``) with a message naming
    both; making it said only "File exists" or "Not a directory"."""
    a = file_in_the_way(out)
    if a is not None:
        kind = "is a file" if a.is_file() else "exists and is not a directory"
        raise OutputError(f"--out {str(out)!r}: {str(a)!r} {kind}, so nothing can be written under it; "
                          f"choose another --out")


def output_around(out: Path) -> Path | None:
    """The directory xrc wrote (a run directory, a report) that `out` is or
    lies inside, if any; symbolic links followed."""
    try:
        here = Path(out).resolve()
    except (OSError, RuntimeError):
        return None
    for d in (here, *here.parents):
        if d.is_dir() and is_xrc_output(d):
            return d
    return None


def check_not_inside_output(out: Path, writer: str) -> None:
    """Refuses an --out that is, or lies inside, a directory xrc wrote:
    such a directory holds only what its command wrote (a run's own figures
    are in its plots/), which ``--force`` replaces whole."""
    d = output_around(out)
    if d is None:
        return
    from .rundir import read_json

    try:
        kind = read_json(d / "metadata.json").get("xrc_output", "")
    except ValueError:
        kind = ""
    what = {"run": "run directory", "report": "report directory"}.get(kind, "directory written by xrc")
    where = "is" if d == Path(out).resolve() else "lies inside"
    own = f" (its own figures are in {str(d / 'plots')!r})" if kind == "run" else ""
    raise OutputError(f"--out {str(out)!r} {where} the {what} {str(d)!r}{own}; {writer} does not add files to "
                      f"one: choose an --out outside it, e.g. {str(d.parent / (d.name + '-plots'))!r}")


def check_named(out: Path, what: str) -> None:
    """Refuses an --out that names the current directory, one above it or
    the root: only a directory with a name of its own can be put in place."""
    if out.name in ("", ".", ".."):
        raise OutputError(f"--out {str(out)!r} names the current directory, one above it or the root; give the "
                          f"{what} a name of its own (e.g. runs/NAME)")


def check(out: Path, force: bool, what: str = "run directory", *,
          ours: Callable[[Path], bool] | None = None, not_ours: str | None = None) -> None:
    """Refuses a destination that may not be written (see the module doc).
    ``ours`` says whether an existing directory holds what this command
    writes (default: an xrc output with its metadata.json) and ``not_ours``
    how the refusal describes one that does not."""
    ours = ours or is_xrc_output
    not_ours = not_ours or f"an xrc {what} (no metadata.json written by xrc); --force replaces only what xrc wrote"
    check_named(out, what)
    check_parents(out)
    try:
        if out.exists() and not out.is_dir():
            raise OutputError(f"--out {str(out)!r} exists and is not a directory")
        if out.is_dir() and any(out.iterdir()):
            if not force:
                raise OutputError(f"--out {str(out)!r} already holds results; choose another directory or pass "
                                  f"--force to replace it")
            if not ours(out):
                raise OutputError(f"--out {str(out)!r} holds files that are not {not_ours}, so remove it "
                                  f"yourself or choose another directory")
    except OSError as e:
        raise OutputError(f"--out {str(out)!r}: {e.strerror or e}") from None


#: The directory locks this process holds (see :func:`_drop_locks_in_child`).
_HELD: "weakref.WeakSet[DirLock]" = weakref.WeakSet()


def _drop_locks_in_child() -> None:
    """In a forked child (a sweep's worker): an ``flock`` belongs to the open
    file description, which the fork shares, so a worker still finishing a
    run after its parent was killed kept the parent's ``--out`` locked, and
    a resume at once was refused. The child lets go of its copies."""
    for lock in list(_HELD):
        if lock.fd is not None:
            try:
                os.close(lock.fd)
            except OSError:
                pass
            lock.fd = None
    _HELD.clear()


os.register_at_fork(after_in_child=_drop_locks_in_child)


class DirLock:
    """An exclusive lock on writing `out`: ``flock`` on ``.NAME.lock``
    beside it, taken without waiting. The holder removes the file on
    release; a file a killed process left is free (its lock died with it)
    and is taken over. A lock taken on a file that was removed meanwhile
    is taken again on the new one (the inode is checked). A forked child
    does not hold its parent's locks."""

    def __init__(self, out: Path) -> None:
        self.path = out.parent / f".{out.name}.lock"
        self.out = out
        self.fd: int | None = None

    def acquire(self) -> None:
        for _ in range(100):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            except OSError as e:
                raise OutputError(f"--out {str(self.out)!r}: {e.strerror or e}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                finally:
                    os.close(fd)
                raise OutputError(f"--out {str(self.out)!r} is being written by another xrc process (pid {holder}); "
                                  "wait for it to finish or choose another directory") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                try:
                    # Who holds it, for the refusal's message (a full disk
                    # may refuse the bytes; the lock holds without them).
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                except OSError:
                    pass
                self.fd = fd
                _HELD.add(self)
                return
            os.close(fd)
        raise OutputError(f"--out {str(self.out)!r}: could not lock {self.path}")

    def release(self) -> None:
        if self.fd is None:
            return
        _HELD.discard(self)
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "DirLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def staging_path(out: Path) -> Path:
    """The name of this process's staging directory for `out`."""
    return out.parent / f".{out.name}.partial-{os.getpid()}"


def prepare(out: Path, force: bool, what: str = "run directory") -> Path:
    """Repairs what a killed run left, checks the destination and returns a
    fresh staging directory beside it. The caller owns the directory from
    the moment it exists: use :class:`staged`, which removes it even when a
    signal's exception lands as this returns."""
    try:
        clean_stale(out)
    except OSError as e:
        raise OutputError(f"--out {str(out)!r}: {e.strerror or e}") from None
    check(out, force, what)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = staging_path(out)
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir()
    except OSError as e:
        raise OutputError(f"--out {str(out)!r}: {e.strerror or e}") from None
    try:
        (staging / STAGING_MARK).touch()
    except OSError as e:
        # A full disk can refuse the mark after the directory was made:
        # leave nothing behind.
        discard(staging)
        raise OutputError(f"--out {str(out)!r}: {e.strerror or e}") from None
    return staging


class staged:
    """``with staged(out, force) as staging:`` gives a fresh staging
    directory for `out` (:func:`prepare`) and removes it if the block ends
    by any exception (Ctrl-C, a SIGTERM's, an error); the block puts it in
    place with :func:`commit` as its last step.

    Was ``staging = prepare(...)`` followed by ``try:``: a SIGTERM or
    Ctrl-C whose exception landed between the two (the handler runs between
    any two bytecodes) left the staging directory beside --out until the
    next run to the same destination. Here the directory's name is known
    before it is made and ``__enter__`` removes it on any exception of its
    own; once ``__enter__`` has returned, CPython is inside the ``with``
    (its ``BEFORE_WITH`` runs no signal handler after the call), so
    ``__exit__`` covers the rest."""

    def __init__(self, out: str | Path, force: bool, what: str = "run directory") -> None:
        self.out = Path(out)
        self.force = force
        self.what = what
        self.path: Path | None = None
        self.lock: DirLock | None = None
        self.janitor: Janitor | None = None

    def __enter__(self) -> Path:
        self.path = staging_path(self.out)
        try:
            self.janitor = Janitor(self.path)
            check_named(self.out, self.what)
            check_parents(self.out)
            try:
                self.out.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise OutputError(f"--out {str(self.out)!r}: {e.strerror or e}") from None
            self.lock = DirLock(self.out)
            self.lock.acquire()
            prepare(self.out, self.force, self.what)
        except BaseException:
            # Refused before anything was made (nothing to remove), or
            # stopped anywhere after the directory was made.
            discard(self.path)
            if self.lock is not None:
                self.lock.release()
            if self.janitor is not None:
                self.janitor.release()
            raise
        return self.path

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not None and self.path is not None:
                discard(self.path)
        finally:
            if self.lock is not None:
                self.lock.release()
            if self.janitor is not None:
                self.janitor.release()


#: What the janitor runs: waits for its standard input to close (the writer
#: ended or died), then removes the staging directory if it is still one.
_JANITOR = 'read -r _; if [ -e "$1/{mark}" ]; then rm -rf -- "$1"; else rmdir -- "$1" 2>/dev/null; fi; exit 0'


class Janitor:
    """A small process (``sh``) that removes a staging directory if the
    process writing it dies without doing so: a SIGKILL (``timeout -s
    KILL``, the out-of-memory killer) left ``.NAME.partial-PID`` beside the
    destination, possibly gigabytes, until the next run to the same place.

    It holds the read end of a pipe whose write end only this process has;
    the pipe closes when this process releases it or dies, however. Then
    the directory is removed if it still carries the staging mark (a
    committed one no longer does, nor is it under that name). In its own
    session, so that Ctrl-C to the terminal or a signal to the process
    group does not end it first. Without ``sh`` there is no janitor (and
    the next run cleans up, as before)."""

    def __init__(self, staging: Path) -> None:
        import subprocess

        self.proc = None
        try:
            self.proc = subprocess.Popen(["sh", "-c", _JANITOR.format(mark=STAGING_MARK), "xrc-janitor",
                                          str(staging.absolute())], stdin=subprocess.PIPE,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True, close_fds=True)
        except OSError:
            pass

    def release(self) -> None:
        """Lets it go (call after the staging directory was committed or
        removed) and reaps it."""
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            p.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            p.wait(timeout=10)
        except BaseException:
            # It ends by itself once the pipe is closed; not waited for.
            pass


def discard(staging: Path) -> None:
    """Removes a staging directory whole, even when an exception arrives in
    the middle of it: a signal's, as SIGTERM raises wherever it finds the
    process (a sweep stops its workers so; one stopped while cleaning up
    after a full disk left its staging directory half removed in runs/).
    The removal is finished first, then that exception goes on."""
    pending: BaseException | None = None
    for _ in range(3):
        try:
            shutil.rmtree(staging, ignore_errors=True)
            break
        except BaseException as e:
            pending = pending or e
    if pending is not None:
        raise pending


def write_whole(path: Path, text: str) -> None:
    """Writes one file so that `path` holds either its old content or all
    of `text`: through a temporary file beside it, renamed over it at the
    end (a full disk left a truncated, invalid file). The temporary file is
    removed on every failure; OSError goes on to the caller."""
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _exchange(a: Path, b: Path) -> bool:
    """Swaps two paths atomically (Linux renameat2). False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def commit(staging: Path, out: Path, force: bool = True) -> None:
    """Puts the finished staging directory in place of `out`. Without
    `force` an `out` that holds anything now (another process made it while
    this one ran) is not replaced: OutputError, and the staging directory
    is left to the caller's clean-up. Nothing is committed once this process
    was asked to stop, even if the signal's exception was swallowed on the
    way (`stopping`)."""
    stopping.check()
    (staging / STAGING_MARK).unlink(missing_ok=True)
    if not out.exists():
        try:
            os.rename(staging, out)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            raise OutputError(f"--out {str(out)!r} was written by another process while this one ran; "
                              "its results are kept, these are not written") from None
        return
    if not force and out.is_dir() and any(out.iterdir()):
        raise OutputError(f"--out {str(out)!r} was written by another process while this one ran; "
                          "its results are kept, these are not written")
    if _exchange(staging, out):
        shutil.rmtree(staging, ignore_errors=True)
        return
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    os.rename(out, old)
    os.rename(staging, out)
    shutil.rmtree(old, ignore_errors=True)
