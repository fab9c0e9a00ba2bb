#!/usr/bin/env python3
"""Issue 10, second XRC improvement: does xrc2's window leave the link idle?

Five parts (the first three by default), each printed as a Markdown table
with every number measured (docs/reproduction.md, "XRC2: a window that keeps
the link busy"):

fig1      Fig. 1 (``paper/fig1-time-varying.toml``, 60 s) under the
          simulator's default LTE timing (BLER 0.1, SR every 10 ms, 3 ms
          SR-to-grant, 4 ms BSR-to-grant; the overrides of
          ``scripts/xrc2_bottleneck.py``), one run per seed, xrc / xrc2 /
          cubic: the UE's utilization, the share of time its RLC HoL delay is
          within the 10 ms budget, goodput, and the queuing delay (RTT sample
          less the flow's least, mean and p95).
traces    every downlink trace, bundled and of ``--traces DIR``, with the trace
          study's setting (``traces/synthetic-xrc.toml``: 5 ms each way, 150 KB
          buffer), xrc / xrc2 / oracle: goodput as a fraction of the oracle's
          (utilization vs the oracle), and power (goodput over the mean / the
          p95 queuing delay, at least 0.1 ms: ``xrc reproduce``'s) as a
          fraction of the oracle's. A trace run has no randomness (the seed
          changes no output), so each trace is run once, over its whole
          length unless ``--trace-duration`` is given.
random    ``--random N`` random cells (default 8), drawn from a fixed seed
          (``--random-seed``): BLER 0–0.2, SR period 1, 2, 5, 10 or 20 ms, 1–8
          UEs each at a fixed CQI 5–15 or on Fig. 1's moving channel, 20 s,
          one bulk flow per UE; UE 0 runs the scheme (xrc / xrc2), the others
          draw from cubic, newreno, bbr, vegas and the scheme; UE 0's
          utilization, fair-share ratio and HoL ≤ 10 ms share. Off unless
          asked for (``--parts ... random``).
shared    the paper's same-UE cases (its ideal timing, no randomness: one run
          each): Fig. 3 (an Illinois or CUBIC flow joins at 5 s) and Fig. 5
          (a CUBIC or NewReno flow from 5.5 s) with the XRC flow running the
          scheme; the UE's HoL ≤ 10 ms share and each flow's goodput. This
          is the unfairness mode's ground (issue 10's third item, not this
          script's subject); it is here to show the window does not make it
          worse. Off unless asked for.
coexist   two UEs at CQI 15 in one cell (``fig1``'s cell, 30 s, default LTE
          timing), one bulk flow each: UE 0 runs the scheme (xrc2 / xrc /
          cubic), UE 1 CUBIC, both from 0 s; UE 0's goodput over UE 1's, and
          each UE's ``fair_share_ratio``, per seed.

    .venv/bin/python scripts/xrc2_window.py --seeds 1 2 3 4 5 --traces ../shared/traces \
        --parts fig1 traces coexist random shared --random 12 --jobs 2

``--xrc2 KEY=VALUE ...`` sets xrc2's parameters (``[flows.cc_params]``) in its
runs, for ablations (``--xrc2 window_budgets=1``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from xrc import bundled
from xrc.reproduce.experiments import TRACE_SCENARIO, trace_files
from xrc.results import summarize
from xrc.runner import simulate
from xrc.scenario import from_dict, load

FIG1 = "paper/fig1-time-varying.toml"
# The simulator's default LTE timing (HarqConfig / UplinkConfig defaults).
LTE = ["cell.harq.bler=0.1", "cell.uplink.sr_period_ms=10", "cell.uplink.sr_grant_delay_ms=3",
       "cell.uplink.bsr_grant_delay_ms=4"]


def _coexist_doc(cc: str, seed: int, params: dict[str, Any]) -> dict[str, Any]:
    sc = load(bundled.scenario(FIG1), overrides=[*LTE, "duration_s=30"], seed=seed)
    doc = json.loads(json.dumps(sc.resolved))
    doc["name"] = "xrc2-coexist"
    ue = doc["ues"][0]
    ue["channel"] = {"kind": "fixed_cqi", "cqi": 15}
    doc["ues"] = [ue, json.loads(json.dumps(ue))]
    f = doc["flows"][0]
    f.pop("cc_params", None)
    doc["flows"] = [dict(f, id="ue0", ue=0, cc=cc), dict(json.loads(json.dumps(f)), id="cubic", ue=1, cc="cubic")]
    if params:
        doc["flows"][0]["cc_params"] = dict(params)
    return doc


def _random_doc(cc: str, k: int, seed: int, params: dict[str, Any]) -> dict[str, Any]:
    """The `k`-th random cell of `seed` with UE 0 running `cc` (same cell for every scheme)."""
    rng = random.Random(1_000_003 * seed + k)
    bler = round(rng.uniform(0.0, 0.2), 3)
    sr = rng.choice([1, 2, 5, 10, 20])
    n = rng.randint(1, 8)
    chans, others = [], []
    for _ in range(n):
        if rng.random() < 0.5:
            chans.append({"kind": "fixed_cqi", "cqi": rng.randint(5, 15)})
        else:
            chans.append(None)  # Fig. 1's moving channel
        others.append(rng.choice(["cubic", "newreno", "bbr", "vegas", "SELF"]))
    sc = load(bundled.scenario(FIG1), overrides=[
        f"cell.harq.bler={bler}", f"cell.uplink.sr_period_ms={sr}", "cell.uplink.sr_grant_delay_ms=3",
        "cell.uplink.bsr_grant_delay_ms=4", "duration_s=20"], seed=1000 * seed + k)
    doc = json.loads(json.dumps(sc.resolved))
    doc["name"] = f"xrc2-random-{seed}-{k}"
    moving = doc["ues"][0]
    doc["ues"] = [json.loads(json.dumps(moving)) if c is None else dict(moving, channel=c) for c in chans]
    f = doc["flows"][0]
    f.pop("cc_params", None)
    flows = []
    for i in range(n):
        scheme = cc if i == 0 or others[i] == "SELF" else others[i]
        fl = dict(json.loads(json.dumps(f)), id=f"ue{i}", ue=i, cc=scheme)
        if scheme == "xrc2" and params:
            fl["cc_params"] = dict(params)
        flows.append(fl)
    doc["flows"] = flows
    # "X": the scheme compared (UE 0, and the others that drew it).
    doc["description"] = f"BLER {bler}, SR {sr} ms, {n} UEs: " + ", ".join(
        f"{'X' if fl['cc'] == cc else fl['cc']}@{'moving' if c is None else 'CQI %d' % c['cqi']}"
        for fl, c in zip(flows, chans))
    return doc


def _qdelay(rtt: dict, flow: int) -> dict[str, float]:
    r = rtt["rtt_ms"][rtt["flow"] == flow]
    if not r.size:
        return {"qmean": float("nan"), "q95": float("nan")}
    q = r - r.min()
    return {"qmean": float(q.mean()), "q95": float(np.percentile(q, 95))}


def run(job: tuple[str, str, str, int, float | None, tuple]) -> tuple[tuple, dict[str, Any]]:
    part, case, cc, seed, dur, given = job
    params = dict(given) if cc == "xrc2" else {}
    sets = [f"flows.0.cc_params.{k}={json.dumps(v) if isinstance(v, bool) else v}" for k, v in params.items()]
    if part == "fig1":
        sc = load(bundled.scenario(FIG1), overrides=[f"flows.0.cc={cc}", *LTE, *sets], seed=seed)
    elif part == "traces":
        ov = [f"flows.0.cc={cc}", f"trace.downlink={json.dumps(case)}", *sets]
        sc = load(bundled.scenario(TRACE_SCENARIO), overrides=ov, seed=seed)
        doc = json.loads(json.dumps(sc.resolved))
        if dur is None:
            last = 0
            with open(case) as fh:
                for line in fh:
                    if line.strip():
                        last = int(line)
            doc["duration_s"] = max(last / 1000.0, 1.0)
        else:
            doc["duration_s"] = dur
        sc = from_dict(doc, base=Path(bundled.scenario(TRACE_SCENARIO)).parent)
    elif part == "shared":
        name, other = case.split(":")
        sc = load(bundled.scenario(f"paper/{name}.toml"), overrides=[f"flows.0.cc={cc}", f"flows.1.cc={other}", *sets],
                  seed=seed)
    elif part == "random":
        sc = from_dict(_random_doc(cc, int(case), seed, params), base=Path(bundled.scenario(FIG1)).parent)
    else:
        sc = from_dict(_coexist_doc(cc, seed, params), base=Path(bundled.scenario(FIG1)).parent)
    sc.resolved["output"]["cwnd_trace"] = False
    r = simulate(sc)
    t = r["tables"]
    s = summarize(sc.resolved, t, events=r["events"], sim_time_s=r["sim_time_s"], wall_time_s=r["wall_time_s"])
    out: dict[str, Any] = {"goodput": [f["goodput_mbps"] for f in s["flows"]],
                           "rto": [f["timeouts"] for f in s["flows"]], "retx": [f["retransmits"] for f in s["flows"]]}
    out.update(_qdelay(t["rtt"], 0))
    ues = s.get("ues") or []
    out["util"] = [u.get("utilization") for u in ues]
    out["hol10"] = [u.get("frac_time_hol_below_budget") for u in ues]
    out["fair"] = [u.get("fair_share_ratio") for u in ues]
    out["description"] = sc.resolved.get("description", "")
    return job, out


def param_value(v: str) -> bool | int | float:
    """An ``--xrc2`` value: switches are true/false, whole numbers stay
    integers (counts are u32 and refuse a float), the rest are floats."""
    w = v.strip().lower()
    if w in ("true", "false"):
        return w == "true"
    return int(w) if w.lstrip("-").isdigit() else float(w)


def _power(v: dict, key: str) -> float:
    return v["goodput"][0] / max(v[key], 0.1)


def _mm(xs: list[float], f: str = "{:.3f}") -> str:
    a = np.asarray(xs, dtype=float)
    return f"{f.format(a.mean())} ({f.format(a.min())}–{f.format(a.max())})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--parts", nargs="+", default=["fig1", "traces", "coexist"],
                    choices=["fig1", "traces", "coexist", "random", "shared"])
    ap.add_argument("--traces", help="a directory of *.down traces besides the bundled ones")
    ap.add_argument("--trace-duration", type=float, help="seconds per trace run (default: the whole trace)")
    ap.add_argument("--schemes", nargs="+", default=["xrc", "xrc2"], help="the XRC variants compared")
    ap.add_argument("--random", type=int, default=8, help="random cells in the random part (default 8)")
    ap.add_argument("--random-seed", type=int, default=1, help="the random cells' seed (default 1)")
    ap.add_argument("--xrc2", nargs="*", default=[], metavar="KEY=VALUE",
                    help="xrc2 parameters ([flows.cc_params]) for the xrc2 runs, e.g. window_budgets=1")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", help="also write every run's numbers here")
    a = ap.parse_args(argv)
    try:
        given = tuple((k, param_value(v)) for k, v in (kv.split("=", 1) for kv in a.xrc2))
    except ValueError:
        ap.error(f"--xrc2 takes KEY=NUMBER or KEY=true/false, got {a.xrc2}")
    jobs: list[tuple] = []
    if "fig1" in a.parts:
        jobs += [("fig1", "fig1-lte", cc, s, None, given) for cc in [*a.schemes, "cubic"] for s in a.seeds]
    traces = trace_files(None) + (trace_files(a.traces) if a.traces else [])
    if "traces" in a.parts:
        jobs += [("traces", str(tr), cc, 1, a.trace_duration, given) for tr in traces for cc in [*a.schemes, "oracle"]]
    if "coexist" in a.parts:
        jobs += [("coexist", "cqi15-2ue", cc, s, None, given) for cc in [*a.schemes, "cubic"] for s in a.seeds]
    shared = ["fig3-coexistence:illinois", "fig3-coexistence:cubic", "fig5-pairs:cubic", "fig5-pairs:newreno"]
    if "shared" in a.parts:
        jobs += [("shared", c, cc, 1, None, given) for c in shared for cc in a.schemes]
    if "random" in a.parts:
        jobs += [("random", str(k), cc, a.random_seed, None, given) for k in range(a.random) for cc in a.schemes]
    # Longest first: the whole-trace runs.
    jobs.sort(key=lambda j: j[0] != "traces")
    with ProcessPoolExecutor(a.jobs) as ex:
        res = dict(ex.map(run, jobs))
    if a.json:
        Path(a.json).write_text(json.dumps([{"job": [*k[:5], dict(k[5])], **v} for k, v in res.items()], indent=1))

    if "fig1" in a.parts:
        print(f"### Fig. 1, default LTE timing, seeds {' '.join(map(str, a.seeds))} (mean (min–max))\n")
        print("| scheme | utilization | HoL ≤ 10 ms | goodput Mbit/s | queuing delay mean, ms | p95, ms |")
        print("|---|---|---|---|---|---|")
        for cc in [*a.schemes, "cubic"]:
            v = [res[("fig1", "fig1-lte", cc, s, None, given)] for s in a.seeds]
            print(f"| {cc} | {_mm([x['util'][0] for x in v])} | {_mm([x['hol10'][0] for x in v], '{:.2f}')} "
                  f"| {_mm([x['goodput'][0] for x in v], '{:.1f}')} | {_mm([x['qmean'] for x in v], '{:.1f}')} "
                  f"| {_mm([x['q95'] for x in v], '{:.1f}')} |")
        print()
    if "traces" in a.parts:
        dur = "whole trace" if a.trace_duration is None else f"{a.trace_duration:g} s"
        print(f"### Traces ({dur}, 10 ms base RTT, 150 KB buffer): goodput / oracle's; "
              "power (mean) / oracle's; power (p95) / oracle's\n")
        print("| trace | oracle Mbit/s, q mean / p95 ms | " + " | ".join(a.schemes) + " |")
        print("|---|---|" + "---|" * len(a.schemes))
        agg: dict[str, list[list[float]]] = {cc: [] for cc in a.schemes}
        for tr in traces:
            o = res[("traces", str(tr), "oracle", 1, a.trace_duration, given)]
            cells = []
            for cc in a.schemes:
                v = res[("traces", str(tr), cc, 1, a.trace_duration, given)]
                u = v["goodput"][0] / o["goodput"][0]
                pm, p9 = _power(v, "qmean") / _power(o, "qmean"), _power(v, "q95") / _power(o, "q95")
                agg[cc].append([u, pm, p9])
                cells.append(f"{u:.3f}; {pm:.3f}; {p9:.3f} ({v['goodput'][0]:.2f} Mbit/s, "
                             f"{v['qmean']:.1f} / {v['q95']:.1f} ms, HoL ≤ 10 ms {v['hol10'][0]:.2f}, "
                             f"{v['rto'][0]} RTOs)")
            print(f"| {tr.stem} | {o['goodput'][0]:.2f}, {o['qmean']:.2f} / {o['q95']:.2f} | "
                  + " | ".join(cells) + " |")
        print("| range over traces | | " + " | ".join(
            "{:.2f}–{:.2f}; {:.3f}–{:.3f}; {:.3f}–{:.3f}".format(*[f(np.array(agg[cc])[:, i]) for i in range(3)
                                                                   for f in (np.min, np.max)])
            for cc in a.schemes) + " |")
        print()
    if "coexist" in a.parts:
        print(f"### Two UEs at CQI 15, default LTE timing, UE 1 CUBIC, seeds {' '.join(map(str, a.seeds))}\n")
        print("| UE 0 scheme | UE 0 / UE 1 goodput | UE 0 Mbit/s | UE 1 (cubic) Mbit/s | UE 0 fair-share ratio "
              "| UE 0 HoL ≤ 10 ms | UE 0 utilization |")
        print("|---|---|---|---|---|---|---|")
        for cc in [*a.schemes, "cubic"]:
            v = [res[("coexist", "cqi15-2ue", cc, s, None, given)] for s in a.seeds]
            print(f"| {cc} | {_mm([x['goodput'][0] / x['goodput'][1] for x in v])} "
                  f"| {_mm([x['goodput'][0] for x in v], '{:.1f}')} | {_mm([x['goodput'][1] for x in v], '{:.1f}')} "
                  f"| {_mm([x['fair'][0] for x in v])} | {_mm([x['hol10'][0] for x in v], '{:.2f}')} "
                  f"| {_mm([x['util'][0] for x in v])} |")
        print()
    if "shared" in a.parts:
        print("### The paper's same-UE cases (ideal timing, one run): UE HoL ≤ 10 ms; goodput of the XRC flow / "
              "the other, Mbit/s\n")
        print("| case | " + " | ".join(a.schemes) + " |")
        print("|---|" + "---|" * len(a.schemes))
        for c in shared:
            vs = [res[("shared", c, cc, 1, None, given)] for cc in a.schemes]
            print(f"| {c.replace(':', ' + ')} | " + " | ".join(
                f"{v['hol10'][0]:.2f}; {v['goodput'][0]:.2f} / {v['goodput'][1]:.2f}" for v in vs) + " |")
        print()
    if "random" in a.parts:
        print(f"### {a.random} random cells (seed {a.random_seed}): UE 0's utilization; fair-share ratio; "
              "HoL ≤ 10 ms (X: the column's scheme)\n")
        print("| cell | " + " | ".join(a.schemes) + " |")
        print("|---|" + "---|" * len(a.schemes))
        agg = {cc: [] for cc in a.schemes}
        for k in range(a.random):
            vs = {cc: res[("random", str(k), cc, a.random_seed, None, given)] for cc in a.schemes}
            for cc, v in vs.items():
                agg[cc].append((v["util"][0], v["fair"][0], v["hol10"][0]))
            d = next(iter(vs.values()))["description"]
            print(f"| {k}: {d} | " + " | ".join(
                f"{v['util'][0]:.3f}; {v['fair'][0]:.3f}; {v['hol10'][0]:.2f}" for v in vs.values()) + " |")
        print("| mean (min) | " + " | ".join(
            "{:.3f} ({:.3f}); {:.3f} ({:.3f}); {:.2f} ({:.2f})".format(
                *[f(np.array(agg[cc], dtype=float)[:, i]) for i in range(3) for f in (np.mean, np.min)])
            for cc in a.schemes) + " |")
        print()
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
