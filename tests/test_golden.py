"""Golden test: every bundled scenario (and variants reaching every access
type and side channel) gives the same outputs, byte for byte, as when
tests/golden/digests.json was written. A refactoring of the core must keep
this green; a change meant to alter results regenerates the digests on
purpose (`make golden`, tests/golden/README.md)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("golden", ROOT / "scripts" / "golden.py")
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)

CASES = golden.load_cases()
STORED = json.loads(golden.DIGESTS.read_text()) if golden.DIGESTS.is_file() else {}


def test_every_bundled_scenario_is_a_golden_case():
    used = {(ROOT / c["scenario"]).resolve() for c in CASES}
    bundled = {p.resolve() for p in (ROOT / "scenarios").rglob("*.toml")}
    missing = sorted(str(p.relative_to(ROOT)) for p in bundled - used)
    assert not missing, f"scenarios without a golden case in tests/golden/cases.toml: {missing}"


def test_every_case_has_a_stored_digest_and_every_digest_a_case():
    names = {c["name"] for c in CASES}
    assert names == set(STORED), (
        f"cases without digests: {sorted(names - set(STORED))}; digests without cases: {sorted(set(STORED) - names)}"
    )


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_outputs_are_byte_identical_to_the_stored_digest(case):
    want = STORED.get(case["name"])
    if want is None:
        pytest.fail(f"no stored digest for {case['name']}: run `make golden` if the case is new")
    got = golden.run_case(case)
    moved = [t for t, d in got["tables"].items() if want["tables"].get(t) != d]
    assert got["sha256"] == want["sha256"], (
        f"{case['name']}: events {want['events']} -> {got['events']}, tables that moved: {moved or 'none'}"
    )
