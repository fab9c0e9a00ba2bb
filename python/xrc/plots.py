"""The plots of a run directory: rate against available capacity, the HoL
delay CDF, and the congestion window. Each is written as PNG and SVG."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .schemes import color_of, label_of  # noqa: E402

# Reproducible SVGs: fixed ids, no date.
matplotlib.rcParams["svg.hashsalt"] = "xrc"
_META = {"svg": {"Date": None}, "png": {}}


def _save(fig, directory: Path, stem: str) -> list[str]:
    names = []
    for ext in ("png", "svg"):
        name = f"{stem}.{ext}"
        fig.savefig(directory / name, dpi=120, bbox_inches="tight", metadata=_META[ext] or None)
        names.append(name)
    plt.close(fig)
    return names


def plot_rates(tables, resolved, directory: Path) -> list[str]:
    flows = resolved["flows"]
    ur = tables["ue_rate"]
    tp = tables["flow_throughput"]
    n_ues = int(ur["ue"].max()) + 1 if ur["ue"].size else 0
    rows = max(n_ues, 1)
    fig, axes = plt.subplots(rows, 1, figsize=(9, 3.2 * rows), sharex=True, squeeze=False)
    for r in range(rows):
        ax = axes[r][0]
        if n_ues:
            sel = ur["ue"] == r
            t = ur["t"][sel]
            ax.fill_between(t, ur["available_mbps"][sel], step="post", color="0.85", label="available capacity")
            ax.step(t, ur["agent_mbps"][sel], where="post", color="0.5", lw=0.8, ls="--", label="agent estimate")
        for k, f in enumerate(flows):
            if n_ues and f.get("ue") != r:
                continue
            sel = tp["flow"] == k
            ax.step(tp["t"][sel], tp["goodput_mbps"][sel], where="post", lw=1.2,
                    color=color_of(f["cc"], k), label=f"{f['id']} ({label_of(f['cc'])})")
        ax.set_ylabel("Mbit/s")
        if n_ues > 1:
            ax.set_title(f"UE {r}", fontsize=9)
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1][0].set_xlabel("time (s)")
    axes[0][0].set_title(f"{resolved['name']}: rate against available capacity" + (" (UE 0)" if n_ues > 1 else ""))
    return _save(fig, directory, "rate")


def plot_hol_cdf(tables, resolved, directory: Path) -> list[str]:
    rlc = tables["rlc"]
    if rlc["ue"].size == 0:
        return []
    fig, ax = plt.subplots(figsize=(6, 4))
    for u in np.unique(rlc["ue"]):
        sel = (rlc["ue"] == u) & (rlc["active"] == 1)
        h = np.sort(rlc["hol_ms"][sel])
        if h.size == 0:
            continue
        y = np.arange(1, h.size + 1) / h.size
        ax.plot(h, y, label=f"UE {int(u)}")
    ax.axvline(10.0, color="0.5", ls=":", lw=1, label="10 ms budget")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("RLC head-of-line delay (ms)")
    ax.set_ylabel("CDF")
    ax.set_title(f"{resolved['name']}: HoL delay")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, directory, "hol_cdf")


def plot_cwnd(tables, resolved, directory: Path) -> list[str]:
    cw = tables["cwnd"]
    if cw["flow"].size == 0:
        return []
    fig, ax = plt.subplots(figsize=(9, 3.5))
    for k, f in enumerate(resolved["flows"]):
        sel = cw["flow"] == k
        ax.step(cw["t"][sel], cw["cwnd"][sel], where="post", lw=1, color=color_of(f["cc"], k),
                label=f"{f['id']} ({label_of(f['cc'])})")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (segments)")
    ax.set_title(f"{resolved['name']}: congestion window")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, directory, "cwnd")


def plot_all(tables, resolved, directory: Path) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    out += plot_rates(tables, resolved, directory)
    out += plot_hol_cdf(tables, resolved, directory)
    out += plot_cwnd(tables, resolved, directory)
    return out
