#!/usr/bin/env python3
"""Golden digests of the simulator's outputs (tests/golden/).

Every case of ``tests/golden/cases.toml`` (each bundled scenario, shortened
where long, and variants that reach every access type and side channel) is
run through the core exactly as ``xrc run`` resolves and runs it, and the
core's outputs are reduced to one SHA-256: every table the core hands over
(name, then each column's name, dtype and little-endian bytes, in the
core's order; the rows are taken in parts as the run goes, as `xrc run`
streams them, and joined), the congestion-control mode names, the number of events and
the simulated end time. Per-table digests are kept too, so a mismatch says
which series moved.

    scripts/golden.py              check every case against tests/golden/digests.json
    scripts/golden.py CASE ...     check only these cases
    scripts/golden.py --update     rewrite digests.json (on purpose only: `make golden`)
    scripts/golden.py --list       list the cases

``tests/test_golden.py`` runs the check in ``make test``. Regenerate the
digests only when a change is meant to alter the simulator's outputs, and
say so in the commit message; a refactoring must leave them untouched.

The digests are of IEEE-754 bytes: they hold for one build of the core on
one machine type (the core uses no fast-math, but `ln`, `exp` and `powf`
come from the platform's libm).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
CASES = GOLDEN / "cases.toml"
DIGESTS = GOLDEN / "digests.json"
# Rows after which a case's run stops to hand over what it recorded (small,
# so that most cases are taken in several parts).
DRAIN_ROWS = 20_000


def load_cases() -> list[dict[str, Any]]:
    doc = tomllib.loads(CASES.read_text())
    cases = doc.get("case", [])
    names = [c["name"] for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit(f"{CASES}: duplicate case names {sorted(dup)}")
    return cases


def digest_outputs(raw: dict[str, Any]) -> dict[str, Any]:
    """Reduces the core's ``Simulation.finish()`` result to digests."""
    whole = hashlib.sha256()
    tables: dict[str, dict[str, Any]] = {}
    for name, cols in raw["tables"].items():
        h = hashlib.sha256()
        rows = None
        for col, (dtype, data) in cols.items():
            h.update(f"{col}:{dtype}:{len(data)}:".encode())
            h.update(data)
            width = int(dtype[2:])
            rows = len(data) // width
        tables[name] = {"rows": rows or 0, "sha256": h.hexdigest()}
        whole.update(f"table {name}:".encode())
        whole.update(h.digest())
    modes = list(raw["mode_names"])
    tail = json.dumps({"mode_names": modes, "events": int(raw["events"]),
                       "sim_time_s": repr(float(raw["sim_time_s"]))}, sort_keys=True)
    whole.update(tail.encode())
    return {"sha256": whole.hexdigest(), "events": int(raw["events"]), "mode_names": modes, "tables": tables}


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """Resolves and runs one case as `xrc run` does; returns its digests."""
    sys.path.insert(0, str(ROOT / "python"))
    from xrc import _core
    from xrc.scenario import load, read_input

    # `{root}` in an override is the repository root (the bundled scenarios
    # live in the package, so a path relative to them would not reach tests/).
    overrides = [o.replace("{root}", str(ROOT)) for o in case.get("set", [])]
    sc = load(ROOT / case["scenario"], overrides=overrides)
    trace = sc.resolved.get("trace") or {}
    texts = [read_input(f"trace.{k}", trace[k], trace[k]) if trace.get(k) else None for k in ("downlink", "uplink")]
    sim = _core.Simulation(sc.resolved_json(), *texts)
    t0 = time.perf_counter()
    # The rows are taken as the run goes, as `xrc run` streams them (every
    # DRAIN_ROWS rows), and joined again: the digest is of the tables'
    # contents, so it holds only if the takes add up to the whole.
    batches = []
    while not sim.run_until(sim.end_s, max_rows=DRAIN_ROWS):
        batches.append(sim.drain()["tables"])
    wall = time.perf_counter() - t0
    # Conservation of every queue and scoreboard at the end, for free.
    sim.check_invariants()
    raw = sim.finish()
    raw["tables"] = join_batches(batches + [raw["tables"]])
    out = digest_outputs(raw)
    out["drains"] = len(batches)
    out["wall_s"] = wall
    return out


def join_batches(batches: list[dict[str, dict[str, tuple[str, bytes]]]]) -> dict[str, dict[str, tuple[str, bytes]]]:
    """Concatenates drained tables column by column (in the core's order)."""
    parts: dict[str, dict[str, tuple[str, list[bytes]]]] = {}
    for b in batches:
        for name, cols in b.items():
            t = parts.setdefault(name, {})
            for col, (dtype, data) in cols.items():
                t.setdefault(col, (dtype, []))[1].append(data)
    return {name: {col: (dtype, b"".join(chunks)) for col, (dtype, chunks) in cols.items()}
            for name, cols in parts.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", help="case names (default: all)")
    ap.add_argument("--update", action="store_true", help="rewrite tests/golden/digests.json")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--jobs", type=int, default=2, help="parallel runs (default 2)")
    args = ap.parse_args(argv)
    cases = load_cases()
    if args.list:
        for c in cases:
            print(f"{c['name']:32s} {c['scenario']} {' '.join(c.get('set', []))}")
        return 0
    known = {c["name"] for c in cases}
    unknown = [n for n in args.cases if n not in known]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; see --list", file=sys.stderr)
        return 2
    if args.cases:
        cases = [c for c in cases if c["name"] in args.cases]
    if args.update and args.cases:
        print("--update rewrites every case; give no case names", file=sys.stderr)
        return 2
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        results = dict(zip([c["name"] for c in cases], ex.map(run_case, cases)))
    if args.update:
        stored = {n: {k: v for k, v in r.items() if k not in ("wall_s", "drains")} for n, r in results.items()}
        DIGESTS.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        total = sum(r["wall_s"] for r in results.values())
        print(f"wrote {DIGESTS.relative_to(ROOT)}: {len(results)} cases, {total:.1f} s of core time")
        return 0
    stored = json.loads(DIGESTS.read_text()) if DIGESTS.is_file() else {}
    bad = 0
    for name, r in results.items():
        want = stored.get(name)
        if want is None:
            print(f"MISSING {name}: no stored digest (run `make golden` if the case is new)")
            bad += 1
        elif want["sha256"] != r["sha256"]:
            moved = [t for t, d in r["tables"].items() if want["tables"].get(t) != d]
            print(f"DIFFERS {name}: events {want['events']} -> {r['events']}; tables that moved: "
                  f"{', '.join(moved) or '(none: mode names, events or end time)'}")
            bad += 1
        else:
            print(f"ok      {name} ({r['events']} events, {r['drains']} drains, {r['wall_s']:.2f} s)")
    print(f"{len(results) - bad}/{len(results)} cases match")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
