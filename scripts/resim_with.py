"""The stored real runs of ``xrc validate-linux`` against the simulator with
some scenario fields changed: a what-if beside ``--resim``, which runs the
cases exactly as the harness builds them.

Usage::

    .venv/bin/python scripts/resim_with.py RESULTS_DIR --set flows.0.receiver.ack_on_read=true \\
        [--set KEY=JSON ...] [--cases PATTERNS] [--seeds N] [--json OUT]

``RESULTS_DIR`` holds a ``results.json`` (e.g. ``data/linux-reference``);
each ``--set`` is a dotted path into the case's scenario (as
``linuxref.sim_scenario`` writes it) and a JSON value (a bare word is a
string). Prints, per case, Linux's mean, the simulated side as stored, and
the simulated side with the changes, with both deltas. Nothing is written
unless ``--json``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import tempfile
from pathlib import Path

from xrc.emulation import linuxref as L


def parse_set(text: str):
    key, sep, val = text.partition("=")
    if not sep or not key:
        raise ValueError(f"--set {text!r}: expected KEY=VALUE")
    try:
        v = json.loads(val)
    except ValueError:
        v = val
    return key.split("."), v


def put(doc, path, v):
    cur = doc
    for p in path[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur.setdefault(p, {})
    if isinstance(cur, list):
        cur[int(path[-1])] = v
    else:
        cur[path[-1]] = v


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=JSON")
    ap.add_argument("--cases", default=None)
    ap.add_argument("--seeds", type=int, default=L.SIM_SEEDS)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    try:
        sets = [parse_set(s) for s in a.sets]
        doc = L.load_results(a.results / "results.json", "RESULTS_DIR")
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    if a.seeds < 1:
        print(f"--seeds: at least 1, got {a.seeds}", file=sys.stderr)
        return 2
    pats = [p.strip() for p in (a.cases or "*").split(",") if p.strip()]
    orig = L.sim_scenario

    def patched(*args, **kw):
        d = orig(*args, **kw)
        for path, v in sets:
            put(d, path, v)
        return d

    L.sim_scenario = patched
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for entry in doc["cases"]:
            if not any(fnmatch.fnmatchcase(entry["id"], p) for p in pats):
                continue
            case = L.Case(**entry["case"])
            fresh = json.loads(json.dumps(entry))
            L.simulate_case(fresh, case, doc["settings"]["duration_s"], L.trace_files(case, Path(tmp)),
                            seeds=a.seeds)
            row = {"id": entry["id"]}
            print(entry["id"])
            for k in ("goodput_mbps", "rtt_mean_ms", "rtt_p95_ms", "retransmits", "cwnd_mean_pkts", "rtt_samples",
                      "ss_exit_cwnd_pkts"):
                lin = ((entry.get("linux") or {}).get(k) or {}).get("mean")
                old = entry["xrc"]["metrics"].get(k)
                new = fresh["xrc"]["metrics"].get(k)
                if old is None and new is None:
                    continue  # no slow-start exit (BBR)
                d_old, d_new = L.delta(old, lin), L.delta(new, lin)
                row[k] = {"linux": lin, "stored": old, "with": new, "delta_stored": d_old, "delta_with": d_new}
                fmt = lambda d: "   –  " if d is None else f"{d * 100:+6.1f}%"  # noqa: E731
                num = lambda x: float("nan") if x is None else x  # noqa: E731
                print(f"  {k:17s} Linux {num(lin):9.2f}  stored {num(old):9.2f} "
                      f"({fmt(d_old)})  with {num(new):9.2f} ({fmt(d_new)})")
            out.append(row)
    L.sim_scenario = orig
    if a.json:
        a.json.write_text(json.dumps({"sets": a.sets, "seeds": a.seeds, "cases": out}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
