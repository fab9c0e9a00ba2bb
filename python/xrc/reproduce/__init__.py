"""``xrc reproduce``: every experiment of the XRC paper (and a NATCP-style
trace study) into one directory with a report, figures and the paper's
claims checked against our numbers.

    xrc reproduce [--quick] [--seeds N] [--traces DIR] --out DIR [--jobs N] [--engine local|dask]

Writes ``DIR/report.md``, a self-contained ``DIR/report.html``,
``DIR/claims.json`` (``[{id, claim, paper, ours, ci95, holds}]``),
``DIR/figures/*.png``, ``DIR/results.parquet`` (one row per run and flow)
and ``DIR/metadata.json``: versions, the git commit (when xrc runs from a
checkout), and every input file (the bundled scenarios, the traces) with
its SHA-256.

The paper's experiments run twice for their XRC arms: with ``xrc`` (the
paper's algorithm, faithful) and with the improved variant (``xrc2`` unless
``--variant`` names another scheme, or ``none``); the baselines run once. The
claims table shows both; ``claims.json`` has the variant's numbers under its
name in every claim.

The trace study runs on the bundled traces unless ``--traces DIR`` names a
directory of Mahimahi downlink traces (``*.down``), such as the public
traces the study in docs/reproduction.md used.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .. import __version__, _core, progress as _progress
from ..outdir import OutputError, check, commit, staged
from .experiments import points, run_point, trace_files, variant_point

#: The improved XRC whose claims the report shows beside the paper's `xrc`.
DEFAULT_VARIANTS = ("xrc2",)


def _run_all(pts: list[dict[str, Any]], jobs: int, engine: str, address: str | None,
             progress: bool) -> list[dict[str, Any]]:
    bar = _progress.bar(progress, total=len(pts), unit="run", delay=1.0)
    results: list[dict[str, Any]] = []
    if engine == "dask":
        from dask.distributed import Client, LocalCluster, as_completed as dask_completed

        cluster = None
        if address is None:
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client(address)
        futs = []
        try:
            futs = [client.submit(run_point, p, pure=False) for p in pts]
            for f in dask_completed(futs):
                results.append(f.result())
                if bar is not None:
                    bar.update(1)
        except BaseException:
            client.cancel(futs)
            raise
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    elif jobs <= 1:
        for p in pts:
            results.append(run_point(p))
            if bar is not None:
                bar.update(1)
    else:
        # Longest runs first keeps both cores busy to the end.
        from ..parallel import run_parallel

        order = sorted(pts, key=lambda p: -_cost(p))

        def got(r: dict[str, Any]) -> None:
            results.append(r)
            if bar is not None:
                bar.update(1)

        run_parallel(run_point, order, jobs, got)
    if bar is not None:
        bar.close()
    # A deterministic order whatever finished first.
    results.sort(key=lambda r: (r["point"]["exp"], r["point"]["label"], r["point"]["seed"]))
    return results


def _cost(p: dict[str, Any]) -> float:
    for o in p["overrides"]:
        if o.startswith("duration_s="):
            return float(o.split("=", 1)[1])
    return 1000.0 if p["exp"] == "traces" else 60.0


def _results_table(results: list[dict[str, Any]]) -> pa.Table:
    rows = []
    for r in results:
        p = r["point"]
        s = r["summary"]
        u = s["ues"][0] if s["ues"] else None
        for f, fx in zip(s["flows"], r["flows"]):
            rows.append({
                "exp": p["exp"], "label": p["label"], "variant": p.get("variant") or "", "seed": p["seed"],
                "flow": f["id"], "cc": f["cc"],
                "goodput_mbps": f["goodput_mbps"], "rtt_p50_ms": f["rtt_ms"]["p50"], "rtt_p95_ms": f["rtt_ms"]["p95"],
                "retransmits": f["retransmits"], "fct_s": fx["fct_s"],
                "utilization": u["utilization"] if u else None,
                "hol_p50_ms": u["hol_delay_ms"]["p50"] if u else None,
                "hol_p90_ms": u["hol_delay_ms"]["p90"] if u else None,
                "frac_hol_below_budget": u["frac_time_hol_below_budget"] if u else None,
                "jain_index": s["jain_index"], "events": r["events"],
            })
    cols = list(rows[0]) if rows else []
    return pa.table({c: [row[c] for row in rows] for c in cols})


def _inputs(pts: list[dict[str, Any]], traces: list[Path]) -> dict[str, Any]:
    """Every file the runs read, with its SHA-256."""
    from ..runner import sha256_file

    files = sorted({p["scenario"] for p in pts} | {str(t) for t in traces})
    return {f: {"sha256": sha256_file(f), "bytes": os.path.getsize(f)} for f in files}


def studied_schemes() -> list[str]:
    """The schemes the studies run: every one the core knows but those that
    need a caller stepping the simulator (``xrc.schemes.DRIVEN``)."""
    from ..schemes import DRIVEN

    return [s for s in _core.schemes() if s not in DRIVEN]


def plan(*, quick: bool = False, seeds: int = 5, traces: str | Path | None = None,
         variants: tuple[str, ...] = DEFAULT_VARIANTS) -> dict[str, Any]:
    """What `reproduce` would run: the points (the XRC arms once more per
    variant, tagged ``variant``) and the trace study's traces
    (``{"points", "traces", "traces_source"}``)."""
    seed_list = list(range(1, (1 if quick else seeds) + 1))
    trace_list = trace_files(traces)
    pts = [p.as_dict() for p in points(quick, seed_list, studied_schemes(), trace_list)]
    for v in variants:
        pts += [d for d in (variant_point(p, v) for p in pts if "variant" not in p) if d is not None]
    source = "bundled" if traces is None else str(Path(traces).resolve())
    return {"points": pts, "traces": trace_list, "traces_source": source, "seeds": seed_list}


def reproduce(out: str | Path, *, quick: bool = False, seeds: int = 5, jobs: int | None = None,
              engine: str = "local", address: str | None = None, force: bool = False,
              progress: bool = True, traces: str | Path | None = None,
              variants: tuple[str, ...] = DEFAULT_VARIANTS) -> dict[str, Any]:
    """Runs everything and writes the report. Returns the claims and the
    metadata. `traces`: a directory of downlink traces for the trace study
    (default: the bundled ones). `variants`: schemes whose claims are shown
    beside `xrc`'s, each run in the XRC arms of the paper's experiments."""
    import tempfile
    from ..runner import git_commit
    from .report import write_report

    out = Path(out)
    if engine == "dask":
        from ..parallel import require_dask

        require_dask(address)
    # Checked before the runs (an hour of them) and again when writing.
    check(out, force, what="report directory")
    jobs = jobs or os.cpu_count() or 1
    schemes = studied_schemes()
    for v in variants:
        if v not in schemes or v == "xrc":
            raise ValueError(f"--variant: {v!r} is not a scheme other than xrc (one of: "
                              f"{', '.join(c for c in schemes if c != 'xrc')}, or none)")
    pl = plan(quick=quick, seeds=seeds, traces=traces, variants=variants)
    pts, seed_list = pl["points"], pl["seeds"]
    inputs = _inputs(pts, pl["traces"])
    t0 = time.perf_counter()
    results = _run_all(pts, jobs, engine, address, progress)
    wall = time.perf_counter() - t0
    with staged(out, force, what="report directory") as staging:
        try:
            (staging / "figures").mkdir()
            pq.write_table(_results_table(results), staging / "results.parquet", compression="zstd")
            meta = {"xrc_output": "report", "quick": quick, "seeds": seed_list, "runs": len(results),
                    "wall_time_s": wall, "jobs": jobs, "engine": engine, "schemes": schemes, "xrc_version": __version__,
                    "core_version": _core.version(), "git_commit": git_commit(),
                    "sim_seconds": sum(r["sim_s"] for r in results), "events": sum(r["events"] for r in results),
                    "traces": {"source": pl["traces_source"], "files": [str(t) for t in pl["traces"]]},
                    "inputs": inputs}
            base = [r for r in results if "variant" not in r["point"]]
            meta["variants"] = list(variants)
            by_variant: dict[str, list[dict[str, Any]]] = {}
            for v in variants:
                # The variant's claims from the same report code: its XRC arms in
                # place of xrc's, every baseline shared.
                mine = [r for r in results if r["point"].get("variant") == v]
                swapped = {(r["point"]["exp"], r["point"]["label"]) for r in mine}
                rs = [r for r in base if (r["point"]["exp"], r["point"]["label"]) not in swapped] + mine
                with tempfile.TemporaryDirectory() as tmp:
                    (Path(tmp) / "figures").mkdir()
                    by_variant[v] = write_report(rs, dict(meta), Path(tmp))
            claims = write_report(base, meta, staging, variants=by_variant)
            (staging / "claims.json").write_text(json.dumps(claims, indent=2) + "\n")
            (staging / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
            commit(staging, out, force)
        except OSError as e:
            # The staging directory is removed on the way out of the with.
            raise OutputError(f"--out {str(out)!r}: cannot write {e.filename or 'the report'}: "
                              f"{e.strerror or e}") from None
    return {"claims": claims, "meta": meta}
