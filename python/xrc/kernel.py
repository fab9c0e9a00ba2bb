"""XRC in the Linux kernel: ``xrc kernel load|unload|status``, and the
kernel congestion controls ``xrc emulate`` runs.

The sender of the paper (``cc = "xrc"``) is a BPF congestion control
(``crates/xrc-kernel/bpf/xrc.bpf.c``, built by ``make setup`` with clang):
registered under the name ``xrc``, it is what a socket gets with
``sysctl net.ipv4.tcp_congestion_control=xrc`` or ``setsockopt(...,
TCP_CONGESTION, "xrc")``. A sock_ops program attached to the root cgroup
v2 reads the base station's option (TCP option 253, ExID 0x5852) from each
incoming ACK into the socket. ``docs/kernel.md`` describes both.

``xrc kernel load`` registers it until ``xrc kernel unload`` (pinned in
bpffs at ``/sys/fs/bpf/xrc``); ``xrc emulate`` loads it for the run when a
flow uses ``xrc`` and nothing is loaded, and removes it afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Iterator

from .emulation.testbed import TestbedError

#: The project's schemes that run in the kernel as its own BPF congestion
#: controls, and the name each registers under.
BPF_CC = {"xrc": "xrc"}

#: The kernel congestion control of the shim, through which the core's own
#: algorithms run on kernel sockets (``crates/xrc-kernel/bpf/shim.bpf.c``).
SHIM_CC = "xrc_shim"

#: Schemes that cannot run through the shim, and why.
NOT_THROUGH_SHIM = {
    "oracle": "the physical-limit oracle needs the cell's schedule ahead of time",
    "oracle-rate": "the rate oracle needs the cell's ground truth every TTI",
    "external": "the external congestion control is driven by a caller stepping the simulator (xrc.gym)",
}

#: The UDP port on which the shim's agent takes NetAssist reports (NATCP,
#: NACubic) in ``xrc emulate``; the base station sends them there.
REPORT_PORT = 5299

#: What each network signal a scheme consumes needs from the base station
#: in ``xrc emulate`` (``xrc.emulation.emulate``).
SIGNAL_NEEDS = {
    "abc": "the base station to mark its data and echo the marks",
    "pbe": "the UE to write its capacity estimate into ACKs",
    "net_assist": "NetAssist's reports from the base station",
}


def scheme_signals(scheme: str, cc_params: dict | None = None) -> list[str]:
    """The network signals `scheme` consumes with these parameters (the
    core's ``Signals``): ``abc``, ``pbe``, ``net_assist``, ``xrc_air``, ..."""
    return list(_core().scheme_signals(scheme, json.dumps(cc_params or {})))

#: What ``--set`` of ``xrc kernel load`` accepts besides the scheme's
#: ``cc_params``.
LIMITS = ("max_rate_kbps", "max_hol_ms")


class KernelError(TestbedError):
    """The machine or the input cannot do this: exit 2, nothing left loaded."""


def _core():
    from . import _core

    return _core


def object_sha256() -> str:
    """SHA-256 of the BPF object this build of xrc loads (hex)."""
    return hashlib.sha256(bytes(_core().kernel_object())).hexdigest()


def params_json(cc_params: dict | None = None, *, trace: bool = False, tag_key: str | None = None,
                **limits: Any) -> str:
    """The kernel's parameters: the scheme's ``cc_params`` as the simulator
    resolves them (unknown or bad values refused, naming them); `tag_key`,
    32 hexadecimal digits, requires the keyed tag on every option."""
    from .scenario import ScenarioError

    for k, v in (cc_params or {}).items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ScenarioError(f"cc_params.{k} must be a finite number, got {v}")
    raw = json.dumps(cc_params or {})
    try:
        resolved = json.loads(_core().resolve_cc("xrc", raw))
    except ValueError as e:
        raise ScenarioError(f"cc_params: {e}") from None
    out: dict[str, Any] = {"cc_params": resolved, "trace": trace}
    if tag_key is not None:
        check_tag_key(tag_key)
        out["tag_key"] = tag_key
    for k, v in limits.items():
        if v is None:
            continue
        if k not in LIMITS:
            raise ScenarioError(f"unknown kernel parameter {k!r} (known: {', '.join(LIMITS)} and xrc's cc_params)")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ScenarioError(f"{k} must be a positive number, got {v!r}")
        out[k] = int(v) if k == "max_rate_kbps" else float(v)
    return json.dumps(out)


def check_tag_key(key: str, flag: str = "tag_key") -> None:
    from .scenario import ScenarioError

    if not (isinstance(key, str) and len(key) == 32 and all(c in "0123456789abcdefABCDEF" for c in key)):
        raise ScenarioError(f"{flag} must be 32 hexadecimal digits (a 16-byte key), got {key!r}")


def _refused(e: ValueError) -> KernelError:
    return KernelError(str(e))


def preflight() -> None:
    """Raises :class:`KernelError` saying what this machine lacks to load."""
    try:
        _core().kernel_preflight()
    except ValueError as e:
        raise _refused(e) from None


def available() -> list[str]:
    return list(_core().kernel_available())


def pinned_status() -> dict | None:
    try:
        return _core().kernel_pinned_status()
    except ValueError as e:
        raise _refused(e) from None


def load_pinned(params: str) -> dict:
    """``xrc kernel load``: registers ``xrc`` until ``unload``."""
    try:
        k = _core().KernelCc(params, object_sha256())
    except ValueError as e:
        raise _refused(e) from None
    try:
        k.pin()
    except ValueError as e:
        k.close()
        raise _refused(e) from None
    except BaseException:
        k.close()
        raise
    return pinned_status() or {}


def unload() -> bool:
    try:
        return bool(_core().kernel_unload())
    except ValueError as e:
        raise _refused(e) from None


@contextlib.contextmanager
def loaded(cc_params: dict | None, trace_path: Path | None = None, tag_key: str | None = None) -> Iterator[dict]:
    """The kernel's ``xrc`` for the duration of the block: the load pinned
    by ``xrc kernel load`` when there is one (its parameters must be the
    flow's), otherwise a load of its own, removed on every way out. Yields
    a dict that, after the block, holds what ran (``name``, ``source``,
    ``object_sha256``, ``params``, ``counters``, ``sockets``)."""
    want = json.loads(params_json(cc_params, trace=trace_path is not None, tag_key=tag_key))
    info: dict[str, Any] = {"name": "xrc", "scheme": "xrc"}
    pinned = pinned_status()
    if pinned is not None:
        if trace_path is not None:
            raise KernelError("a kernel trace needs xrc loaded by the run itself; `xrc kernel unload` first")
        ran, asked = _core_params(pinned["params"]), _core_params(want["cc_params"])
        if tag_key is not None:
            raise KernelError("a keyed tag needs xrc loaded by the run itself with the key; `xrc kernel unload` first")
        if ran != asked:
            raise KernelError(f"the xrc loaded by `xrc kernel load` runs with {ran}, the flow asks for {asked}: "
                              "unload it or give the flow the same cc_params")
        info.update(source="pinned by xrc kernel load", object_sha256=pinned["object_sha256"])
        try:
            yield info
        finally:
            after = pinned_status() or {}
            info.update(params=after.get("params"), counters=after.get("counters"), sockets=after.get("sockets"))
        return
    try:
        k = _core().KernelCc(json.dumps(want), object_sha256(), str(trace_path) if trace_path else None)
    except ValueError as e:
        raise _refused(e) from None
    info.update(source="loaded for this run", object_sha256=object_sha256())
    try:
        yield info
    finally:
        with contextlib.suppress(Exception):
            st = k.status()
            info.update(params=st["params"], counters=st["counters"], sockets=st["sockets"])
        if not k.close():
            raise RuntimeError("the kernel still lists xrc, or holds its programs, 10 s after this run removed it "
                               "(a socket still using it?)")


@contextlib.contextmanager
def shim_loaded(rules: list[dict], cc_params_bounds: dict | None = None, tag_key: str | None = None) -> Iterator[dict]:
    """The shim and its agent for the duration of the block, removed on
    every way out. `rules`: [{"port": remote port or None, "scheme": name,
    "params": cc_params}]. Yields a dict that, after the block, holds the
    final status (counters, events, decision lag, sockets)."""
    info: dict[str, Any] = {"name": SHIM_CC, "object_sha256": hashlib.sha256(
        bytes(_core().kernel_object("shim"))).hexdigest(), "rules": rules}
    try:
        sh = _core().KernelShim(json.dumps(rules), params_json(None, tag_key=tag_key, **(cc_params_bounds or {})))
    except ValueError as e:
        raise _refused(e) from None
    info["_shim"] = sh
    try:
        yield info
    finally:
        info.pop("_shim", None)
        st = sh.close()
        if st is not None:
            removed = st.pop("removed", True)
            info.update(st)
            if not removed:
                raise RuntimeError(f"the kernel still lists {SHIM_CC}, or holds its programs, 10 s after this run "
                                   "removed it (a socket still using it?)")


def shim_rules(specs: list[str], params: dict[str, Any]) -> list[dict]:
    """``xrc kernel shim``'s rules from its arguments: ``SCHEME`` (every
    socket on the shim) or ``PORT=SCHEME`` (the sockets whose remote port is
    PORT), each with the cc_params `params`. Errors name the argument."""
    from .scenario import ScenarioError

    rules, ports = [], set()
    for spec in specs:
        port_s, eq, scheme = spec.rpartition("=") if "=" in spec else ("", "", spec)
        scheme = scheme.strip()
        port = None
        if eq:
            try:
                port = int(port_s)
            except ValueError:
                port = -1
            if not 1 <= port <= 65535:
                raise ScenarioError(f"{spec!r}: expected SCHEME or PORT=SCHEME with PORT in 1..65535")
        if scheme not in _core().schemes():
            raise ScenarioError(f"{spec!r}: {scheme!r} is not a congestion control (known: "
                                f"{', '.join(_core().schemes())})")
        if scheme in NOT_THROUGH_SHIM:
            raise ScenarioError(f"{spec!r}: {scheme!r} cannot run through the shim: {NOT_THROUGH_SHIM[scheme]}")
        if port in ports:
            raise ScenarioError(f"{spec!r}: {'every socket' if port is None else f'port {port}'} already has a "
                                "scheme; give one per port and one for every other socket")
        ports.add(port)
        rules.append({"port": port, "scheme": scheme, "params": dict(params)})
    if not rules:
        raise ScenarioError("give at least one SCHEME or PORT=SCHEME")
    return rules


def format_shim(st: dict) -> str:
    """One line of the shim's status."""
    lag = st.get("decision_lag") or {}
    socks = st.get("sockets") or []
    lag_s = (f", decision lag p50 {lag['p50_us']:.0f} us, p99 {lag['p99_us']:.0f} us"
             if lag.get("p50_us") is not None else "")
    return (f"{SHIM_CC}: {len(socks)} socket(s) seen, {st.get('events', 0)} events, "
            f"{st.get('decisions', 0)} decisions{lag_s}")


def run_shim(rules: list[dict], bounds: dict, *, duration_s: float | None, interval_s: float,
             out=None, ready: str | None = None, reports_port: int | None = None) -> dict:
    """Registers the shim with its agent for `rules` and serves every socket
    that chooses ``xrc_shim`` until `duration_s` has passed or the process
    is interrupted (Ctrl-C, SIGTERM), printing a status line every
    `interval_s` (0: never) to `out` (and `ready` once it is registered);
    then removes it and returns the final status."""
    import time

    from .stopping import Terminated

    t0 = time.monotonic()
    with shim_loaded(rules, bounds) as info:
        sh = info.pop("_shim")
        if reports_port is not None:
            try:
                info["reports_port"] = sh.listen_reports(reports_port)
            except ValueError as e:
                raise _refused(e) from None
        if ready and out is not None:
            print(ready, file=out, flush=True)
        try:
            while duration_s is None or time.monotonic() - t0 < duration_s:
                left = 3600.0 if duration_s is None else duration_s - (time.monotonic() - t0)
                time.sleep(max(min(interval_s or 3600.0, left), 0.0))
                if interval_s and out is not None:
                    print(format_shim(sh.status()), file=out, flush=True)
        except (KeyboardInterrupt, Terminated):
            pass
    return info


@contextlib.contextmanager
def placeholder_attached(port_lo: int, port_hi: int) -> Iterator[dict]:
    """The receivers' placeholder (``bpf/placeholder.bpf.c``) on the sockets
    whose local port is in [port_lo, port_hi], for the duration of the
    block; yields a dict that, after it, holds the counters."""
    try:
        ph = _core().KernelPlaceholder(port_lo, port_hi)
    except ValueError as e:
        raise _refused(e) from None
    info: dict[str, Any] = {"ports": [port_lo, port_hi]}
    try:
        yield info
    finally:
        with contextlib.suppress(Exception):
            info.update(ph.counters())
        if not ph.close():
            raise RuntimeError("the kernel still holds xrc's programs 10 s after the placeholder was detached")


def _core_params(p: dict) -> dict:
    """The parameters that decide the algorithm, rounded as the kernel
    keeps them."""
    keys = ("budget_ms", "feedback_timeout_ms", "probe_segments", "ramp_rtts", "unfair_gain", "unfair_after_rtts")
    return {k: round(float(p[k]), 6) for k in keys if k in p}


def format_status(st: dict | None, avail: list[str]) -> str:
    """``xrc kernel status`` as text."""
    lines = []
    if st is None:
        lines.append("xrc: not loaded by `xrc kernel load`"
                     + (" (but the kernel lists a congestion control named xrc: an `xrc emulate` run, or "
                        "another program, holds it)" if "xrc" in avail else ""))
    else:
        p = st["params"]
        lines.append(f"xrc: loaded (pinned in /sys/fs/bpf/xrc), object sha256 {st['object_sha256']}")
        lines.append(f"  option parser on cgroup {st['cgroup']}")
        lines.append("  params: " + ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                                              for k, v in p.items()))
        lines.append("  counters: " + ", ".join(f"{k} {v}" for k, v in st["counters"].items() if v))
        socks = st["sockets"]
        lines.append(f"  sockets ({len(socks)}):")
        for s in socks:
            c = {k: v for k, v in s["counters"].items() if v}
            lines.append(f"    {s['local']} -> {s['remote']}{' (closed)' if s['closed'] else ''}: mode {s['mode']}, "
                         f"{s['bottleneck']} bottleneck, cwnd {s['cwnd']}, rate {s['rate_kbps'] / 1000:g} Mbit/s, "
                         f"HoL {s['hol_ms']:g} ms, min RTT {s['min_rtt_ms']:g} ms, sigma {s['sigma_ms']:g} ms; "
                         + ", ".join(f"{k} {v}" for k, v in c.items()))
    lines.append("kernel congestion controls: " + " ".join(avail))
    return "\n".join(lines)


def _settings(items: list[str]) -> dict[str, Any]:
    """``--set NAME=VALUE`` arguments as a dict; errors name the argument."""
    from .scenario import ScenarioError

    out: dict[str, Any] = {}
    for s in items:
        k, eq, v = s.partition("=")
        k = k.strip()
        if not eq or not k:
            raise ScenarioError(f"--set {s!r}: expected NAME=VALUE")
        if k in out:
            raise ScenarioError(f"--set {k}: given twice; give it once")
        try:
            out[k] = v.strip() if k == "tag_key" else json.loads(v)
        except ValueError:
            raise ScenarioError(f"--set {k}: {v!r} is not a number") from None
        if isinstance(out[k], float) and not math.isfinite(out[k]):
            raise ScenarioError(f"--set {k}: {v.strip()!r} is not a finite number")
    return out


def main(args) -> int:
    """``xrc kernel ACTION``."""
    import sys

    from .scenario import ScenarioError

    if args.action == "load":
        cc: dict[str, Any] = {}
        limits: dict[str, Any] = {}
        for k, val in _settings(args.params).items():
            (limits if k in LIMITS else cc)[k] = val
        tag = cc.pop("tag_key", None)
        params = params_json(cc, tag_key=None if tag is None else str(tag), **limits)
        st = load_pinned(params)
        if not args.quiet:
            print(format_status(st, available()))
        return 0
    if args.action == "shim":
        cc: dict[str, Any] = {}
        bounds: dict[str, Any] = {}
        for k, val in _settings(args.params).items():
            (bounds if k in LIMITS else cc)[k] = val
        if args.duration is not None and not 0 < args.duration < math.inf:
            raise ScenarioError(f"--duration: {args.duration} s must be positive and finite (without it the shim "
                                "runs until Ctrl-C)")
        if not 0 <= args.interval < math.inf:
            raise ScenarioError(f"--interval: {args.interval} s must be 0 (never) or a positive finite number")
        if args.reports is not None and not 1 <= args.reports <= 65535:
            raise ScenarioError(f"--reports: {args.reports} is not a UDP port (1..65535)")
        rules = shim_rules(args.schemes, cc)
        by_port = any(r["port"] is not None for r in rules)
        lines = []
        for r in rules:
            who = (f"a socket on {SHIM_CC} to port {r['port']}" if r["port"] is not None else
                   f"every other socket on {SHIM_CC}" if by_port else f"every socket on {SHIM_CC}")
            lines.append(f"{SHIM_CC}: registered; {who} runs {r['scheme']}")
        if args.reports is not None:
            lines.append(f"{SHIM_CC}: NetAssist reports taken on UDP port {args.reports}")
        lines.append(f"{SHIM_CC}: choose it with `sysctl net.ipv4.tcp_congestion_control={SHIM_CC}` or "
                     "TCP_CONGESTION; Ctrl-C or SIGTERM removes it")
        st = run_shim(rules, bounds, duration_s=args.duration, interval_s=0 if args.quiet else args.interval,
                      out=sys.stdout, ready=None if args.quiet else "\n".join(lines), reports_port=args.reports)
        if args.json:
            json.dump(st, sys.stdout, indent=2, default=str)
            print()
        elif not args.quiet:
            print(format_shim(st) + "; removed")
        return 0
    if args.action == "unload":
        was = unload()
        if not args.quiet:
            print("xrc: unloaded" if was else "xrc: nothing was loaded by `xrc kernel load`")
        return 0
    st = pinned_status()
    if args.json:
        json.dump({"loaded": st, "available": available()}, sys.stdout, indent=2)
        print()
    else:
        print(format_status(st, available()))
    return 0
