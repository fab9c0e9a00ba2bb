"""Running a scenario with its series streamed to Parquet as they are
recorded, so that a run's memory does not grow with its length and UEs.

The core holds the rows it records until they are taken
(``Simulation.drain``): :func:`stream_run` takes them every
:data:`DRAIN_ROWS` rows and hands each table's rows to a
:class:`TableSink`, which writes that table's Parquet file with pyarrow's
``ParquetWriter`` in row groups of exactly :data:`ROW_GROUP_ROWS` rows (the
last one shorter). Row groups are cut by row count, never where a drain
happened to fall (drains follow the wall clock), so a file's bytes depend
on its rows alone: equal runs give equal files, as
:func:`xrc.results.write_parquet` writes them (the same row groups).

What the summary and the plots need of the long series is kept by group
in temporary files beside the output (:class:`xrc.grouped.GroupedSpill`):
RTT samples by flow, HoL delays while active and queuing delays by UE.
The per-flow and per-UE tables are kept in memory; the per-bin tables
and the window traces (for the flows a plot draws) are read back from
their files in batches.

Memory: the core's rows since the last drain, up to one row group per
table here and one being written, the spill buffers, and one group's
values at a time for the summary: it does not grow with the run's length.
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import _core, progress as _progress, stopping
from ._proc import trim_heap
from .grouped import GroupedSpill
from .results import (_NUMPY_OF_ARROW, ROW_GROUP_ROWS, RunData, arrow_table, columns_to_arrays, decoded, envelope,
                      numpy_of, parquet_options)
from .scenario import Scenario, ScenarioError, read_input

__all__ = ["DRAIN_ROWS", "PCAP_DIR", "ROW_GROUP_ROWS", "SMALL_TABLES", "StreamedRun", "TableSink", "stream_run"]

#: Rows the core holds before the front end takes them.
DRAIN_ROWS = 1 << 18
#: Tables kept whole in memory for the summary and the plots (one row per
#: flow or UE, written at the end).
SMALL_TABLES = ("flows", "ues", "chunks")


#: How often the writer thread looks for a job it was not woken for.
_WAKE_S = 0.1


class BackgroundWriter:
    """Runs write jobs in order on one thread, so that compressing Parquet
    overlaps with the core running events (both release the GIL). At most
    `depth` jobs wait (each holds a row group), which bounds the memory.
    A job's exception is raised by the next :meth:`submit` or by
    :meth:`close`."""

    def __init__(self, depth: int = 1):
        self._jobs: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="xrc-parquet", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            try:
                # Not a plain get(): a SIGTERM in the caller's thread (a
                # sweep's worker being stopped) can raise inside put() after
                # the job is queued but before this thread is woken; a get()
                # without a timeout then sleeps for ever, and the caller's
                # close() waits on the full queue for ever with it (the
                # worker was killed and its staging directory left behind).
                job = self._jobs.get(timeout=_WAKE_S)
            except queue.Empty:
                continue
            if job is None:
                return
            if self._error is None:
                try:
                    job()
                except BaseException as e:  # raised in the caller's thread
                    self._error = e

    def submit(self, job) -> None:
        if self._error is not None:
            raise self._error
        self._jobs.put(job)

    def close(self) -> None:
        """Waits for every job; raises the first job's exception, if any."""
        self._jobs.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error


class _Inline:
    """Runs each job at once (no thread)."""

    def submit(self, job) -> None:
        job()

    def close(self) -> None:
        pass


class TableSink:
    """One table's Parquet file, written in row groups of
    :data:`ROW_GROUP_ROWS` rows as rows arrive (by `writer`, in order)."""

    def __init__(self, path: Path, name: str, flow_ids: list[str], row_group_rows: int = ROW_GROUP_ROWS,
                 writer: "BackgroundWriter | _Inline | None" = None):
        self._jobs = writer or _Inline()
        self.path = path
        self.name = name
        self.flow_ids = flow_ids
        self.row_group_rows = row_group_rows
        self.rows = 0
        self._schema: pa.Schema | None = None
        self._empty: pa.Table | None = None
        self._writer: pq.ParquetWriter | None = None
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def add(self, cols: dict[str, np.ndarray]) -> None:
        t = arrow_table(self.name, cols, self.flow_ids)
        if self._schema is None:
            self._schema = t.schema
            self._empty = t.slice(0, 0)
        elif t.schema != self._schema:
            # String columns (mode, flow_id) are the same type whatever the
            # batch; anything else is a bug.
            t = t.cast(self._schema)
        if t.num_rows:
            self._pending.append(t)
            self._pending_rows += t.num_rows
            self.rows += t.num_rows
        while self._pending_rows >= self.row_group_rows:
            self._write(self.row_group_rows)

    def _write(self, n: int) -> None:
        t = pa.concat_tables(self._pending)
        head, rest = t.slice(0, n), t.slice(n)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows
        self._submit_row_groups(head)

    def _submit_row_groups(self, t: pa.Table) -> None:
        # One contiguous array per column: the file's pages do not depend on
        # how the rows were handed over. Joined here, not in the job: the
        # writing thread is the one a large cell waits for.
        t = t.combine_chunks()

        def job():
            if self._writer is None:
                self._writer = pq.ParquetWriter(self.path, self._schema, **parquet_options(self._schema))
            self._writer.write_table(t, row_group_size=self.row_group_rows)

        self._jobs.submit(job)

    def close(self) -> None:
        """Writes the last rows (the whole table if it never filled a row
        group: an empty table is a file with its schema) and closes the file."""
        if self._schema is None:
            raise RuntimeError(f"table {self.name}: no batch was ever added")
        if self._pending_rows or self.rows == 0:
            t = pa.concat_tables(self._pending) if self._pending else self._empty
            self._pending, self._pending_rows = [], 0
            self._submit_row_groups(t)

        def job():
            self._writer.close()

        self._jobs.submit(job)


class StreamedRun:
    """A run whose tables went to Parquet files in `directory`; its
    :attr:`data` feeds the summary and the plots. :meth:`close` deletes the
    temporary spills."""

    def __init__(self, directory: Path, n_flows: int):
        self.directory = directory
        self.events = 0
        self.sim_time_s = 0.0
        self.wall_time_s = 0.0
        #: Of which inside the core (running events, handing rows over).
        self.core_time_s = 0.0
        #: Of which running events (``run_until``), the rows staying in the core.
        self.events_time_s = 0.0
        self.files: list[str] = []
        self.rows: dict[str, int] = {}
        self._rtt = GroupedSpill(directory, "rtt")
        self._hol = GroupedSpill(directory, "hol")
        self._qd = GroupedSpill(directory, "queue_delay")
        self._small: dict[str, list[dict[str, np.ndarray]]] = {n: [] for n in SMALL_TABLES}
        self.data: RunData | None = None
        self._n_flows = n_flows

    def take(self, tables: dict[str, dict[str, np.ndarray]]) -> None:
        """One batch's rows: what the summary needs of the long series."""
        rtt, rlc, qd = tables["rtt"], tables["rlc"], tables["queue_delay"]
        self._rtt.add(rtt["flow"], rtt["rtt_ms"])
        self._hol.add_masked(rlc["ue"], rlc["hol_ms"], rlc["active"] == 1)
        self._qd.add(qd["ue"], qd["delay_ms"])
        for name in SMALL_TABLES:
            self._small[name].append(tables[name])

    def finish(self) -> RunData:
        small = {name: {c: np.concatenate([b[c] for b in batches]) for c in batches[0]}
                 for name, batches in self._small.items()}
        cwnd_path = self.directory / "cwnd.parquet"

        def cwnd(flows: list[int], points=None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
            # With `points`, each batch keeps only what a plot shows (the
            # same points as from the whole series): a long run's windows
            # are not all read into memory.
            want = set(flows)
            parts: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {k: [] for k in flows}
            for b in pq.ParquetFile(cwnd_path).iter_batches(columns=["t", "flow", "cwnd"], batch_size=1 << 20):
                f = numpy_of(b.column("flow"))
                sel = np.isin(f, list(want))
                if not sel.any():
                    continue
                t, w, f = numpy_of(b.column("t"))[sel], numpy_of(b.column("cwnd"))[sel], f[sel]
                for k in want:
                    m = f == k
                    if m.any():
                        tk, wk = t[m], w[m]
                        if points is not None:
                            keep = envelope(tk, wk, *points)
                            tk, wk = tk[keep], wk[keep]
                        parts[k].append((tk, wk))
            out = {}
            for k, v in parts.items():
                t = np.concatenate([p[0] for p in v]) if v else np.empty(0)
                w = np.concatenate([p[1] for p in v]) if v else np.empty(0, dtype=np.uint32)
                if points is not None:
                    keep = envelope(t, w, *points)
                    t, w = t[keep], w[keep]
                out[k] = (t, w)
            return out

        def batches(name: str, columns: list[str]):
            f = pq.ParquetFile(self.directory / f"{name}.parquet")
            if f.metadata.num_rows == 0:
                t = f.read(columns=columns).combine_chunks()
                yield {c: numpy_of(t.column(c).chunk(0)) if t.column(c).num_chunks
                       else np.empty(0, dtype=_NUMPY_OF_ARROW[t.schema.field(c).type]) for c in columns}
                return
            for b in f.iter_batches(columns=columns, batch_size=1 << 18):
                yield {c: numpy_of(b.column(c)) for c in columns}

        self.data = RunData(tables=small, rtt=self._rtt, hol_active=self._hol, queue_delay=self._qd, cwnd=cwnd,
                            batches=batches)
        return self.data

    def close(self) -> None:
        for s in (self._rtt, self._hol, self._qd):
            s.close()


def _decode(raw_tables, mode_names) -> dict[str, dict[str, np.ndarray]]:
    """A batch's columns; the window table's mode codes become their names
    (an Arrow string column, as ``simulate`` gives NumPy strings)."""
    tables = columns_to_arrays(raw_tables)
    cw = tables["cwnd"]
    cw["mode"] = decoded(cw["mode"], list(mode_names) or [""])
    return tables


#: Batches taken between two returns of freed memory to the system.
TRIM_EVERY = 8


def _abandon(writer: BackgroundWriter) -> None:
    """Stops the writer after a failure (its files are discarded with the
    staging directory); its own error, if any, is not the one to report."""
    try:
        writer.close()
    except BaseException:
        pass


#: The folder of a run directory that holds its packet captures
#: (``output.pcap``: ``flow{k}-sender.pcap``, ``flow{k}-ue.pcap``).
PCAP_DIR = "pcap"


def core_simulation(scenario: Scenario, directory: Path | None = None) -> Any:
    """The core's simulation of `scenario`, reading the traces the front
    end validated (one text for both directions when they share a file).
    With ``output.pcap``, the core writes its captures into
    ``directory/pcap`` as the run goes (an OSError names a file it cannot
    write)."""
    trace = scenario.resolved.get("trace") or {}
    texts = [read_input(f"trace.{key}", trace[key], trace[key]) if trace.get(key) else None
             for key in ("downlink", "uplink")]
    pcap = scenario.resolved["output"].get("pcap", False)
    try:
        if pcap and directory is not None:
            return _core.Simulation(scenario.resolved_json(), *texts, pcap_dir=str(directory / PCAP_DIR))
        return _core.Simulation(scenario.resolved_json(), *texts)
    except ValueError as e:
        raise ScenarioError(str(e)) from None


def stream_run(scenario: Scenario, directory: Path, *, progress: bool = False,
               drain_rows: int = DRAIN_ROWS, simulation: Any = None) -> StreamedRun:
    """Runs `scenario`, writing one Parquet file per table into `directory`
    as the rows come. Returns the :class:`StreamedRun` (close it when its
    data has been used). `simulation` runs it instead of the core's own
    (an object with ``Simulation``'s ``run_until``, ``rows_held``,
    ``drain``, ``finish``, ``now_s`` and ``end_s``: a policy driving a
    flow, ``xrc.gym.PolicyDriver``)."""
    sim = core_simulation(scenario, directory) if simulation is None else simulation
    flow_ids = [f["id"] for f in scenario.resolved["flows"]]
    run = StreamedRun(directory, len(flow_ids))
    sinks: dict[str, TableSink] = {}
    writer = BackgroundWriter()

    def consume(raw_tables, mode_names) -> None:
        tables = _decode(raw_tables, mode_names)
        for name, cols in tables.items():
            if name not in sinks:
                sinks[name] = TableSink(directory / f"{name}.parquet", name, flow_ids, writer=writer)
            sinks[name].add(cols)
        run.take(tables)

    end = sim.end_s
    t0 = time.perf_counter()
    bar = _progress.bar(progress, total=round(end, 3), unit="sim s", delay=2.0,
                        bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} sim s [{elapsed}<{remaining}]")
    step = max(end / 200.0, 0.05)
    t = min(step, end)
    done = False
    taken = 0
    try:
        while not done:
            # Returns at `t`, at the end, or once `drain_rows` rows are held.
            c0 = time.perf_counter()
            done = sim.run_until(t, max_rows=drain_rows)
            stopping.check()   # a SIGTERM put off or swallowed since the last step
            spent = time.perf_counter() - c0
            run.core_time_s += spent
            run.events_time_s += spent
            if sim.rows_held >= drain_rows:
                c0 = time.perf_counter()
                d = sim.drain()
                run.core_time_s += time.perf_counter() - c0
                consume(d["tables"], d["mode_names"])
                taken += 1
                if taken % TRIM_EVERY == 0:
                    # The batches are freed once written, but glibc keeps
                    # freed memory (one heap per thread, and the Parquet
                    # writer is one): 180 to 380 MB over 4e4 simulated s.
                    trim_heap()
            elif not done:
                t = min(t + step, end)
            if bar is not None:
                bar.update(round(min(sim.now_s, end), 3) - bar.n)
        c0 = time.perf_counter()
        raw = sim.finish()
        run.core_time_s += time.perf_counter() - c0
        run.wall_time_s = time.perf_counter() - t0
        consume(raw["tables"], raw["mode_names"])
        for name in sorted(sinks):
            sinks[name].close()
            run.files.append(f"{name}.parquet")
            run.rows[name] = sinks[name].rows
        writer.close()
    except ValueError as e:
        _abandon(writer)
        run.close()
        # The core stopped the run (more in flight than it holds).
        raise ScenarioError(str(e)) from None
    except BaseException:
        _abandon(writer)
        run.close()
        raise
    finally:
        if bar is not None:
            bar.close()
    run.events = int(raw["events"])
    from .runner import exact_seconds

    run.sim_time_s = exact_seconds(raw["sim_time_s"])
    run.finish()
    trim_heap()
    return run
