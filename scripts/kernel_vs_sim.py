#!/usr/bin/env python3
"""Real kernel senders through the emulated cell (or trace link) against the
simulator on the same scenario: the tables of docs/kernel.md.

    sudo .venv/bin/python scripts/kernel_vs_sim.py --out runs/kernel-vs-sim [--cases fig1-xrc,cell4-xrc] [--duration 60]

Each case is run twice: ``xrc emulate`` (real Linux TCP, the kernel's own
congestion control or xrc's BPF one, through the emulated base station
writing XRC's feedback) and ``xrc run`` (the simulator). Printed per flow:
goodput; per UE: HoL delay p90, utilization and the share of time the HoL
delay is within the budget (the paper's Fig. 1 claims: at least 0.8, and
utilization at least 0.9). Writes ``results.json`` and ``table.md``.
"""

from __future__ import annotations

import argparse
import copy
import fnmatch
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIG1 = ROOT / "scenarios" / "paper" / "fig1-time-varying.toml"
TRACE = ROOT / "scenarios" / "traces" / "synthetic-xrc.toml"
SLICES = ROOT / "data" / "linux-reference" / "trace-slices"


def fig1(cc: str) -> dict:
    s = tomllib.loads(FIG1.read_text())
    s["flows"][0]["cc"] = cc
    return s


def cell4(cc: str) -> dict:
    """Fig. 1's cell with four UEs, each on its own random-jump channel, one
    bulk flow each."""
    s = tomllib.loads(FIG1.read_text())
    s["name"] = "cell-4ue"
    s["description"] = "Fig. 1's cell with 4 UEs, one bulk flow each"
    s["ues"] = [copy.deepcopy(s["ues"][0]) for _ in range(4)]
    s["flows"] = [{"id": f"bulk{k}", "ue": k, "cc": cc, "start_s": 0.0} for k in range(4)]
    return s


def trace(cc: str, slice_name: str | None = None) -> dict:
    """The bundled trace scenario (10 ms base RTT, 150 KB buffer, the agent
    at the trace's queue), on its synthetic trace or on the first 65 s of
    a public Mahimahi trace shipped with the Linux reference (downlink and
    uplink); the trace files are written beside the case's scenario."""
    s = tomllib.loads(TRACE.read_text())
    s["flows"][0]["cc"] = cc
    if slice_name is None:
        s["trace"]["downlink"] = str(TRACE.with_name(s["trace"]["downlink"]))
    else:
        s["name"] = f"trace-{slice_name}"
        s["trace"]["downlink"] = f"{slice_name}.down"
        s["trace"]["uplink"] = f"{slice_name}.up"
    return s


def write_traces(sc: dict, d: Path) -> None:
    """Decompresses the slices a scenario of :func:`trace` names into `d`."""
    import gzip

    t = sc.get("trace") or {}
    for k in ("downlink", "uplink"):
        name = t.get(k)
        if name and not Path(name).is_absolute():
            (d / name).write_bytes(gzip.decompress((SLICES / f"{name}.gz").read_bytes()))


#: Every scheme of `xrc list` that can run on real sockets, on Fig. 1's
#: cell: the kernel's own module (cubic, newreno as Linux reno, bbr), xrc's
#: BPF sender (xrc), or the shim (the rest); and the same scheme through the
#: shim where it also runs natively, to measure what the shim changes.
SCHEMES = ["xrc", "cubic", "newreno", "bbr", "illinois", "veno", "vegas", "copa", "bbr3", "roccet", "xrc2", "abc",
           "pbe", "natcp", "nacubic"]
CASES: dict = {f"fig1-{c}": (lambda c=c: fig1(c), ()) for c in SCHEMES}
CASES.update({f"fig1-{c}-shim": (lambda c=c: fig1(c), (c,)) for c in ("xrc", "cubic", "newreno", "bbr")})
CASES["cell4-xrc"] = (lambda: cell4("xrc"), ())
CASES["trace-synthetic-xrc"] = (lambda: trace("xrc"), ())
CASES["trace-verizon-xrc"] = (lambda: trace("xrc", "Verizon-LTE-short"), ())
CASES["trace-tmobile-xrc"] = (lambda: trace("xrc", "TMobile-LTE-short"), ())


def toml_text(d: dict) -> str:
    sys.path.insert(0, str(ROOT / "python"))
    from xrc.tomlw import dumps

    return dumps(d)


def measure(run: Path) -> dict:
    s = json.loads((run / "summary.json").read_text())
    return {
        "flows": {f["id"]: round(f["goodput_mbps"], 3) for f in s["flows"]},
        "ues": {str(u["id"]): {"hol_p90_ms": u["hol_delay_ms"]["p90"], "utilization": u["utilization"],
                               "hol_within_budget": u["frac_time_hol_below_budget"]} for u in s["ues"]},
        "kernel_cc": (s.get("environment") or {}).get("kernel_cc"),
        "linux_cc": [f.get("linux_cc") for f in s["flows"]],
        "shim": {k: v for k, v in ((s.get("environment") or {}).get("shim") or {}).items()
                 if k in ("counters", "decision_lag", "events", "decisions", "net_assist_reports")} or None,
    }


def run_case(name: str, out: Path, duration: float | None) -> dict:
    build, shim = CASES[name]
    sc = build()
    if duration is not None:
        sc["duration_s"] = duration
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    path = d / "scenario.toml"
    path.write_text(toml_text(sc))
    write_traces(sc, d)
    xrc = [sys.executable, "-m", "xrc.cli"]
    via = ["--shim", ",".join(shim)] if shim else []
    subprocess.run([*xrc, "emulate", str(path), "--out", str(d / "emulated"), "--force", "--quiet", *via],
                   check=True)
    subprocess.run([*xrc, "run", str(path), "--out", str(d / "simulated"), "--force", "--quiet", "--no-plots"],
                   check=True)
    return {"emulated": measure(d / "emulated"), "simulated": measure(d / "simulated")}


def rel(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else (a - b) / b


def table(results: dict) -> str:
    rows = ["| case | kernel congestion control | flow / UE | goodput emulated / simulated, Mbit/s (diff) | HoL p90 "
            "emulated / simulated, ms (diff) | utilization emulated | HoL within budget emulated | shim decision lag "
            "p50 / p99, us | verdict |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        e, s = r["emulated"], r["simulated"]
        lag = (e.get("shim") or {}).get("decision_lag") or {}
        lag_s = f"{lag['p50_us']:.0f} / {lag['p99_us']:.0f}" if lag.get("p50_us") is not None else "-"
        kcc = ", ".join(sorted(set(x for x in e.get("linux_cc") or [] if x)))
        for (fid, g), (uid, u) in zip(e["flows"].items(), e["ues"].items()):
            gs, us = s["flows"][fid], s["ues"][uid]
            dg, dh = rel(g, gs), rel(u["hol_p90_ms"], us["hol_p90_ms"])
            ok = dg is not None and abs(dg) <= 0.10 and dh is not None and abs(dh) <= 0.25
            rows.append(f"| {name} | {kcc} | {fid} / UE {uid} | {g:.2f} / {gs:.2f} ({dg:+.1%}) | "
                        f"{u['hol_p90_ms']:.1f} / {us['hol_p90_ms']:.1f} ({dh:+.1%}) | {u['utilization']:.3f} | "
                        f"{u['hol_within_budget']:.3f} | {lag_s} | {'within' if ok else 'OUTSIDE'} 10 % / 25 % |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default="*", help="comma-separated patterns of " + ", ".join(CASES))
    ap.add_argument("--duration", type=float, default=None, help="seconds (default: the scenario's, 60)")
    a = ap.parse_args()
    names = [n for n in CASES if any(fnmatch.fnmatch(n, p) for p in a.cases.split(","))]
    if not names:
        print(f"--cases {a.cases!r} matches none of {', '.join(CASES)}", file=sys.stderr)
        return 2
    out = Path(a.out)
    results = {n: run_case(n, out, a.duration) for n in names}
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    t = table(results)
    (out / "table.md").write_text(t + "\n")
    print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
