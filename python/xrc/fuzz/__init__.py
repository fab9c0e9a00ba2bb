"""Fuzzing the front end and the core.

    xrc fuzz --cases N --seed S --out DIR [--jobs J] [--run-fraction F]
    xrc fuzz --seed S --case K --out DIR          (replay one case)

A *case* is what a user could hand xrc: a scenario file, ``--set``
overrides and the trace or CQI files it names. Cases are generated from
``(seed, index)`` alone, so a campaign is reproducible and any case can be
replayed by its number. Six kinds:

- ``mutate``: a scenario (the bundled ones and a few built-in small ones)
  with one to three structural mutations: a field deleted, retyped (dates,
  strings, tables, arrays, booleans), set to an extreme number (0,
  negatives, 1e-300, 1e300, NaN, infinities, integers beyond 64 bits) or
  scaled far out of its usual range; lists emptied or grown; unknown keys;
  another topology, channel or congestion control; scheme parameters;
- ``override``: an unchanged scenario with one to three ``--set PATH=VALUE``
  strings, paths taken from the resolved scenario (every default
  explicit) or malformed, values from the same extremes as TOML text;
- ``trace``: the trace topology with generated Mahimahi traces (random
  lines, CR and CRLF line ends, a BOM, times that overflow, empty files,
  bytes that are not UTF-8), sometimes an uplink trace too;
- ``cqi``: a cellular scenario whose UE reads a generated CQI file;
- ``text``: a scenario's TOML text with bytes flipped, spans cut or
  repeated, line ends changed;
- ``edge``: valid values at the edges of their ranges (the least and the
  largest, just inside them, their middle), on one to four fields or on
  the parameters of a flow's (possibly changed) congestion control. The
  ranges are learnt from the core itself: each generator asks it about
  values beyond every numeric field and reads "must be in [lo, hi]".

Each case is validated in process through the same path as ``xrc run``
(:func:`xrc.scenario.load`: TOML, overrides, the core's own config types
and validation); a fraction (``--run-fraction``), made short by setting
``duration_s`` to at most 2 s before mutating, is also run to completion
through :func:`xrc.runner.run_to_dir` (Parquet files and ``summary.json``,
no plots); a few of those run twice to check that the same seed gives
byte-identical outputs, and a few go through ``xrc validate`` itself.

A case *fails* on:

- ``panic``: the core panicked (PyO3 raises ``PanicException``);
- ``traceback``: any exception other than :class:`ScenarioError` (a
  message naming the field) or :class:`OutputError`;
- ``crash``: the worker process died (an abort, a stack overflow, a signal);
- ``hang``: the case took more than ``--case-timeout`` seconds of wall time
  (a timer in the worker interrupts the run between the core's ~20 ms
  steps; a worker stuck in native code is killed by the parent after ten
  seconds more);
- ``memory``: the worker's resident memory passed ``--max-rss-mb``;
- ``invariant``: during a run, ``World::check_invariants`` failed (packet
  and byte conservation, a sender's scoreboard, sequence numbers or
  window, in-order delivery to the application);
- ``absurd``: ``summary.json`` holds NaN or an infinity, a negative number,
  a fraction or utilization above 1, Jain's index above 1, a UE delivered
  more bits than its radio carried, flows delivered more than their UE
  received or than the Internet link's rate allows, or the throughput bins
  do not add up to the bytes delivered;
- ``nondeterministic``: two runs of the same case differ;
- ``message``: a rejection with an empty message or a JSON syntax error
  from the core (which cannot name the value), or ``xrc validate``
  printing a traceback or exiting with other than 0 or 2.

A run that takes more than ``--max-events`` events (a legitimately large
simulation: a 1 Tbit/s link, windows of a million segments) is stopped and
counted as ``heavy``, not as a failure. At the core's usual millions of
events per second, a ``hang`` then means a cost per event far above it,
or no progress at all.

Each failure is written to ``OUT/failures/<index>-<outcome>/`` as a
reproducer: the scenario file, its input files, ``case.json`` (outcome,
message, overrides) and ``repro.sh`` with the ``xrc`` commands that show
it. ``OUT/report.json`` has the counts and the wall time.
"""

from __future__ import annotations

from .campaign import Report, campaign, default_scenarios, main, write_reproducer
from .scenarios import (BUILTIN, FAILURES, KINDS, PASSING, Case, Generator, check_summary, execute, random_cqi_file,
                        random_trace, toml_dumps)

__all__ = ["BUILTIN", "FAILURES", "KINDS", "PASSING", "Case", "Generator", "Report", "campaign", "check_summary",
           "default_scenarios", "execute", "main", "random_cqi_file", "random_trace", "toml_dumps", "write_reproducer"]
