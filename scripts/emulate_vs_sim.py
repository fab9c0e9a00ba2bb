"""Runs a scenario with `xrc emulate` (real Linux TCP through the emulated
cell) and `xrc run` (the simulator's TCP through the same cell) for each
congestion control and prints the docs/emulation.md table: goodput and
HoL p90 side by side, with the emulator's timing and the host's steal.

    python scripts/emulate_vs_sim.py OUTDIR [SCENARIO] [--cc cubic,bbr,newreno] [--seed N] [--gso on|off]

``--seed`` sets the master seed of both sides (the channel's trajectory).
``--gso`` is passed to `xrc emulate` (GSO super-packets to the UE side;
default: its own default); the table's last column is the packets per write
to the UE side.

Needs root, TUN and iperf3 (as `xrc emulate`)."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

SCENARIO = "python/xrc/scenarios/paper/fig1-time-varying.toml"


def xrc(*args: str) -> list[str]:
    return [sys.executable, "-m", "xrc.cli", *args]


def rtt_time_weighted(run: Path) -> tuple[float, float]:
    """The run's RTT p50 weighted by time (the latest sample held on a
    1-ms grid from 1 s on) and the segments delivered per RTT sample. A
    real receiver acknowledges more segments per ACK when segments come in
    bursts (Linux defers the ACKs of a socket's backlog to its end), so an
    ACK-weighted percentile under-weights fast periods there and not in
    the simulation; the time-weighted one does not depend on the ACKs."""
    import numpy as np
    import pyarrow.parquet as pq

    r = pq.read_table(run / "rtt.parquet", columns=["t", "flow", "rtt_ms"]).to_pandas()
    r = r[r["flow"] == 0].sort_values("t")
    t, v = r["t"].to_numpy(), r["rtt_ms"].to_numpy()
    if len(t) == 0:
        return float("nan"), float("nan")
    grid = np.arange(1.0, t[-1], 0.001)
    i = np.searchsorted(t, grid, side="right") - 1
    tw = v[i[i >= 0]]
    fb = pq.read_table(run / "flow_throughput.parquet", columns=["flow", "bytes"]).to_pandas()
    segs = fb[fb["flow"] == 0]["bytes"].sum() / 1448
    return (float(np.median(tw)) if len(tw) else float("nan")), float(segs / len(t))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("scenario", nargs="?", default=SCENARIO)
    ap.add_argument("--cc", default="cubic,bbr,newreno")
    ap.add_argument("--seed", type=int, default=None,
                    help="master seed for both sides (the channel's trajectory); default: the scenario's")
    ap.add_argument("--gso", choices=["on", "off"], default=None)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for cc in a.cc.split(","):
        emu, sim = out / f"emulate-{cc}", out / f"run-{cc}"
        seed = [] if a.seed is None else ["--seed", str(a.seed)]
        cmd_e = xrc("emulate", a.scenario, *seed, "--set", f"flows.0.cc={cc}", "--out", str(emu), "--force",
                    "--quiet", *(["--gso", a.gso] if a.gso else []))
        cmd_s = xrc("run", a.scenario, *seed, "--set", f"flows.0.cc={cc}", "--out", str(sim), "--force", "--quiet",
                    "--no-plots")
        load = os.getloadavg()
        subprocess.run(cmd_e, check=True, timeout=600)
        subprocess.run(cmd_s, check=True, timeout=600)
        e = json.loads((emu / "summary.json").read_text())
        s = json.loads((sim / "summary.json").read_text())
        rows.append({"cc": cc, "load_before": load, "emulate": e, "run": s,
                     "commands": [" ".join(["xrc", *cmd_e[3:]]), " ".join(["xrc", *cmd_s[3:]])]})
    (out / "comparison.json").write_text(json.dumps(rows, indent=2, default=str) + "\n")
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, kernel {platform.release()}, "
          f"{os.cpu_count()} CPUs")
    print("| cc (Linux) | goodput emulate / run Mbit/s | Δ | HoL p90 emulate / run ms | Δ | RTT p50 emulate / run ms "
          "| time-weighted | segments per RTT sample "
          "| retransmits emulate / run | TTI lateness p50/p99/max µs | release error p50/p99/max µs | late TTIs | "
          "steal s | load before | packets per write |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        e, s = r["emulate"], r["run"]
        fe, fs = e["flows"][0], s["flows"][0]
        he, hs = e["ues"][0]["hol_delay_ms"]["p90"], s["ues"][0]["hol_delay_ms"]["p90"]
        t, rel = e["timing"]["tti_start_lateness_us"], e["timing"]["release_error_us"]
        (twe, spe), (tws, sps) = rtt_time_weighted(out / f"emulate-{r['cc']}"), rtt_time_weighted(out / f"run-{r['cc']}")
        g = (fe["goodput_mbps"] - fs["goodput_mbps"]) / fs["goodput_mbps"]
        h = (he - hs) / hs
        print(f"| {r['cc']} ({fe['linux_cc']}) | {fe['goodput_mbps']:.2f} / {fs['goodput_mbps']:.2f} | {g:+.1%} | "
              f"{he:.1f} / {hs:.1f} | {h:+.1%} | {fe['rtt_ms']['p50']:.1f} / {fs['rtt_ms']['p50']:.1f} | "
              f"{twe:.1f} / {tws:.1f} | {spe:.2f} / {sps:.2f} | "
              f"{fe['retransmits']} / {fs['retransmits']} | "
              f"{t['p50_us']:.0f} / {t['p99_us']:.0f} / {t['max_us']:.0f} | "
              f"{rel['p50_us']:.0f} / {rel['p99_us']:.0f} / {rel['max_us']:.0f} | {t['late']} of {t['n']} | "
              f"{e['environment']['steal_s']:.2f} | {r['load_before'][0]:.1f} | "
              f"{e['timing'].get('ue_side_packets_per_write', float('nan')):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
