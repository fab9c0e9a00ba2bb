"""Figures: units on every axis, delay axes that start at 0, distinct
series, and a caller's matplotlib left as it was."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from xrc.plots import cdf, delay_axis, figure_problems, log_axis, new_figure


def _tick_labels(ax, axis="x"):
    ax.figure.canvas.draw()
    a = ax.xaxis if axis == "x" else ax.yaxis
    return [t.get_text() for t in a.get_ticklabels() if t.get_text()]


def test_a_delay_cdf_with_zeros_has_no_negative_tick_labels():
    fig, axes = new_figure()
    ax = axes[0, 0]
    cdf(ax, np.r_[np.zeros(50), np.linspace(0.5, 300, 500)], label="x")
    delay_axis(ax)
    ax.set_xlabel("delay (ms)")
    labels = _tick_labels(ax)
    assert labels and all(not lab.startswith(("-", "\u2212")) for lab in labels), labels
    assert ax.get_xlim()[0] == 0
    assert {"0", "1", "10", "100"} <= set(labels), labels
    assert figure_problems(fig) == []


def test_a_log_axis_labels_plain_numbers_and_no_minor_ticks():
    fig, axes = new_figure()
    ax = axes[0, 0]
    cdf(ax, np.geomspace(0.15, 1.6, 40), label="fct")
    log_axis(ax)
    labels = _tick_labels(ax)
    assert labels and all("10^" not in lab and "times" not in lab for lab in labels), labels
    assert all(not t.get_text() for t in ax.xaxis.get_minorticklabels())


def test_the_figure_checker_finds_what_the_old_figures_had():
    # Fig. 7 once drew "XRC" and "XRC (XRC shorts)" in the same red; Fig. 1(a)
    # panels had the scheme's name for a y label; its CDFs went below 0.
    fig, axes = new_figure(1, 2)
    a, b = axes[0]
    a.plot([1, 2], [1, 2], color="#d62728", label="XRC")
    a.plot([1, 2], [2, 3], color="#d62728", label="XRC (XRC shorts)")
    a.set_ylabel("XRC")
    a.set_xlabel("time (s)")
    b.plot([0, 5], [0, 1], label="x")
    b.set_xscale("symlog", linthresh=1)
    b.set_xlim(-2, 10)
    b.set_ylabel("CDF")
    problems = figure_problems(fig, "old")
    text = "\n".join(problems)
    assert "share colour" in text and "gives no unit" in text and "below 0" in text, text


def test_xrc_never_changes_the_callers_matplotlib_backend_or_rcparams(tmp_path):
    # In a fresh interpreter: a caller's backend, its rcParams and pyplot
    # (never imported by xrc) stay as they were after runs, plots and the
    # report's figures.
    code = textwrap.dedent(f"""
        import sys, matplotlib
        matplotlib.use("svg")
        before = dict(matplotlib.rcParams)
        import xrc, xrc.plots, xrc.reproduce.report
        from xrc.runner import run_to_dir
        sc = xrc.load("scenarios/paper/fig1-time-varying.toml", overrides=["duration_s=2"])
        run_to_dir(sc, {str(tmp_path / "run")!r}, plots=True)
        r = xrc.run("paper/fig1-time-varying", duration_s=2, out={str(tmp_path / "api")!r}, plots=True)
        r.rtt, r.drops, xrc.read_run({str(tmp_path / "run")!r}).cwnd
        xrc.sweep("paper/fig1-time-varying", grid={{"flows.0.cc": ["xrc", "cubic"]}}, duration_s=1, jobs=1)
        assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
        assert "matplotlib.pyplot" not in sys.modules
        after = dict(matplotlib.rcParams)
        changed = {{k: (before[k], after[k]) for k in before if before[k] != after[k]}}
        assert not changed, changed
        print("ok")
    """)
    from .conftest import ROOT

    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
    assert (tmp_path / "run" / "plots" / "hol_cdf.png").is_file()


def test_a_cdf_of_a_million_samples_keeps_few_steps_within_one_step_of_the_exact_curve():
    from xrc.plots import CDF_POINTS

    rng = np.random.default_rng(5)
    samples = np.concatenate([rng.exponential(3.0, 1_000_000), np.full(50_000, 10.0), [np.nan]])
    fig, axes = new_figure()
    ax = axes[0][0]
    cdf(ax, samples)
    x, y = ax.lines[-1].get_data()
    assert len(x) <= CDF_POINTS and y[-1] == 1.0 and x[0] == np.nanmin(samples) and x[-1] == np.nanmax(samples)
    # At every sample the drawn step (the last point at or below it) is
    # within 1/(CDF_POINTS - 1) of the exact empirical CDF.
    s = np.sort(samples[~np.isnan(samples)])
    probe = s[rng.integers(0, s.size, 20_000)]
    exact = np.searchsorted(s, probe, side="right") / s.size
    drawn = y[np.searchsorted(x, probe, side="right") - 1]
    assert np.max(exact - drawn) <= 1.0 / (CDF_POINTS - 1) + 1e-12 and np.all(drawn <= exact + 1e-12)
    # A small sample is drawn whole.
    cdf(ax, [3.0, 1.0, 2.0])
    assert list(ax.lines[-1].get_data()[0]) == [1.0, 2.0, 3.0]


def test_a_long_runs_rates_are_averaged_over_whole_groups_of_bins_that_keep_the_bits():
    from xrc.plots import MAX_RATE_BINS, bins_per_step, coarsen

    bin_s = 0.1
    assert bins_per_step({"output": {"bin_ms": 100.0}, "duration_s": 60.0}) == (1, bin_s)
    k, _ = bins_per_step({"output": {"bin_ms": 100.0}, "duration_s": 3600.0})
    assert k == 18 and 36_000 / k <= MAX_RATE_BINS
    rng = np.random.default_rng(1)
    # A flow that starts at 0.3 s: its series lacks the bins before.
    t = np.arange(3, 36_000) * bin_s
    rate = rng.uniform(0, 40, t.size)
    starts, (mean,) = coarsen(t, [rate], bin_s, k)
    assert starts.size <= MAX_RATE_BINS
    # Groups aligned to multiples of k bins from 0, one step per group.
    assert np.allclose(starts, np.arange(starts.size) * k * bin_s)
    # Each step is the rate over the bins of its group that the series has,
    # so the bits over the whole series are the same.
    counts = np.bincount(np.floor(t / (k * bin_s) + 1e-9).astype(int))
    assert np.isclose((mean * counts * bin_s).sum(), (rate * bin_s).sum(), rtol=1e-12)
    assert np.isclose(mean[0], rate[: k - 3].mean()) and np.isclose(mean[1], rate[k - 3: 2 * k - 3].mean())
    # A short run is left as it is.
    same_t, (same,) = coarsen(t[:100], [rate[:100]], bin_s, 1)
    assert np.array_equal(same_t, t[:100]) and np.array_equal(same, rate[:100])
