"""The XRC paper's experiments (§II and §IV) and a NATCP-style trace study,
as lists of runs, and what each run keeps for the report.

Every run is a bundled scenario (``xrc/scenarios/paper/``, found through
:mod:`xrc.bundled`) plus overrides and a seed (Fig. 7 also adds its short
flows); the trace study runs the bundled trace scenario on every downlink
trace of a directory (by default the bundled traces). A run returns a compact dict (the
summary, throughput bins, decimated delay samples, completion times), so
hundreds of runs fit in memory and travel cheaply between processes.
"""

from __future__ import annotations

import json
import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import bundled
from ..results import summarize
from ..runner import simulate
from ..scenario import Scenario, from_dict, load
from .metrics import decimate, pct

#: The trace study's scenario (its `trace.downlink` is replaced per trace).
TRACE_SCENARIO = "traces/synthetic-xrc.toml"

FIG1_SCHEMES = ["xrc", "cubic", "newreno", "illinois", "veno"]
FIG4_SCHEMES = ["xrc", "cubic", "newreno", "illinois"]
FIG5_FIRST = ["xrc", "cubic"]
FIG5_SECOND = ["cubic", "newreno", "illinois", "veno"]
FIG6_SCHEMES = ["xrc", "cubic", "newreno", "illinois", "veno"]
FIG7_SCHEMES = ["xrc", "cubic", "newreno", "illinois", "veno"]


@dataclass(frozen=True)
class Point:
    """One run: experiment, variant label, scenario, overrides, seed."""

    exp: str
    label: str
    scenario: str
    overrides: tuple[str, ...]
    seed: int
    # Extra construction (Fig. 7's short flows): name and parameters.
    gen: tuple[tuple[str, Any], ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {"exp": self.exp, "label": self.label, "scenario": self.scenario, "overrides": list(self.overrides),
                "seed": self.seed, "gen": dict(self.gen)}


def _s(p: str) -> str:
    return str(bundled.scenario(f"paper/{p}"))


def trace_files(directory: str | Path | None = None) -> list[Path]:
    """The downlink traces (``*.down``) of the trace study: those in
    `directory`, or the bundled ones. Raises ``ScenarioError`` for a
    directory without any."""
    from ..scenario import ScenarioError

    if directory is None:
        return sorted(bundled.traces_dir().glob("*.down"))
    d = Path(directory)
    if not d.is_dir():
        raise ScenarioError(f"--traces {str(directory)!r}: not a directory")
    found = sorted(p.resolve() for p in d.glob("*.down") if p.is_file())
    if not found:
        raise ScenarioError(f"--traces {str(directory)!r}: no downlink traces (*.down) in it")
    return found


def points(quick: bool, seeds: list[int], schemes: list[str], traces: list[Path] | None = None) -> list[Point]:
    """Every run of `xrc reproduce` (`traces`: the trace study's downlink
    traces, by default the bundled ones)."""
    pts: list[Point] = []

    def add(exp, label, scenario, overrides, gen=()):
        for seed in seeds:
            pts.append(Point(exp, label, scenario, tuple(overrides), seed, tuple(gen)))

    q = (lambda full, short: short if quick else full)
    # Fig. 1: one flow on a time-varying channel, and the physical-limit
    # oracle (the service of a shadow of the cell whose UE is never short of
    # data, `ran::shadow`) as the reference.
    for cc in FIG1_SCHEMES + ["oracle"]:
        add("fig1", cc, _s("fig1-time-varying.toml"), [f"flows.0.cc={cc}", f"duration_s={q(60, 30)}"])
    # Fig. 3: XRC joined by Illinois or CUBIC starting in congestion avoidance.
    for cc in ["illinois", "cubic"]:
        add("fig3", f"xrc+{cc}", _s("fig3-coexistence.toml"), [f"flows.1.cc={cc}", f"duration_s={q(30, 15)}"])
    # Fig. 4: four flows of one scheme, different (or equal) RTTs.
    gap = q(10, 5)
    timing = []
    for k in range(4):
        timing += [f"flows.{k}.start_s={k * gap}", f"flows.{k}.stop_s={q(70, 35) + k * gap}"]
    for cc in FIG4_SCHEMES:
        ccs = [f"flows.{k}.cc={cc}" for k in range(4)]
        base = ccs + timing + [f"duration_s={q(100, 50)}"]
        add("fig4", cc, _s("fig4-rtt-fairness.toml"), base)
        add("fig4", f"{cc}-same-rtt", _s("fig4-rtt-fairness.toml"), base + [f"flows.{k}.extra_rtt_ms=0" for k in range(4)])
    # Fig. 5: capacity-seeking pairs.
    pairs = [(a, b) for a in FIG5_FIRST for b in FIG5_SECOND]
    for a, b in pairs:
        add("fig5", f"{a}+{b}", _s("fig5-pairs.toml"), [f"flows.0.cc={a}", f"flows.1.cc={b}", f"duration_s={q(30, 15)}"])
    # Fig. 6: a download against a CUBIC video flow.
    for cc in FIG6_SCHEMES:
        add("fig6", cc, _s("fig6-video.toml"), [f"flows.0.cc={cc}", f"duration_s={q(60, 30)}"])
    # Fig. 7: a bulk flow against 50 short NewReno flows (and XRC shorts).
    n_short = q(50, 10)
    for cc in FIG7_SCHEMES:
        add("fig7", cc, _s("fig7-short-flows.toml"), [f"flows.0.cc={cc}", f"duration_s={5 * n_short + 5}"],
            gen=(("short_flows", n_short), ("short_cc", "newreno")))
    add("fig7", "xrc/xrc-short", _s("fig7-short-flows.toml"), ["flows.0.cc=xrc", f"duration_s={5 * n_short + 5}"],
        gen=(("short_flows", n_short), ("short_cc", "xrc")))
    # Trace study: every scheme alone on every trace. Trace links have no
    # randomness, so one seed suffices.
    for tr in trace_files() if traces is None else traces:
        for cc in schemes:
            pts.append(Point("traces", f"{tr.stem}/{cc}", str(bundled.scenario(TRACE_SCENARIO)),
                             (f"flows.0.cc={cc}", f"trace.downlink={json.dumps(str(tr))}",
                              *( ["duration_s=30"] if quick else [] )), seeds[0],
                             (("full_trace", not quick),)))
    return pts


def variant_point(p: dict[str, Any], cc: str) -> dict[str, Any] | None:
    """The point `p` (a dict of :class:`Point`) with its XRC flows running
    scheme `cc` instead (tagged ``variant``), or ``None`` when `p` is not an
    XRC arm of a paper experiment: the baselines and the trace study (which
    runs every scheme anyway) are the same for every variant. An XRC arm is
    a point whose label starts with ``xrc``; its flows set to ``xrc`` by an
    override, Fig. 3's first flow (XRC in the scenario itself) and Fig. 7's
    XRC short flows run `cc`."""
    if p["exp"] == "traces" or not p["label"].startswith("xrc"):
        return None
    d = json.loads(json.dumps(p))
    d["overrides"] = [o[:-len("xrc")] + cc if o.endswith(".cc=xrc") else o for o in d["overrides"]]
    if d["exp"] == "fig3":
        d["overrides"].append(f"flows.0.cc={cc}")
    if (d.get("gen") or {}).get("short_cc") == "xrc":
        d["gen"]["short_cc"] = cc
    d["variant"] = cc
    return d


def _build(p: dict[str, Any]) -> Scenario:
    gen = p.get("gen") or {}
    sc = load(p["scenario"], overrides=p["overrides"], seed=p["seed"])
    doc = json.loads(json.dumps(sc.resolved))
    if p["exp"] != "traces":
        # The paper's §IV scenarios have no randomness of their own (a static
        # UE, no HARQ failures, grants every TTI), so seeds would repeat one
        # run. Each flow starts up to 50 ms late, drawn from the seed, as
        # ns-3 experiments usually jitter their applications' start times.
        jitter = random.Random(7_919 * p["seed"] + 13)
        for f in doc["flows"]:
            f["start_s"] = round(f["start_s"] + jitter.uniform(0.0, 0.05), 6)
            if f.get("stop_s") is not None and f["stop_s"] < f["start_s"]:
                f["stop_s"] = f["start_s"]
    if gen.get("full_trace"):
        # The whole trace, as in the NATCP study (one period of it).
        with open(doc["trace"]["downlink"]) as f:
            last = 0
            for line in f:
                s = line.strip()
                if s:
                    last = int(s)
        doc["duration_s"] = max(last / 1000.0, 1.0)
    n = int(gen.get("short_flows") or 0)
    if n:
        # Fig. 7's short flows: one every 5 s from 5 s, sizes uniform in
        # [10 KB, 2 MB] drawn from the run's seed.
        rng = random.Random(1_000_003 * p["seed"] + 7)
        base = doc["flows"][0]
        for i in range(n):
            size = rng.randint(10_000, 2_000_000)
            doc["flows"].append({
                "id": f"short{i}", "ue": base["ue"], "cc": gen.get("short_cc", "newreno"),
                "start_s": 5.0 * (i + 1), "traffic": {"kind": "transfer", "size_bytes": size},
            })
        for f in doc["flows"][1:]:
            f.pop("cc_params", None)
        for i, f in enumerate(doc["flows"][1:]):
            f["start_s"] = round(f["start_s"] + random.Random(31 * p["seed"] + i).uniform(0.0, 0.05), 6)
    return from_dict(doc, base=Path(p["scenario"]).parent)


def run_point(p: dict[str, Any]) -> dict[str, Any]:
    """Runs one point and keeps what the report needs."""
    sc = _build(p)
    # Thinner outputs: RLC state every 5 TTIs is plenty for CDFs.
    sc.resolved["output"]["rlc_sample_ttis"] = 5
    sc.resolved["output"]["cwnd_trace"] = False
    r = simulate(sc)
    t = r["tables"]
    s = summarize(sc.resolved, t, events=r["events"], sim_time_s=r["sim_time_s"], wall_time_s=r["wall_time_s"])
    fs = t["flows"]
    flows = []
    qdelay = {}
    rtt = t["rtt"]
    for k, fc in enumerate(sc.resolved["flows"]):
        sel = rtt["flow"] == k
        samples = rtt["rtt_ms"][sel]
        if samples.size:
            q = samples - samples.min()
            qdelay[k] = {"p50": pct(q, 50), "p95": pct(q, 95), "mean": float(q.mean()),
                         "frac_below_10": float(np.mean(q <= 10.0)), "samples": decimate(q, 2000).tolist()}
        flows.append({
            "id": fc["id"], "cc": fc["cc"], "start_s": float(fs["start_s"][k]), "end_s": float(fs["end_s"][k]),
            "fct_s": None if np.isnan(fs["fct_s"][k]) else float(fs["fct_s"][k]),
            "bytes": int(fs["bytes_delivered"][k]), "size": fc["traffic"].get("size_bytes"),
        })
    rlc = t["rlc"]
    act = rlc["active"] == 1
    hol = rlc["hol_ms"][act]
    tp = t["flow_throughput"]
    ur = t["ue_rate"]
    ch = t["chunks"]
    return {
        "point": p,
        "summary": s,
        "flows": flows,
        "qdelay": qdelay,
        "hol": {"samples": decimate(hol, 3000).tolist(), "p50": pct(hol, 50), "p90": pct(hol, 90),
                "p95": pct(hol, 95), "frac_below_10": float(np.mean(hol <= 10.0)) if hol.size else None},
        "tp": {k: tp[k].tolist() for k in ("t", "flow", "bytes", "goodput_mbps")},
        "cap": {k: ur[k][ur["ue"] == 0].tolist() for k in ("t", "available_mbps", "delivered_mbps")},
        "chunks": [float(x) for x, f in zip(ch["delivery_time_s"], ch["flow"])],
        "events": r["events"],
        "wall_s": r["wall_time_s"],
        "sim_s": r["sim_time_s"],
    }
