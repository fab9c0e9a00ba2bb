"""``xrc emulate``: a scenario's network in real time, real Linux TCP and
real applications through it.

The scenario's Internet path and access network (the cell of a
``cellular`` scenario, the trace link, the wired link) run in the
emulator (the Rust ``xrc._core.Emulator``, crate ``xrc-emu``) between two
network namespaces (:mod:`xrc.emulation.testbed`): the Internet side
(``10.77.0.1``: the servers, the senders of downloads) and the UE side.

**UEs and addresses.** UE ``k`` of the scenario is ``10.77.0.(2 + k)`` on
the UE side (UE 0 is ``10.77.0.2``; at most 253 UEs). The emulator
classifies every packet to a UE by its UE-side address (a downlink
packet's destination, an uplink packet's source) and to a flow by its
5-tuple; a packet whose UE-side address is no UE's is dropped at the cell
(it has no radio to cross). In the wired and trace topologies every
packet crosses the one link.

**The scenario's flows** run as real kernel sockets, flow ``k`` from the
Internet-side namespace to its UE's address, port ``5201 + k``, from
``start_s`` until ``stop_s`` (or the end of the run): a bulk flow is an
``iperf3`` client and server, a transfer or a video flow the applications
of :mod:`xrc.emulation.apps`. Its congestion control is the
kernel's module of the same algorithm (``cubic``; ``newreno`` is Linux
``reno``; ``bbr``), or xrc's own BPF one (``xrc``, :mod:`xrc.kernel`,
loaded for the run, with the base station's feedback written into its
ACKs), set as the Internet-side namespace's default (and per socket with
``iperf3 -C`` when flows differ); an algorithm the kernel lacks
(``copa``, ...) is refused naming the flow. The scenario's TCP and receiver settings
(``flows.N.tcp``, ``flows.N.receiver``, ``cc_params``) reach the kernel
through its own knobs (socket options, route metrics, the namespaces'
sysctls; :mod:`xrc.emulation.kernel_tcp`), and a setting the kernel has no
knob for is refused naming it; ``summary.json`` lists what was applied
(``kernel_tcp``).

**COMMAND** (after ``--``) runs in the UE-side namespace, with the
terminal. With ``--no-flows`` and without ``--out`` the emulator runs
until COMMAND (default: ``$SHELL``) exits, like ``mm-link ... -- cmd``;
otherwise it runs for the scenario's ``duration_s`` and COMMAND is ended
with it.

**XRC feedback in real ACKs** (``--xrc-acks``, off by default): the base
station writes the cell agent's per-flow capacity and the UE's HoL delay
into every pure ACK crossing it (TCP option 253 with an RFC 6994 ExID,
:mod:`xrc-emu`'s ``feedback``), where the TCP header has room.

**GSO super-packets to the UE** (``--gso on|off``, default
:data:`GSO_DEFAULT`): TCP segments of one connection that the access network
releases at the same instant and that Linux GRO would merge are written to
the UE side as one GSO packet, as a UE's modem driver hands them to its IP
stack (:mod:`xrc-emu`'s ``gso``; the capture still has every packet).

**The run directory** (``--out``) has the files of ``xrc run``, filled
with what a real run can measure (:func:`tables`); what it cannot is left
out, not invented, and listed in ``summary.json`` under ``not_measured``.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .kernel_tcp import KernelTcp, KernelTcpError
from .kernel_tcp import plan as kernel_plan
from .testbed import MAX_UES, TestbedError, missing_requirements, testbed, ue_ip

#: The kernel module of each algorithm the kernel has.
LINUX_CC = {"cubic": "cubic", "newreno": "reno", "bbr": "bbr"}

#: Whether ``xrc emulate`` writes GSO super-packets to the UE side unless
#: ``--gso`` says otherwise (docs/emulation.md, "The cell at its highest
#: rate", says why this default).
GSO_DEFAULT = False
#: The applications of transfer and video flows, run as a script (standard
#: library only: 70 ms to start, where importing the xrc package takes 0.5 s,
#: which matters with many short flows).
APPS = [sys.executable, str(Path(__file__).with_name("apps.py"))]
BASE_PORT = 5201
NONE = 2**32 - 1
#: Drop stage codes of the emulator's capture, by topology and direction,
#: to the ``drops.location`` codes of the simulator.
DROP_CODES = {
    ("cellular", 0): {0: 0, 1: 1},
    ("cellular", 1): {1: 3},
    ("wired", 0): {0: 0},
    ("wired", 1): {0: 3},
    ("trace", 0): {0: 0, 1: 2},
    ("trace", 1): {0: 5, 1: 3},
}
#: Where XRC's agent runs, in the words of an error that asks for it.
NEEDS_AGENT = ("a base station with XRC's agent: topology \"cellular\" with cell.agent.enabled = true, or "
               "\"trace\" with trace.agent.enabled = true")


def _has_agent(resolved: dict) -> bool:
    """The scenario's base station runs XRC's agent (the cell's, or the
    trace access's at its queue)."""
    topo = resolved["topology"]
    return topo in ("cellular", "trace") and bool(resolved[{"cellular": "cell", "trace": "trace"}[topo]]
                                                  ["agent"]["enabled"])


#: What no real run can fill, by table (column names) or whole table.
NOT_MEASURED = {
    "cwnd.parquet": "the kernel's congestion state is not on the wire (ss/iperf3 sample it coarsely; not recorded)",
    "feedback.parquet": "the XRC feedback the base station wrote is in the capture (inet.pcap, option 253) and "
                        "xrc's kernel counters (environment.kernel_cc), not tabulated per ACK",
    "flows: timeouts, loss_undos, recovery_undos, spurious_rtos, probes": "kernel counters per connection "
    "are not in the capture",
    "retransmits: seq, kind": "the capture sees a segment sent again, not why",
    "drops: seq": "not recorded per dropped packet",
}


def not_measured(p: "Plan") -> dict[str, str]:
    """What this run cannot fill (NOT_MEASURED and what depends on its
    flows' kinds)."""
    out = dict(NOT_MEASURED)
    kinds = {f["traffic"]["kind"] for f in p.flows}
    if "video" not in kinds:
        out["chunks.parquet"] = "no video flow"
    if "bulk" in kinds:
        out["flows: completed, fct_s of bulk flows"] = ("bulk iperf3 flows are cut at the end of their time "
                                                        "(completed 0, fct_s NaN)")
    return out


class EmulateError(TestbedError):
    """Bad input or a machine that cannot run this emulation: exit 2."""


@dataclass
class Plan:
    resolved: dict
    topology: str
    num_ues: int
    flows: list[dict]
    linux_cc: list[str]
    command: list[str] | None
    run_flows: bool
    duration_s: float | None
    xrc_acks: bool = False
    gso: bool = GSO_DEFAULT
    kernel: KernelTcp = field(default_factory=KernelTcp)
    #: The scheme run as xrc's own BPF congestion control, and its
    #: cc_params (one set for every flow of it: the kernel has one copy).
    bpf_cc: dict | None = None
    #: Write every hook call of the BPF congestion control into the run
    #: directory's kernel-trace.bin (``--kernel-trace``).
    kernel_trace: bool = False
    #: Flows run through the shim: [{"port", "scheme", "params"}].
    shim_rules: list = field(default_factory=list)
    #: The UE-side ports of the flows that get each network signal from the
    #: base station (``abc``, ``pbe``, ``net_assist``).
    signals: dict = field(default_factory=dict)
    #: The receivers reserve a placeholder for the base station's option in
    #: their pure ACKs (``--xrc-placeholder``).
    placeholder: bool = False
    #: The keyed tag's key (``--xrc-key``): the base station tags every
    #: option, xrc's kernel senders take only tagged ones that check.
    tag_key: str | None = None


def available_cc() -> list[str]:
    try:
        return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


def _has_cc(name: str) -> bool:
    if name in available_cc():
        return True
    if shutil.which("modprobe"):
        subprocess.run(["modprobe", "-q", f"tcp_{name}"], capture_output=True, timeout=10)
    return name in available_cc()


def _host_addresses() -> list[tuple[str, str]]:
    """(device, address) of every IPv4 address of the host's namespace."""
    r = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, timeout=10)
    out = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 4:
            out.append((f[1], f[3].split("/")[0]))
    return out


def plan(resolved: dict, *, command: list[str] | None, run_flows: bool, out: bool,
         xrc_acks: bool = False, gso: bool = GSO_DEFAULT, kernel_trace: bool = False,
         shim: tuple[str, ...] = (), placeholder: bool = False, tag_key: str | None = None) -> Plan:
    """Checks everything that can be checked before anything is set up;
    raises :class:`EmulateError` naming the field or the missing piece.
    Schemes in `shim` run through the shim even where the kernel has its
    own module of them."""
    from .. import _core
    from ..kernel import BPF_CC, NOT_THROUGH_SHIM, SHIM_CC, SIGNAL_NEEDS, scheme_signals

    topo = resolved["topology"]
    n_ues = len(resolved.get("ues") or []) if topo == "cellular" else 1
    if n_ues > MAX_UES:
        raise EmulateError(f"ues: the emulator gives each UE its own address (10.77.0.2 ... 10.77.0.254) "
                           f"and hosts at most {MAX_UES} UEs, got {n_ues}")
    flows = resolved["flows"] if run_flows else []
    linux = []
    bpf_cc = None
    shim_rules = []
    signals: dict[str, list[int]] = {}
    for s_ in shim:
        if s_ not in _core.schemes():
            raise EmulateError(f"--shim: {s_!r} is not a congestion control (known: {', '.join(_core.schemes())})")
        if s_ in NOT_THROUGH_SHIM:
            raise EmulateError(f"--shim: {s_!r} cannot run through the shim: {NOT_THROUGH_SHIM[s_]}")
    for k, f in enumerate(flows):
        kind = f["traffic"]["kind"]
        if kind not in ("bulk", "transfer", "video"):
            raise EmulateError(f"flows.{k}.traffic.kind: {kind!r} is not emulated (bulk, transfer and video are)")
        native = f["cc"] in BPF_CC or (f["cc"] in LINUX_CC and _has_cc(LINUX_CC[f["cc"]]))
        if f["cc"] in NOT_THROUGH_SHIM and not native:
            raise EmulateError(f"flows.{k}.cc: {f['cc']!r} cannot run on real sockets: {NOT_THROUGH_SHIM[f['cc']]}")
        if f["cc"] in shim or (not native and f["cc"] not in NOT_THROUGH_SHIM):
            if f.get("extra_rtt_ms"):
                raise EmulateError(f"flows.{k}.extra_rtt_ms: per-flow extra delay is not emulated (got "
                                   f"{f['extra_rtt_ms']} ms)")
            if f["cc"] in ("xrc", "xrc2") and not _has_agent(resolved):
                raise EmulateError(f"flows.{k}.cc: {f['cc']!r} runs on the base station's feedback, which needs "
                                   + NEEDS_AGENT)
            if f["cc"] in ("xrc", "xrc2"):
                xrc_acks = True
            for sig in set(scheme_signals(f["cc"], f["cc_params"])) & set(SIGNAL_NEEDS):
                if topo not in ("cellular", "trace"):
                    raise EmulateError(f"flows.{k}.cc: {f['cc']!r} needs {SIGNAL_NEEDS[sig]}, which the "
                                       f"{topo!r} topology has none of (the cellular and trace topologies have one)")
                signals.setdefault(sig, []).append(BASE_PORT + k)
            shim_rules.append({"port": BASE_PORT + k, "scheme": f["cc"], "params": f["cc_params"]})
            linux.append(SHIM_CC)
            continue
        if f["cc"] in BPF_CC:
            if not _has_agent(resolved):
                raise EmulateError(f"flows.{k}.cc: {f['cc']!r} runs on the base station's feedback, which needs "
                                   + NEEDS_AGENT)
            if bpf_cc is not None and bpf_cc["cc_params"] != f["cc_params"]:
                raise EmulateError(f"flows.{k}.cc_params: {f['cc_params']} differs from flows."
                                   f"{bpf_cc['flow']}.cc_params {bpf_cc['cc_params']}; the kernel's {f['cc']} has "
                                   "one set of parameters for every socket")
            if f.get("extra_rtt_ms"):
                raise EmulateError(f"flows.{k}.extra_rtt_ms: per-flow extra delay is not emulated (got "
                                   f"{f['extra_rtt_ms']} ms)")
            bpf_cc = bpf_cc or {"scheme": f["cc"], "cc_params": f["cc_params"], "flow": k}
            xrc_acks = True
            linux.append(BPF_CC[f["cc"]])
            continue
        name = LINUX_CC.get(f["cc"])
        if name is None or not _has_cc(name):
            why = "has no Linux kernel module" if name is None else f"needs the kernel's tcp_{name}, which it lacks"
            raise EmulateError(f"flows.{k}.cc: {f['cc']!r} {why} (the kernel here has: "
                               f"{', '.join(available_cc()) or 'none'}); emulated flows use cubic, newreno, bbr "
                               f"or xrc's own kernel congestion controls ({', '.join(BPF_CC)})")
        if f.get("extra_rtt_ms"):
            raise EmulateError(f"flows.{k}.extra_rtt_ms: per-flow extra delay is not emulated (got "
                               f"{f['extra_rtt_ms']} ms)")
        linux.append(name)
    if tag_key is not None:
        from ..kernel import check_tag_key

        check_tag_key(tag_key, "--xrc-key")
        if not xrc_acks:
            raise EmulateError("--xrc-key: the base station tags the option it writes: give --xrc-acks (or a flow "
                               "with cc = \"xrc\")")
        if placeholder:
            raise EmulateError("--xrc-key with --xrc-placeholder: a placeholder has no room for the tag; give one")
    if placeholder and not (xrc_acks and flows):
        raise EmulateError("--xrc-placeholder: the receivers reserve room for the option the base station writes: "
                           "give --xrc-acks (or a flow with cc = \"xrc\") and let the scenario's flows run")
    if kernel_trace and bpf_cc is None:
        raise EmulateError("--kernel-trace: no flow runs one of xrc's kernel congestion controls "
                           f"({', '.join(BPF_CC)})")
    try:
        # The BPF congestion control's parameters are its own (the loader
        # writes them), not a Linux module's.
        kernel = kernel_plan([{**f, "cc_params": {}} if f["cc"] in BPF_CC or linux[k] == SHIM_CC else f
                              for k, f in enumerate(flows)])
    except KernelTcpError as e:
        raise EmulateError(str(e)) from None
    if command:
        if shutil.which(command[0]) is None:
            raise EmulateError(f"COMMAND: {command[0]!r} is not an executable on PATH")
    tools = ("ip", "sysctl") + (("iperf3", "ss") if flows else ())
    missing = missing_requirements(tools)
    if missing:
        raise EmulateError("cannot set up the emulator; missing: " + "; ".join(missing))
    clash = [(d, a) for d, a in _host_addresses() if a.startswith("10.77.0.")]
    if clash:
        raise EmulateError("address clash: the emulator's namespaces use 10.77.0.0/24 (the Internet side "
                           "10.77.0.1, UE k 10.77.0.(2+k)), which this host already has: "
                           + ", ".join(f"{a} on {d}" for d, a in clash))
    if xrc_acks and not _has_agent(resolved):
        raise EmulateError("--xrc-acks: the base station writes the XRC agent's feedback, which needs " + NEEDS_AGENT)
    interactive = not out and not flows
    if interactive and not command:
        command = [os.environ.get("SHELL") or "/bin/sh"]
    return Plan(resolved=resolved, topology=topo, num_ues=n_ues, flows=flows, linux_cc=linux, command=command,
                run_flows=run_flows, duration_s=None if interactive else float(resolved["duration_s"]),
                xrc_acks=xrc_acks, gso=gso, kernel=kernel, bpf_cc=bpf_cc, kernel_trace=kernel_trace,
                shim_rules=shim_rules, placeholder=placeholder, tag_key=tag_key, signals=signals)


def emulator_options(p: Plan) -> dict | None:
    """The emulator's options (``xrc._core.Emulator``'s ``options_json``)
    for a plan."""
    o: dict[str, Any] = {}
    if p.xrc_acks:
        o["xrc_acks"] = 1
    # The flows whose senders ask the agent for its air-delay and room
    # fields (xrc2, the simulator's Signals::xrc_air), by their UE-side port.
    air = [BASE_PORT + k for k, f in enumerate(p.flows) if f["cc"] == "xrc2"]
    if air and p.xrc_acks:
        o["air_ports"] = air
    if p.tag_key is not None:
        o["xrc_tag_key"] = p.tag_key
    if p.gso:
        o["gso"] = 1
    if p.signals.get("abc"):
        o["abc_ports"] = p.signals["abc"]
    if p.signals.get("pbe"):
        o["pbe_ports"] = p.signals["pbe"]
    if p.signals.get("net_assist"):
        from ..kernel import REPORT_PORT

        r = p.resolved
        inet_ms = float(r["internet"]["delay_ms"])
        na = (r.get("cell") or {}).get("net_assist") or {} if p.topology == "cellular" else {}
        delay_ms = na.get("delay_ms")
        o["net_assist"] = {
            "ports": p.signals["net_assist"],
            # The simulator's World::net_assist_period and on_net_assist.
            "period_us": round(float(na.get("period_ms", 50.0)) * 1e3),
            "delay_us": round(float(inet_ms if delay_ms is None else delay_ms) * 1e3),
            "loss": float(na.get("loss", 0.0)),
            "wired_rtt_us": round(2 * inet_ms * 1e3),
            "report_port": REPORT_PORT,
            "seed": int(r["seed"]),
        }
    return o or None


def _wait_listening(tb, port: int, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if tb.run("ue", ["ss", "-Hltn", f"sport = :{port}"], timeout=5).stdout.strip():
            return
        time.sleep(0.02)
    raise RuntimeError(f"the server of port {port} (iperf3 or xrc.emulation.apps) did not listen within {timeout_s} s")


def cpu_steal_s() -> float:
    with open("/proc/stat") as f:
        return int(f.readline().split()[8]) / os.sysconf("SC_CLK_TCK")


def run(p: Plan, *, trace_texts: tuple[str | None, str | None] = (None, None), quiet: bool = False,
        pcap_dir: Path | None = None) -> dict[str, Any]:
    """Sets up, runs and tears down one emulation. Returns what the run
    directory is made of (``report``, ``capture``, ``flows``, ``cell``,
    ``views``, ``flow_map``, ``environment``)."""
    from .testbed import default_emulator_cpu

    cpu = default_emulator_cpu()
    sysctls = {"net.ipv4.tcp_no_metrics_save": "1"}
    if p.linux_cc:
        sysctls["net.ipv4.tcp_congestion_control"] = p.linux_cc[0]
    steal0, load0 = cpu_steal_s(), os.getloadavg()
    kcc: dict | None = None
    shim: dict | None = None
    with contextlib.ExitStack() as stack:
        if p.bpf_cc is not None:
            from ..kernel import loaded

            trace_path = pcap_dir / "kernel-trace.bin" if (p.kernel_trace and pcap_dir is not None) else None
            kcc = stack.enter_context(loaded(p.bpf_cc["cc_params"], trace_path, tag_key=p.tag_key))
        if p.shim_rules:
            from ..kernel import shim_loaded

            shim = stack.enter_context(shim_loaded(p.shim_rules, tag_key=p.tag_key))
        ph = None
        if p.placeholder:
            from ..kernel import placeholder_attached

            ph = stack.enter_context(placeholder_attached(BASE_PORT, BASE_PORT + len(p.flows) - 1))
        result = _run_testbed(p, trace_texts, cpu, sysctls, pcap_dir, shim)
    steal = cpu_steal_s() - steal0
    env = result.pop("_env")
    result["environment"] = {
        "kernel": platform.release(),
        "steal_s": round(steal, 3),
        "load_avg": {"before": list(load0), "after": list(os.getloadavg())},
        "iperf3": _iperf3_version() if p.flows else None,
        "congestion_control": {f["id"]: p.linux_cc[k] for k, f in enumerate(p.flows)},
        "emulator_cpu": cpu,
        "command": p.command,
        "command_exit": env["command_exit"],
        "xrc_acks": p.xrc_acks,
        "gso": p.gso,
        "kernel_tcp": p.kernel.summary(),
        "kernel_cc": kcc,
        "shim": shim,
        "placeholder": ph,
    }
    return result


def _run_testbed(p: Plan, trace_texts, cpu, sysctls, pcap_dir, shim: dict | None = None) -> dict[str, Any]:
    cmd_proc = None
    side = {k: dict(v) for k, v in p.kernel.sysctls.items()}
    if p.bpf_cc is not None or p.shim_rules:
        # The receivers need none of xrc's kernel congestion controls (they
        # send no data): the UE side keeps Linux's default.
        side.setdefault("ue", {})["net.ipv4.tcp_congestion_control"] = "cubic"
    # Bulk flows are iperf3; transfers and video are xrc.emulation.apps,
    # whose processes write their logs into apps_dir. It is removed after
    # the testbed (and the processes writing there) on every exit path: an
    # interrupted emulation left one /tmp/xrc-emulate-apps-* each.
    with tempfile.TemporaryDirectory(prefix="xrc-emulate-apps-", ignore_cleanup_errors=True) as apps, \
            testbed(p.resolved, downlink_text=trace_texts[0], uplink_text=trace_texts[1], sysctls=sysctls,
                    emulator_cpu=cpu, num_ues=p.num_ues, options=emulator_options(p),
                    side_sysctls=side) as tb:
        apps_dir = Path(apps)
        emu = tb.emulator
        apply_routes(tb, p.kernel)
        if p.signals.get("net_assist") and shim is not None:
            # The senders' agent takes the base station's NetAssist reports
            # in the Internet side's namespace, where the senders are.
            from ..kernel import REPORT_PORT

            shim["_shim"].listen_reports(REPORT_PORT, f"/run/netns/{tb.ns('inet')}")
        app_procs: list[subprocess.Popen] = []
        guard_ns = time.monotonic_ns() + int(((p.duration_s or 0.0) + 60.0) * 1e9)
        for k, f in enumerate(p.flows):
            ip, port = ue_ip(f.get("ue") or 0), str(BASE_PORT + k)
            if f["traffic"]["kind"] == "bulk":
                tb.popen("ue", ["iperf3", "-s", "-1", "-B", ip, "-p", port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            else:
                app_procs.append(tb.popen("ue", [*APPS, "sink", "--bind", ip,
                                                 "--port", port, "--out", str(apps_dir / f"sink{k}.json"),
                                                 "--until", str(guard_ns)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for k in range(len(p.flows)):
            _wait_listening(tb, BASE_PORT + k)
        # The applications start early and wait for their flow's start:
        # the emulator's clock starts at t0_ns, half a second from now,
        # when their interpreters are up.
        t0_ns = time.monotonic_ns() + (500_000_000 if any(
            f["traffic"]["kind"] != "bulk" for f in p.flows) else 0)
        end_ns = t0_ns + int((p.duration_s or 0.0) * 1e9)
        for k, f in enumerate(p.flows):
            tr = f["traffic"]
            if tr["kind"] == "bulk":
                continue
            stop_ns = end_ns if f["stop_s"] is None else min(end_ns, t0_ns + int(f["stop_s"] * 1e9))
            argv = [*APPS, "send", "--dst", ue_ip(f.get("ue") or 0),
                    "--port", str(BASE_PORT + k), "--cc", p.linux_cc[k], "--out", str(apps_dir / f"send{k}.json"),
                    "--at", str(t0_ns + int(f["start_s"] * 1e9)), "--until", str(stop_ns),
                    *_app_socket_args(p.kernel.iperf3.get(k, []))]
            if tr["kind"] == "transfer":
                argv += ["--bytes", str(int(tr["size_bytes"]))]
            else:
                argv += ["--video", f"{tr['period_s']!r},{tr['on_s']!r},{tr['rate_mbps']!r}"]
            app_procs.append(tb.popen("inet", argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        time.sleep(max(t0_ns - time.monotonic_ns(), 0) / 1e9)
        emu.start(cpu=cpu, fifo_priority=50)
        t0 = time.monotonic()
        t0_ns = time.monotonic_ns()
        if p.command:
            # In the UE namespace with the terminal; its own process group,
            # so that the clean-up ends it and its children.
            cmd_proc = tb.popen("ue", p.command)
        pending = [(k, f) for k, f in enumerate(p.flows) if f["traffic"]["kind"] == "bulk"]
        end = p.duration_s
        while True:
            now = time.monotonic() - t0
            while pending and pending[0][1]["start_s"] <= now:
                k, f = pending.pop(0)
                stop = f["stop_s"] if f["stop_s"] is not None else end + 1.0
                argv = ["iperf3", "-c", ue_ip(f.get("ue") or 0), "-p", str(BASE_PORT + k),
                        "-t", f"{max(stop - f['start_s'], 0.1):.3f}", *p.kernel.iperf3.get(k, [])]
                if p.linux_cc[k] != p.linux_cc[0]:
                    argv += ["-C", p.linux_cc[k]]
                tb.popen("inet", argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if end is not None and now >= end:
                break
            if end is None and cmd_proc is not None and cmd_proc.poll() is not None:
                break
            if not emu.running:
                break
            time.sleep(0.01 if pending else 0.05)
        for ap in app_procs:
            if ap.poll() is None:
                ap.send_signal(signal.SIGTERM)
        for ap in app_procs:
            try:
                ap.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass  # the testbed's clean-up ends it
        if p.bpf_cc is not None or p.shim_rules:
            # Sockets of the flows still open (iperf3 ended with the run,
            # its data unsent) would hold xrc's congestion control, in a
            # namespace about to go, until their retransmissions time out
            # (minutes): abort them now, so that it can be removed.
            for side in ("inet", "ue"):
                tb.run(side, ["ss", "-K", "-t", "state", "all"], timeout=10, check=False)
        report = emu.stop()
        result: dict[str, Any] = {"report": report}
        result["apps"] = _read_app_logs(apps_dir, p, t0_ns)
        result["capture"] = {k: np.frombuffer(b, dtype=np.dtype(d)) for k, (d, b) in emu.capture_columns().items()}
        result["flows"] = emu.flows()
        # The base station's samples: the cell's every TTI, the trace
        # access's every millisecond (None on a wired path).
        cell = emu.cell_columns()
        result["cell"] = None if cell is None else {
            k: (np.frombuffer(v[1], dtype=np.dtype(v[0])) if isinstance(v, tuple) else v) for k, v in cell.items()}
        fmap = match_flows(p, result["flows"])
        result["flow_map"] = fmap
        result["views"] = {k: {n: (np.frombuffer(v[1], dtype=np.dtype(v[0])) if isinstance(v, tuple) else v)
                               for n, v in emu.sender_view(i).items()}
                           for k, i in fmap.items() if i is not None}
        if pcap_dir is not None:
            emu.write_pcap(str(pcap_dir / "inet.pcap"), "inet")
            emu.write_pcap(str(pcap_dir / "ue.pcap"), "ue")
    result["_env"] = {"command_exit": None if cmd_proc is None else cmd_proc.returncode}
    return result


def _app_socket_args(iperf3_args: list[str]) -> list[str]:
    """:mod:`kernel_tcp`'s iperf3 socket options as :mod:`.apps` options
    (``-M`` is TCP_MAXSEG for both, ``-N`` TCP_NODELAY)."""
    out, i = [], 0
    while i < len(iperf3_args):
        if iperf3_args[i] == "-M":
            out += ["--mss", iperf3_args[i + 1]]
            i += 2
        elif iperf3_args[i] == "-N":
            out.append("--nodelay")
            i += 1
        else:
            raise ValueError(f"no application option for iperf3 option {iperf3_args[i]!r}")
    return out


def _read_app_logs(apps_dir: Path, p: Plan, t0_ns: int) -> dict[int, dict]:
    """The application logs of the transfer and video flows, times in
    seconds of the emulator's clock (0 = the emulator's start)."""
    out: dict[int, dict] = {}

    def s_(ns):
        return None if ns is None else (ns - t0_ns) / 1e9

    for k, f in enumerate(p.flows):
        if f["traffic"]["kind"] == "bulk":
            continue
        logs = {}
        for role in ("sink", "send"):
            try:
                logs[role] = json.loads((apps_dir / f"{role}{k}.json").read_text())
            except (OSError, ValueError):
                logs[role] = None
        snd, snk = logs["send"] or {}, logs["sink"] or {}
        reads = snk.get("reads") or [[], []]
        out[k] = {
            "started_s": s_(snd.get("start_ns")), "connected_s": s_(snd.get("connected_ns")),
            "written": int(snd.get("written") or 0), "closed_s": s_(snd.get("closed_ns")),
            "read_t_s": (np.asarray(reads[0], dtype=np.int64) - t0_ns) / 1e9,
            "read_bytes": np.asarray(reads[1], dtype=np.int64),
            "eof_s": s_(snk.get("eof_ns")),
            "chunks": [{"start_s": s_(c["start_ns"]), "written_s": s_(c["written_ns"]),
                        "acked_s": s_(c["acked_ns"])} for c in snd.get("chunks") or []],
            "logs_missing": [r for r, v in logs.items() if v is None],
        }
    return out


def _route_line(tb, side: str, dst: str) -> list[str]:
    """The side's route to ``dst`` as ``ip route replace`` arguments
    (without the metrics this module sets)."""
    r = tb.run(side, ["ip", "-o", "route", "show", "exact", f"{dst}/32"], timeout=5).stdout.split()
    if not r:
        raise RuntimeError(f"no route to {dst} in the {side} namespace")
    keep, k = [f"{dst}/32"], 1
    while k < len(r):
        if r[k] in ("dev", "src", "scope", "proto") and k + 1 < len(r):
            keep += r[k:k + 2]
            k += 2
        else:
            k += 1
    return keep


def _route_metric(tokens: list[str], opt: str) -> float | None:
    """The value of route metric ``opt`` in ``ip -o route show`` output, in
    the unit the plan uses (milliseconds for times): iproute2 prints
    ``rto_min lock 1ms`` (it locks rto_min, which Linux's ``tcp_rto_min``
    needs) and large times in seconds (``120s``, ``4294.97s``)."""
    if opt not in tokens:
        return None
    i = tokens.index(opt) + 1
    if i < len(tokens) and tokens[i] == "lock":
        i += 1
    if i >= len(tokens):
        return None
    v = tokens[i]
    try:
        for suffix, scale in (("ms", 1.0), ("us", 1e-3), ("s", 1e3)):
            if v.endswith(suffix):
                return float(v[: -len(suffix)]) * scale
        return float(v)
    except ValueError:
        return None


def _plan_value(v: str) -> float:
    return float(v[:-2]) if v.endswith("ms") else float(v)


def apply_routes(tb, kernel: KernelTcp) -> None:
    """Sets the route metrics of :mod:`kernel_tcp`'s plan and reads them
    back (an option the kernel ignored would otherwise pass silently). A
    value the kernel refuses or does not keep is an :class:`EmulateError`
    naming the scenario field (exit 2); the caller's ``testbed`` cleans up."""
    todo = [(ue, "inet", ue_ip(ue), opts) for ue, opts in sorted(kernel.routes.items())]
    if kernel.ue_route:
        todo.append((None, "ue", tb.inet_ip, kernel.ue_route))
    for ue, side, dst, opts in todo:
        argv = ["ip", "route", "replace", *_route_line(tb, side, dst)]
        for o, v in opts.items():
            argv += [o, v]
        r = tb.run(side, argv, timeout=5, check=False)
        fields = ", ".join(f"{kernel.route_fields.get((ue, o), o)} ({o} {v})" for o, v in opts.items())
        if r.returncode != 0:
            raise EmulateError(f"{fields}: the kernel refused the route to {dst} in the {side} namespace: "
                               f"{(r.stderr or r.stdout).strip()}")
        got = tb.run(side, ["ip", "-o", "route", "show", "exact", f"{dst}/32"], timeout=5).stdout.split()
        for o, v in opts.items():
            have, want = _route_metric(got, o), _plan_value(v)
            # iproute2 prints times of a second or more rounded to 3 significant digits.
            if have is None or abs(have - want) > max(1e-9, 0.005 * want):
                raise EmulateError(f"{kernel.route_fields.get((ue, o), o)}: set {o} {v} on the route to {dst} in the "
                                   f"{side} namespace, the kernel keeps {' '.join(got)!r}")


def _iperf3_version() -> str | None:
    r = subprocess.run(["iperf3", "--version"], capture_output=True, text=True, timeout=5)
    return (r.stdout.splitlines() or [None])[0]


def match_flows(p: Plan, seen: list[dict]) -> dict[int, int | None]:
    """Scenario flow k -> the capture flow of its iperf3 data connection
    (the connection to its UE's address and port 5201 + k that carried the
    most data down; the other one on that port is iperf3's control
    connection)."""
    out: dict[int, int | None] = {}
    for k, f in enumerate(p.flows):
        cands = [s for s in seen if s["proto"] == 6 and s["dport"] == BASE_PORT + k
                 and s["dst"] == ue_ip(f.get("ue") or 0)]
        out[k] = max(cands, key=lambda s: s["payload_down"])["index"] if cands else None
    return out


# ----------------------------------------------------------------- tables

def _bins(duration_s: float, bin_ms: float) -> np.ndarray:
    w = bin_ms / 1e3
    n = int(np.ceil(duration_s / w - 1e-9))
    return np.arange(n) * w


def tables(p: Plan, r: dict[str, Any]) -> dict[str, dict[str, np.ndarray]]:
    """The run's tables, as far as a real run fills them."""
    res = p.resolved
    # The tables cover the scenario's duration (the loop stops a few ms
    # after it); an interactive run covers what ran.
    dur = float(r["report"]["duration_s"])
    if p.duration_s is not None:
        dur = min(dur, p.duration_s)
    bin_ms = float(res["output"]["bin_ms"])
    w = bin_ms / 1e3
    starts = _bins(dur, bin_ms)
    cap = r["capture"]
    fmap = r["flow_map"]
    cap_to_flow = {i: k for k, i in fmap.items() if i is not None}
    u32 = np.uint32
    t = {}

    # flow_throughput, rtt, retransmits: the sender's view of each flow.
    tp = {"t": [], "flow": [], "bytes": [], "goodput_mbps": []}
    rtt = {"t": [], "flow": [], "rtt_ms": []}
    rtx = {"t": [], "flow": []}
    fl = {k: [] for k in ("flow", "ue", "start_s", "end_s", "bytes_delivered", "segments_sent", "retransmits",
                          "completed", "fct_s")}
    ch = {c: [] for c in ("flow", "chunk", "start_s", "written_s", "delivered_s", "delivery_time_s")}
    apps = r.get("apps") or {}
    for k, f in enumerate(p.flows):
        v = r["views"].get(k)
        ue = NONE if f.get("ue") is None else int(f["ue"])
        app = apps.get(k)
        completed, fct = 0, float("nan")
        if v is None:
            delivered_t, delivered_b = np.zeros(0), np.zeros(0, dtype=np.int64)
            start = end = float(f["start_s"])
        else:
            delivered_t = v["delivered_t_ns"].astype(np.int64) / 1e9
            delivered_b = v["delivered_bytes"].astype(np.int64)
            start = float(f["start_s"])
            end = dur if f["stop_s"] is None else min(dur, float(f["stop_s"]))
            rtt["t"].append(v["rtt_t_ns"] / 1e9)
            rtt["rtt_ms"].append(v["rtt_ns"] / 1e6)
            rtt["flow"].append(np.full(v["rtt_ns"].size, k, dtype=u32))
            rtx["t"].append(v["retransmit_t_ns"] / 1e9)
            rtx["flow"].append(np.full(v["retransmit_t_ns"].size, k, dtype=u32))
        if app is not None:
            rt, rb = app["read_t_s"], app["read_bytes"]
            if f["traffic"]["kind"] == "transfer":
                # Complete when the receiving application has read every
                # byte, within the run.
                size = int(f["traffic"]["size_bytes"])
                i = int(np.searchsorted(rb, size, side="left"))
                if i < rb.size and rt[i] <= dur:
                    completed, fct = 1, float(rt[i]) - start
                    end = min(end, float(rt[i]))
            else:
                tr = f["traffic"]
                chunk = max(round(tr["rate_mbps"] * 1e6 / 8 * tr["on_s"]), 1)
                for i, c in enumerate(app["chunks"]):
                    j = int(np.searchsorted(rb, (i + 1) * chunk, side="left"))
                    got = float(rt[j]) if j < rb.size and rt[j] <= dur else float("nan")
                    ch["flow"].append(k)
                    ch["chunk"].append(i)
                    ch["start_s"].append(c["start_s"])
                    ch["written_s"].append(float("nan") if c["written_s"] is None else c["written_s"])
                    ch["delivered_s"].append(got)
                    ch["delivery_time_s"].append(got - c["start_s"])
        # Cumulative bytes delivered at each bin's end, differenced.
        edges = np.append(starts + w, np.inf)[: starts.size]
        idx = np.searchsorted(delivered_t, edges, side="right") - 1
        cum = np.where(idx >= 0, delivered_b[np.clip(idx, 0, None)] if delivered_b.size else 0, 0)
        per = np.diff(np.concatenate([[0], cum])).astype(np.uint64)
        sel = starts >= start - 1e-9
        widths = np.minimum(starts + w, dur) - starts
        tp["t"].append(starts[sel])
        tp["flow"].append(np.full(sel.sum(), k, dtype=u32))
        tp["bytes"].append(per[sel])
        tp["goodput_mbps"].append(per[sel] * 8 / widths[sel] / 1e6)
        fl["flow"].append(k)
        fl["ue"].append(ue)
        fl["start_s"].append(start)
        fl["end_s"].append(end)
        if app is not None:
            # What the receiving application read (the sender's view also
            # counts the FIN's sequence number).
            rt, rb = app["read_t_s"], app["read_bytes"]
            i = int(np.searchsorted(rt, dur, side="right")) - 1
            fl["bytes_delivered"].append(int(rb[i]) if i >= 0 else 0)
        else:
            fl["bytes_delivered"].append(int(cum[-1]) if cum.size else 0)
        fl["segments_sent"].append(0 if v is None else int(v["data_segments"]))
        fl["retransmits"].append(0 if v is None else int(v["retransmit_t_ns"].size))
        fl["completed"].append(completed)
        fl["fct_s"].append(fct)

    def cat(d: dict, types: dict) -> dict:
        return {c: (np.concatenate(d[c]).astype(types[c]) if d[c] else np.zeros(0, dtype=types[c])) for c in d}

    t["flow_throughput"] = cat(tp, {"t": np.float64, "flow": u32, "bytes": np.uint64, "goodput_mbps": np.float64})
    t["rtt"] = cat(rtt, {"t": np.float64, "flow": u32, "rtt_ms": np.float64})
    t["retransmits"] = cat(rtx, {"t": np.float64, "flow": u32})
    t["flows"] = {"flow": np.array(fl["flow"], dtype=u32), "ue": np.array(fl["ue"], dtype=u32),
                  "start_s": np.array(fl["start_s"], dtype=np.float64),
                  "end_s": np.array(fl["end_s"], dtype=np.float64),
                  "bytes_delivered": np.array(fl["bytes_delivered"], dtype=np.uint64),
                  "segments_sent": np.array(fl["segments_sent"], dtype=np.uint64),
                  "retransmits": np.array(fl["retransmits"], dtype=np.uint64),
                  "completed": np.array(fl["completed"], dtype=np.uint8),
                  "fct_s": np.array(fl["fct_s"], dtype=np.float64)}
    if ch["flow"]:
        t["chunks"] = {"flow": np.array(ch["flow"], dtype=u32),
                       "chunk": np.array(ch["chunk"], dtype=u32),
                       **{c: np.array(ch[c], dtype=np.float64)
                          for c in ("start_s", "written_s", "delivered_s", "delivery_time_s")}}

    # drops: every packet the emulated path dropped, by where.
    dropped = cap["fate"] == 1
    loc = np.full(cap["fate"].size, 255, dtype=np.uint8)
    for d in (0, 1):
        for stage, code in DROP_CODES.get((p.topology, d), {}).items():
            loc[dropped & (cap["dir"] == d) & (cap["drop_stage"] == stage)] = code
    keep = dropped & (loc != 255)
    flows_of = np.array([cap_to_flow.get(int(i), NONE) for i in cap["flow"][keep]], dtype=u32)
    drops = {"t": cap["t_in_ns"][keep] / 1e9, "location": loc[keep], "flow": flows_of}

    cell = r["cell"]
    if cell is not None:
        # HARQ give-ups found at reassembly: their identity is gone.
        n = cell["harq_lost_count"].astype(np.int64)
        lost_t = np.repeat(cell["harq_lost_t_ns"] / 1e9, n)
        drops = {"t": np.concatenate([drops["t"], lost_t]),
                 "location": np.concatenate([drops["location"], np.full(lost_t.size, 4, dtype=np.uint8)]),
                 "flow": np.concatenate([drops["flow"], np.full(lost_t.size, NONE, dtype=u32)])}
        order = np.argsort(drops["t"], kind="stable")
        drops = {c: v[order] for c, v in drops.items()}
    t["drops"] = drops

    if cell is not None:
        t.update(cell_tables(p, r, t["flows"], starts, w, dur))
    return t


def cell_tables(p: Plan, r: dict, flows: dict, starts: np.ndarray, w: float, dur: float) -> dict:
    """rlc, queue_delay, ue_rate and ues from the cell's observer and the
    capture. A UE is active between the start and the end of its
    scenario flows (as the simulator's flows are alive), or, without
    flows, from the first packet the cell classified to it."""
    res = p.resolved
    cell = r["cell"]
    cap = r["capture"]
    u32 = np.uint32
    n_ues = p.num_ues
    tti_s = cell["tti_t_ns"] / 1e9
    ue = cell["tti_ue"]
    active = np.zeros(tti_s.size, dtype=bool)
    for u in range(n_ues):
        sel = flows["ue"] == u
        if sel.any():
            a, b = float(flows["start_s"][sel].min()), float(flows["end_s"][sel].max())
            active |= (ue == u) & (tti_s >= a) & (tti_s < b)
        else:
            active |= (ue == u) & (cell["tti_active"] == 1)
    every = int(res["output"]["rlc_sample_ttis"])
    k = np.arange(tti_s.size) // max(n_ues, 1)
    s = (k % every) == 0
    out = {"rlc": {"t": tti_s[s], "ue": ue[s].astype(u32), "hol_ms": cell["tti_hol_ns"][s] / 1e6,
                   "sdus": cell["tti_sdus"][s], "bytes": cell["tti_bytes"][s], "cqi": cell["tti_cqi"][s],
                   "available_mbps": cell["tti_available_mbps"][s],
                   "agent_mbps": cell["tti_agent_bps"][s] / 1e6, "active": active[s].astype(np.uint8)}}
    cap_to_flow = {i: k for k, i in r["flow_map"].items() if i is not None}
    out["queue_delay"] = {"t": cell["sojourn_t_ns"] / 1e9, "ue": cell["sojourn_ue"].astype(u32),
                          "flow": np.array([cap_to_flow.get(int(i), NONE) for i in cell["sojourn_flow"]],
                                           dtype=u32),
                          "delay_ms": cell["sojourn_ns"] / 1e6}
    # IP bits delivered to each UE: packets written to the UE side, by the
    # UE their capture flow was classified to.
    flow_ue = np.array([NONE if x is None else x for x in cell["flow_ue"]] + [NONE], dtype=np.int64)
    dl = (cap["dir"] == 0) & (cap["fate"] == 0)
    f = cap["flow"][dl].astype(np.int64)
    pkt_ue = flow_ue[np.where(f < flow_ue.size - 1, f, flow_ue.size - 1)]
    pkt_t = cap["t_out_ns"][dl] / 1e9
    pkt_bits = cap["len"][dl].astype(np.float64) * 8
    # An NR cell's TTI is its slot; the trace access samples every millisecond.
    tti_len = float(res["cell"]["tti_ms"]) / 1e3 if p.topology == "cellular" else 1e-3
    rate = {c: [] for c in ("t", "ue", "available_mbps", "delivered_mbps", "agent_mbps")}
    ues = {c: [] for c in ("ue", "available_bits_active", "delivered_bits_active", "delivered_bits",
                           "carried_bits", "active_s", "tbs_new", "tbs_retx", "tbs_lost", "rlc_drops")}
    bin_idx = np.minimum((tti_s / w).astype(np.int64), starts.size - 1) if starts.size else tti_s.astype(np.int64)
    for u in range(n_ues):
        su = ue == u
        widths = np.minimum(starts + w, dur) - starts
        av = np.bincount(bin_idx[su], weights=cell["tti_available_mbps"][su], minlength=starts.size)
        ag = np.bincount(bin_idx[su], weights=cell["tti_agent_bps"][su] / 1e6, minlength=starts.size)
        cnt = np.maximum(np.bincount(bin_idx[su], minlength=starts.size), 1)
        pu = pkt_ue == u
        pb = np.minimum((pkt_t[pu] / w).astype(np.int64), max(starts.size - 1, 0))
        dbits = np.bincount(pb, weights=pkt_bits[pu], minlength=starts.size)[: starts.size]
        rate["t"].append(starts)
        rate["ue"].append(np.full(starts.size, u, dtype=u32))
        rate["available_mbps"].append(av[: starts.size] / cnt[: starts.size])
        rate["delivered_mbps"].append(dbits / widths / 1e6)
        rate["agent_mbps"].append(ag[: starts.size] / cnt[: starts.size])
        act_u = active & su
        a_times = tti_s[act_u]
        sel = flows["ue"] == u
        if sel.any():
            a, b = float(flows["start_s"][sel].min()), float(flows["end_s"][sel].max())
            in_act = (pkt_t[pu] >= a) & (pkt_t[pu] < b)
        else:
            in_act = np.zeros(pu.sum(), dtype=bool) if a_times.size == 0 else (pkt_t[pu] >= a_times.min())
        tbn, tbr, tbl, carried = cell["links"][u]
        ues["ue"].append(u)
        ues["available_bits_active"].append(float((cell["tti_available_mbps"][act_u] * 1e6 * tti_len).sum()))
        ues["delivered_bits_active"].append(float(pkt_bits[pu][in_act].sum()))
        ues["delivered_bits"].append(float(pkt_bits[pu].sum()))
        ues["carried_bits"].append(float(carried))
        ues["active_s"].append(act_u.sum() * tti_len)
        ues["tbs_new"].append(tbn)
        ues["tbs_retx"].append(tbr)
        ues["tbs_lost"].append(tbl)
        ues["rlc_drops"].append(int((cell["rlc_drop_ue"] == u).sum()))
    out["ue_rate"] = {"t": np.concatenate(rate["t"]), "ue": np.concatenate(rate["ue"]),
                      "available_mbps": np.concatenate(rate["available_mbps"]),
                      "delivered_mbps": np.concatenate(rate["delivered_mbps"]),
                      "agent_mbps": np.concatenate(rate["agent_mbps"])}
    types = {"ue": u32, "available_bits_active": np.float64, "delivered_bits_active": np.float64,
             "delivered_bits": np.float64, "carried_bits": np.float64, "active_s": np.float64,
             "tbs_new": np.uint64, "tbs_retx": np.uint64, "tbs_lost": np.uint64, "rlc_drops": np.uint64}
    out["ues"] = {c: np.array(v, dtype=types[c]) for c, v in ues.items()}
    return out


def _pct(x: np.ndarray, q: float) -> float | None:
    return float(np.percentile(x, q)) if x.size else None


def summary(p: Plan, t: dict, r: dict) -> dict[str, Any]:
    """``summary.json``: the fields of ``xrc run``'s that a real run
    measures (the others are null and listed in ``not_measured``), the
    timing report, and the environment."""
    from ..results import _hol_budget_ms, jain_over_overlap

    res = p.resolved
    fs = t["flows"]
    flows = []
    for k, fc in enumerate(p.flows):
        start, end = float(fs["start_s"][k]), float(fs["end_s"][k])
        rr = t["rtt"]["rtt_ms"][t["rtt"]["flow"] == k]
        flows.append({
            "id": fc["id"], "cc": fc["cc"], "linux_cc": p.linux_cc[k],
            "ue": None if fs["ue"][k] == NONE else int(fs["ue"][k]),
            "goodput_mbps": float(fs["bytes_delivered"][k]) * 8 / max(end - start, 1e-9) / 1e6,
            "rtt_ms": {"p50": _pct(rr, 50), "p95": _pct(rr, 95)},
            "retransmits": int(fs["retransmits"][k]), "bytes_delivered": int(fs["bytes_delivered"][k]),
            "start_s": start, "end_s": end,
            "completed": None if fc["traffic"]["kind"] == "bulk" else bool(fs["completed"][k]),
            "timeouts": None, "loss_undos": None,
            "recovery_undos": None, "spurious_rtos": None, "probes": None,
            "five_tuple": next((s["describe"] for s in r["flows"] if s["index"] == r["flow_map"].get(k)), None),
        })
    ues = []
    if "ues" in t:
        budget = _hol_budget_ms(res)
        us, rlc, qd = t["ues"], t["rlc"], t["queue_delay"]
        for i in range(us["ue"].size):
            u = int(us["ue"][i])
            act = float(us["active_s"][i])
            fair, deliv = float(us["available_bits_active"][i]), float(us["delivered_bits_active"][i])
            capacity = max(fair, float(us["carried_bits"][i]))
            hol = rlc["hol_ms"][(rlc["ue"] == u) & (rlc["active"] == 1)]
            pkt = qd["delay_ms"][qd["ue"] == u]
            ues.append({
                "id": u, "address": ue_ip(u),
                "capacity_mbps": capacity / act / 1e6 if act > 0 else 0.0,
                "delivered_mbps": deliv / act / 1e6 if act > 0 else 0.0,
                "utilization": float(us["delivered_bits"][i]) / capacity if capacity > 0 else None,
                "fair_share_mbps": fair / act / 1e6 if act > 0 else 0.0,
                "fair_share_ratio": deliv / fair if fair > 0 else None,
                "hol_delay_ms": {f"p{q}": _pct(hol, q) for q in (50, 80, 90, 95, 99)},
                "frac_time_hol_below_budget": float(np.mean(hol <= budget)) if hol.size else None,
                "queuing_delay_ms": {f"p{q}": _pct(pkt, q) for q in (50, 80, 90, 95, 99)},
                "frac_packets_queued_below_budget": float(np.mean(pkt <= budget)) if pkt.size else None,
                "hol_budget_ms": budget, "active_s": act, "rlc_drops": int(us["rlc_drops"][i]),
                "tbs_new": int(us["tbs_new"][i]), "tbs_retx": int(us["tbs_retx"][i]),
                "tbs_lost": int(us["tbs_lost"][i]),
            })
    rep = r["report"]
    return {
        "scenario": res["name"], "seed": res["seed"], "emulated": True,
        "sim_time_s": rep["duration_s"], "wall_time_s": rep["duration_s"], "events": None,
        "flows": flows, "ues": ues,
        "jain_index": jain_over_overlap(t, p.flows) if len(p.flows) > 1 else None,
        "fell_behind": rep["fell_behind"],
        "timing": {"tti_start_lateness_us": rep["tti_start_lateness"], "release_error_us": rep["release_error"],
                   "stalls": rep["stalls"], "stalled_ms": rep["stalled_ms"],
                   "gso": rep["gso"], "ue_side_writes": rep["down"]["writes"],
                   "ue_side_packets_per_write": rep["down"]["packets_per_write"]},
        "environment": r["environment"],
        "not_measured": not_measured(p),
    }


def write_run_dir(p: Plan, scenario, r: dict, staging: Path, argv: list[str]) -> dict:
    from ..results import write_parquet
    from ..runner import metadata, scenario_toml

    t = tables(p, r)
    (staging / "scenario.toml").write_text(scenario_toml(scenario))
    (staging / "scenario.given.toml").write_text(scenario.source_text)
    (staging / "scenario.resolved.json").write_text(json.dumps(p.resolved, indent=2, sort_keys=True) + "\n")
    meta = metadata(scenario, argv)
    meta["xrc_output"] = "emulation"
    meta["emulation"] = r["environment"]
    (staging / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
    write_parquet(t, staging, [f["id"] for f in p.resolved["flows"]])
    s = summary(p, t, r)
    (staging / "summary.json").write_text(json.dumps(s, indent=2) + "\n")
    from ..plots import plot_all

    # The figures of `xrc run` from what a real run measures (the window,
    # which it cannot, is left out).
    plot_all(t, p.resolved, staging / "plots", summary=s)
    (staging / "emulator-report.json").write_text(json.dumps(r["report"], indent=2) + "\n")
    (staging / "capture_flows.json").write_text(json.dumps(
        [{**f, "ue": (r["cell"]["flow_ue"][f["index"]] if r["cell"] is not None
                      and f["index"] < len(r["cell"]["flow_ue"]) else None),
          "scenario_flow": next((k for k, i in r["flow_map"].items() if i == f["index"]), None)}
         for f in r["flows"]], indent=2) + "\n")
    return s


def main(scenario, *, out: str | None, force: bool, command: list[str] | None, run_flows: bool,
         argv: list[str], quiet: bool, xrc_acks: bool = False, gso: bool = GSO_DEFAULT,
         kernel_trace: bool = False, shim: tuple[str, ...] = (), placeholder: bool = False,
         tag_key: str | None = None) -> int:
    """``xrc emulate``. Exit 2 for what it refuses (before anything is set
    up), 1 when a run fails, the COMMAND's status in the interactive mode."""
    from ..outdir import check, commit, staged
    from ..scenario import read_input
    from .testbed import terminate_on_sigterm

    p = plan(scenario.resolved, command=command, run_flows=run_flows, out=out is not None, xrc_acks=xrc_acks,
             gso=gso, kernel_trace=kernel_trace, shim=shim, placeholder=placeholder, tag_key=tag_key)
    if p.kernel_trace and out is None:
        raise EmulateError("--kernel-trace writes kernel-trace.bin into the run directory: give --out")
    if out is not None:
        check(Path(out), force)
    trace = scenario.resolved.get("trace") or {}
    texts = tuple(read_input(f"trace.{k}", trace[k], trace[k]) if trace.get(k) else None
                  for k in ("downlink", "uplink"))
    terminate_on_sigterm()
    # The staging directory (if any) is removed on the way out of the with
    # by any exception, a signal's included.
    with staged(Path(out), force) if out is not None else contextlib.nullcontext(None) as staging:
        r = run(p, trace_texts=texts, quiet=quiet, pcap_dir=staging)
        if staging is None:
            if not quiet:
                _print_timing(r["report"], r["environment"])
            code = r["environment"]["command_exit"]
            return 0 if code is None else (code if code >= 0 else 128 - code)
        s = write_run_dir(p, scenario, r, staging, argv)
        commit(staging, Path(out), force)
    if not quiet:
        for f in s["flows"]:
            print(f"  flow {f['id']:<10} {f['cc']} (Linux {f['linux_cc']}): goodput {f['goodput_mbps']:.2f} Mbit/s, "
                  f"RTT p50 {f['rtt_ms']['p50'] or float('nan'):.1f} p95 {f['rtt_ms']['p95'] or float('nan'):.1f} ms, "
                  f"retransmits {f['retransmits']}")
        for u in s["ues"]:
            print(f"  UE {u['id']} ({u['address']}): HoL p90 {u['hol_delay_ms']['p90'] or float('nan'):.1f} ms, "
                  f"capacity {u['capacity_mbps']:.2f} Mbit/s")
        _print_timing(r["report"], r["environment"])
        print(f"  wrote {out}")
    return 0


def _print_timing(rep: dict, env: dict) -> None:
    t = rep.get("tti_start_lateness")
    e = rep["release_error"]
    fmt = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
    line = f"  timing: release error p50/p99/max {fmt(e['p50_us'])}/{fmt(e['p99_us'])}/{fmt(e['max_us'])} us"
    if t:
        line += f"; TTI start lateness p50/p99/max {fmt(t['p50_us'])}/{fmt(t['p99_us'])}/{fmt(t['max_us'])} us"
    if rep.get("gso"):
        d = rep["down"]
        line += f"; GSO: {d['written']} packets in {d['writes']} writes to the UE side"
    line += f"; steal {env['steal_s']:.2f} s" + ("; FELL BEHIND" if rep["fell_behind"] else "")
    print(line, file=sys.stderr)


__all__ = ["EmulateError", "Plan", "plan", "run", "tables", "summary", "main", "LINUX_CC"]
