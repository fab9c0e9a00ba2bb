"""HyStart over LTE (scenarios/studies/hystart-lte.toml): with the uplink's
scheduling-request jitter, stock HyStart sometimes leaves slow start far
below the bandwidth-delay product; the Ericsson study's two changes make
such premature exits rarer."""

from __future__ import annotations

import sys

import numpy as np

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import hystart_lte  # noqa: E402

SCENARIO = ROOT / "scenarios" / "studies" / "hystart-lte.toml"
BDP = 75.376e6 * 0.9 / 8 * 0.026 / 1448


def test_the_lte_patches_halve_premature_hystart_exits():
    stock = np.array([hystart_lte.exit_cwnd(SCENARIO, s, False)[0] or 0 for s in range(1, 81)])
    patched = np.array([hystart_lte.exit_cwnd(SCENARIO, s, True)[0] or 0 for s in range(1, 81)])
    early_stock = np.mean(stock < BDP / 2)
    early_patched = np.mean(patched < BDP / 2)
    assert early_stock >= 0.1, "stock HyStart exits below half the BDP in some runs"
    assert early_patched <= 0.6 * early_stock
