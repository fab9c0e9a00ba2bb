"""Streaming a run's series to Parquet (xrc.stream): the files, the summary
and the plots are what a run held in memory gives, however the rows are
handed over; large cells get readable plots."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xrc.bench import cell_scenario_text
from xrc.grouped import GroupedArrays, GroupedSpill
from xrc.results import RunData, summarize, write_parquet
from xrc.runner import run_to_dir, simulate
from xrc.scenario import ScenarioError, load_text
from xrc.stream import TableSink, stream_run

from .conftest import SCENARIOS


def _cell(n_ues: int, duration_s: float):
    return load_text(cell_scenario_text(n_ues, duration_s), base=Path.cwd())


def test_a_sink_cuts_row_groups_by_row_count_whatever_the_batches(tmp_path):
    rng = np.random.default_rng(3)
    cols = {"t": np.sort(rng.random(1000)), "flow": rng.integers(0, 3, 1000).astype(np.uint32),
            "rtt_ms": rng.random(1000)}
    files = []
    for i, cuts in enumerate([[1000], [1, 299, 300, 400], [7] * 142 + [6]]):
        sink = TableSink(tmp_path / f"rtt{i}.parquet", "rtt", ["a", "b", "c"], row_group_rows=128)
        at = 0
        for n in cuts:
            sink.add({c: v[at:at + n] for c, v in cols.items()})
            at += n
        sink.close()
        files.append((tmp_path / f"rtt{i}.parquet").read_bytes())
    assert files[0] == files[1] == files[2]
    meta = pq.ParquetFile(tmp_path / "rtt0.parquet").metadata
    assert [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == [128] * 7 + [104]
    t = pq.read_table(tmp_path / "rtt0.parquet")
    assert t.column("flow_id").to_pylist()[:5] == [["a", "b", "c"][f] for f in cols["flow"][:5]]


def test_an_empty_table_is_a_file_with_its_schema(tmp_path):
    sink = TableSink(tmp_path / "drops.parquet", "drops", ["x"])
    sink.add({"t": np.empty(0), "location": np.empty(0, np.uint8), "flow": np.empty(0, np.uint32),
              "seq": np.empty(0, np.uint64)})
    sink.close()
    t = pq.read_table(tmp_path / "drops.parquet")
    assert t.num_rows == 0 and t.schema.field("seq").type == pa.uint64()


def test_spilled_groups_give_the_values_held_in_memory_in_the_same_order(tmp_path):
    rng = np.random.default_rng(5)
    spill = GroupedSpill(tmp_path, "x", chunk_values=1000)
    groups, values = [], []
    for n in rng.integers(0, 700, 20):
        g = rng.integers(0, 40, n)
        v = rng.exponential(3.0, n)
        spill.add(g, v)
        groups.append(g)
        values.append(v)
    mem = GroupedArrays(np.concatenate(groups), np.concatenate(values))
    try:
        for g in range(-1, 42):
            assert np.array_equal(spill.values(g), mem.values(g)), g
    finally:
        spill.close()
    assert not spill.path.exists()


@pytest.mark.parametrize("kind", ["spread", "rounded", "constant", "signed", "with-nan", "one"])
def test_a_group_too_large_to_read_whole_gives_numpys_percentiles_bit_for_bit(tmp_path, monkeypatch, kind):
    # A long run's summary read every group's values whole: 1e5 simulated
    # seconds of RTT samples were 1.4 GB at the peak. Past WHOLE_VALUES a
    # group's percentiles are selected from pieces of its file; they must be
    # np.percentile's numbers, not an estimate.
    import xrc.grouped as grouped

    monkeypatch.setattr(grouped, "WHOLE_VALUES", 500)
    monkeypatch.setattr(grouped, "_COLLECT_VALUES", 40)
    rng = np.random.default_rng(17)
    n = 1 if kind == "one" else 6007
    v = {"spread": rng.lognormal(3, 1, n), "rounded": np.round(rng.exponential(20, n), 1),
         "constant": np.full(n, 7.25), "signed": np.r_[rng.normal(0, 1, n // 2), np.zeros(n - n // 2), -0.0][:n],
         "with-nan": np.r_[rng.exponential(5, n - 1), np.nan], "one": np.array([3.5])}[kind]
    g = rng.integers(0, 3, n) if kind != "one" else np.array([0])
    spill = GroupedSpill(tmp_path, "x", chunk_values=777)
    spill.add(g, v)
    qs = (0, 1, 50, 80, 90, 95, 99, 99.9, 100)
    try:
        for k in range(3):
            mine = v[g == k]
            want = [float(x) for x in np.percentile(mine, qs)] if mine.size else [float("nan")] * len(qs)
            got = spill.percentiles(k, qs)
            assert np.array_equal(got, want, equal_nan=True) and all(
                np.signbit(a) == np.signbit(b) for a, b in zip(got, want) if not np.isnan(a)), (k, got, want)
            assert spill.count_at_most(k, 10.0) == (int(np.count_nonzero(mine <= 10.0)), mine.size)
            x, rank, m = spill.cdf_points(k, 64)
            whole = np.sort(mine[~np.isnan(mine)])
            assert m == whole.size and np.allclose(x, whole[rank], rtol=2 ** -11, atol=0), k
    finally:
        spill.close()


def test_a_long_runs_summary_and_plots_hold_a_bounded_part_of_its_series(tmp_path, monkeypatch):
    # The summary and the HoL CDF read no group whole past WHOLE_VALUES,
    # and give the numbers of the run held in memory.
    import xrc.grouped as grouped

    sc = _cell(2, 3.0)
    mem = simulate(sc)
    want = summarize(sc.resolved, mem["tables"], events=mem["events"], sim_time_s=mem["sim_time_s"], wall_time_s=0.0)
    monkeypatch.setattr(grouped, "WHOLE_VALUES", 300)
    monkeypatch.setattr(grouped, "_COLLECT_VALUES", 50)

    def refuse(self, group):
        raise AssertionError("a group's values read whole")

    monkeypatch.setattr(GroupedSpill, "values", refuse)
    run = stream_run(sc, tmp_path)
    try:
        got = summarize(sc.resolved, run.data, events=run.events, sim_time_s=run.sim_time_s, wall_time_s=0.0)
        from xrc.plots import plot_all

        plot_all(run.data, sc.resolved, tmp_path / "plots", summary=got)
    finally:
        run.close()
    for k in ("flows", "ues"):
        assert got[k] == want[k]
    assert (tmp_path / "plots" / "hol_cdf.png").exists()


def test_a_windows_envelope_kept_batch_by_batch_is_the_envelope_of_the_whole_series():
    # The window figure read every point of the chosen flows (about 9·10^6
    # per flow at 10^5 simulated seconds) and drew them all; the streamed
    # reader now keeps each batch's envelope, which must be the same points.
    from xrc.results import envelope

    rng = np.random.default_rng(29)
    for trial in range(60):
        n = int(rng.integers(1, 30000))
        t = np.sort(rng.uniform(0, 50, n))
        w = rng.integers(1, 12, n).astype(np.uint32)
        whole = envelope(t, w, 0.0, 50.0, 200)
        bounds = [0, *np.sort(rng.integers(0, n, int(rng.integers(0, 5)))), n]
        kept = np.concatenate([envelope(t[a:b], w[a:b], 0.0, 50.0, 200) + a
                               for a, b in zip(bounds[:-1], bounds[1:]) if b > a])
        assert np.array_equal(kept[envelope(t[kept], w[kept], 0.0, 50.0, 200)], whole), trial
        per = np.clip((t[whole] / 50 * 200).astype(int), 0, 199)
        assert np.bincount(per).max() <= 4
        for c in np.unique(np.clip((t / 50 * 200).astype(int), 0, 199)):
            col = np.clip((t / 50 * 200).astype(int), 0, 199) == c
            assert w[col].min() in w[whole][per == c] and w[col].max() in w[whole][per == c]


def test_a_streamed_run_writes_the_files_and_summary_of_a_run_held_in_memory(tmp_path):
    # 12 UEs for 3 s, rows handed over every 5,000 (dozens of drains, each
    # cutting tables mid-way): the Parquet files are byte for byte those
    # written from memory, and the summary is the same.
    sc = _cell(12, 3.0)
    mem = simulate(sc)
    (tmp_path / "mem").mkdir()
    write_parquet(mem["tables"], tmp_path / "mem", [f["id"] for f in sc.resolved["flows"]])
    want = summarize(sc.resolved, mem["tables"], events=mem["events"], sim_time_s=mem["sim_time_s"],
                     wall_time_s=0.0)
    (tmp_path / "st").mkdir()
    run = stream_run(sc, tmp_path / "st", drain_rows=5000)
    try:
        got = summarize(sc.resolved, run.data, events=run.events, sim_time_s=run.sim_time_s, wall_time_s=0.0)
    finally:
        run.close()
    assert run.rows["rlc"] == 12 * 3000
    for p in sorted((tmp_path / "mem").glob("*.parquet")):
        assert p.read_bytes() == (tmp_path / "st" / p.name).read_bytes(), p.name
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    assert not list((tmp_path / "st").glob(".*.spill"))


def test_a_large_cell_gets_aggregate_plots_of_a_readable_size(tmp_path):
    from matplotlib.image import imread

    sc = _cell(20, 2.0)
    run_to_dir(sc, tmp_path / "run", plots=True)
    for stem in ("rate", "hol_cdf", "cwnd"):
        h, w = imread(tmp_path / "run" / "plots" / f"{stem}.png").shape[:2]
        assert h <= 1000 and w <= 1400, (stem, h, w)


def test_the_aggregate_figures_break_no_axes_rule(tmp_path):
    import xrc.plots as plots
    from xrc.plots import _plot_hol_aggregate, _plot_rates_aggregate, figure_problems, plot_cwnd

    sc = _cell(12, 2.0)
    r = simulate(sc)
    data = RunData.from_tables(r["tables"])
    drawn = []
    real_save = plots.save

    def keep(fig, directory, stem, **kw):
        drawn.append((stem, fig))
        return real_save(fig, directory, stem, **kw)

    plots.save = keep
    try:
        _plot_rates_aggregate(data, sc.resolved, tmp_path, 12)
        _plot_hol_aggregate(data, sc.resolved, tmp_path, None)
        plot_cwnd(data, sc.resolved, tmp_path)
    finally:
        plots.save = real_save
    assert [s for s, _ in drawn] == ["rate", "hol_cdf", "cwnd"]
    for stem, fig in drawn:
        assert figure_problems(fig, stem) == []


def test_a_run_held_in_memory_refuses_a_per_tti_table_it_cannot_hold_and_names_the_setting():
    sc = load_text(cell_scenario_text(1000, 60.0), base=Path.cwd())
    with pytest.raises(ScenarioError, match=r"output\.rlc_sample_ttis.*at least 3.*xrc run --out"):
        simulate(sc)


def test_a_run_held_in_memory_stops_when_its_tables_reach_the_bound_and_names_what_thins_them(monkeypatch):
    # xrc.run("validation/dumbbell-20mbit-40ms", duration_s=1e5) held every
    # RTT sample until the interpreter aborted (2 GiB limit): the per-packet
    # tables have no up-front size.
    import xrc.runner as runner

    monkeypatch.setattr(runner, "IN_MEMORY_ROWS", 20_000)
    sc = load_text((SCENARIOS / "validation" / "dumbbell-20mbit-40ms.toml").read_text(),
                   base=SCENARIOS / "validation", overrides=["duration_s=30"])
    with pytest.raises(ScenarioError) as e:
        simulate(sc)
    m = str(e.value)
    assert m.startswith("duration_s: a run held in memory records at most 2e+04 rows"), m
    assert "output.rtt_trace = false" in m and "xrc.run(..., out=DIR)" in m, m
    at = float(m.split("reached that ")[1].split(" s")[0])
    assert 0 < at < 30, m


def test_a_run_directory_of_a_bundled_scenario_is_unchanged_by_streaming(tmp_path):
    sc_path = SCENARIOS / "paper" / "fig1-time-varying.toml"
    from xrc.scenario import load

    sc = load(sc_path, overrides=["duration_s=5"])
    mem = simulate(sc)
    (tmp_path / "mem").mkdir()
    write_parquet(mem["tables"], tmp_path / "mem", [f["id"] for f in sc.resolved["flows"]])
    run_to_dir(sc, tmp_path / "run", plots=False)
    for p in sorted((tmp_path / "mem").glob("*.parquet")):
        assert p.read_bytes() == (tmp_path / "run" / p.name).read_bytes(), p.name


def test_rows_given_by_instant_spill_the_same_values_as_rows_given_one_by_one(tmp_path):
    # The per-TTI table's shape (every group 0..n-1 at each instant) taken
    # by `add_masked`, mixed with batches of another shape and of another
    # number of groups, against `add` of the kept rows and the in-memory
    # grouping.
    rng = np.random.default_rng(11)
    fast = GroupedSpill(tmp_path, "fast", chunk_values=900)
    slow = GroupedSpill(tmp_path, "slow", chunk_values=900)
    groups, values = [], []
    try:
        for i in range(40):
            n = 7 if i < 25 else 5
            m = int(rng.integers(0, 60))
            if i % 9 == 4:
                g = rng.integers(0, 9, m * n).astype(np.uint32)  # not by instant
            else:
                g = np.tile(np.arange(n, dtype=np.uint32), m)
            v = rng.exponential(3.0, g.size)
            keep = rng.random(g.size) < (0.0 if i == 13 else 0.7)
            fast.add_masked(g, v, keep)
            slow.add(g[keep], v[keep])
            groups.append(g[keep])
            values.append(v[keep])
            if i == 30:
                assert np.array_equal(fast.values(3), slow.values(3))
        mem = GroupedArrays(np.concatenate(groups), np.concatenate(values))
        for g in range(-1, 11):
            assert np.array_equal(fast.values(g), mem.values(g)), g
            assert np.array_equal(slow.values(g), mem.values(g)), g
    finally:
        fast.close()
        slow.close()


def test_drained_columns_are_read_only_views_that_outlive_the_simulation_and_add_up_to_one_take():
    import gc

    from xrc import _core

    sc = _cell(10, 1.0)
    whole = _core.Simulation(sc.resolved_json())
    whole.run_until(whole.end_s)
    expected = {n: {c: bytes(b) for c, (_, b) in cols.items()} for n, cols in whole.finish()["tables"].items()}

    sim = _core.Simulation(sc.resolved_json())
    parts: dict[str, dict[str, list[np.ndarray]]] = {}
    views = []
    while not sim.run_until(sim.end_s, max_rows=5000):
        for name, cols in sim.drain()["tables"].items():
            for col, (dtype, buf) in cols.items():
                assert isinstance(buf, memoryview) and buf.readonly and buf.format == "B", (name, col)
                with pytest.raises(TypeError):
                    buf[:1] = b"\0"
                a = np.frombuffer(buf, dtype=dtype)
                assert not a.flags.writeable
                parts.setdefault(name, {}).setdefault(col, []).append(a)
                views.append(buf)
        assert sim.rows_held == 0
    last = sim.finish()["tables"]
    del sim
    gc.collect()
    assert len(views) > 12, "the run was drained more than once"
    for name, cols in last.items():
        for col, (dtype, buf) in cols.items():
            got = np.concatenate(parts.get(name, {}).get(col, []) + [np.frombuffer(buf, dtype=dtype)])
            assert got.tobytes() == expected[name][col], (name, col)


def test_a_simulation_freed_on_another_thread_is_freed_there_without_an_error():
    # The garbage collector frees a Simulation caught in a reference cycle
    # (an exception's frames) on whichever thread it runs, the Parquet
    # writer's among them; the class once refused that ("unsendable, but is
    # being dropped on another thread") and leaked the simulation.
    import sys
    import threading

    from xrc import _core
    from .conftest import MINIMAL_CELL

    sim = _core.Simulation(load_text(MINIMAL_CELL, base=Path(".")).resolved_json())
    sim.run_until(0.2)
    caught = []
    hook = sys.unraisablehook
    sys.unraisablehook = caught.append
    try:
        box = [sim]
        del sim
        t = threading.Thread(target=box.clear)
        t.start()
        t.join()
    finally:
        sys.unraisablehook = hook
    assert caught == [], [str(u.exc_value) for u in caught]
