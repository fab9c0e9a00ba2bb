"""Two network namespaces joined through the emulator.

A testbed is the Internet-side namespace (``xrc-<pid>-<n>-inet``: the
sender of a download), the UE-side namespace (``xrc-<pid>-<n>-ue``: the
receiver), and one TUN device in each, created by the emulator (the Rust
``xrc._core.Emulator``) and moved into its namespace. Both sides see the
same point-to-point addresses, ``10.77.0.1`` (Internet side) and
``10.77.0.2`` (UE side), so packets cross the emulator unchanged.

Settings (``sysctls``) are written inside the namespaces
(``net.ipv4.tcp_congestion_control``, ``tcp_no_metrics_save``, ...); a new
namespace starts from the kernel's defaults and takes them away with it.
One global setting may have to change: a namespace other than the initial
one may only make an algorithm its default if the algorithm is in the
global ``net.ipv4.tcp_allowed_congestion_control`` (Linux
``tcp_set_default_congestion_control`` returns EPERM otherwise), so the
testbed adds it there for its lifetime and restores the original list on
the way out. Testbeds of several processes may overlap (two `xrc emulate`
runs, two test suites), so each writes what it added and the list as it
was before any testbed to ``/run/xrc-sysctl-<pid>.json``, and every change
of the list happens under one lock (``/run/xrc-sysctl.lock``): the list is
always the original plus what the live testbeds need, and the last one out
restores the original. A process killed without a chance to restore has
its file cleaned by the next testbed on the machine (:func:`remove_stale`).

Clean-up happens on every exit path of the ``with`` block (normal end,
exception, ``KeyboardInterrupt``, ``SystemExit`` from the SIGTERM handler
that :func:`terminate_on_sigterm` installs): the processes started in the
namespaces are stopped (by their own process group), the emulator thread
is stopped, the namespaces are deleted (which removes the TUN devices in
them), and the devices' descriptors are closed. Namespaces are named with
the owning process id; :func:`remove_stale` deletes those whose process
is gone (left behind by ``kill -9``), and runs before every set-up.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import time
import contextlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..outdir import pid_alive

INET_IP = "10.77.0.1"
UE_IP = "10.77.0.2"
PREFIX = "xrc-"
#: UEs the address plan holds (the emulator's ``access::MAX_UES``).
MAX_UES = 253


def ue_ip(k: int) -> str:
    """UE k's address on the UE side (the emulator classifies packets to
    UEs by it: a downlink packet's destination, an uplink packet's source)."""
    if not 0 <= k < MAX_UES:
        raise ValueError(f"UE index {k} outside 0..{MAX_UES - 1}")
    return f"10.77.0.{2 + k}"

_NAME = re.compile(r"^xrc-(\d+)-(\d+)-(inet|ue)$")
_counter = itertools.count()


class TestbedError(RuntimeError):
    """The machine cannot host a testbed (no root, no TUN, missing tool):
    the message says what is missing. The CLI exits with status 2."""


def _run(argv: list[str], *, check: bool = True, timeout: float = 10.0) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {(r.stderr or r.stdout).strip()}")
    return r


def missing_requirements(tools: tuple[str, ...] = ("ip",)) -> list[str]:
    """What this machine lacks for a testbed (empty when it can host one)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (network namespaces and TUN devices need CAP_NET_ADMIN; run as root)")
    if not os.path.exists("/dev/net/tun"):
        missing.append("/dev/net/tun (the kernel's TUN driver: modprobe tun)")
    elif os.geteuid() == 0:
        try:
            os.close(os.open("/dev/net/tun", os.O_RDWR))
        except OSError as e:
            missing.append(f"/dev/net/tun cannot be opened: {e}")
    for t in tools:
        if shutil.which(t) is None:
            missing.append(f"{t} (install with `make setup-linux-ref`)")
    return missing


def require(tools: tuple[str, ...] = ("ip",)) -> None:
    """Raises :class:`TestbedError` naming everything that is missing."""
    m = missing_requirements(tools)
    if m:
        raise TestbedError("cannot set up the emulator testbed; missing: " + "; ".join(m))


def our_namespaces(pid: int | None = None) -> list[str]:
    """Namespaces named like ours (of process ``pid``, or of any)."""
    r = _run(["ip", "netns", "list"], check=False)
    names = [line.split()[0] for line in r.stdout.splitlines() if line.strip()]
    out = []
    for n in names:
        m = _NAME.match(n)
        if m and (pid is None or int(m.group(1)) == pid):
            out.append(n)
    return out


STATE_DIR = Path("/run")
ALLOWED_CC = "net.ipv4.tcp_allowed_congestion_control"
#: How long a testbed waits for another process's change of the global list
#: (held for a read and a write, never across a run).
LOCK_TIMEOUT_S = 10.0


def _sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def _state_file(pid: int) -> Path:
    return STATE_DIR / f"xrc-sysctl-{pid}.json"


@contextmanager
def _host_lock() -> Iterator[None]:
    """The machine-wide lock under which testbeds change the global list."""
    fd = os.open(STATE_DIR / "xrc-sysctl.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TestbedError(f"{STATE_DIR / 'xrc-sysctl.lock'}: another process held it for more than "
                                       f"{LOCK_TIMEOUT_S:.0f} s while changing {ALLOWED_CC}") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)


def _read_state(f: Path) -> tuple[str, list[str]] | None:
    """(the list before any testbed, the names this holder added) from a
    state file; a file of an older version held only the original."""
    try:
        saved = json.loads(f.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or not isinstance(saved.get(ALLOWED_CC), str):
        return None
    needs = saved.get("needs", [])
    return saved[ALLOWED_CC], [n for n in needs if isinstance(n, str)] if isinstance(needs, list) else []


def _states() -> dict[int, tuple[str, list[str]] | None]:
    out = {}
    for f in STATE_DIR.glob("xrc-sysctl-*.json"):
        m = re.match(r"xrc-sysctl-(\d+)\.json$", f.name)
        if m:
            out[int(m.group(1))] = _read_state(f)
    return out


def _apply_allowed(original: str, holders: list[tuple[str, list[str]]]) -> None:
    """Writes the original list plus what the live holders need (under the lock)."""
    wanted = original.split()
    for _, needs in holders:
        wanted += [n for n in needs if n not in wanted]
    path = _sysctl_path(ALLOWED_CC)
    if path.read_text().split() != wanted:
        path.write_text(" ".join(wanted) + "\n")


def remove_stale() -> list[str]:
    """Deletes namespaces of testbeds whose owning process is gone, and
    restores global settings such a process changed and could not restore.
    Returns what it cleaned."""
    removed = []
    for n in our_namespaces():
        pid = int(_NAME.match(n).group(1))
        if not pid_alive(pid):
            # Processes the dead owner started in it (iperf3) would keep the
            # namespace alive after its name is gone: they are ended first.
            for p in _run(["ip", "netns", "pids", n], check=False).stdout.split():
                try:
                    os.kill(int(p), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            _run(["ip", "netns", "del", n], check=False)
            removed.append(n)
    if not any(STATE_DIR.glob("xrc-sysctl-*.json")):
        return removed
    with _host_lock():
        states = _states()
        dead = {pid: st for pid, st in states.items() if not pid_alive(pid)}
        if not dead:
            return removed
        live = [st for pid, st in states.items() if pid not in dead and st is not None]
        originals = [st[0] for st in live] or [st[0] for st in dead.values() if st is not None]
        if originals:
            _apply_allowed(originals[0], live)
            removed.append(f"{ALLOWED_CC}={_sysctl_path(ALLOWED_CC).read_text().strip()}")
        for pid in dead:
            _state_file(pid).unlink(missing_ok=True)
    return removed


@contextmanager
def allowed_congestion_control(names: list[str]) -> Iterator[None]:
    """Makes ``names`` allowed globally for the block's duration (see the
    module doc); on every exit path the list goes back to the original plus
    what other live testbeds still need."""
    path = _sysctl_path(ALLOWED_CC)
    state = _state_file(os.getpid())
    with _host_lock():
        others = [st for pid, st in _states().items() if pid != os.getpid() and st is not None and pid_alive(pid)]
        original = others[0][0] if others else path.read_text().strip()
        needs = [n for n in dict.fromkeys(names) if n not in original.split()]
        if not needs:
            registered = False
        else:
            registered = True
            state.write_text(json.dumps({ALLOWED_CC: original, "needs": needs}))
            try:
                _apply_allowed(original, [*others, (original, needs)])
            except BaseException:
                state.unlink(missing_ok=True)
                raise
    try:
        yield
    finally:
        if registered:
            with _host_lock():
                state.unlink(missing_ok=True)
                others = [st for pid, st in _states().items() if st is not None and pid_alive(pid)]
                _apply_allowed(original, others)


def ns_exec(ns: str, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv]


@dataclass
class Testbed:
    """A running testbed (inside the ``with`` block of :func:`testbed`).
    ``app_cpus``: the CPUs commands started through :meth:`run` and
    :meth:`popen` may use (all but the emulator's), or None."""

    inet_ns: str
    ue_ns: str
    emulator: Any
    inet_ip: str = INET_IP
    ue_ip: str = UE_IP
    app_cpus: list[int] | None = None
    #: UE k's address (``ue_ips[0]`` is ``ue_ip``).
    ue_ips: list[str] = field(default_factory=lambda: [UE_IP])
    #: The TUN device of each side (``"inet"``, ``"ue"``).
    devs: dict[str, str] = field(default_factory=dict)
    procs: list[subprocess.Popen] = field(default_factory=list)

    def _argv(self, side: str, argv: list[str]) -> list[str]:
        if self.app_cpus:
            argv = ["taskset", "-c", ",".join(map(str, self.app_cpus)), *argv]
        return ns_exec(self.ns(side), argv)

    def run(self, side: str, argv: list[str], *, timeout: float, check: bool = True) -> subprocess.CompletedProcess:
        """Runs a command to completion in the ``"inet"`` or ``"ue"`` namespace."""
        return _run(self._argv(side, argv), check=check, timeout=timeout)

    def popen(self, side: str, argv: list[str], **kw) -> subprocess.Popen:
        """Starts a command in a namespace, in its own process group (so
        clean-up can stop it and its children)."""
        p = subprocess.Popen(self._argv(side, argv), start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def ns(self, side: str) -> str:
        if side == "inet":
            return self.inet_ns
        if side == "ue":
            return self.ue_ns
        raise ValueError(f"side: 'inet' or 'ue', got {side!r}")

    def sysctl(self, side: str, key: str) -> str:
        return self.run(side, ["sysctl", "-n", key], timeout=5).stdout.strip()

    def nstat(self, side: str = "inet") -> dict[str, int]:
        """The namespace's kernel counters (``nstat -a``: absolute values;
        the namespace is new, so they count this testbed's traffic only)."""
        r = self.run(side, ["nstat", "-asz", "--json"], timeout=10)
        doc = json.loads(r.stdout)
        kernel = doc.get("kernel", doc)
        return {k: int(v) for k, v in kernel.items()}

    def stop_processes(self, grace_s: float = 2.0) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + grace_s
        for p in self.procs:
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=5)


def default_emulator_cpu() -> int | None:
    """The CPU the emulator thread is pinned to: the last one (None on a
    single-CPU machine, where pinning would gain nothing)."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1] if len(cpus) > 1 else None


@contextmanager
def testbed(resolved: dict, *, downlink_text: str | None = None, uplink_text: str | None = None,
            sysctls: dict[str, str] | None = None, options: dict | None = None,
            emulator_cpu: int | None = None, num_ues: int = 1,
            side_sysctls: dict[str, dict[str, str]] | None = None) -> Iterator[Testbed]:
    """Sets up the two namespaces and the emulator for a resolved scenario
    (any topology), yields the :class:`Testbed`
    with the emulator created but not started, and tears everything down
    on the way out. ``sysctls`` are written in both namespaces,
    ``side_sysctls["inet"]`` / ``["ue"]`` in one.

    With ``emulator_cpu`` (the CPU the caller will pin the emulator to),
    the network stacks and the applications are kept off that CPU: Receive
    Packet Steering on both devices (``rps_cpus``) hands each packet the
    emulator writes to another CPU's backlog, so the receiving stack's
    input processing (and, for ACKs, the sender's transmit work they
    trigger) does not run in softirq on the emulator's CPU, and commands
    run under ``taskset`` on the other CPUs (with the kernel running
    ``preempt=none``, a task in a long system call on the emulator's CPU
    would hold its wake-up).

    With ``num_ues`` > 1 the UE side holds one address per UE,
    :func:`ue_ip` (UE 0 is ``10.77.0.2``, UE k ``10.77.0.(2 + k)``), and the
    Internet side routes to each of them through its device."""
    require(("ip", "sysctl"))
    if not 1 <= num_ues <= MAX_UES:
        raise TestbedError(f"ues: the UE side holds at most {MAX_UES} UE addresses "
                           f"(10.77.0.2 ... 10.77.0.254), got {num_ues}")
    from .. import _core

    remove_stale()
    pid, n = os.getpid(), next(_counter)
    inet_ns, ue_ns = f"{PREFIX}{pid}-{n}-inet", f"{PREFIX}{pid}-{n}-ue"
    tun_inet, tun_ue = f"xrc{pid}i{n}", f"xrc{pid}u{n}"
    if len(tun_ue) > 15:
        tun_inet, tun_ue = f"x{pid % 10**9}i{n % 100}", f"x{pid % 10**9}u{n % 100}"
    others = [c for c in sorted(os.sched_getaffinity(0)) if c != emulator_cpu] if emulator_cpu is not None else []
    created: list[str] = []
    emu = None
    tb = None
    cc = [v for d in (sysctls or {}, *(side_sysctls or {}).values()) for k, v in (d or {}).items()
          if k == "net.ipv4.tcp_congestion_control"]
    allowed = allowed_congestion_control(cc)
    allowed.__enter__()
    try:
        for ns in (inet_ns, ue_ns):
            _run(["ip", "netns", "add", ns])
            created.append(ns)
        emu = _core.Emulator(json.dumps(resolved, sort_keys=True), tun_inet, tun_ue, downlink_text, uplink_text,
                             json.dumps(options) if options else None)
        for side, ns, dev, me, peer in (("inet", inet_ns, tun_inet, INET_IP, UE_IP),
                                        ("ue", ue_ns, tun_ue, UE_IP, INET_IP)):
            # Settings first, so that nothing (an IPv6 router solicitation)
            # leaves the device before they hold.
            settings = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1",
                        **(sysctls or {}), **((side_sysctls or {}).get(side) or {})}
            for k, v in settings.items():
                _run(ns_exec(ns, ["sysctl", "-q", "-w", f"{k}={v}"]))
                got = _run(ns_exec(ns, ["sysctl", "-n", k])).stdout.split()
                if got != str(v).split():
                    raise RuntimeError(f"sysctl {k} in {ns}: wrote {v!r}, reads {' '.join(got)!r}")
            _run(["ip", "link", "set", dev, "netns", ns])
            _run(["ip", "-n", ns, "addr", "add", me, "peer", f"{peer}/32", "dev", dev])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            _run(["ip", "-n", ns, "link", "set", dev, "up"])
            for k in range(1, num_ues):
                if ns == ue_ns:
                    _run(["ip", "-n", ns, "addr", "add", f"{ue_ip(k)}/32", "dev", dev])
                else:
                    _run(["ip", "-n", ns, "route", "add", f"{ue_ip(k)}/32", "dev", dev])
            if others:
                mask = format(sum(1 << c for c in others), "x")
                _run(ns_exec(ns, ["sh", "-c", f"echo {mask} > /sys/class/net/{dev}/queues/rx-0/rps_cpus"]))
        tb = Testbed(inet_ns=inet_ns, ue_ns=ue_ns, emulator=emu, app_cpus=others or None,
                     ue_ips=[ue_ip(k) for k in range(num_ues)], devs={"inet": tun_inet, "ue": tun_ue})
        yield tb
    finally:
        if tb is not None:
            tb.stop_processes()
        if emu is not None and emu.running:
            try:
                emu.stop()
            except OSError:
                pass
        for ns in created:
            # TCP sockets still open there (a transfer's unsent data, an
            # orphan retransmitting into the stopped path) outlive the
            # namespace for minutes, and with them a congestion control of
            # xrc's they use: abort them first (SOCK_DESTROY, as `ss -K`).
            if shutil.which("ss"):
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    _run(ns_exec(ns, ["ss", "-K", "-t", "state", "all"]), check=False)
            _run(["ip", "netns", "del", ns], check=False)
        if emu is not None:
            try:
                emu.close()
            except OSError:
                pass
        allowed.__exit__(None, None, None)


def leftovers() -> dict[str, list[str]]:
    """Namespaces and interfaces of this process still present (for tests):
    ``{"namespaces": [...], "interfaces": [...]}``."""
    pid = os.getpid()
    links = _run(["ip", "-o", "link", "show"], check=False).stdout
    ifaces = [m.group(1) for m in re.finditer(r"^\d+: (xrc\d+[iu]\d+|x\d+[iu]\d+)[:@]", links, re.M)
              if str(pid) in m.group(1)]
    return {"namespaces": our_namespaces(pid), "interfaces": ifaces}


def terminate_on_sigterm() -> None:
    """Makes SIGTERM (and SIGHUP) unwind like Ctrl-C, so ``finally``
    blocks clean up: they raise ``SystemExit(128 + signal)``."""

    def _raise(signum, _frame):
        raise SystemExit(128 + signum)

    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _raise)


def kernel_hz() -> int | None:
    """CONFIG_HZ from /proc/config.gz or /boot/config-$(uname -r), if readable."""
    import gzip

    rel = os.uname().release
    for path, opener in (("/proc/config.gz", gzip.open), (f"/boot/config-{rel}", open)):
        if Path(path).exists():
            try:
                with opener(path, "rt") as f:
                    for line in f:
                        if line.startswith("CONFIG_HZ="):
                            return int(line.split("=", 1)[1])
            except OSError:
                continue
    return None
