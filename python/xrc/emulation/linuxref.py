"""``xrc validate-linux``: real Linux TCP against the simulator, case by case.

For every case, real Linux TCP (``iperf3``) runs through xrc's own
real-time emulator (:mod:`xrc.emulation.testbed`) between two network
namespaces, and the same case runs through the simulator; one table
compares them.

**Real side.** The iperf3 client (the sender) runs in the Internet-side
namespace, whose *default* congestion control
(``net.ipv4.tcp_congestion_control``) is the algorithm under test: a
socket switched to another algorithm after creation keeps the pacing
state of the machine default's (BBR), so ``iperf3 -C`` is not used.
``net.ipv4.tcp_no_metrics_save=1`` there, and each run gets new
namespaces, so no cached ssthresh or RTT leaks between runs. The server
runs in the UE-side namespace. Every other setting is the kernel's default.
The RTT samples, retransmissions, drops and delivery progress come from
the emulator's own capture, reconstructed as the simulator's sender
records its own (:mod:`xrc_emu::analysis`, ``docs/emulation.md``); the
congestion window comes from iperf3's ``-J`` intervals (``snd_cwnd`` every
100 ms); the kernel's counters from ``nstat`` in the sender's namespace.

**Simulated side.** The same scenario fields: ``topology = "wired"`` with
``internet.rate_mbps``, ``internet.delay_ms`` (one way) and
``internet.buffer_packets``; or ``topology = "trace"`` with
``trace.downlink``, ``trace.uplink`` (the same file for the constant
trace, as ``mm-link T T``; a cellular trace's ``.up`` file),
``trace.buffer_*`` and ``internet.delay_ms``. MSS 1448 and xrc's defaults
(Linux's: RACK, minimum RTO 200 ms, delayed ACK 40 ms, 16 quick ACKs)
everywhere else. The emulator is built from the very same resolved
scenario, so both sides cross the same link model, with the same
accounting: the emulator reads IP packets from its TUN devices (no packet
information header) and hands the models their IP size, as the simulator
does; the trace link itself counts each packet 4 bytes larger, in 1504-byte
opportunities and byte limits, as Mahimahi counts its TUN reads.

**Alignment.** Time zero of a real run is the first data segment of the
iperf3 data connection (the simulated flow starts established, without a
handshake). The steady interval is [5 s, duration). On a trace link the
trace's clock starts when the emulator starts, a few hundred ms before the
first data segment: the simulated flow then starts at that offset (to 0.1
ms) so both see the same part of the trace.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .testbed import UE_IP, TestbedError, default_emulator_cpu, kernel_hz, require, testbed

# The cellular cases read three public Mahimahi traces: whole, from
# $XRC_TRACES_DIR or `shared/traces` beside the checkout where they exist;
# otherwise their first 65 s (a case runs 60 s), which ship gzipped beside
# the stored reference (data/linux-reference/trace-slices/, and beside any
# results file given to --resim).
REPO = Path(__file__).resolve().parents[3]  # noqa: repo-path
SHARED_TRACES = Path(os.environ.get("XRC_TRACES_DIR") or REPO.parent / "shared" / "traces")
TRACE_SLICES = REPO / "data" / "linux-reference" / "trace-slices"
RESULTS_SCHEMA = 1
STEADY_FROM_S = 5.0
#: The simulator's side of every case is the mean over master seeds
#: 1..SIM_SEEDS: BBR's random start of its gain cycle (and anything else
#: drawn from the seed) moves a 60 s run by a few percent on a trace.
SIM_SEEDS = 5
MSS = 1448
RATE_MBPS = 20.0
# IP bytes of a full packet, which fills one Mahimahi opportunity (1504
# bytes counted with the TUN header): the unit of a constant trace's rate.
OPPORTUNITY_IP_BYTES = 1500
CELL_TRACES = ("TMobile-LTE-short", "Verizon-LTE-short", "ATT-LTE-driving")
LINUX_TO_XRC = {"cubic": "cubic", "reno": "newreno", "bbr": "bbr"}
NSTAT_KEYS = ("TcpExtTCPLossUndo", "TcpExtTCPSpuriousRTOs", "TcpExtTCPLossProbes", "TcpExtTCPLossProbeRecovery",
              "TcpExtTCPTimeouts", "TcpExtTCPHystartTrainDetect", "TcpExtTCPHystartTrainCwnd",
              "TcpExtTCPHystartDelayDetect", "TcpExtTCPHystartDelayCwnd", "TcpRetransSegs",
              "TcpExtTCPFastRetrans", "TcpExtTCPSlowStartRetrans", "TcpExtTCPLostRetransmit",
              "TcpExtTCPSackRecovery", "TcpExtTCPDSACKRecv", "TcpExtTCPDSACKUndo", "TcpExtTCPFullUndo",
              "TcpExtTCPPartialUndo", "TcpExtTCPSACKReorder", "TcpExtTCPSpuriousRtxHostQueues")
NS_SYSCTLS_RECORDED = ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_sack",
                       "net.ipv4.tcp_timestamps", "net.ipv4.tcp_frto", "net.ipv4.tcp_recovery",
                       "net.ipv4.tcp_early_retrans", "net.ipv4.tcp_autocorking", "net.ipv4.tcp_ecn",
                       "net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem", "net.ipv4.tcp_slow_start_after_idle",
                       "net.ipv4.tcp_min_rtt_wlen", "net.ipv4.tcp_pacing_ss_ratio", "net.ipv4.tcp_pacing_ca_ratio",
                       "net.core.default_qdisc")


# A real run is marked disturbed when more than this fraction of its packets
# were released over 1 ms late, or one was released this late: the link was
# then not the configured one for a noticeable part of the run.
DISTURBED_LATE_FRACTION = 1e-3
DISTURBED_MAX_US = 10_000.0


#: With ``--retake-noisy N``, a real run whose emulator released packets
#: with an error p99 above this is run again (up to N more times), and the
#: quietest attempt is kept: chosen by the emulator's timing only, never by
#: the TCP numbers, and every attempt set aside is kept in the results.
NOISY_P99_US = 1000.0


def noisy(report: dict) -> bool:
    """Whether the emulator's release error p99 of a run is above :data:`NOISY_P99_US`."""
    return (report["release_error"]["p99_us"] or 0.0) > NOISY_P99_US


def disturbed(report: dict) -> bool:
    rel = report["release_error"]
    return (rel["n"] > 0 and rel["late"] / rel["n"] > DISTURBED_LATE_FRACTION) or (rel["max_us"] or 0) > DISTURBED_MAX_US


class HarnessError(RuntimeError):
    """A run that could not be carried out (the message says why)."""


# ------------------------------------------------------------------ cases

@dataclass(frozen=True)
class Case:
    """One comparison. ``link``: ``"wired"`` (the smooth link), ``"const"``
    (a constant-rate Mahimahi trace) or ``"cell"`` (a bundled cellular
    trace). ``cc`` is Linux's name."""

    id: str
    link: str
    cc: str
    rtt_ms: float
    buffer_packets: int | None = None
    buffer_bytes: int | None = None
    trace: str | None = None
    rate_mbps: float = RATE_MBPS

    @property
    def xrc_cc(self) -> str:
        return LINUX_TO_XRC[self.cc]


def all_cases() -> list[Case]:
    """The issue's cases: 20 Mbit/s, 40 ms base RTT, 1 and 4 BDP (67 and 267
    packets) for cubic, reno and bbr on the smooth link and on a constant
    20 Mbit/s trace; the three bundled cellular traces at 10 and 40 ms
    with a 150 KB buffer for cubic and bbr."""
    out = []
    for link in ("wired", "const"):
        for buf in (67, 267):
            for cc in ("cubic", "reno", "bbr"):
                out.append(Case(id=f"{link}-20mbit-40ms-{buf}p-{cc}", link=link, cc=cc, rtt_ms=40.0,
                                buffer_packets=buf))
    for tr in CELL_TRACES:
        for rtt in (10, 40):
            for cc in ("cubic", "bbr"):
                out.append(Case(id=f"{tr}-{rtt}ms-150kB-{cc}", link="cell", cc=cc, rtt_ms=float(rtt),
                                buffer_bytes=150_000, trace=tr))
    return out


def select_cases(patterns: str | None) -> list[Case]:
    """Cases whose id matches any comma-separated shell pattern."""
    cases = all_cases()
    if not patterns:
        return cases
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    chosen = [c for c in cases if any(fnmatch.fnmatchcase(c.id, p) or p == c.id for p in pats)]
    if not chosen:
        raise ValueError(f"--cases {patterns!r} matches no case; known: {', '.join(c.id for c in cases)}")
    return chosen


def constant_trace(rate_mbps: float) -> str:
    """A Mahimahi trace of a constant rate: in millisecond ``m`` (1-based)
    ``floor(m·r) − floor((m−1)·r)`` opportunities, ``r`` = opportunities per
    ms, exactly, over one period (the denominator of ``r``); e.g. 20 Mbit/s
    = 5/3 opportunities per ms: ``1, 2, 2, 3, 3``."""
    r = Fraction(rate_mbps).limit_denominator(10_000) * 1_000_000 / (OPPORTUNITY_IP_BYTES * 8 * 1000)
    if r <= 0:
        raise ValueError(f"rate_mbps must be positive, got {rate_mbps}")
    period = r.denominator
    lines = []
    for m in range(1, period + 1):
        n = math.floor(m * r) - math.floor((m - 1) * r)
        lines.extend([str(m)] * n)
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class TraceFiles:
    """Where a case's traces are: paths for the simulator, text for the emulator."""

    downlink: Path
    uplink: Path


def trace_files(case: Case, generated_dir: Path, traces_dir: Path | None = None,
                slices: tuple[Path, ...] = ()) -> TraceFiles | None:
    """The downlink and uplink traces of a trace case (writing the constant
    trace into ``generated_dir``); ``None`` for the wired link. The
    constant trace serves both directions (as ``mm-link T T``); a cellular
    trace's ACKs cross its ``.up`` trace. A cellular trace is read from
    `traces_dir` when given; otherwise from :data:`SHARED_TRACES` where it
    is there, else from its gzipped slice in one of `slices` or
    :data:`TRACE_SLICES`, written into ``generated_dir``."""
    if case.link == "wired":
        return None
    if case.link == "const":
        p = generated_dir / f"const-{case.rate_mbps:g}mbit.trace"
        generated_dir.mkdir(parents=True, exist_ok=True)
        text = constant_trace(case.rate_mbps)
        if not p.exists() or p.read_text() != text:
            p.write_text(text)
        return TraceFiles(p, p)
    if traces_dir is not None:
        down, up = traces_dir / f"{case.trace}.down", traces_dir / f"{case.trace}.up"
        for p in (down, up):
            if not p.is_file():
                raise HarnessError(f"case {case.id}: trace file not found: {p}")
        return TraceFiles(down, up)
    down, up = SHARED_TRACES / f"{case.trace}.down", SHARED_TRACES / f"{case.trace}.up"
    if down.is_file() and up.is_file():
        return TraceFiles(down, up)
    places = [*slices, TRACE_SLICES]
    for d in places:
        gz = [d / f"{case.trace}.{k}.gz" for k in ("down", "up")]
        if all(g.is_file() for g in gz):
            generated_dir.mkdir(parents=True, exist_ok=True)
            out = []
            for g in gz:
                p = generated_dir / g.name[: -len(".gz")]
                text = gzip.decompress(g.read_bytes())
                if not p.exists() or p.read_bytes() != text:
                    p.write_bytes(text)
                out.append(p)
            return TraceFiles(*out)
    raise HarnessError(f"case {case.id}: trace {case.trace!r} not found: not in {SHARED_TRACES} (set XRC_TRACES_DIR "
                       f"to a directory of Mahimahi traces) and no slice {case.trace}.down.gz and .up.gz in "
                       + ", ".join(str(d) for d in places))


def sim_scenario(case: Case, duration_s: float, traces: TraceFiles | None, *,
                 start_s: float = 0.0, seed: int = 1) -> dict[str, Any]:
    """The xrc scenario of a case (a dict for :func:`xrc.scenario.from_dict`)."""
    doc: dict[str, Any] = {
        "name": case.id,
        "description": f"validate-linux case {case.id}",
        "seed": seed,
        "duration_s": start_s + duration_s,
        "output": {"bin_ms": 100.0, "cwnd_trace": True, "rtt_trace": True},
        "flows": [{"id": "bulk", "cc": case.xrc_cc, "start_s": start_s, "traffic": {"kind": "bulk"},
                   "tcp": {"mss": MSS}}],
    }
    if case.link == "wired":
        doc["topology"] = "wired"
        doc["internet"] = {"rate_mbps": case.rate_mbps, "delay_ms": case.rtt_ms / 2,
                           "buffer_packets": case.buffer_packets}
        return doc
    assert traces is not None
    doc["topology"] = "trace"
    # mm-delay: a pure delay each way, no queue.
    doc["internet"] = {"delay_ms": case.rtt_ms / 2, "buffer_packets": None}
    doc["trace"] = {"downlink": str(traces.downlink), "uplink": str(traces.uplink),
                    "buffer_packets": case.buffer_packets, "buffer_bytes": case.buffer_bytes}
    doc["flows"][0]["ue"] = 0
    return doc


def resolve_sim(case: Case, duration_s: float, traces: TraceFiles | None, start_s: float = 0.0, seed: int = 1):
    """The case's scenario, resolved (:class:`xrc.scenario.Scenario`)."""
    from ..scenario import from_dict

    return from_dict(sim_scenario(case, duration_s, traces, start_s=start_s, seed=seed))


# ---------------------------------------------------------------- metrics

def _pct(x: np.ndarray, q: float) -> float | None:
    return float(np.percentile(x, q)) if x.size else None


def _mean(x: np.ndarray) -> float | None:
    return float(x.mean()) if x.size else None


def step_mean(t: np.ndarray, v: np.ndarray, t0: float, t1: float) -> float | None:
    """Time-weighted mean over [t0, t1) of a step function that takes value
    ``v[i]`` from ``t[i]`` on (``t`` sorted)."""
    if t.size == 0 or t[0] > t1:
        return None
    i0 = max(int(np.searchsorted(t, t0, side="right")) - 1, 0)
    ts = np.concatenate(([max(t0, t[i0])], t[i0 + 1:][t[i0 + 1:] < t1], [t1]))
    vs = v[i0:i0 + ts.size - 1]
    w = np.diff(ts)
    return float((vs * w).sum() / w.sum()) if w.sum() > 0 else None


def summarize_samples(*, rtt_t: np.ndarray, rtt_ms: np.ndarray, goodput_mbps: float, retx_t: np.ndarray,
                      drops: int, cwnd_mean: float | None, t0: float, t1: float) -> dict[str, Any]:
    sel = (rtt_t >= t0) & (rtt_t < t1)
    r = rtt_ms[sel]
    return {
        "goodput_mbps": goodput_mbps,
        "rtt_mean_ms": _mean(r),
        "rtt_p50_ms": _pct(r, 50),
        "rtt_p95_ms": _pct(r, 95),
        "rtt_samples": int(r.size),
        "retransmits": int(retx_t.size),
        "retransmits_steady": int(((retx_t >= t0) & (retx_t < t1)).sum()),
        "drops": int(drops),
        "cwnd_mean_pkts": cwnd_mean,
    }


def sim_metrics(tables: dict[str, dict[str, np.ndarray]], start_s: float, t0: float, t1: float) -> dict[str, Any]:
    """The compared numbers of a simulated run (flow 0), times relative to
    the flow's start."""
    rtt = tables["rtt"]
    sel = rtt["flow"] == 0
    tp = tables["flow_throughput"]
    # Whole bins inside the steady interval (the flow may start between bin
    # edges: its start is the real runs' data-start offset).
    edges = np.unique(tp["t"])
    width = float(np.min(np.diff(edges))) if edges.size > 1 else t1 - t0
    bsel = (tp["flow"] == 0) & (tp["t"] >= start_s + t0 - 1e-9) & (tp["t"] + width <= start_s + t1 + 1e-9)
    nbins = np.unique(tp["t"][bsel]).size
    goodput = float(tp["bytes"][bsel].sum()) * 8 / (nbins * width if nbins else t1 - t0) / 1e6
    rx = tables["retransmits"]
    retx_t = rx["t"][rx["flow"] == 0] - start_s
    dr = tables["drops"]
    drops = int(((dr["flow"] == 0) & (dr["location"] <= 2)).sum())
    cw = tables["cwnd"]
    csel = cw["flow"] == 0
    ct, cv = cw["t"][csel] - start_s, cw["cwnd"][csel].astype(float)
    out = summarize_samples(rtt_t=rtt["t"][sel] - start_s, rtt_ms=rtt["rtt_ms"][sel], goodput_mbps=goodput,
                            retx_t=retx_t, drops=drops, cwnd_mean=step_mean(ct, cv, t0, t1), t0=t0, t1=t1)
    ss = cw["ssthresh"][csel]
    first = np.nonzero(ss < 0x7FFF_FFFF)[0]
    out["ss_exit_cwnd_pkts"] = int(ss[first[0]]) if first.size else None
    out["ss_exit_t_s"] = float(ct[first[0]]) if first.size else None
    return out


def iperf_cwnd(iperf: dict, t0: float, t1: float) -> tuple[float | None, int | None, list[list[float]]]:
    """Mean ``snd_cwnd`` (segments of 1448 B) over the iperf3 intervals in
    [t0, t1), the last interval's value, and the series [(end s, cwnd)]."""
    series = []
    for iv in iperf.get("intervals", []):
        st = iv["streams"][0]
        if "snd_cwnd" in st:
            series.append([float(st["end"]), st["snd_cwnd"] / MSS])
    vals = np.array([c for e, c in series if t0 < e <= t1 + 1e-6])
    last = round(series[-1][1]) if series else None
    return (float(vals.mean()) if vals.size else None), last, series


# --------------------------------------------------------------- real runs

def cpu_steal_s() -> dict[str, float]:
    """Time the hypervisor ran something else on this VM's CPUs (the
    ``steal`` column of /proc/stat, in USER_HZ ticks), per CPU, seconds."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            f = line.split()
            if f and f[0].startswith("cpu") and len(f) > 8:
                out[f[0]] = int(f[8]) / hz
    except OSError:
        pass
    return out


def _wait_listening(tb, port: int = 5201, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        r = tb.run("ue", ["ss", "-Hltn", f"sport = :{port}"], timeout=5, check=False)
        if r.stdout.strip():
            return
        time.sleep(0.05)
    raise HarnessError(f"iperf3 server did not listen on port {port} within {timeout_s} s")


#: The niceness of the iperf3 client and server in real runs (None: the
#: harness's own). The receiving host's delay is most of what lifts Linux
#: BBR's bandwidth samples above the link on this 2-vCPU host
#: (docs/validation.md, "Where Linux's samples come from": +0.55 to +1.13 %
#: of the +0.79 to +1.27 % excess), and probe runs at -20 gave 46.9 to 48.6
#: ms of mean RTT against 49.7 to 54.1 ms (BBR on the smooth link). A take
#: at -20 beside two builds was no quieter (53.4 and 53.6 ms); one on an
#: idle host moved three BBR numbers toward xrc's but had disturbed runs
#: (docs/validation.md) and was not stored, so the stored reference's
#: setting stays the default.
APP_NICE: int | None = None


def run_real(case: Case, duration_s: float, traces: TraceFiles | None, run_dir: Path, *, cpu: int | None,
             fifo_priority: int | None, pcap: bool, emu_options: dict | None = None,
             app_nice: int | None = APP_NICE) -> dict[str, Any]:
    """One real run of ``case``; writes iperf3's JSON and the emulator's
    report into ``run_dir`` and returns the run's raw numbers. ``app_nice``:
    the niceness of both iperf3 processes (None: inherited)."""
    from ..scenario import from_dict

    run_dir.mkdir(parents=True, exist_ok=True)
    # The emulator is built from the simulator's scenario (start at 0: only
    # the link fields matter).
    resolved = from_dict(sim_scenario(case, duration_s, traces)).resolved
    down_text = traces.downlink.read_text() if traces else None
    up_text = traces.uplink.read_text() if traces else None
    sysctls = {"net.ipv4.tcp_congestion_control": case.cc, "net.ipv4.tcp_no_metrics_save": "1"}
    load_before = os.getloadavg()
    steal_before = cpu_steal_s()
    with testbed(resolved, downlink_text=down_text, uplink_text=up_text, sysctls=sysctls,
                 options=emu_options, emulator_cpu=cpu) as tb:
        ns_sysctls = {}
        for k in NS_SYSCTLS_RECORDED:
            r = tb.run("inet", ["sysctl", "-n", k], timeout=5, check=False)
            ns_sysctls[k] = r.stdout.strip() if r.returncode == 0 else None
        emu = tb.emulator
        emu.start(cpu=cpu, fifo_priority=fifo_priority)
        nice = ["nice", "-n", str(app_nice)] if app_nice is not None else []
        srv_log = open(run_dir / "iperf3-server.log", "w")
        tb.popen("ue", [*nice, "iperf3", "-s", "-1", "-B", UE_IP], stdout=srv_log, stderr=subprocess.STDOUT)
        _wait_listening(tb)
        cli = tb.run("inet", [*nice, "iperf3", "-c", UE_IP, "-t", f"{duration_s + 1:g}", "-i", "0.1", "-J"],
                     timeout=duration_s + 60, check=False)
        (run_dir / "iperf3.json").write_text(cli.stdout)
        if cli.returncode != 0:
            raise HarnessError(f"iperf3 client failed (exit {cli.returncode}): {cli.stderr.strip()[:500]}")
        nstat = tb.nstat("inet")
        time.sleep(0.2)  # the last ACKs cross
        report = emu.stop()
        flows = emu.flows()
        data = [f for f in flows if f["proto"] == 6 and f["dport"] == 5201]
        if not data:
            raise HarnessError("no iperf3 connection crossed the emulator")
        flow = max(data, key=lambda f: f["payload_down"])
        view = {k: (np.frombuffer(v[1], dtype=np.dtype(v[0])) if isinstance(v, tuple) else v)
                for k, v in emu.sender_view(flow["index"]).items()}
        if pcap:
            emu.write_pcap(str(run_dir / "inet.pcap"), "inet")
            emu.write_pcap(str(run_dir / "ue.pcap"), "ue")
    load_after = os.getloadavg()
    steal_after = cpu_steal_s()
    steal = {k: round(steal_after[k] - steal_before.get(k, 0.0), 2) for k in steal_after}
    (run_dir / "emulator-report.json").write_text(json.dumps(report, indent=2) + "\n")
    iperf = json.loads(cli.stdout)
    z = view["first_payload_ns"]
    if z is None:
        raise HarnessError("the iperf3 data connection carried no data")
    t1 = duration_s
    rtt_t = (view["rtt_t_ns"].astype(np.int64) - z) / 1e9
    dt = (view["delivered_t_ns"].astype(np.int64) - z) / 1e9
    db = view["delivered_bytes"].astype(np.int64)

    def delivered_at(t: float) -> int:
        i = int(np.searchsorted(dt, t, side="right")) - 1
        return int(db[i]) if i >= 0 else 0

    goodput = (delivered_at(t1) - delivered_at(STEADY_FROM_S)) * 8 / (t1 - STEADY_FROM_S) / 1e6
    cwnd_mean, cwnd_exit, cwnd_series = iperf_cwnd(iperf, STEADY_FROM_S, t1)
    m = summarize_samples(rtt_t=rtt_t, rtt_ms=view["rtt_ns"] / 1e6, goodput_mbps=goodput,
                          retx_t=(view["retransmit_t_ns"].astype(np.int64) - z) / 1e9,
                          drops=len(view["data_drop_t_ns"]), cwnd_mean=cwnd_mean, t0=STEADY_FROM_S, t1=t1)
    detect = nstat.get("TcpExtTCPHystartTrainDetect", 0) + nstat.get("TcpExtTCPHystartDelayDetect", 0)
    cw_sum = nstat.get("TcpExtTCPHystartTrainCwnd", 0) + nstat.get("TcpExtTCPHystartDelayCwnd", 0)
    m["ss_exit_cwnd_pkts"] = cw_sum / detect if detect else None
    m["cwnd_at_exit_pkts"] = cwnd_exit
    end = iperf.get("end", {})
    return {
        "metrics": m,
        "flow_start_offset_s": z / 1e9,
        "iperf3": {
            "sent_mbps": end.get("sum_sent", {}).get("bits_per_second", 0) / 1e6,
            "received_mbps": end.get("sum_received", {}).get("bits_per_second", 0) / 1e6,
            "retransmits": end.get("sum_sent", {}).get("retransmits"),
            "max_snd_cwnd_pkts": (end.get("streams") or [{}])[0].get("sender", {}).get("max_snd_cwnd", 0) / MSS,
        },
        "nstat": {k: nstat.get(k, 0) for k in NSTAT_KEYS},
        "nstat_nonzero": {k: v for k, v in nstat.items() if v and k.startswith(("Tcp", "TcpExt"))},
        "emulator": report,
        "load_avg": {"before": list(load_before), "after": list(load_after)},
        "steal_s": steal,
        "namespace_sysctls": ns_sysctls,
        "flow": flow["describe"],
        "cwnd_series": [[round(t, 2), round(c, 2)] for t, c in cwnd_series],
    }


# ------------------------------------------------------------- aggregation

METRICS = ("goodput_mbps", "rtt_mean_ms", "rtt_p95_ms", "retransmits", "drops", "cwnd_mean_pkts")


def aggregate(runs: list[dict]) -> dict[str, Any]:
    """Mean, min, max and half-range of each metric over the real runs."""
    out: dict[str, Any] = {}
    keys = sorted({k for r in runs for k in r["metrics"]})
    for k in keys:
        vals = [r["metrics"][k] for r in runs if isinstance(r["metrics"].get(k), (int, float))]
        if not vals:
            out[k] = None
            continue
        out[k] = {"mean": float(np.mean(vals)), "min": float(min(vals)), "max": float(max(vals)),
                  "spread": (float(max(vals)) - float(min(vals))) / 2, "n": len(vals)}
    return out


def delta(sim: float | None, real: float | None) -> float | None:
    if sim is None or real is None or real == 0:
        return None
    return (sim - real) / real


# -------------------------------------------------------------- fidelity

#: What the simulator must meet against Linux (its acceptance bounds): the
#: largest |Δ| relative to Linux's mean, by link class. On a fixed-rate
#: link (the smooth `wired` link and the constant trace) retransmissions
#: must also be within 2x of Linux's.
ACCEPTANCE = {
    "fixed": {"goodput_mbps": 0.03, "rtt_mean_ms": 0.10, "rtt_p95_ms": 0.15},
    "cell": {"goodput_mbps": 0.05, "rtt_mean_ms": 0.15, "rtt_p95_ms": 0.25},
}

#: How far the simulator may drift from the simulated side stored with the
#: reference before CI calls it a change of fidelity: twice the real runs'
#: relative half-range, kept within these (floor, ceiling). Retransmissions:
#: max(30%, 10) plus twice the real runs' half-range.
DRIFT = {"goodput_mbps": (0.01, 0.03), "rtt_mean_ms": (0.03, 0.10), "rtt_p95_ms": (0.05, 0.15)}


def link_class(case: dict) -> str:
    return "cell" if case["case"]["link"] == "cell" else "fixed"


def acceptance(entry: dict, sim: dict[str, Any]) -> list[dict[str, Any]]:
    """Each accepted metric of a case: Linux's mean, the simulated value, Δ,
    the bound and whether it holds."""
    cls = link_class(entry)
    out = []
    for k, bound in ACCEPTANCE[cls].items():
        real = ((entry.get("linux") or {}).get(k) or {}).get("mean")
        d = delta(sim.get(k), real)
        out.append({"metric": k, "linux": real, "xrc": sim.get(k), "delta": d, "bound": bound,
                    "ok": d is not None and abs(d) <= bound})
    if cls == "fixed":
        real = ((entry.get("linux") or {}).get("retransmits") or {}).get("mean")
        s = sim.get("retransmits")
        ok = real is not None and s is not None and (
            (real == 0 and s == 0) or (real > 0 and real / 2 <= s <= 2 * real))
        out.append({"metric": "retransmits", "linux": real, "xrc": s, "delta": delta(s, real), "bound": "2x",
                    "ok": ok})
    return out


def drift(entry: dict, sim: dict[str, Any]) -> list[dict[str, Any]]:
    """Each metric of a case against the simulated side stored with the
    reference, with a tolerance from the real runs' spread."""
    stored = ((entry.get("xrc") or {}).get("metrics")) or {}
    out = []
    for k, (floor, ceiling) in DRIFT.items():
        lin = (entry.get("linux") or {}).get(k) or {}
        rel = lin["spread"] / lin["mean"] if lin.get("mean") else 0.0
        tol = min(ceiling, max(floor, 2 * rel))
        d = delta(sim.get(k), stored.get(k))
        out.append({"metric": k, "stored": stored.get(k), "xrc": sim.get(k), "delta": d, "tol": tol,
                    "ok": d is not None and abs(d) <= tol})
    lin = (entry.get("linux") or {}).get("retransmits") or {}
    s, st = sim.get("retransmits"), stored.get("retransmits")
    tol = max(0.3 * (lin.get("mean") or 0.0), 10.0) + 2 * (lin.get("spread") or 0.0)
    out.append({"metric": "retransmits", "stored": st, "xrc": s, "delta": None if s is None or st is None else s - st,
                "tol": tol, "ok": s is not None and st is not None and abs(s - st) <= tol})
    # Where the simulated flow leaves slow start (HyStart's exit window for
    # CUBIC, the first loss for Reno, BBR's first ssthresh): within 10%.
    st, s = stored.get("ss_exit_cwnd_pkts"), sim.get("ss_exit_cwnd_pkts")
    if st is not None:
        d = delta(s, st)
        out.append({"metric": "ss_exit_cwnd_pkts", "stored": st, "xrc": s, "delta": d, "tol": 0.10,
                    "ok": d is not None and abs(d) <= 0.10})
    return out


def _environment(argv: list[str]) -> dict[str, Any]:
    from .. import __version__, _core
    from ..runner import git_commit

    def read(p: str) -> str | None:
        try:
            return Path(p).read_text().strip()
        except OSError:
            return None

    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "kernel": platform.release(),
        "kernel_version": read("/proc/version"),
        "hz": kernel_hz(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "emulator": {"name": "xrc-emu (TUN, xrc-core link models)", "xrc_version": __version__,
                     "core_version": _core.version(), "git_commit": git_commit()},
        "iperf3": subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.splitlines()[0],
        "global_sysctls": {k: read("/proc/sys/" + k.replace(".", "/")) for k in (
            "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_allowed_congestion_control",
            "net.ipv4.tcp_available_congestion_control", "net.core.default_qdisc")},
        "command": argv,
    }


def _sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def simulate_case(entry: dict, case: Case, duration_s: float, traces: TraceFiles | None, *,
                  progress: bool = False, seeds: int = SIM_SEEDS) -> None:
    """Runs the simulator on a case with master seeds 1..``seeds`` and stores
    the mean of each metric over the seeds (and their half-range, as the
    real runs'), and the Δ of the means to the real runs' means, in the
    results entry. On a trace link the flow starts at the real runs' mean
    data-start offset, to 0.1 ms: on a cellular trace, where slow start ends
    moves with a phase shift of a few ms (TMobile at 10 ms: HyStart's exit
    window 30 at Linux's offset of 88 ms, 96 at 95-110 ms). Goodput then
    counts the whole bins inside the steady interval (`sim_metrics`)."""
    from .. import _core
    from ..runner import git_commit
    from ..runner import simulate as run_sim

    start = 0.0
    if case.link != "wired" and entry["runs"]:
        offs = [r["flow_start_offset_s"] for r in entry["runs"]]
        start = round(float(np.mean(offs)), 4)
    per_seed = []
    sc = None
    for seed in range(1, seeds + 1):
        sc = resolve_sim(case, duration_s, traces, start_s=start, seed=seed)
        res = run_sim(sc, progress=progress)
        per_seed.append(sim_metrics(res["tables"], start, STEADY_FROM_S, duration_s))
    sm, spread = {}, {}
    for k in per_seed[0]:
        vals = [m[k] for m in per_seed]
        if all(isinstance(v, (int, float)) for v in vals):
            sm[k] = float(np.mean(vals))
            spread[k] = (max(vals) - min(vals)) / 2
        else:
            sm[k] = per_seed[0][k]
    # Every trace case's ACKs cross its uplink trace (results of a core
    # before `trace.uplink` have False here, and the table marks them).
    entry["xrc"] = {"metrics": sm, "spread": spread, "seeds": list(range(1, seeds + 1)), "per_seed": per_seed,
                    "flow_start_s": start, "uplink_trace_modelled": True, "scenario": _portable(sc.resolved),
                    "core_version": _core.version(), "git_commit": git_commit()}
    entry["delta"] = {k: delta(sm.get(k), ((entry.get("linux") or {}).get(k) or {}).get("mean")) for k in METRICS}


def resimulate(results: dict, generated_dir: Path, *, progress: bool = False,
               slices: tuple[Path, ...] = ()) -> dict:
    """The stored real runs against the simulator as it is now: every case's
    simulated side is run again (no root needed). Trace slices are looked
    for in `slices` first (the --resim directory's trace-slices/)."""
    from ..runner import git_commit

    out = json.loads(json.dumps(results))
    duration = out["settings"]["duration_s"]
    for k, entry in enumerate(out["cases"]):
        case = Case(**entry["case"])
        if progress:
            print(f"[{k + 1}/{len(out['cases'])}] simulating {case.id} ...", file=sys.stderr, flush=True)
        simulate_case(entry, case, duration, trace_files(case, generated_dir, slices=slices), progress=progress)
    out["resimulated"] = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "git_commit": git_commit()}
    return out


def load_results(path: Path, flag: str) -> dict:
    """Reads a results file for ``flag`` (``--resim``, ``--merge``); a file
    that is not one raises ValueError naming the flag, the file and why."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as e:
        raise ValueError(f"{flag} {str(path)!r}: {e.strerror or e}") from None
    except ValueError as e:
        raise ValueError(f"{flag} {str(path)!r}: not JSON ({e})") from None
    if not isinstance(doc, dict) or "cases" not in doc or "settings" not in doc:
        raise ValueError(f"{flag} {str(path)!r}: not an xrc validate-linux results file (no cases and settings)")
    if doc.get("schema") != RESULTS_SCHEMA:
        raise ValueError(f"{flag} {str(path)!r}: results schema {doc.get('schema')!r}, this xrc reads "
                         f"{RESULTS_SCHEMA}")
    known = {c.id for c in all_cases()}
    for c in doc["cases"]:
        if not isinstance(c, dict) or not isinstance(c.get("case"), dict) or c.get("id") not in known:
            cid = c.get("id") if isinstance(c, dict) else c
            raise ValueError(f"{flag} {str(path)!r}: case {cid!r} is not one of validate-linux's cases "
                             f"(see --list)")
    return doc


def is_results_dir(d: Path) -> bool:
    """Whether ``d`` holds what validate-linux writes (its results.json)."""
    try:
        doc = json.loads((d / "results.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("schema") is not None and "cases" in doc and "environment" in doc


def prepare_out(out: Path, force: bool, *, replace: bool) -> None:
    """Checks ``--out`` as :mod:`xrc.outdir` does for run directories: a
    missing or empty directory is used; one that holds anything is refused
    without ``--force``, and with it only when it is a validate-linux
    results directory (never files xrc did not write). With ``replace``
    (real runs) the old results are deleted first, so no run of the old
    measurement is left beside the new one; otherwise only ``results.json``
    and ``table.md`` (and ``traces/``) are rewritten, each by a rename.
    Raises :class:`xrc.outdir.OutputError`."""
    import shutil

    from ..outdir import OutputError, check

    check(out, force, ours=is_results_dir,
          not_ours="xrc validate-linux results (no results.json written by it); --force replaces only those")
    if replace and out.is_dir() and any(out.iterdir()):
        try:
            shutil.rmtree(out)
        except OSError as e:
            raise OutputError(f"--out {str(out)!r}: {e.strerror or e}") from None


def check_machine(cases: list[Case]) -> None:
    """Raises :class:`TestbedError` naming what this machine lacks for the
    real runs of ``cases`` (root, TUN, the tools, a congestion control)."""
    require(("ip", "iperf3", "nstat", "ss", "sysctl"))
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    for c in cases:
        if c.cc not in available:
            raise TestbedError(f"case {c.id}: the kernel has no {c.cc!r} congestion control "
                               f"(available: {' '.join(available)})")


def run_cases(cases: list[Case], *, out: Path, repeats: int = 2, duration_s: float = 60.0, pcap: bool = False,
              cpu: int | None = None, fifo_priority: int | None = 50, simulate: bool = True,
              argv: list[str] | None = None, progress: bool = True, emu_options: dict | None = None,
              app_nice: int | None = APP_NICE, retake_noisy: int = 0,
              run_one: Any = None) -> dict:
    """Runs every case (real ``repeats`` times, simulated once), writing
    ``results.json`` (after every run, so an interrupted command keeps what
    it measured) and ``table.md`` into ``out``. Returns the results.

    ``retake_noisy``: a real run the emulator timed badly (:func:`noisy`) is
    run again up to this many times; the attempt with the lowest release
    error p99 is kept and the others go to the case's ``set_aside`` list
    with their timing and numbers. ``run_one`` replaces :func:`run_real`
    (tests)."""
    if repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {repeats}")
    if retake_noisy < 0:
        raise ValueError(f"--retake-noisy must be at least 0, got {retake_noisy}")
    run_one = run_one or run_real
    if not (duration_s > STEADY_FROM_S + 1):
        raise ValueError(f"--duration must exceed {STEADY_FROM_S + 1:g} s (the steady interval starts at "
                         f"{STEADY_FROM_S:g} s), got {duration_s}")
    if run_one is run_real:
        check_machine(cases)
    if cpu is None:
        cpu = default_emulator_cpu()
    out.mkdir(parents=True, exist_ok=True)
    gen = out / "traces"
    results: dict[str, Any] = {
        "schema": RESULTS_SCHEMA,
        "environment": _environment(argv or []),
        "settings": {"duration_s": duration_s, "steady_window_s": [STEADY_FROM_S, duration_s], "repeats": repeats,
                     "mss": MSS, "emulator_cpu": cpu, "emulator_fifo_priority": fifo_priority,
                     "emulator_options": emu_options or {}, "app_nice": app_nice,
                     "retake_noisy": {"max_retakes": retake_noisy, "release_p99_us_above": NOISY_P99_US},
                     "namespace_sysctls_set": {"net.ipv4.tcp_congestion_control": "<the case's algorithm>",
                                               "net.ipv4.tcp_no_metrics_save": "1",
                                               "net.ipv6.conf.all.disable_ipv6": "1"}},
        "cases": [],
    }

    def save() -> None:
        write_results(results, out)

    for ci, case in enumerate(cases):
        traces = trace_files(case, gen)
        entry: dict[str, Any] = {"id": case.id, "case": asdict(case), "xrc_cc": case.xrc_cc, "runs": []}
        if traces:
            entry["traces"] = {
                "downlink": {"name": traces.downlink.name, "sha256": _sha256(traces.downlink)},
                "uplink": {"name": traces.uplink.name, "sha256": _sha256(traces.uplink)},
            }
        results["cases"].append(entry)
        for k in range(repeats):
            if progress:
                print(f"[{ci + 1}/{len(cases)}] {case.id} real run {k + 1}/{repeats} ({duration_s:g} s) ...",
                      file=sys.stderr, flush=True)
            attempts = []
            for a in range(retake_noisy + 1):
                name = f"real-{k + 1}" if a == 0 else f"real-{k + 1}-retake-{a}"
                run = run_one(case, duration_s, traces, out / "runs" / case.id / name, cpu=cpu,
                              fifo_priority=fifo_priority, pcap=pcap, emu_options=emu_options, app_nice=app_nice)
                attempts.append(run)
                again = noisy(run["emulator"]) and a < retake_noisy
                if progress:
                    m, rep = run["metrics"], run["emulator"]["release_error"]
                    print(f"    goodput {m['goodput_mbps']:.2f} Mbit/s, RTT mean "
                          f"{m['rtt_mean_ms'] or float('nan'):.1f} p95 {m['rtt_p95_ms'] or float('nan'):.1f} ms, "
                          f"retx {m['retransmits']}, drops {m['drops']}; release error p50/p99/max "
                          f"{rep['p50_us']:.0f}/{rep['p99_us']:.0f}/{rep['max_us']:.0f} us"
                          f"{', late ' + str(rep['late']) if rep['late'] else ''}"
                          f"{' DISTURBED' if disturbed(run['emulator']) else ''}"
                          f"{' (release p99 over 1 ms: run again)' if again else ''}", file=sys.stderr, flush=True)
                if not again:
                    break
            best = min(range(len(attempts)), key=lambda i: attempts[i]["emulator"]["release_error"]["p99_us"] or 0.0)
            entry["runs"].append({**attempts[best], "attempt": best + 1})
            for i, r in enumerate(attempts):
                if i != best:
                    entry.setdefault("set_aside", []).append(
                        {"run": k + 1, "attempt": i + 1, "metrics": r["metrics"], "steal_s": r.get("steal_s"),
                         "release_error": r["emulator"]["release_error"], "stalled_ms": r["emulator"].get("stalled_ms")})
            entry["linux"] = aggregate(entry["runs"])
            save()
        if simulate:
            simulate_case(entry, case, duration_s, traces)
            sm = entry["xrc"]["metrics"]
            if progress:
                print(f"    xrc: goodput {sm['goodput_mbps']:.2f} Mbit/s, RTT mean {sm['rtt_mean_ms'] or float('nan'):.1f} "
                      f"p95 {sm['rtt_p95_ms'] or float('nan'):.1f} ms, retx {sm['retransmits']}, drops {sm['drops']}",
                      file=sys.stderr, flush=True)
            save()
    save()
    return results


def merge_results(paths: list[Path]) -> dict:
    """Merges results files of the same schema (e.g. the smooth cases and the
    trace cases run as two commands) into one, in the order of
    :func:`all_cases`; a case in several files is taken from the last.
    The environment is the first file's, with every file's date, command
    and commit listed under ``parts``."""
    docs = [load_results(Path(p), "--merge") for p in paths]
    for p, d in zip(paths, docs):
        for k in ("duration_s", "steady_window_s"):
            if d["settings"][k] != docs[0]["settings"][k]:
                raise ValueError(f"--merge {str(p)!r}: settings.{k} = {d['settings'][k]}, but {paths[0]} has "
                                 f"{docs[0]['settings'][k]}; only runs of the same length merge")
    by_id = {}
    for d in docs:
        for c in d["cases"]:
            by_id[c["id"]] = c
    order = {c.id: k for k, c in enumerate(all_cases())}
    merged = json.loads(json.dumps(docs[0]))
    merged["cases"] = sorted(by_id.values(), key=lambda c: order.get(c["id"], len(order)))
    merged["parts"] = [{"file": str(p), "date": d["environment"]["date"], "command": d["environment"]["command"],
                        "git_commit": d["environment"]["emulator"]["git_commit"],
                        "cases": [c["id"] for c in d["cases"]]} for p, d in zip(paths, docs)]
    return merged


def dumps_results(results: dict) -> str:
    """results.json's text: indented, but each run's cwnd series on one line."""
    doc = json.loads(json.dumps(results))
    series = {}
    for c in doc["cases"]:
        for r in c["runs"]:
            if "cwnd_series" in r:
                key = f"@cwnd_series_{len(series)}@"
                series[key] = json.dumps([[round(t, 2), round(v, 2)] for t, v in r["cwnd_series"]],
                                         separators=(",", ":"))
                r["cwnd_series"] = key
    text = json.dumps(doc, indent=1)
    for key, val in series.items():
        text = text.replace(json.dumps(key), val, 1)
    return text + "\n"


def write_results(results: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "results.json.partial"
    tmp.write_text(dumps_results(results))
    os.replace(tmp, out / "results.json")
    (out / "table.md").write_text(markdown(results))


def _portable(resolved: dict) -> dict:
    """The resolved scenario with trace paths made relative to the
    repository (``shared/traces`` beside the checkout) or reduced to their file name
    when generated, so the stored results do not depend on this machine."""
    doc = json.loads(json.dumps(resolved))
    tr = doc.get("trace")
    if tr:
        for k in ("downlink", "uplink"):
            if isinstance(tr.get(k), str):
                p = Path(tr[k]).resolve()
                tr[k] = os.path.relpath(p, REPO) if p.is_relative_to(SHARED_TRACES.resolve()) else p.name
    return doc


# ---------------------------------------------------------------- reports

def _fmt(v: float | None, digits: int) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _cell(case: dict, key: str, digits: int) -> str:
    lin = (case.get("linux") or {}).get(key)
    sim = ((case.get("xrc") or {}).get("metrics") or {}).get(key)
    d = (case.get("delta") or {}).get(key)
    real = "–" if not lin else f"{_fmt(lin['mean'], digits)}" + (
        f" ±{_fmt(lin['spread'], digits)}" if lin["n"] > 1 else "")
    dd = "" if d is None else f" ({d * 100:+.0f}%)" if abs(d) >= 0.095 else f" ({d * 100:+.1f}%)"
    ssp = ((case.get("xrc") or {}).get("spread") or {}).get(key)
    sims = _fmt(sim, digits) + (f" ±{_fmt(ssp, digits)}" if ssp else "")
    miss = [a for a in acceptance(case, ((case.get("xrc") or {}).get("metrics") or {}))
            if a["metric"] == key and not a["ok"]] if case.get("xrc") else []
    return f"{real} / {sims}{dd}" + (" ✗" if miss else "")


def _resim_note(results: dict) -> str | None:
    r = results.get("resimulated")
    if not r:
        return None
    if isinstance(r, str):  # results written before the commit was recorded
        return f" The xrc column was simulated again on {r}."
    return f" The xrc column was simulated again on {r['date']} at xrc {r.get('git_commit') or '(unknown commit)'}."


def markdown(results: dict) -> str:
    """The comparison table (and the emulator's timing per run) in Markdown."""
    env = results["environment"]
    s = results["settings"]
    old_sim = any(not (c.get("xrc") or {}).get("uplink_trace_modelled", True) for c in results["cases"])
    when = env["date"] if "parts" not in results else " and ".join(p["date"] for p in results["parts"])
    commits = (env["emulator"]["git_commit"] or env["emulator"]["xrc_version"]) if "parts" not in results else \
        " and ".join(str(p["git_commit"]) for p in results["parts"])
    lines = [
        f"Measured {when} on Linux {env['kernel']} (HZ={env['hz']}, {env['cpus']} CPUs), "
        f"{s['repeats']} real run(s) per case of {s['duration_s']:g} s, steady interval "
        f"{s['steady_window_s'][0]:g}–{s['steady_window_s'][1]:g} s; emulator {env['emulator']['name']}, "
        f"xrc {commits}." + (_resim_note(results) or ""),
        "",
        "Each cell: Linux (mean ± half the range over the runs) / xrc (mean ± half the range over master seeds "
        f"1–{len((results['cases'][0].get('xrc') or {}).get('seeds') or [1])}; Δ of the means relative to Linux's). "
        "✗ marks a number outside the acceptance bounds (fixed-rate links: goodput 3%, mean RTT 10%, p95 RTT 15%, "
        "retransmissions within 2x; cellular traces: 5%, 15%, 25%). "
        "Retransmissions and drops count the whole run; the rest the steady interval. "
        f"† marks a case where some real run was disturbed (more than {DISTURBED_LATE_FRACTION:.1%} of its "
        f"packets released over 1 ms late, or one over {DISTURBED_MAX_US / 1000:g} ms late: see the timing table)."
        + (" ‡ marks a trace case whose simulated side had no uplink trace (a fat uplink; results of a core "
           "before `trace.uplink`)." if old_sim else ""),
        "",
        "| case | goodput Mbit/s | mean RTT ms | p95 RTT ms | retransmissions | drops | mean cwnd pkts |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in results["cases"]:
        flags = ""
        if any(disturbed(r["emulator"]) for r in c["runs"]):
            flags += " †"
        if c.get("xrc") and not c["xrc"].get("uplink_trace_modelled", True):
            flags += " ‡"
        lines.append(f"| {c['id']}{flags} | {_cell(c, 'goodput_mbps', 2)} | {_cell(c, 'rtt_mean_ms', 1)} | "
                     f"{_cell(c, 'rtt_p95_ms', 1)} | {_cell(c, 'retransmits', 0)} | {_cell(c, 'drops', 0)} | "
                     f"{_cell(c, 'cwnd_mean_pkts', 1)} |")
    lines += ["", "Kernel counters of the sender (nstat, per run) and the slow-start exit window "
              "(Linux: HyStart's cwnd at detection; xrc: the first ssthresh):", "",
              "| case | run | LossUndo | SpuriousRTOs | LossProbes | Timeouts | HyStart train/delay | "
              "ss exit Linux / xrc | cwnd at exit |", "|---|---|---|---|---|---|---|---|---|"]
    for c in results["cases"]:
        sim_ss = ((c.get("xrc") or {}).get("metrics") or {}).get("ss_exit_cwnd_pkts")
        for k, r in enumerate(c["runs"]):
            n = r["nstat"]
            lines.append(
                f"| {c['id']} | {k + 1} | {n['TcpExtTCPLossUndo']} | {n['TcpExtTCPSpuriousRTOs']} | "
                f"{n['TcpExtTCPLossProbes']} | {n['TcpExtTCPTimeouts']} | {n['TcpExtTCPHystartTrainDetect']}/"
                f"{n['TcpExtTCPHystartDelayDetect']} | {_fmt(r['metrics'].get('ss_exit_cwnd_pkts'), 0)} / "
                f"{_fmt(sim_ss, 0)} | {_fmt(r['metrics'].get('cwnd_at_exit_pkts'), 0)} |")
    lines += ["", "Emulator timing per real run (release error = write time − scheduled time):", "",
              "| case | run | packets | p50 µs | p99 µs | max µs | late > 1 ms | longest stall ms (where) | "
              "emulator CPU s | load avg before/after | steal s (emulator's CPU) |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in results["cases"]:
        for k, r in enumerate(c["runs"]):
            e = r["emulator"]
            rel = e["release_error"]
            la = r["load_avg"]
            st = (e.get("longest_stalls") or [None])[0]
            where = "–" if st is None else f"{st['ms']:.1f} ({st['phase']})"
            cpu = results["settings"].get("emulator_cpu")
            st_s = r.get("steal_s") or {}
            steal = "–" if not st_s else f"{st_s.get('cpu', 0):.1f} ({st_s.get(f'cpu{cpu}', 0):.1f})"
            lines.append(f"| {c['id']} | {k + 1} | {rel['n']} | {_fmt(rel['p50_us'], 0)} | {_fmt(rel['p99_us'], 0)} | "
                         f"{_fmt(rel['max_us'], 0)} | {rel['late']} | {where} | {e['cpu_s']:.1f} | "
                         f"{la['before'][0]:.1f} / {la['after'][0]:.1f} | {steal} |")
    aside = [(c["id"], r) for c in results["cases"] for r in c.get("set_aside", [])]
    if aside:
        lines += ["", f"Real runs set aside by `--retake-noisy` (release error p99 over {NOISY_P99_US:g} µs; "
                  "the attempt with the lowest p99 was kept), with their numbers:", "",
                  "| case | run | attempt | release p99 µs | max µs | goodput Mbit/s | mean RTT ms | p95 RTT ms |",
                  "|---|---|---|---|---|---|---|---|"]
        for cid, r in aside:
            rel, m = r["release_error"], r["metrics"]
            lines.append(f"| {cid} | {r['run']} | {r['attempt']} | {_fmt(rel['p99_us'], 0)} | "
                         f"{_fmt(rel['max_us'], 0)} | {_fmt(m.get('goodput_mbps'), 2)} | "
                         f"{_fmt(m.get('rtt_mean_ms'), 1)} | {_fmt(m.get('rtt_p95_ms'), 1)} |")
    return "\n".join(lines) + "\n"


def list_cases() -> str:
    return "\n".join(c.id for c in all_cases())
