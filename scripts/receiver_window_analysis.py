"""Why a real Linux receiver acknowledges a segment at once or only at the
application's read: its advertised window, from a probe run.

Usage::

    .venv/bin/python scripts/receiver_window_analysis.py RUN_DIR [--from S] [--to S]

``RUN_DIR`` is what ``scripts/bbr_rate_probe.py CASE DURATION RUN_DIR
--ss-receiver`` wrote: the emulator's capture with each segment's TCP
window field and the SYN-ACK's window scale (``window``, ``wscale``), and
``ss-rx.txt``, the receiving socket's ``ss -tinm`` every 50 ms. Times are
relative to the first data segment's release; the window is ``[--from,
--to)`` (default 5 s to the end).

Linux sends the every-second-segment ACK at the segment only when the
window computed from the free space now is not below the one it last
advertised (``__tcp_ack_snd_check``: ``__tcp_select_window() >=
rcv_wnd``); otherwise the reader's ``tcp_cleanup_rbuf`` sends it. The
window is ``rcv_ssthresh`` or the free space, whichever is less, rounded
up to the window-scale unit, and the free space drops by about one
segment's payload per unread segment (``tcp_win_from_space`` of its
``truesize``). The script prints:

- the receive buffer, the memory one segment takes (``truesize``, from
  ``skmem`` with one segment queued), the payload-to-memory ratio Linux
  derives from them (``scaling_ratio``), and what that predicts for the
  window with 0 and 1 segments unread, against the ``rcv_ssthresh`` values
  ``ss`` saw;
- the advertised windows of the ACKs (in bytes), and, per window, how many
  ACKs end in the middle of an arrival batch (the link model released
  more segments at the same instant), how many segments they cover, and
  how long the receiver kept advertising it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bbr_rate_analysis import Unwrap, data_flow, ss_polls  # noqa: E402

NS = 1_000_000_000


def load(run: Path):
    cap = dict(np.load(run / "capture.npz"))
    if "window" not in cap:
        raise ValueError("the capture has no window column (a capture from before the window field was kept)")
    meta = json.loads((run / "meta.json").read_text())
    sel = np.nonzero((cap["flow"] == data_flow(meta)) & (cap["is_tcp"] == 1))[0]
    return {k: v[sel] for k, v in cap.items()}, meta


def segments_and_acks(fr):
    """Data segments written to the receiver (write time, release instant,
    end sequence) and its ACKs as read (time, cumulative ACK, window in
    bytes, SACK blocks), sequence numbers relative to the ISN."""
    down = fr["dir"] == 0
    syn = np.nonzero(down & ((fr["tcp_flags"] & 0x02) != 0))[0]
    synack = np.nonzero(~down & ((fr["tcp_flags"] & 0x12) == 0x12))[0]
    if not len(syn) or not len(synack) or fr["wscale"][synack[0]] == 255:
        raise ValueError("no SYN/SYN-ACK with a window scale in the capture")
    ws = int(fr["wscale"][synack[0]])
    isn = int(fr["seq"][syn[0]])
    uw, uw2 = Unwrap(isn), Unwrap(isn)
    dd = np.nonzero(down & (fr["fate"] == 0) & (fr["payload"] > 0))[0]
    dd = dd[np.argsort(fr["t_out_ns"][dd], kind="stable")]
    segs = [(int(fr["t_out_ns"][k]), int(fr["t_sched_ns"][k]), uw(int(fr["seq"][k])) + int(fr["payload"][k]))
            for k in dd]
    uu = np.nonzero(~down & ((fr["tcp_flags"] & 0x12) == 0x10))[0]
    uu = uu[np.argsort(fr["t_in_ns"][uu], kind="stable")]
    acks = [(int(fr["t_in_ns"][k]), uw2(int(fr["ack"][k])), int(fr["window"][k]) << ws, int(fr["n_sack"][k]))
            for k in uu]
    return segs, acks, ws


def receiver_state(run: Path):
    """rcv_ssthresh, rcvbuf and queued memory of the data connection's
    receiving socket, per ss poll (the iperf3 control connection left out)."""
    path = run / "ss-rx.txt"
    if not path.is_file():
        return []
    rows = []
    for _, socks in ss_polls(path):
        for entry in socks:
            got = re.search(r"bytes_received:(\d+)", entry)
            sk = re.search(r"skmem:\(r(\d+),rb(\d+)", entry)
            ss = re.search(r"rcv_ssthresh:(\d+)", entry)
            if got and sk and ss and int(got.group(1)) > 1_000_000:
                rows.append((int(ss.group(1)), int(sk.group(2)), int(sk.group(1))))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--from", dest="t0", type=float, default=5.0)
    ap.add_argument("--to", dest="t1", type=float, default=None)
    a = ap.parse_args()
    try:
        fr, _ = load(a.run)
        segs, acks, ws = segments_and_acks(fr)
    except (OSError, ValueError, KeyError) as e:
        print(f"RUN_DIR {str(a.run)!r}: {e}", file=sys.stderr)
        return 2
    origin = segs[0][1]
    t0 = origin + int(a.t0 * NS)
    t1 = origin + int(a.t1 * NS) if a.t1 is not None else 1 << 62
    unit = 1 << ws

    state = receiver_state(a.run)
    if state:
        rcvbuf = Counter(r[1] for r in state).most_common(1)[0][0]
        one = [r[2] for r in state if 0 < r[2] < 4096]
        truesize = Counter(one).most_common(1)[0][0] if one else None
        print(f"receiver: window scale {ws} (unit {unit} B); rcvbuf {rcvbuf} B (in {sum(r[1] == rcvbuf for r in state)}"
              f" of {len(state)} polls)" + (f"; one queued segment takes {truesize} B" if truesize else ""))
        if truesize:
            ratio = (1448 << 8) // truesize
            f0, f1 = rcvbuf * ratio >> 8, (rcvbuf - truesize) * ratio >> 8
            print(f"  scaling_ratio {ratio}/256: free-space window with 0 unread {f0}, with 1 unread {f1} "
                  f"(rounded up: {-(-f0 // unit) * unit}, {-(-f1 // unit) * unit})")
        for v, n in Counter(r[0] for r in state).most_common(4):
            print(f"  rcv_ssthresh {v}: {n} polls ({n / len(state):.0%})")

    # Each segment's place in its arrival batch (segments released at the same instant).
    place, size = {}, Counter()
    for _, inst, end in segs:
        if end not in place:
            place[end] = (inst, size[inst])
            size[inst] += 1
    w = [x for x in acks if t0 <= x[0] < t1]
    wins = Counter(x[2] for x in w)
    print(f"ACKs {len(w)}; advertised windows: " + ", ".join(f"{k} B: {v}" for k, v in wins.most_common(4)))
    top = [k for k, _ in wins.most_common(2)]
    spells: dict[int, list[float]] = {k: [] for k in top}
    start = None
    for i, x in enumerate(w):
        if start is None:
            start = x
        if i + 1 == len(w) or w[i + 1][2] != x[2]:
            if x[2] in spells:
                spells[x[2]].append(((w[i + 1][0] if i + 1 < len(w) else x[0]) - start[0]) / 1e6)
            start = None
    prev = None
    cover: dict[int, Counter] = {k: Counter() for k in top}
    mid: dict[int, int] = {k: 0 for k in top}
    for x in w:
        if prev is not None and x[2] in cover and x[3] == 0 and x[1] > prev[1]:
            n = round((x[1] - prev[1]) / 1448)
            cover[x[2]][min(n, 4)] += 1
            p = place.get(x[1])
            if p is not None and p[1] < size[p[0]] - 1:
                mid[x[2]] += 1
        prev = x
    for k in top:
        n = sum(cover[k].values())
        if not n:
            continue
        d = np.array(spells[k])
        print(f"  window {k} B: {wins[k]} ACKs, {d.sum() / 1e3:.1f} s in {len(d)} spells (median {np.median(d):.1f} ms); "
              f"ending mid-batch {mid[k] / n:.1%}; covering 1 / 2 / 3 / 4+ segments: "
              + " / ".join(f"{cover[k][c] / n:.0%}" for c in (1, 2, 3, 4)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
