"""The simulator against the real Linux kernel, on every commit, without root.

``data/linux-reference/results.json`` holds real Linux TCP (cubic, reno and
bbr of the kernel named in it) measured through xrc's real-time emulator by
``xrc validate-linux`` (see docs/validation.md), and the simulator's side as
it was when the reference was stored. Every case is simulated again here
(master seeds 1..5, as the stored side) and:

* every metric issue 7 accepts is within its bound of Linux's mean
  (:data:`xrc.emulation.linuxref.ACCEPTANCE`), except the misses listed in
  :data:`KNOWN_MISSES` with the mechanism behind each; a listed miss must
  still miss (a fixed one comes off the list) and must not grow;
* no metric drifts from the stored simulated side by more than the real
  runs' spread allows (:func:`xrc.emulation.linuxref.drift`), so a change
  that moves the simulator's TCP by more than real Linux varies between two
  runs fails here, even inside the acceptance bounds. A change meant to
  move it re-stores the simulated side with
  ``xrc validate-linux --resim data/linux-reference --out data/linux-reference --force``
  and says why in its commit.

The cellular cases run on the first 65 s of their traces, shipped in
``data/linux-reference/trace-slices/`` (see its README), so they run in any clone;
where ``../shared/traces/`` exists, the slices are checked against it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from xrc.emulation import linuxref

REF = Path(__file__).resolve().parents[1] / "data" / "linux-reference" / "results.json"
SLICES = REF.parent / "trace-slices"
#: How far past the run's end a slice must reach, ms (see the slices' README).
SLICE_MARGIN_MS = 2000
_DOC = json.loads(REF.read_text())
_CASES = {c["id"]: c for c in _DOC["cases"]}

#: (case, metric) -> (largest |Δ| tolerated while it is open, mechanism).
#: Every entry is a miss of issue 7's acceptance that is understood but not
#: yet fixed; see docs/validation.md ("Where xrc and Linux still differ").
_BW_HIGH = ("Linux BBR's max-filtered bandwidth sits 0.8-2.3% above the bottleneck's payload rate (ss -tin "
            "bbr:bw mean 19.46, p95 19.71 against 19.31 Mbit/s; xrc's is 19.30), so pacing at gain 1 with the 1% "
            "margin does not drain what each 1.25 probe queued and Linux keeps a standing queue (unacked 87 against "
            "xrc's in-flight 78). The high samples are the emulation host's ACK timing (mostly the receiving "
            "host's delay): a tcp_rate.c replay of the capture gives the link rate exactly with ideal timing, and xrc "
            "with each run's ACK lateness replayed lands at Linux's RTT (docs/validation.md, scripts/bbr_*.py). "
            "Not modelled: a property of the loaded host, not of TCP.")
KNOWN_MISSES: dict[tuple[str, str], tuple[float, str]] = {
    ("wired-20mbit-40ms-267p-bbr", "rtt_p95_ms"): (0.21, _BW_HIGH + " On the quiet take now stored the "
                                                   "case's mean is inside (-8.7%) and so are both of the "
                                                   "67-packet case's numbers; the noisier takes missed three of "
                                                   "the four (docs/validation.md, 'Four takes of the reference'). With "
                                                   "the ACK lateness of a real 267-packet run replayed, xrc's p95 "
                                                   "goes from 52.2 to 65.4 (shuffled) - 90.8 ms (in time order); "
                                                   "Linux 61.4-65.9 here, 71.1 in that run."),
}


def _slice_lines(name: str) -> list[str]:
    return gzip.decompress((SLICES / f"{name}.gz").read_bytes()).decode().splitlines()


def _slices(case: linuxref.Case, into: Path) -> Path:
    """The case's trace slices, written out as plain Mahimahi files."""
    into.mkdir(parents=True, exist_ok=True)
    for d in ("down", "up"):
        (into / f"{case.trace}.{d}").write_text("\n".join(_slice_lines(f"{case.trace}.{d}")) + "\n")
    return into


def _simulate(entry: dict, tmp_path: Path) -> dict:
    case = linuxref.Case(**entry["case"])
    traces_dir = _slices(case, tmp_path / "slices") if case.link == "cell" else None
    traces = linuxref.trace_files(case, tmp_path / "generated", traces_dir)
    fresh = json.loads(json.dumps(entry))
    linuxref.simulate_case(fresh, case, _DOC["settings"]["duration_s"], traces,
                           seeds=len(entry["xrc"].get("seeds") or [1]))
    return fresh["xrc"]["metrics"]


_TRACES = sorted({c["case"]["trace"] for c in _DOC["cases"] if c["case"]["link"] == "cell"})


@pytest.mark.parametrize("name", [f"{t}.{d}" for t in _TRACES for d in ("down", "up")])
def test_every_trace_slice_reaches_past_the_run_and_is_the_start_of_its_trace(name):
    lines = _slice_lines(name)
    end_ms = _DOC["settings"]["duration_s"] * 1000
    assert int(lines[-1]) >= end_ms + SLICE_MARGIN_MS, (
        f"{name}: the slice ends at {lines[-1]} ms, so a {end_ms:g}-ms case would wrap to the trace's start")
    # The slice is the start of its trace: by its digest, taken when it was
    # compared with the whole trace (SHA256SUMS), and against the trace
    # itself where ../shared/traces holds it.
    sums = dict(reversed(line.split("  ", 1)) for line in (SLICES / "SHA256SUMS").read_text().splitlines())
    got = hashlib.sha256(gzip.decompress((SLICES / f"{name}.gz").read_bytes())).hexdigest()
    assert got == sums[name], f"{name}: the slice changed since it was checked against its trace"
    full = linuxref.SHARED_TRACES / name
    if full.is_file():
        with full.open() as f:
            head = [next(f).rstrip("\n") for _ in range(len(lines))]
        assert head == lines, f"{name}: the slice is not the start of {full}"


def test_the_reference_says_when_where_and_with_what_it_was_measured():
    env = _DOC["environment"]
    assert env["kernel"] and env["date"] and env["hz"]
    assert env["emulator"]["name"].startswith("xrc-emu")
    assert _DOC["settings"]["repeats"] >= 2
    assert [c.id for c in linuxref.all_cases()] == list(_CASES)
    for c in _DOC["cases"]:
        assert len(c["runs"]) >= 2, c["id"]


def test_every_known_miss_names_a_mechanism_and_a_metric_issue_7_accepts():
    for (case, metric), (bound, why) in KNOWN_MISSES.items():
        assert case in _CASES
        assert metric in linuxref.ACCEPTANCE[linuxref.link_class(_CASES[case])] or metric == "retransmits"
        assert 0 < bound < 1 and len(why) > 40


@pytest.mark.parametrize("case_id", list(_CASES))
def test_the_simulator_stays_within_linux_s_bounds_and_its_own_stored_side(case_id, tmp_path):
    entry = _CASES[case_id]
    sim = _simulate(entry, tmp_path)
    problems = []
    for a in linuxref.acceptance(entry, sim):
        key = (case_id, a["metric"])
        if key in KNOWN_MISSES:
            bound, _ = KNOWN_MISSES[key]
            if a["ok"]:
                problems.append(f"{a['metric']}: now within {a['bound']} of Linux (Δ {a['delta']:+.1%}); "
                                "take it off KNOWN_MISSES")
            elif a["delta"] is None or abs(a["delta"]) > bound:
                problems.append(f"{a['metric']}: known miss grew to Δ {a['delta']} (tolerated {bound:.0%})")
        elif not a["ok"]:
            d = "–" if a["delta"] is None else f"{a['delta']:+.1%}"
            problems.append(f"{a['metric']}: Linux {a['linux']}, xrc {a['xrc']}, Δ {d} beyond {a['bound']}")
    for d in linuxref.drift(entry, sim):
        if not d["ok"]:
            problems.append(f"{d['metric']}: drifted from the stored simulated side {d['stored']} to {d['xrc']} "
                            f"(tolerance {d['tol']:.3g}); re-store it on purpose with --resim if this is meant")
    assert not problems, f"{case_id}:\n  " + "\n  ".join(problems)
