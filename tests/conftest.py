"""Shared fixtures: paths and a tiny scenario builder."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
SHARED = ROOT.parent / "shared"

MINIMAL_CELL = """
name = "minimal"
seed = 3
duration_s = 2.0
topology = "cellular"

[[ues]]
channel = { kind = "fixed_cqi", cqi = 10 }

[[flows]]
ue = 0
cc = "newreno"
"""


@pytest.fixture
def write_scenario(tmp_path):
    """Writes TOML text to a scenario file and returns its path."""

    def _write(text: str, name: str = "s.toml") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p

    return _write
