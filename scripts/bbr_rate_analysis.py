"""Delivery-rate samples of a real Linux TCP sender, rebuilt from the
emulator's capture as Linux computes them, under several clocks, next to
Linux BBR's own bandwidth estimate (``ss``).

Usage::

    .venv/bin/python scripts/bbr_rate_analysis.py RUN_DIR [--from S] [--to S] [--json OUT]
    .venv/bin/python scripts/bbr_rate_analysis.py --xrc-dump DUMP [--from S] [--to S]

The second form replays **xrc's** sender the same way: ``DUMP`` is what
``crates/xrc-core/examples/ack_noise.rs --dump=DUMP`` wrote (the segments
xrc sent and the ACKs it processed, in model time), so Linux's rate
sampler and BBR filter are applied to xrc's traffic, to tell a difference
in the estimator from a difference in the traffic it sees.

``RUN_DIR`` is what ``scripts/bbr_rate_probe.py`` wrote (``capture.npz``,
``meta.json``, ``ss.txt``).

The sender is replayed from the capture: a data segment is sent when the
emulator read it from the sender's device (``t_in``), an ACK is processed
when it reaches the sender under one of these **clocks**:

- ``released``: when the emulator wrote it to the sender's device
  (``t_out``): what the sender saw;
- ``scheduled``: when the emulator's model released it (``t_sched``), i.e.
  the ACK as the receiver emitted it plus the uplink's exact model delay,
  without the emulator's release error on the ACK;
- ``data-late``: the write time of the data segment that triggered the
  ACK plus the uplink's model delay: only the emulator's release error on
  the data direction kept;
- ``receiver``: the model's release time of that data segment plus the
  receiver's delay (the ACK's read time minus the data's write time) plus
  the uplink's model delay: only the receiving host's delay kept;
- ``ideal``: the model's release time of the data segment that triggered
  the ACK (the highest in sequence it covers, ``t_sched`` of the data
  packet) plus the receiver's ACK path as the model would carry it: what a
  sender would see with an emulator and a receiver without any timing
  error (release errors on data and ACKs and the receiver's processing
  delay all removed);

and, per ACK, Linux ``tcp_rate.c`` (``tcp_rate_skb_sent``,
``tcp_rate_skb_delivered``, ``tcp_rate_gen``) gives a sample
``delivered / max(send interval, ACK interval)``, discarded when the
interval is shorter than the minimum RTT; BBR's filter (``bbr_update_bw``:
round counting by ``prior_delivered``, ``minmax_running_max`` over 10
rounds, application-limited samples only if at least the maximum) turns
the samples into its bandwidth estimate, and ``bbr_update_ack_aggregation``
into its ``extra_acked`` (in ``replay``'s output). The ``released`` replay is checked
against Linux's own estimate from ``ss``.

Rates are payload rates as Linux reports them: segments per second times
the MSS (1448 B) times 8. The smooth 20 Mbit/s link carries 1500-byte IP
packets, 19.307 Mbit/s of payload.

Printed: the timing of both directions (release error, data release
spacing, ACKs per data segment), the receiving host's delay (from the
emulator's write of a data segment to its read of the ACK covering it) and
the share of stretch ACKs, the distribution of samples and of the
filter per clock over the window, how far the filter sits above the
link's payload rate (time-weighted on a 10 ms grid), the same restricted
to quiet stretches (no ACK more than 300 µs / 1 ms late in the preceding
second, about 20 rounds: the filter's memory is 10), Linux's RTT (as
``validate-linux`` measures it), retransmissions and drops.
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
from pathlib import Path

import numpy as np

MSS = 1448
CLOCKS = ("released", "scheduled", "data-late", "receiver", "ideal")
BW_RTTS = 10
NS = 1_000_000_000


# --------------------------------------------------------------- capture

def load(run: Path):
    cap = dict(np.load(run / "capture.npz"))
    meta = json.loads((run / "meta.json").read_text())
    return cap, meta


def data_flow(meta) -> int:
    flows = [f for f in meta["flows"] if f["proto"] == 6 and f["dport"] == 5201]
    return max(flows, key=lambda f: f["payload_down"])["index"]


class Unwrap:
    def __init__(self, isn: int):
        self.isn, self.high = isn, 0

    def __call__(self, x: int) -> int:
        rel = (x - self.isn) & 0xFFFF_FFFF
        base = self.high & ~0xFFFF_FFFF
        v = base + rel
        if v + (1 << 31) < self.high:
            v += 1 << 32
        elif v > self.high + (1 << 31) and v >= 1 << 32:
            v -= 1 << 32
        self.high = max(self.high, v)
        return v


def flow_records(cap, flow: int):
    sel = (cap["flow"] == flow) & (cap["is_tcp"] == 1)
    idx = np.nonzero(sel)[0]
    return {k: v[idx] for k, v in cap.items()}


# ---------------------------------------------------------- the replay

class MinMax:
    """Linux lib/win_minmax.c, running max."""

    def __init__(self):
        self.s = [(0, 0)] * 3

    def reset(self, t, v):
        self.s = [(t, v)] * 3
        return v

    def update(self, win, t, v):
        s = self.s
        if v >= s[0][1] or t - s[2][0] > win:
            return self.reset(t, v)
        if v >= s[1][1]:
            s[2] = s[1] = (t, v)
        elif v >= s[2][1]:
            s[2] = (t, v)
        dt = t - s[0][0]
        if dt > win:
            s[0], s[1], s[2] = s[1], s[2], (t, v)
            if t - s[0][0] > win:
                s[0], s[1], s[2] = s[1], s[2], (t, v)
        elif s[1][0] == s[0][0] and dt > win / 4:
            s[2] = s[1] = (t, v)
        elif s[2][0] == s[1][0] and dt > win / 2:
            s[2] = (t, v)
        return s[0][1]

    def get(self):
        return self.s[0][1]


def replay(segs_tx, acks, *, min_rtt_ns: int | None = None):
    """Replays the sender. ``segs_tx``: list of (t_send, start, end) in send
    order (retransmissions included); ``acks``: list of (t, cum_ack,
    [(l, r), ...]) in processing order. Returns per-ACK arrays."""
    # Segment state by start offset.
    starts: list[int] = []
    seg: dict[int, dict] = {}
    delivered = 0
    delivered_mstamp = 0
    first_tx = 0
    packets_out = 0
    snd_una = 0
    rtt_min = min_rtt_ns
    bbr_bw = MinMax()
    # bbr_update_ack_aggregation state (extra_acked_win_rtts = 5).
    ea, ea_idx, ea_win, epoch_acked, epoch_us0 = [0, 0], 0, 0, 0, 0
    rtt_cnt = 0
    next_rtt_delivered = 0
    out = {k: [] for k in ("t", "bw", "snd_us", "ack_us", "delivered", "valid", "filt", "rtt", "retrans",
                                "rtt_vl", "in_flight", "extra_acked")}
    i = j = 0
    n_tx, n_ack = len(segs_tx), len(acks)
    while i < n_tx or j < n_ack:
        # Sends before ACKs at equal times (the ACK cannot have caused them).
        if j >= n_ack or (i < n_tx and segs_tx[i][0] < acks[j][0]):
            t, s, e = segs_tx[i]
            i += 1
            if packets_out == 0:
                first_tx = t
                delivered_mstamp = t
            st = seg.get(s)
            if st is None:
                bisect.insort(starts, s)
                st = seg[s] = {"end": e, "sacked": False, "acked": False, "retrans": False}
                packets_out += 1
            else:
                st["retrans"] = True
                st["end"] = max(st["end"], e)
            st.setdefault("first_tx", t)
            st.update(tx=t, d=delivered, dm=delivered_mstamp, ftx=first_tx, counted=False)
            continue
        t, cum, blocks = acks[j]
        j += 1
        newly = []
        # SACKed segments.
        for (l, r) in blocks:
            k = bisect.bisect_left(starts, l)
            while k < len(starts) and starts[k] < r:
                st = seg[starts[k]]
                if st["end"] <= r and not st["sacked"] and not st["counted"]:
                    st["sacked"] = True
                    newly.append(st)
                k += 1
        # Cumulatively acknowledged.
        if cum > snd_una:
            k = bisect.bisect_left(starts, snd_una)
            drop = []
            while k < len(starts) and seg[starts[k]]["end"] <= cum:
                st = seg[starts[k]]
                if not st["sacked"] and not st["counted"]:
                    newly.append(st)
                drop.append(starts[k])
                k += 1
            for s in drop:
                del seg[s]
                packets_out -= 1
            del starts[bisect.bisect_left(starts, snd_una):bisect.bisect_left(starts, snd_una) + len(drop)]
            snd_una = cum
        if not newly:
            continue
        # The RTT as validate-linux measures it (Linux tcp_clean_rtx_queue,
        # Karn's rule): the earliest newly cumulatively acknowledged segment
        # never sent twice, else the lowest newly SACKed one.
        cum_new = [st for st in newly if not st["sacked"]]
        pick = min(cum_new or newly, key=lambda st: st["first_tx"])
        rtt_vl = t - pick["first_tx"] if not pick["retrans"] else np.nan
        # tcp_rate_skb_delivered over the newly delivered: the most recently sent wins.
        best = None
        for st in newly:
            st["counted"] = True
            if best is None or (st["tx"], st["end"]) > (best["tx"], best["end"]):
                best = st
        delivered += len(newly)
        first_tx = best["tx"]
        rtt = t - best["tx"]
        if not best["retrans"]:
            rtt_min = rtt if rtt_min is None else min(rtt_min, rtt)
        snd_ns = best["tx"] - best["ftx"]
        ack_ns = t - best["dm"]
        # tcp_stamp_us_delta on microsecond stamps.
        snd_us = best["tx"] // 1000 - best["ftx"] // 1000
        ack_us = t // 1000 - best["dm"] // 1000
        interval = max(snd_us, ack_us)
        dlv = delivered - best["d"]
        delivered_mstamp = t
        valid = rtt_min is not None and interval >= rtt_min // 1000 and interval > 0
        bw = dlv * MSS * 8 / interval if interval > 0 else np.nan  # Mbit/s (bits per µs)
        if valid:
            round_start = best["d"] >= next_rtt_delivered
            if round_start:
                next_rtt_delivered = delivered
                rtt_cnt += 1
            bwu = dlv * (1 << 24) // interval
            bbr_bw.update(BW_RTTS, rtt_cnt, bwu)
            # bbr_update_ack_aggregation (the cwnd clamp left out).
            if round_start:
                ea_win = min(0x1F, ea_win + 1)
                if ea_win >= 5:
                    ea_win, ea_idx = 0, ea_idx ^ 1
                    ea[ea_idx] = 0
            expected = bbr_bw.get() * (t // 1000 - epoch_us0) >> 24
            if epoch_acked <= expected or epoch_acked + len(newly) >= 1 << 20:
                epoch_acked, epoch_us0, expected = 0, t // 1000, 0
            epoch_acked = min(epoch_acked + len(newly), 0xFFFFF)
            ea[ea_idx] = max(ea[ea_idx], epoch_acked - expected)
        filt = bbr_bw.get() * MSS * 8 / (1 << 24)
        out["t"].append(t)
        out["bw"].append(bw)
        out["snd_us"].append(snd_ns / 1000)
        out["ack_us"].append(ack_ns / 1000)
        out["delivered"].append(dlv)
        out["valid"].append(valid)
        out["filt"].append(filt)
        out["rtt"].append(rtt)
        out["retrans"].append(best["retrans"])
        out["rtt_vl"].append(rtt_vl)
        out["in_flight"].append(len(starts))
        out["extra_acked"].append(max(ea))
    return {k: np.array(v) for k, v in out.items()}


class UpPath:
    """The ACK path's model without queueing: ``release(t)`` is when an ACK
    that entered the uplink at ``t`` leaves it. A smooth link: ``t`` plus the
    one-way delay; a trace link (Mahimahi, ``docs/trace-link.md``): the
    first opportunity after the millisecond of ``t`` (an ACK is never
    carried by an opportunity of its arrival's millisecond), then the delay.
    ACKs are small (26 fit one opportunity): their queueing is ignored."""

    def __init__(self, delay_ns: int, trace_ms: list[int] | None):
        self.delay_ns = delay_ns
        self.trace = np.array(trace_ms, dtype=np.int64) if trace_ms else None

    def release(self, t: int) -> int:
        if self.trace is None:
            return t + self.delay_ns
        period = int(self.trace[-1])
        m = t // 1_000_000 + 1  # first millisecond that may carry it
        c = m // period
        # Opportunity i of cycle c is at c·period + trace[i] (a line equal to
        # the period falls on the next cycle's millisecond 0).
        for cyc in (c - 1, c, c + 1):
            times = cyc * period + self.trace
            k = np.searchsorted(times, m, side="left")
            if k < len(times):
                opp = int(times[k])
                break
        return opp * 1_000_000 + self.delay_ns


def up_path(meta) -> UpPath:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    from xrc.emulation import linuxref as L

    case = next(c for c in L.all_cases() if c.id == meta["case"])
    delay_ns = int(case.rtt_ms / 2 * 1e6)
    if case.link == "wired":
        return UpPath(delay_ns, None)
    import tempfile

    tf = L.trace_files(case, Path(tempfile.mkdtemp()))
    return UpPath(delay_ns, [int(x) for x in tf.uplink.read_text().split()])


def sender_inputs(fr, clock: str, keep_order: bool = False, path: UpPath | None = None):
    """(segments sent, ACKs) for a clock; the ACKs in processing order
    unless ``keep_order`` (then in the order the receiver sent them). ``path``:
    the ACK path's model for the clocks that rebuild an ACK's release
    (default: the measured model delay of each ACK)."""
    d = fr["dir"] == 0
    syn = np.nonzero(d & ((fr["tcp_flags"] & 0x02) != 0))[0]
    isn = int(fr["seq"][syn[0]]) if len(syn) else int(fr["seq"][np.nonzero(d)[0][0]])
    uw = Unwrap(isn)
    order = np.argsort(fr["t_in_ns"], kind="stable")
    segs = []
    data_sched = {}  # end offset -> model release time of the data packet (latest)
    data_out = {}
    for k in order:
        if fr["dir"][k] != 0 or fr["payload"][k] == 0:
            continue
        s = uw(int(fr["seq"][k]))
        e = s + int(fr["payload"][k])
        segs.append((int(fr["t_in_ns"][k]), s, e))
        if fr["fate"][k] == 0:
            data_sched[e] = int(fr["t_sched_ns"][k])
            data_out[e] = int(fr["t_out_ns"][k])
    acks = []
    uw2 = Unwrap(isn)
    up = [k for k in order if fr["dir"][k] == 1 and fr["fate"][k] == 0 and (fr["tcp_flags"][k] & 0x10)]
    ends = np.array(sorted(data_sched))
    for k in up:
        cum = uw2(int(fr["ack"][k]))
        blocks = []
        for b in range(int(fr["n_sack"][k])):
            l = uw2(int(fr[f"sack{b + 1}_left"][k]))
            r = uw2(int(fr[f"sack{b + 1}_right"][k]))
            blocks.append((l, r))
        if clock == "released":
            t = int(fr["t_out_ns"][k])
        elif clock == "scheduled":
            t = int(fr["t_sched_ns"][k])
        elif clock in ("ideal", "data-late", "receiver"):
            # The data packet that triggered it: the highest end it covers
            # (cumulative or SACK) that the receiver had been given.
            hi = max([cum] + [r for _, r in blocks])
            p = np.searchsorted(ends, hi, side="right") - 1
            up_delay = int(fr["t_sched_ns"][k]) - int(fr["t_in_ns"][k])
            rel = path.release if path is not None else (lambda x: x + up_delay)
            if p < 0:
                t = int(fr["t_sched_ns"][k])
            elif clock == "ideal":
                t = rel(data_sched[int(ends[p])])
            elif clock == "data-late":
                # Only the data direction's release error kept.
                t = rel(data_out[int(ends[p])])
            else:
                # Only the receiver's delay (data written -> ACK read) kept.
                t = rel(data_sched[int(ends[p])] + (int(fr["t_in_ns"][k]) - data_out[int(ends[p])]))
        else:
            raise ValueError(clock)
        acks.append((t, cum, blocks))
    if not keep_order:
        acks.sort(key=lambda a: a[0])
    return segs, acks


# ------------------------------------------------------------------- ss

def ss_polls(path: Path):
    """The polls of an ``ss -ti`` loop's output (blocks headed ``T
    <CLOCK_REALTIME seconds>``): (time in s, the text of each established
    socket in that poll)."""
    for blk in path.read_text().split("\nT "):
        lines = blk.strip().splitlines()
        if not lines:
            continue
        try:
            t = float(lines[0].replace("T ", ""))
        except ValueError:
            continue
        yield t, " ".join(lines[1:]).split("ESTAB")[1:]


def parse_ss(path: Path, realtime_origin_ns: int):
    rows = []
    for t, socks in ss_polls(path):
        ents = [e for e in socks if "bbr:(" in e]
        if not ents:
            continue
        e = max(ents, key=lambda e: int((re.search(r"bytes_sent:(\d+)", e) or re.search("()", "0")).group(1) or 0))
        m = re.search(r"bbr:\(bw:(\d+)bps,mrtt:([\d.]+),pacing_gain:([\d.]+),cwnd_gain:([\d.]+)\)", e)
        if not m:
            continue
        uf = re.search(r"unacked:(\d+)", e)
        rows.append((int(t * NS) - realtime_origin_ns, int(m.group(1)) / 1e6, float(m.group(2)), float(m.group(3)),
                     int(re.search(r"cwnd:(\d+)", e).group(1)), int(uf.group(1)) if uf else 0))
    a = np.array(rows, dtype=float) if rows else np.zeros((0, 6))
    return {"t": a[:, 0], "bw": a[:, 1], "mrtt": a[:, 2], "gain": a[:, 3], "cwnd": a[:, 4], "unacked": a[:, 5]}


# ------------------------------------------------------------- report

def pct(x, q):
    return float(np.percentile(x, q)) if len(x) else float("nan")


def describe(x):
    return (f"mean {np.mean(x):7.3f} p5 {pct(x, 5):7.3f} p50 {pct(x, 50):7.3f} p95 {pct(x, 95):7.3f} "
            f"max {np.max(x):7.3f}" if len(x) else "none")


def step_at(t_grid, t, v):
    """Value of the step function (t, v) at each time of t_grid."""
    k = np.searchsorted(t, t_grid, side="right") - 1
    out = np.full(len(t_grid), np.nan)
    ok = k >= 0
    out[ok] = v[k[ok]]
    return out


def read_dump(path: Path):
    """The segments [(t, start, end)] and ACKs [(t, cum, [(l, r)...])] of
    an ``ack_noise --dump`` file, times as written; ValueError naming the
    line that is neither."""
    segs, acks = [], []
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            f = line.split()
            if f and f[0] == "S" and len(f) == 4:
                segs.append((int(f[1]), int(f[2]), int(f[3])))
            elif f and f[0] == "A" and len(f) >= 3 and len(f) % 2 == 1:
                v = [int(x) for x in f[1:]]
                acks.append((v[0], v[1], list(zip(v[2::2], v[3::2]))))
            else:
                raise ValueError(f"line {n}: expected 'S t start end' or 'A t cum [l r]...', got {line.strip()!r}")
    return segs, acks


def xrc_dump(a) -> int:
    """``--xrc-dump``: Linux's rate sampler and BBR filter over xrc's own
    segments and ACKs; prints the traffic's shape (segments per ACK, new
    segments each ACK covers, back-to-back sends) and the filter's excess
    over the link's payload rate, as for a real run's clocks."""
    try:
        segs, acks = read_dump(Path(a.xrc_dump))
    except (OSError, ValueError) as e:
        print(f"--xrc-dump {a.xrc_dump}: {e}", file=sys.stderr)
        return 2
    if not segs or not acks:
        print(f"--xrc-dump {a.xrc_dump}: no segments or no ACKs", file=sys.stderr)
        return 2
    link_payload = a.link_mbps * MSS / 1500
    z = segs[0][0]
    t0 = z + int(a.t0 * NS)
    t1 = max(acks[-1][0], segs[-1][0]) if a.t1 is None else z + int(a.t1 * NS)
    ts = np.array([s[0] for s in segs if t0 <= s[0] < t1])
    gaps = np.diff(ts)
    n_ack = sum(1 for x in acks if t0 <= x[0] < t1)
    cov, hi_prev = [], 0
    for t, cum, blocks in acks:
        hi = max([cum] + [r for _, r in blocks])
        if t0 <= t < t1 and hi > hi_prev:
            cov.append((hi - hi_prev) // MSS)
        hi_prev = max(hi_prev, hi)
    cv = np.array(cov)
    print(f"xrc dump {a.xrc_dump}: window {a.t0:g} s .. {(t1 - z) / NS:.1f} s")
    print(f"  data segments {len(ts)}, ACKs {n_ack}: {len(ts) / max(n_ack, 1):.2f} segments per ACK; new segments "
          f"per ACK 1 / 2 / ≥3: {np.mean(cv == 1):.1%} / {np.mean(cv == 2):.1%} / {np.mean(cv >= 3):.1%}")
    print(f"  sends within 50 us of the previous one: {np.mean(gaps < 50_000):.1%}")
    r = replay(segs, acks)
    win = (r["t"] >= t0) & (r["t"] < t1)
    v = win & r["valid"]
    grid = np.arange(t0, t1, 10_000_000)
    f = step_at(grid, r["t"], r["filt"])
    print(f"  Linux's sampler on xrc's traffic: samples {int(v.sum())} valid of {int(win.sum())}; sample bw "
          f"{describe(r['bw'][v])}")
    print(f"  {'':15s} filter bw {describe(f)}; above link {np.mean(f > link_payload + 1e-9):.0%}, "
          f"mean excess {np.mean(f) / link_payload - 1:+.2%}")
    rv = r["rtt"][win & ~np.isnan(r["rtt"])] / 1e6
    print(f"  RTT (per ACK, newest segment) mean {np.mean(rv):.2f} p95 {pct(rv, 95):.2f} ms")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, nargs="?")
    ap.add_argument("--from", dest="t0", type=float, default=5.0, help="window start, s after the first payload")
    ap.add_argument("--to", dest="t1", type=float, default=None, help="window end, s after the first payload")
    ap.add_argument("--link-mbps", type=float, default=20.0, help="the bottleneck's IP rate")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--export-noise", type=Path, default=None, metavar="FILE",
                    help="write each ACK's lateness (released − ideal) at its ideal time after the first data "
                         "segment, lines 't_s lateness_us', for crates/xrc-core/examples/ack_noise.rs")
    ap.add_argument("--xrc-dump", type=Path, default=None, metavar="DUMP",
                    help="replay xrc's sender from an ack_noise.rs --dump file instead of a run's capture")
    a = ap.parse_args()
    if a.xrc_dump is not None:
        return xrc_dump(a)
    if a.run is None:
        ap.error("RUN_DIR or --xrc-dump DUMP is required")
    cap, meta = load(a.run)
    fr = flow_records(cap, data_flow(meta))
    link_payload = a.link_mbps * MSS / 1500
    d = (fr["dir"] == 0) & (fr["payload"] > 0)
    z = int(fr["t_in_ns"][d].min())
    t0 = z + int(a.t0 * NS)
    t1 = int(fr["t_in_ns"].max()) if a.t1 is None else z + int(a.t1 * NS)
    res: dict = {"run": str(a.run), "window_s": [a.t0, (t1 - z) / NS], "link_payload_mbps": link_payload}
    rep = meta["emulator_report"]
    print(f"run {a.run}: release error p50/p99/max {rep['release_error']['p50_us']:.0f}/"
          f"{rep['release_error']['p99_us']:.0f}/{rep['release_error']['max_us']:.0f} us, late "
          f"{rep['release_error']['late']}, stalls {rep['stalls']} ({rep['stalled_ms']:.1f} ms), steal "
          f"{meta['steal_s']}")

    # Timing of both directions over the window.
    deliv = fr["fate"] == 0
    for name, dsel in (("data", d & deliv), ("ack", (fr["dir"] == 1) & deliv)):
        w = dsel & (fr["t_sched_ns"] >= t0) & (fr["t_sched_ns"] < t1)
        err = (fr["t_out_ns"][w].astype(np.int64) - fr["t_sched_ns"][w].astype(np.int64)) / 1e3
        print(f"  {name} release error us: {describe(err)}; > 100 us: {np.mean(err > 100):.2%}")
        res[f"{name}_release_error_us"] = {"mean": float(np.mean(err)), "p50": pct(err, 50), "p99": pct(err, 99),
                                           "max": float(np.max(err))}
    w = d & deliv & (fr["t_sched_ns"] >= t0) & (fr["t_sched_ns"] < t1)
    ts, to = np.sort(fr["t_sched_ns"][w]), np.sort(fr["t_out_ns"][w])
    gs, go = np.diff(ts) / 1e3, np.diff(to) / 1e3
    print(f"  data spacing us, model: {describe(gs[gs < 5000])}; written: {describe(go[go < 5000])}")
    n_data = int(np.sum(d & (fr["t_in_ns"] >= t0) & (fr["t_in_ns"] < t1)))
    n_ack = int(np.sum((fr["dir"] == 1) & (fr["t_in_ns"] >= t0) & (fr["t_in_ns"] < t1)))
    print(f"  data segments {n_data}, ACKs {n_ack}: {n_data / max(n_ack, 1):.2f} segments per ACK")
    res["segments_per_ack"] = n_data / max(n_ack, 1)
    # The receiving host's delay: an ACK's read time minus the write time
    # of the highest data it covers; and how many new segments each covers.
    isn_k = np.nonzero((fr["dir"] == 0) & ((fr["tcp_flags"] & 0x02) != 0))[0]
    isn = int(fr["seq"][isn_k[0]]) if len(isn_k) else int(fr["seq"][np.nonzero(d)[0][0]])
    uw_d, uw_a = Unwrap(isn), Unwrap(isn)
    written: dict[int, int] = {}
    recv_delay, covered, hi_prev = [], [], 0
    for k in np.argsort(fr["t_in_ns"], kind="stable"):
        if fr["dir"][k] == 0 and fr["payload"][k] > 0 and fr["fate"][k] == 0:
            written[uw_d(int(fr["seq"][k])) + int(fr["payload"][k])] = int(fr["t_out_ns"][k])
        elif fr["dir"][k] == 1 and t0 <= fr["t_in_ns"][k] < t1:
            hi = max([uw_a(int(fr["ack"][k]))] + [uw_a(int(fr[f"sack{b + 1}_right"][k]))
                                                  for b in range(int(fr["n_sack"][k]))])
            if hi in written and hi > hi_prev:
                recv_delay.append((int(fr["t_in_ns"][k]) - written[hi]) / 1e3)
                covered.append((hi - hi_prev) // MSS)
            hi_prev = max(hi_prev, hi)
    rd, cv = np.array(recv_delay), np.array(covered)
    print(f"  receiver delay (data written -> its ACK read) us: p50 {pct(rd, 50):.0f} p90 {pct(rd, 90):.0f} "
          f"p99 {pct(rd, 99):.0f} p99.9 {pct(rd, 99.9):.0f}; ACKs covering ≥ 3 new segments: {np.mean(cv >= 3):.1%} "
          f"(their delay p50 {pct(rd[cv >= 3], 50):.0f} us)")
    res["receiver_delay_us"] = {"p50": pct(rd, 50), "p90": pct(rd, 90), "p99": pct(rd, 99), "p999": pct(rd, 99.9),
                                "stretch_share": float(np.mean(cv >= 3))}
    ss_ = parse_ss(a.run / "ss.txt", meta["realtime_origin_ns"]) if (a.run / "ss.txt").exists() else None

    clocks = {}
    up = up_path(meta)
    for clock in CLOCKS:
        segs, acks = sender_inputs(fr, clock, path=up)
        r = replay(segs, acks)
        clocks[clock] = r
        win = (r["t"] >= t0) & (r["t"] < t1)
        v = win & r["valid"]
        print(f"  clock {clock:9s}: samples {int(v.sum())} valid of {int(win.sum())}; sample bw "
              f"{describe(r['bw'][v])}")
        # The filter sampled on a 10 ms grid (time-weighted).
        grid = np.arange(t0, t1, 10_000_000)
        f = step_at(grid, r["t"], r["filt"])
        print(f"  {'':15s} filter bw {describe(f)}; above link {np.mean(f > link_payload + 1e-9):.0%}, "
              f"mean excess {np.mean(f) / link_payload - 1:+.2%}")
        res[clock] = {"samples_valid": int(v.sum()), "sample_mean": float(np.mean(r["bw"][v])),
                      "sample_p99": pct(r["bw"][v], 99), "sample_max": float(np.max(r["bw"][v])),
                      "filter_mean": float(np.mean(f)), "filter_p95": pct(f, 95), "filter_max": float(np.max(f)),
                      "filter_excess": float(np.mean(f) / link_payload - 1)}
    # Quiet stretches: grid points with no ACK later than a threshold
    # (released − ideal) in the preceding second.
    _, rel_acks = sender_inputs(fr, "released", keep_order=True, path=up)
    _, ide_acks = sender_inputs(fr, "ideal", keep_order=True, path=up)
    late_t = np.array([ti for (tr, _, _), (ti, _, _) in zip(rel_acks, ide_acks)], dtype=np.int64)
    late_v = np.array([tr - ti for (tr, _, _), (ti, _, _) in zip(rel_acks, ide_acks)], dtype=np.int64)
    grid = np.arange(t0, t1, 10_000_000)
    f = step_at(grid, clocks["released"]["t"], clocks["released"]["filt"])
    res["quiet"] = {}
    for thr_us in (300, 1000):
        ev = np.sort(late_t[late_v > thr_us * 1000])
        k = np.searchsorted(ev, grid, side="right")
        last = np.where(k > 0, ev[np.maximum(k - 1, 0)], -(1 << 62))
        quiet = grid - last > NS
        share = float(np.mean(quiet))
        exc = float(np.mean(f[quiet]) / link_payload - 1) if quiet.any() else float("nan")
        print(f"  quiet (no ACK > {thr_us} us late in the last 1 s): {share:.1%} of the window; released filter "
              f"there {exc:+.2%} above the link")
        res["quiet"][str(thr_us)] = {"share": share, "filter_excess": exc}
    r = clocks["released"]
    win = (r["t"] >= t0) & (r["t"] < t1)
    rv = r["rtt_vl"][win]
    rv = rv[~np.isnan(rv)] / 1e6
    print(f"  Linux (capture, released clock): RTT mean {np.mean(rv):.2f} p95 {pct(rv, 95):.2f} ms, packets out "
          f"(per ACK) mean {np.mean(r['in_flight'][win]):.1f}")
    res["linux_rtt_mean_ms"], res["linux_rtt_p95_ms"] = float(np.mean(rv)), pct(rv, 95)
    # Retransmissions (a data segment starting where one was sent before)
    # and drops in the emulated path, over the window.
    seen: set[int] = set()
    n_retx = 0
    for k in np.argsort(fr["t_in_ns"], kind="stable"):
        if fr["dir"][k] != 0 or fr["payload"][k] == 0:
            continue
        s0 = int(fr["seq"][k])
        if s0 in seen and t0 <= fr["t_in_ns"][k] < t1:
            n_retx += 1
        seen.add(s0)
    n_drop = int(np.sum(d & (fr["fate"] == 1) & (fr["t_in_ns"] >= t0) & (fr["t_in_ns"] < t1)))
    print(f"  Linux retransmissions {n_retx}, drops {n_drop} (window)")
    res["linux_retransmissions"], res["linux_drops"] = n_retx, n_drop
    if ss_ is not None and len(ss_["t"]):
        sel = (ss_["t"] >= t0) & (ss_["t"] < t1)
        print(f"  Linux ss bw         : {describe(ss_['bw'][sel])} ({int(sel.sum())} polls); excess "
              f"{np.mean(ss_['bw'][sel]) / link_payload - 1:+.2%}")
        r = clocks["released"]
        rep_at = step_at(ss_["t"][sel], r["t"], r["filt"])
        diff = rep_at - ss_["bw"][sel]
        print(f"  replay(released) − ss at the polls, Mbit/s: {describe(diff)}; |diff| < 0.05: "
              f"{np.mean(np.abs(diff) < 0.05):.0%}")
        res["ss"] = {"mean": float(np.mean(ss_["bw"][sel])), "p95": pct(ss_["bw"][sel], 95),
                     "max": float(np.max(ss_["bw"][sel])), "replay_minus_ss_mean": float(np.nanmean(diff)),
                     "replay_minus_ss_abs_p50": pct(np.abs(diff[~np.isnan(diff)]), 50)}
        res["ss_unacked_mean"] = float(np.mean(ss_["unacked"][sel]))
    if a.export_noise:
        with open(a.export_noise, "w") as fh:
            fh.write(f"# {a.run}: ACK lateness, released − ideal (t_s after the first data segment, us)\n")
            for (tr, _, _), (ti, _, _) in sorted(zip(rel_acks, ide_acks), key=lambda x: x[1][0]):
                if ti < z:  # the handshake
                    continue
                fh.write(f"{(ti - z) / NS:.6f} {max(tr - ti, 0) / 1e3:.1f}\n")
    if a.json:
        a.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
