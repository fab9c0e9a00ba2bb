"""A scenario's TCP settings, applied to the real kernel's flows of
``xrc emulate``.

A flow's ``tcp``, ``receiver`` and ``cc_params`` tables describe a Linux
sender and receiver; their defaults are Linux's own. Where a scenario
changes one, the emulated flow gets the same change from the kernel's own
knobs, or the run is refused naming the field and the value (never a
silent default). The knobs, by where Linux keeps them:

- **per socket** (``iperf3`` options of that flow): ``tcp.mss``
  (``-M``: ``TCP_MAXSEG`` is the MSS before the 12 bytes of the timestamp
  option, so the payload per segment is ``tcp.mss``) and ``tcp.nodelay``
  (``-N``);
- **per route** (the Internet side's route to the flow's UE, so every
  flow to one UE must agree): ``tcp.initial_cwnd`` (``initcwnd``),
  ``tcp.min_rto_ms`` (``rto_min``), ``tcp.initial_ssthresh``
  (``ssthresh``); ``receiver.delayed_ack = false`` is ``quickack 1`` on
  the UE side's route back (one route for all UEs: every flow must agree);
- **per network namespace** (``sysctl``; every flow of the side must
  agree): the sender side's ``tcp_recovery`` (``tcp.loss_detection``:
  RACK is 1, dupthresh-only 0), ``tcp_reordering`` (``tcp.dupthresh``),
  ``tcp_frto`` (``tcp.frto``: 2 or 0), ``tcp_early_retrans`` (``tcp.tlp``:
  3 or 0), ``tcp_slow_start_after_idle``, ``tcp_rto_max_ms``
  (``tcp.max_rto_ms``, where the kernel has it); the receiver side's
  ``tcp_sack`` and ``tcp_dsack``.

Fields that describe the kernel's implementation rather than a setting
(``tcp.rto_rule``, ``tcp.timer_clock``, ``tcp.timer_hz``,
``receiver.ack_on_read``, the ``hz`` and ``seed`` of ``cc_params``) are
the running kernel's, and say so in the
run's ``summary.json`` (``kernel_tcp.kernel_own``). Everything else
(``tcp.initial_rto_ms``, ``tcp.undo``, ``tcp.tso``, ``tcp.rwnd_bytes``,
``tcp.recovery``, ``tcp.pacing = true`` of a loss-based flow, the receiver's
``ack_every``, ``delack_timeout_ms`` and ``quickack_segments``, and every
other ``cc_params`` entry, which Linux keeps as module parameters shared
by the whole host) has no per-run knob and is refused when it differs
from the default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

#: Describe the kernel, not a setting: the running kernel's hold.
KERNEL_OWN_TCP = ("rto_rule", "timer_clock", "timer_hz")
KERNEL_OWN_CC = ("hz", "seed")
#: No per-run knob in Linux.
NO_KNOB = {
    "tcp.initial_rto_ms": "Linux's initial RTO is fixed (TCP_TIMEOUT_INIT, 1 s)",
    "tcp.undo": "Linux always undoes spurious reductions",
    "tcp.tso": "the emulated devices' segmentation offload is the kernel's",
    "tcp.rwnd_bytes": "the receive window is the kernel's autotuning (a socket buffer only approximates it)",
    "tcp.recovery": "Linux recovers with SACK (and PRR) whenever the receiver permits SACK; "
                    "set receiver.sack = false for NewReno recovery",
    "receiver.ack_every": "Linux ACKs every second full segment",
    "receiver.delack_timeout_ms": "Linux's delayed-ACK timer is its own (40 ms minimum, adaptive)",
    "receiver.quickack_segments": "Linux's quick-ACK count is its own",
}
#: The emulated devices carry 1500-byte IP packets: 1448 bytes of payload
#: with the timestamp option.
MAX_MSS = 1448


class KernelTcpError(ValueError):
    """A setting the kernel cannot take; the message names the field."""


@dataclass
class KernelTcp:
    """What to apply: ``sysctls[side]``, ``routes[ue]`` (the Internet
    side's route to UE ``ue``), ``ue_route`` (the UE side's route back),
    ``iperf3[k]`` (flow ``k``'s extra client options), and what was applied
    and left to the kernel, for the summary."""
    sysctls: dict[str, dict[str, str]] = field(default_factory=lambda: {"inet": {}, "ue": {}})
    routes: dict[int, dict[str, str]] = field(default_factory=dict)
    ue_route: dict[str, str] = field(default_factory=dict)
    iperf3: dict[int, list[str]] = field(default_factory=dict)
    applied: list[str] = field(default_factory=list)
    kernel_own: list[str] = field(default_factory=list)
    #: (UE, route option) -> the scenario field that asked for it (UE None:
    #: the UE side's route back), for errors at set-up.
    route_fields: dict[tuple, str] = field(default_factory=dict)

    def summary(self) -> dict:
        return {"applied": self.applied, "kernel_own": self.kernel_own}


@lru_cache(maxsize=None)
def _defaults(cc: str) -> dict:
    """A flow's resolved ``tcp``, ``receiver`` and ``cc_params`` when the
    scenario sets nothing but ``cc``."""
    from ..scenario import from_dict

    d = {"name": "defaults", "seed": 1, "duration_s": 1, "topology": "wired",
         "internet": {"delay_ms": 10, "rate_mbps": 10}, "flows": [{"cc": cc}]}
    f = from_dict(d).resolved["flows"][0]
    return {"tcp": f["tcp"], "receiver": f["receiver"], "cc_params": f["cc_params"]}


def _has_sysctl(key: str) -> bool:
    return Path("/proc/sys", *key.split(".")).exists()


def _shared(tcp: dict, rcv: dict, ue: int) -> list[tuple[str, tuple, str]]:
    """(field, knob, value) of each knob a flow shares with others: the
    namespaces' sysctls (every flow) and the routes (every flow to its UE;
    the UE side's one route back: every flow)."""
    b = lambda v: "1" if v else "0"  # noqa: E731
    sender = "sysctl", "inet"
    return [
        ("tcp.loss_detection", (*sender, "net.ipv4.tcp_recovery"), b(tcp["loss_detection"] == "rack")),
        ("tcp.dupthresh", (*sender, "net.ipv4.tcp_reordering"), str(tcp["dupthresh"])),
        ("tcp.frto", (*sender, "net.ipv4.tcp_frto"), "2" if tcp["frto"] else "0"),
        ("tcp.tlp", (*sender, "net.ipv4.tcp_early_retrans"), "3" if tcp["tlp"] else "0"),
        ("tcp.slow_start_after_idle", (*sender, "net.ipv4.tcp_slow_start_after_idle"),
         b(tcp["slow_start_after_idle"])),
        ("tcp.max_rto_ms", (*sender, "net.ipv4.tcp_rto_max_ms"), str(tcp["max_rto_ms"])),
        ("receiver.sack", ("sysctl", "ue", "net.ipv4.tcp_sack"), b(rcv["sack"])),
        ("receiver.dsack", ("sysctl", "ue", "net.ipv4.tcp_dsack"), b(rcv["dsack"])),
        ("receiver.delayed_ack", ("route", "ue-side", "quickack"), b(not rcv["delayed_ack"])),
        ("tcp.initial_cwnd", ("route", ue, "initcwnd"), str(tcp["initial_cwnd"])),
        ("tcp.min_rto_ms", ("route", ue, "rto_min"), str(tcp["min_rto_ms"])),
        ("tcp.initial_ssthresh", ("route", ue, "ssthresh"), str(tcp["initial_ssthresh"])),
    ]


def plan(flows: list[dict]) -> KernelTcp:
    """The kernel settings for the scenario's emulated ``flows``; raises
    :class:`KernelTcpError` naming the first field the kernel cannot take."""
    out = KernelTcp()
    # Per side / per route: (knob) -> (value, the first flow that has it).
    owner: dict[tuple, tuple[str, int, object]] = {}

    def need(key: tuple, value: str, k: int, what: str, shown: object) -> None:
        if key in owner and owner[key][0] != value:
            _, k0, s0 = owner[key]
            raise KernelTcpError(f"flows.{k}.{what}: {shown!r} here but {s0!r} in flows.{k0}; the kernel keeps it "
                                 f"{'per namespace' if key[0] == 'sysctl' else 'per route'}, so the flows must agree")
        owner.setdefault(key, (value, k, shown))

    def sysctl(side: str, key: str, value: str, k: int, what: str) -> None:
        if not _has_sysctl(key):
            raise KernelTcpError(f"flows.{k}.{what}: this kernel has no {key} to set it with")
        out.sysctls[side][key] = value

    def route(ue: int, opt: str, value: str, k: int, what: str) -> None:
        out.routes.setdefault(ue, {})[opt] = value
        out.route_fields.setdefault((ue, opt), f"flows.{k}.{what} = {value!r}")

    # Knobs shared by several flows: every flow that shares one must agree,
    # those left at the default included.
    for k, f in enumerate(flows):
        d = _defaults(f["cc"])
        tcp = {**d["tcp"], **(f.get("tcp") or {})}
        rcv = {**d["receiver"], **(f.get("receiver") or {})}
        ue = int(f.get("ue") or 0)
        for what, key, value in _shared(tcp, rcv, ue):
            table, name = what.split(".")
            need(key, value, k, what, (tcp if table == "tcp" else rcv)[name])

    for k, f in enumerate(flows):
        d = _defaults(f["cc"])
        tcp, rcv, ccp = f.get("tcp") or {}, f.get("receiver") or {}, f.get("cc_params") or {}
        ue = int(f.get("ue") or 0)
        args: list[str] = []
        for name in KERNEL_OWN_TCP:
            if tcp.get(name, d["tcp"][name]) != d["tcp"][name]:
                out.kernel_own.append(f"flows.{k}.tcp.{name} = {tcp[name]!r} (the running kernel's own is used)")
        for name in KERNEL_OWN_CC:
            if name in ccp and ccp[name] != d["cc_params"].get(name):
                out.kernel_own.append(f"flows.{k}.cc_params.{name} = {ccp[name]!r} (the running kernel's own "
                                      f"is used)")
        for name, v in sorted(ccp.items()):
            if name in KERNEL_OWN_CC or v == d["cc_params"].get(name):
                continue
            raise KernelTcpError(f"flows.{k}.cc_params.{name}: {v!r} differs from the default "
                                 f"{d['cc_params'].get(name)!r}; Linux keeps it as a parameter of the tcp_"
                                 f"{f['cc']} module, shared by the whole host, which xrc emulate does not change")
        for table, values, defaults in (("tcp", tcp, d["tcp"]), ("receiver", rcv, d["receiver"])):
            for name, v in sorted(values.items()):
                if v == defaults.get(name) or name in KERNEL_OWN_TCP and table == "tcp":
                    continue
                what = f"{table}.{name}"
                applied = f"flows.{k}.{what} = {v!r}"
                if what == "tcp.mss":
                    if not 88 <= v <= MAX_MSS:
                        raise KernelTcpError(f"flows.{k}.tcp.mss: {v} does not fit the emulated devices' "
                                             f"1500-byte packets (88 ..= {MAX_MSS} with timestamps)")
                    args += ["-M", str(v + 12)]
                    applied += " (iperf3 -M, TCP_MAXSEG)"
                elif what == "tcp.nodelay":
                    if v:
                        args.append("-N")
                    applied += " (iperf3 -N, TCP_NODELAY)"
                elif what == "tcp.initial_cwnd":
                    route(ue, "initcwnd", str(v), k, what)
                    applied += f" (route initcwnd to UE {ue})"
                elif what == "tcp.min_rto_ms":
                    if v < 1 or v != int(v):
                        raise KernelTcpError(f"flows.{k}.tcp.min_rto_ms: {v} ms; a route's rto_min is whole "
                                             f"milliseconds, at least 1")
                    route(ue, "rto_min", f"{int(v)}ms", k, what)
                    applied += f" (route rto_min to UE {ue})"
                elif what == "tcp.initial_ssthresh":
                    route(ue, "ssthresh", str(v), k, what)
                    applied += f" (route ssthresh to UE {ue})"
                elif what == "tcp.loss_detection":
                    sysctl("inet", "net.ipv4.tcp_recovery", "1" if v == "rack" else "0", k, what)
                    applied += " (sysctl tcp_recovery)"
                elif what == "tcp.dupthresh":
                    sysctl("inet", "net.ipv4.tcp_reordering", str(v), k, what)
                    applied += " (sysctl tcp_reordering)"
                elif what == "tcp.frto":
                    sysctl("inet", "net.ipv4.tcp_frto", "2" if v else "0", k, what)
                    applied += " (sysctl tcp_frto)"
                elif what == "tcp.tlp":
                    sysctl("inet", "net.ipv4.tcp_early_retrans", "3" if v else "0", k, what)
                    applied += " (sysctl tcp_early_retrans)"
                elif what == "tcp.slow_start_after_idle":
                    sysctl("inet", "net.ipv4.tcp_slow_start_after_idle", "1" if v else "0", k, what)
                    applied += " (sysctl tcp_slow_start_after_idle)"
                elif what == "tcp.max_rto_ms":
                    if not (1000 <= v <= 120000 and v == int(v)):
                        raise KernelTcpError(f"flows.{k}.tcp.max_rto_ms: {v} ms; Linux's tcp_rto_max_ms takes "
                                             f"whole milliseconds in 1000 ..= 120000")
                    sysctl("inet", "net.ipv4.tcp_rto_max_ms", str(int(v)), k, what)
                    applied += " (sysctl tcp_rto_max_ms)"
                elif what == "tcp.pacing":
                    if f["cc"] == "bbr":
                        out.kernel_own.append(f"flows.{k}.tcp.pacing = {v!r} (Linux BBR paces itself)")
                        continue
                    raise KernelTcpError(f"flows.{k}.tcp.pacing: {v!r}; Linux paces a {f['cc']} flow only under "
                                         f"the fq qdisc, which xrc emulate does not install")
                elif what == "receiver.delayed_ack":
                    if not v:
                        out.ue_route["quickack"] = "1"
                        out.route_fields.setdefault((None, "quickack"), f"flows.{k}.{what} = {v!r}")
                    applied += " (UE-side route quickack)"
                elif what == "receiver.ack_on_read":
                    out.kernel_own.append(f"flows.{k}.{what} = {v!r} (the kernel's receiver acknowledges as its "
                                          f"reads and window allow)")
                    continue
                elif what == "receiver.sack":
                    sysctl("ue", "net.ipv4.tcp_sack", "1" if v else "0", k, what)
                    applied += " (UE-side sysctl tcp_sack)"
                elif what == "receiver.dsack":
                    sysctl("ue", "net.ipv4.tcp_dsack", "1" if v else "0", k, what)
                    applied += " (UE-side sysctl tcp_dsack)"
                elif what in NO_KNOB:
                    raise KernelTcpError(f"flows.{k}.{what}: {v!r} differs from the default {defaults.get(name)!r}, "
                                         f"and the kernel has no per-run setting for it ({NO_KNOB[what]})")
                else:
                    raise KernelTcpError(f"flows.{k}.{what}: {v!r} differs from the default "
                                         f"{defaults.get(name)!r}, and xrc emulate has no kernel setting for it")
                out.applied.append(applied)
        if args:
            out.iperf3[k] = args
    return out
