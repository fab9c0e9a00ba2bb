"""What a TCP sender's RTT samples weigh, for a real run (the emulator's
capture) and for xrc (its own segments and ACKs), side by side.

Usage::

    .venv/bin/python scripts/trace_rtt_analysis.py RUN_DIR [--from S] [--to S] [--per-second]
    .venv/bin/python scripts/trace_rtt_analysis.py --xrc-dump DUMP [--from S] [--to S] [--per-second]

``RUN_DIR`` is what ``scripts/bbr_rate_probe.py`` wrote (``capture.npz``,
``meta.json``, ``ss.txt``, ``iperf3.json``); ``DUMP`` what
``crates/xrc-core/examples/ack_noise.rs --dump=DUMP`` wrote (``S t start
end`` per segment sent, ``A t cum [l r]...`` per ACK processed, model
time). Times are relative to the first data segment; the window is
``[--from, --to)`` (default 5 s to the end).

From the sender's segments and ACKs alone (both sides the same code):

- the **RTT samples** as ``rtt.parquet`` and the emulator's
  ``SenderView`` take them (Linux ``tcp_clean_rtx_queue``: per ACK that
  newly acknowledges data, the time since the send of the earliest segment
  it newly covers cumulatively, none of them ever retransmitted (Karn);
  otherwise the lowest newly SACKed segment sent once); the
  timestamp-echo fallback is left out (it needs TSval, which the dump
  lacks; it applies to few ACKs);
- how many segments each ACK newly covers (cumulatively or by SACK);
- the sample mean **per ACK** (what the validation table reports) and the
  same samples **weighted by the segments each ACK covers**;
- each segment's own **sojourn**: its (only) send to the first ACK that
  covers it, over the segments sent once;
- the **outstanding data** (``snd_nxt − snd_una``, segments of 1448 B)
  time-weighted, and Little's law: delivery rate × mean sojourn against
  it.

For a real run also: the receiver's ACKs against its **arrival batches**
(data packets the link model released at the same instant), and Linux's
own window and outstanding data from ``ss -tin`` (``cwnd``, ``unacked``)
against iperf3's ``snd_cwnd`` every 100 ms.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

# The capture's helpers (sequence unwrapping, the iperf3 data connection)
# are bbr_rate_analysis.py's, beside this script.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bbr_rate_analysis import Unwrap, data_flow, read_dump, ss_polls  # noqa: E402

MSS = 1448
NS = 1_000_000_000


def from_capture(run: Path):
    """(segments sent [(t, start, end)], ACKs [(t, cum, blocks)], extra) of
    the iperf3 data connection, times in ns since the first data segment;
    ``extra`` holds the receiver-side arrays for the batch analysis."""
    cap = dict(np.load(run / "capture.npz"))
    meta = json.loads((run / "meta.json").read_text())
    flow = data_flow(meta)
    sel = np.nonzero((cap["flow"] == flow) & (cap["is_tcp"] == 1))[0]
    fr = {k: v[sel] for k, v in cap.items()}
    d = fr["dir"] == 0
    syn = np.nonzero(d & ((fr["tcp_flags"] & 0x02) != 0))[0]
    isn = int(fr["seq"][syn[0]]) if len(syn) else int(fr["seq"][np.nonzero(d)[0][0]])
    uw, uw2 = Unwrap(isn), Unwrap(isn)
    # Events as the sender sees them: a data segment when read, an ACK
    # when written to the sender's device.
    ev = []
    for k in range(len(fr["dir"])):
        if fr["dir"][k] == 0:
            ev.append((int(fr["t_in_ns"][k]), 0, k))
        elif fr["fate"][k] == 0 and (fr["tcp_flags"][k] & 0x10):
            ev.append((int(fr["t_out_ns"][k]), 1, k))
    ev.sort()
    segs, acks = [], []
    for t, kind, k in ev:
        if kind == 0:
            if fr["payload"][k] == 0:
                continue
            s = uw(int(fr["seq"][k])) + (1 if fr["tcp_flags"][k] & 0x02 else 0)
            segs.append((t, s, s + int(fr["payload"][k])))
        else:
            cum = uw2(int(fr["ack"][k]))
            blocks = [(uw2(int(fr[f"sack{b + 1}_left"][k])), uw2(int(fr[f"sack{b + 1}_right"][k])))
                      for b in range(int(fr["n_sack"][k]))]
            acks.append((t, cum, blocks))
    z = segs[0][0]
    segs = [(t - z, s, e) for t, s, e in segs]
    acks = [(t - z, c, b) for t, c, b in acks]
    # The receiver's side: data written to the UE device (with the model's
    # release instant) and ACKs read from it.
    dd = np.nonzero((fr["dir"] == 0) & (fr["fate"] == 0) & (fr["payload"] > 0))[0]
    uu = np.nonzero((fr["dir"] == 1) & ((fr["tcp_flags"] & 0x10) != 0))[0]
    extra = {
        "data_sched": fr["t_sched_ns"][dd].astype(np.int64) - z,
        "data_out": fr["t_out_ns"][dd].astype(np.int64) - z,
        "ack_in": fr["t_in_ns"][uu].astype(np.int64) - z,
        "meta": meta,
        "z_ns": z,
    }
    return segs, acks, extra


def from_dump(path: Path):
    try:
        segs, acks = read_dump(path)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    if not segs or not acks:
        raise ValueError(f"{path}: no segments or no ACKs")
    z = segs[0][0]
    return [(t - z, s, e) for t, s, e in segs], [(t - z, c, b) for t, c, b in acks]


def analyse(segs, acks):
    """Replays the sender's scoreboard: per ACK (t, sample or nan, newly
    covered segments, outstanding segments after it), per segment sent once
    (send t, sojourn), and the outstanding data as a step function."""
    ev = [(t, 0, i) for i, (t, _, _) in enumerate(segs)] + [(t, 1, i) for i, (t, _, _) in enumerate(acks)]
    ev.sort()
    # start -> [end, first send, sends, sacked]
    sb: dict[int, list] = {}
    starts: list[int] = []  # sorted keys of sb (segments are appended in order)
    import bisect

    high, una = None, None
    per_ack = []
    sojourn = []
    out_t, out_v = [], []
    for t, kind, i in ev:
        if kind == 0:
            _, s, e = segs[i]
            if high is None:
                high, una = s, s
            if s < high:
                j = bisect.bisect_right(starts, s) - 1
                j = max(j, 0)
                while j < len(starts) and starts[j] < e:
                    seg = sb[starts[j]]
                    if seg[0] > s:
                        seg[2] += 1
                    j += 1
            if e > high:
                st = max(s, high)
                sb[st] = [e, t, 1, False]
                starts.append(st)
                high = e
            out_t.append(t)
            out_v.append((high - una) / MSS)
            continue
        _, cum, blocks = acks[i]
        if high is None:
            continue
        first_sack = None
        covered = 0
        for l, r in sorted(blocks):
            if r <= una or l >= high:
                continue
            j = bisect.bisect_left(starts, l)
            while j < len(starts) and starts[j] < r:
                seg = sb[starts[j]]
                if seg[0] <= r and not seg[3]:
                    seg[3] = True
                    covered += 1
                    if seg[2] == 1:
                        if first_sack is None:
                            first_sack = seg[1]
                        sojourn.append((seg[1], t - seg[1]))
                j += 1
        first_ack, retrans = None, False
        if cum > una:
            j = 0
            while j < len(starts) and sb[starts[j]][0] <= cum:
                seg = sb.pop(starts[j])
                j += 1
                if seg[2] > 1:
                    retrans = True
                if not seg[3]:
                    covered += 1
                    if seg[2] == 1:
                        if first_ack is None:
                            first_ack = seg[1]
                        sojourn.append((seg[1], t - seg[1]))
            del starts[:j]
            una = cum
        if first_ack is not None and not retrans:
            sample = t - first_ack
        elif first_sack is not None:
            sample = t - first_sack
        else:
            sample = float("nan")
        per_ack.append((t, sample, covered, (high - una) / MSS))
        out_t.append(t)
        out_v.append((high - una) / MSS)
    pa = np.array(per_ack, dtype=float)
    sj = np.array(sojourn, dtype=float)
    return pa, sj, np.array(out_t, dtype=float), np.array(out_v, dtype=float)


def step_mean(t, v, t0, t1):
    if len(t) == 0:
        return float("nan")
    grid = np.arange(t0, t1, 1_000_000)  # 1 ms
    k = np.searchsorted(t, grid, side="right") - 1
    ok = k >= 0
    return float(np.mean(v[k[ok]])) if ok.any() else float("nan")


def pct(x, q):
    return float(np.percentile(x, q)) if len(x) else float("nan")


def report(name, segs, acks, t0, t1, per_second):
    pa, sj, ot, ov = analyse(segs, acks)
    w = (pa[:, 0] >= t0) & (pa[:, 0] < t1)
    s = w & ~np.isnan(pa[:, 1])
    r = pa[s, 1] / 1e6
    cov = pa[s, 2]
    sw = (sj[:, 0] + sj[:, 1] >= t0) & (sj[:, 0] + sj[:, 1] < t1)
    soj = sj[sw, 1] / 1e6
    dur = (t1 - t0) / NS
    rate = sw.sum() / dur  # segments delivered (covered) per second
    outm = step_mean(ot, ov, t0, t1)
    covall = pa[w, 2]
    print(f"{name}: window {t0 / NS:g}..{t1 / NS:g} s")
    print(f"  ACKs {int(w.sum())} ({int(s.sum())} with a sample); segments covered {int(covall.sum())}: "
          f"{covall.sum() / max(w.sum(), 1):.2f} per ACK; ACKs covering 0/1/2/3/4-6/7+: "
          + " / ".join(f"{np.mean(m):.1%}" for m in (covall == 0, covall == 1, covall == 2, covall == 3,
                                                        (covall >= 4) & (covall <= 6), covall >= 7)))
    print(f"  RTT per ACK (the table's): mean {r.mean():.2f} p50 {pct(r, 50):.2f} p95 {pct(r, 95):.2f} ms")
    print(f"  the same weighted by segments covered: mean {np.average(r, weights=np.maximum(cov, 1)):.2f} ms")
    print(f"  per-segment sojourn ({len(soj)} segments): mean {soj.mean():.2f} p50 {pct(soj, 50):.2f} "
          f"p95 {pct(soj, 95):.2f} ms")
    print(f"  delivery {rate:.1f} seg/s ({rate * MSS * 8 / 1e6:.2f} Mbit/s payload); outstanding (time mean) "
          f"{outm:.1f} seg; Little: rate x sojourn {rate * soj.mean() / 1e3:.1f}, rate x per-ACK RTT "
          f"{rate * r.mean() / 1e3:.1f}")
    if per_second:
        print("   sec  ACKs  seg/ACK  RTT/ACK  RTT/seg  sojourn  outst  Mbit/s")
        for a in range(int(t0 / NS), int(np.ceil(t1 / NS))):
            b0, b1 = a * NS, (a + 1) * NS
            m = s & (pa[:, 0] >= b0) & (pa[:, 0] < b1)
            mj = (sj[:, 0] + sj[:, 1] >= b0) & (sj[:, 0] + sj[:, 1] < b1)
            if not m.any():
                continue
            rr, cc = pa[m, 1] / 1e6, np.maximum(pa[m, 2], 1)
            print(f"  {a:4d} {int(m.sum()):5d} {cc.mean():7.2f} {rr.mean():8.1f} {np.average(rr, weights=cc):8.1f} "
                  f"{(sj[mj, 1] / 1e6).mean() if mj.any() else float('nan'):8.1f} {step_mean(ot, ov, b0, b1):6.1f} "
                  f"{mj.sum() * MSS * 8 / 1e6:7.2f}")
    return {"rtt_per_ack": float(r.mean()), "rtt_seg_weighted": float(np.average(r, weights=np.maximum(cov, 1))),
            "sojourn": float(soj.mean()), "outstanding": outm, "seg_per_ack": float(covall.sum() / max(w.sum(), 1))}


def receiver_batches(extra, t0, t1):
    """The receiver's ACKs against the arrival batches (data the model
    released at the same instant)."""
    ds, do, ai = extra["data_sched"], extra["data_out"], extra["ack_in"]
    w = (ds >= t0) & (ds < t1)
    inst, sizes = np.unique(ds[w], return_counts=True)
    aw = ai[(ai >= t0) & (ai < t1)]
    print(f"  receiver: {w.sum()} data segments in {len(inst)} release instants ({sizes.mean():.2f} per instant; "
          f"1/2/3/4-6/7+: " + " / ".join(f"{np.mean(m):.1%}" for m in (sizes == 1, sizes == 2, sizes == 3,
                                                                          (sizes >= 4) & (sizes <= 6), sizes >= 7))
          + f"); ACKs read {len(aw)}: {len(aw) / max(len(inst), 1):.2f} per instant")
    # ACKs between one release instant's last write and the next instant's first write
    dow = np.sort(do[w])
    last_write = {}
    for t_s, t_o in zip(ds[w], do[w]):
        last_write[t_s] = max(last_write.get(t_s, 0), t_o)
    lw = np.array([last_write[t] for t in inst])
    nxt = np.append(inst[1:], np.inf)
    # ACKs read after an instant's last write and before the next instant's release
    k = np.searchsorted(aw, lw, side="left")
    k2 = np.searchsorted(aw, nxt, side="left")
    per = k2 - k
    print(f"  ACKs after an instant's last write, before the next instant: 0/1/2+: "
          + " / ".join(f"{np.mean(m):.1%}" for m in (per == 0, per == 1, per >= 2))
          + f"; over instants of >= 3 segments: 0/1/2+: "
          + " / ".join(f"{np.mean(m):.1%}" for m in (per[sizes >= 3] == 0, per[sizes >= 3] == 1,
                                                         per[sizes >= 3] >= 2)))
    _ = dow


def ss_window(run: Path, extra, t0, t1):
    """Linux's own cwnd and unacked from ss (cubic), and iperf3's snd_cwnd."""
    meta = extra["meta"]
    p = run / "ss.txt"
    rows = []
    if p.exists() and meta.get("realtime_origin_ns") is not None:
        for t, socks in ss_polls(p):
            ents = [e for e in socks if "cwnd:" in e and "bytes_acked" in e]
            if not ents:
                continue
            e = max(ents, key=lambda e: int(re.search(r"bytes_acked:(\d+)", e).group(1)))
            g = lambda k: int(m.group(1)) if (m := re.search(rf"\b{k}:(\d+)", e)) else 0  # noqa: E731
            rows.append((int(t * NS) - meta["realtime_origin_ns"] - extra["z_ns"], g("cwnd"), g("unacked"),
                         g("sacked"), g("lost"), g("retrans")))
    if rows:
        a = np.array(rows, dtype=float)
        w = (a[:, 0] >= t0) & (a[:, 0] < t1)
        print(f"  ss -tin ({int(w.sum())} polls): cwnd mean {a[w, 1].mean():.1f}, unacked mean {a[w, 2].mean():.1f}, "
              f"sacked {a[w, 3].mean():.2f}, lost {a[w, 4].mean():.2f}; unacked > cwnd in {np.mean(a[w, 2] > a[w, 1]):.1%}")
    ip = run / "iperf3.json"
    if ip.exists():
        j = json.loads(ip.read_text())
        off = extra["meta"].get("iperf_offset_s", 0.0)
        vals = [iv["streams"][0]["snd_cwnd"] / MSS for iv in j.get("intervals", [])
                if t0 / NS < iv["streams"][0]["end"] - off <= t1 / NS]
        if vals:
            print(f"  iperf3 snd_cwnd ({len(vals)} intervals): mean {np.mean(vals):.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, nargs="?")
    ap.add_argument("--xrc-dump", type=Path, action="append", default=[])
    ap.add_argument("--from", dest="t0", type=float, default=5.0)
    ap.add_argument("--to", dest="t1", type=float, default=None)
    ap.add_argument("--per-second", action="store_true")
    a = ap.parse_args()
    if a.run is None and not a.xrc_dump:
        ap.error("give RUN_DIR or --xrc-dump DUMP")
    t0 = int(a.t0 * NS)
    if a.run is not None:
        if not (a.run / "capture.npz").is_file():
            print(f"RUN_DIR {str(a.run)!r}: no capture.npz (scripts/bbr_rate_probe.py writes it)", file=sys.stderr)
            return 2
        segs, acks, extra = from_capture(a.run)
        t1 = int(a.t1 * NS) if a.t1 is not None else max(acks[-1][0], segs[-1][0])
        report(f"real {a.run}", segs, acks, t0, t1, a.per_second)
        receiver_batches(extra, t0, t1)
        ss_window(a.run, extra, t0, t1)
    for d in a.xrc_dump:
        try:
            segs, acks = from_dump(d)
        except (OSError, ValueError) as e:
            print(f"--xrc-dump: {e}", file=sys.stderr)
            return 2
        t1 = int(a.t1 * NS) if a.t1 is not None else max(acks[-1][0], segs[-1][0])
        report(f"xrc {d}", segs, acks, t0, t1, a.per_second)
    return 0


if __name__ == "__main__":
    sys.exit(main())
