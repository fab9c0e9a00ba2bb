"""Scenario files: TOML in, a resolved scenario out.

A scenario is a TOML file (or the JSON a run directory records as
``scenario.resolved.json``, or a run directory itself, which re-runs what
ran there). Loading it:

1. parses the TOML (``tomllib``; a UTF-8 byte order mark is skipped; dates
   and times, NaN, infinities and integers beyond 64 bits are refused, no
   field takes one);
2. applies ``--set PATH=VALUE`` overrides (``flows.0.cc=cubic``);
3. moves per-scheme parameter tables into the flow's ``cc_params``: a flow
   may carry ``[flows.xrc]``-style tables for any scheme, and top-level
   ``[cc.<scheme>]`` tables give defaults for every flow of that scheme;
4. makes file paths absolute, relative to the scenario file;
5. asks the core to resolve it: the core's configuration types are the
   schema (unknown keys are rejected), they fill in defaults, and the
   core's validation checks every value.

Every error is a :class:`ScenarioError` naming the field by its dotted
path and quoting the value.
"""

from __future__ import annotations

import copy
import datetime
import difflib
import json
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _core


class ScenarioError(ValueError):
    """A scenario that cannot run. ``str()`` names the field and the value."""


@dataclass
class Scenario:
    """A resolved scenario ready to run."""

    path: Path | None
    source_text: str
    overrides: list[str]
    resolved: dict[str, Any]
    #: Input files the scenario read: field (``trace.downlink``,
    #: ``trace.uplink``, ``ues.0.channel.file``) -> absolute path.
    inputs: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.resolved["name"]

    @property
    def seed(self) -> int:
        return self.resolved["seed"]

    def resolved_json(self) -> str:
        return json.dumps(self.resolved, sort_keys=True)


def parse_value(text: str) -> Any:
    """Parses an override value as a TOML value; bare words are strings and
    ``null`` removes the key (the default applies)."""
    if text.strip().lower() in ("null", "none"):
        return None
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(doc: dict[str, Any], assignment: str) -> None:
    """Applies one ``PATH=VALUE`` override to ``doc`` in place."""
    if "=" not in assignment:
        raise ScenarioError(f"--set {assignment!r}: expected PATH=VALUE, for example flows.0.cc=cubic")
    path, _, raw = assignment.partition("=")
    path = path.strip()
    if not path:
        raise ScenarioError(f"--set {assignment!r}: the path is empty")
    keys = path.split(".")
    if any(not k.strip() for k in keys):
        # `flows.0.=null` removed a field named "" and passed.
        raise ScenarioError(f"--set {path}: a field name in the path is empty (a dot at its start or end, or two "
                            f"in a row); for example flows.0.cc=cubic")
    value = parse_value(raw.strip())
    node: Any = doc
    walked: list[str] = []
    for i, key in enumerate(keys):
        last = i == len(keys) - 1
        here = ".".join(walked + [key])
        if isinstance(node, list):
            if not (key.isascii() and key.isdigit()):
                raise ScenarioError(f"--set {path}: {'.'.join(walked)} is a list; {key!r} is not an index")
            idx = int(key)
            if idx >= len(node):
                raise ScenarioError(f"--set {path}: {'.'.join(walked)} has {len(node)} entries, there is no index {idx}")
            if last:
                node[idx] = value
                return
            node = node[idx]
        elif isinstance(node, dict):
            if last:
                if value is None:
                    if key not in node:
                        _check_known(doc, path, keys)
                    node.pop(key, None)
                else:
                    node[key] = value
                return
            if key not in node:
                node[key] = {}
            node = node[key]
        else:
            raise ScenarioError(f"--set {path}: {'.'.join(walked) or '(top)'} is a value, not a table; cannot set {here}")
        walked.append(key)


def _check_known(doc: dict[str, Any], path: str, keys: list[str]) -> None:
    """`--set PATH=null` of a field the document does not set: the default
    already applies, unless the path names no field at all (a typo such as
    ``flows.0.ccc``), which is refused rather than ignored. The names of a
    flow's ``cc_params`` are any scheme's parameters."""
    from .schema import is_list, known_fields

    parts: list = [int(k) if k.isascii() and k.isdigit() else k for k in keys]
    for i, key in enumerate(parts):
        at = parts[:i]
        if isinstance(key, int):
            if known_fields(tuple(at)) is not None and not is_list(tuple(at)):
                where = ".".join(str(k) for k in at) or "the top level"
                raise ScenarioError(f"--set {path}=null: {where} is a table, not a list; {key} is not an index "
                                    f"of it, so nothing is reset")
            continue
        if len(at) == 3 and at[0] == "flows" and at[2] == "cc_params":
            # Any scheme's: a later override may change the flow's scheme.
            known = set().union(*(known_fields(("cc", name)) or set() for name in known_fields(("cc",)) or ()))
        else:
            known = known_fields(tuple(at))
        if not known:
            return
        if key in known:
            continue
        where = ".".join(str(k) for k in parts[:i]) or "the top level"
        near = difflib.get_close_matches(key, sorted(known), n=3)
        if near:
            hint = f"; did you mean {', '.join(near)}?"
        elif len(known) <= 15:
            hint = f"; the fields there are {', '.join(sorted(known))}"
        else:
            hint = f" (`xrc schema` lists its {len(known)} fields)"
        raise ScenarioError(f"--set {path}=null: there is no field {key!r} at {where} to reset{hint}")


#: Integers the core's fields can hold: i64 and u64 together.
_INT_RANGE = (-(2**63), 2**64 - 1)


def _representable(node: Any, path: str = "") -> None:
    """Refuses values no scenario field takes and JSON cannot carry to the
    core: TOML dates and times, NaN and infinities (JSON has no form for
    them, so the core would only say "expected value"), and integers beyond
    64 bits (which would reach it as a float: "floating point `1e+23`")."""
    where = path or "(top)"
    if isinstance(node, (datetime.date, datetime.time)):
        raise ScenarioError(f"{where}: TOML dates and times are not accepted here, got {node.isoformat()}")
    if isinstance(node, float) and not math.isfinite(node):
        raise ScenarioError(f"{where}: must be a finite number, got {node}")
    if isinstance(node, int) and not isinstance(node, bool) and not _INT_RANGE[0] <= node <= _INT_RANGE[1]:
        raise ScenarioError(f"{where}: {node} is out of range for any field (integers are within "
                            f"[{_INT_RANGE[0]}, {_INT_RANGE[1]}])")
    if isinstance(node, dict):
        for k, v in node.items():
            _representable(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _representable(v, f"{path}.{i}" if path else str(i))


def read_input(field: str, given: str, path: str) -> str:
    """Reads an input file named by a scenario field as text (bytes that are
    not UTF-8 become U+FFFD, which the parsers then name by line)."""
    try:
        if not Path(path).is_file():
            raise ScenarioError(f"{field}: file not found: {given!r} (looked at {path})")
        return Path(path).read_text(errors="replace")
    except OSError as e:
        raise ScenarioError(f"{field}: cannot read {given!r}: {e.strerror or e}") from None


def _absolute(base: Path, p: str, field: str = "path") -> str:
    if "\0" in p:
        raise ScenarioError(f"{field}: a file name cannot hold a NUL character, got {p!r}")
    q = Path(p).expanduser()
    if not q.is_absolute():
        q = base / q
    return str(q.resolve())


def _trace_file(base: Path, field: str, given: str) -> str:
    """Resolves a Mahimahi trace's path (relative to the scenario) and checks
    the file parses; returns the absolute path."""
    p = _absolute(base, given, field)
    text = read_input(field, given, p)
    try:
        _core.check_trace(text)
    except ValueError as e:
        raise ScenarioError(f"{field} ({given}): {e}") from None
    return p


def _normalize(doc: dict[str, Any], base: Path) -> dict[str, str]:
    """Applies scheme tables and absolute paths; returns the input files read."""
    inputs: dict[str, str] = {}
    schemes = set(_core.schemes())
    global_cc = doc.pop("cc", {}) or {}
    if not isinstance(global_cc, dict):
        raise ScenarioError(f"cc: expected a table of per-scheme parameters, got {global_cc!r}")
    for name, table in global_cc.items():
        if name not in schemes:
            raise ScenarioError(f"cc.{name}: unknown congestion control {name!r}; known: {', '.join(sorted(schemes))}")
        if not isinstance(table, dict):
            raise ScenarioError(f"cc.{name}: expected a table of parameters, got {table!r}")
        try:
            _core.resolve_cc(name, json.dumps(table))
        except ValueError as e:
            raise ScenarioError(f"cc.{name}: {e}") from None
    flows = doc.get("flows")
    if isinstance(flows, list):
        for k, f in enumerate(flows):
            if not isinstance(f, dict):
                raise ScenarioError(f"flows.{k}: expected a table, got {f!r}")
            per_scheme = {n: f.pop(n) for n in list(f) if n in schemes}
            cc = f.get("cc")
            for name in per_scheme:
                if isinstance(cc, str) and name != cc:
                    raise ScenarioError(f"flows.{k}.{name}: parameters for {name!r}, but the flow uses cc = {cc!r}; "
                                        f"remove the table or set flows.{k}.cc = {name!r}")
                if "cc_params" in f:
                    raise ScenarioError(f"flows.{k}.{name}: give the parameters either as cc_params or as a "
                                        f"[flows.{name}] table, not both")
            for name, table in per_scheme.items():
                if not isinstance(table, dict):
                    raise ScenarioError(f"flows.{k}.{name}: expected a table of parameters, got {table!r}")
                try:
                    _core.resolve_cc(name, json.dumps({**global_cc.get(name, {}), **table}))
                except ValueError as e:
                    raise ScenarioError(f"flows.{k}.{name}: {e}") from None
            if isinstance(cc, str) and "cc_params" not in f:
                f["cc_params"] = {**global_cc.get(cc, {}), **per_scheme.get(cc, {})}
    trace = doc.get("trace")
    if isinstance(trace, dict):
        for key in ("downlink", "uplink"):
            if isinstance(trace.get(key), str):
                trace[key] = inputs[f"trace.{key}"] = _trace_file(base, f"trace.{key}", trace[key])
    ues = doc.get("ues")
    if isinstance(ues, list):
        for k, u in enumerate(ues):
            ch = u.get("channel") if isinstance(u, dict) else None
            if isinstance(ch, dict) and isinstance(ch.get("file"), str):
                p = _absolute(base, ch["file"], f"ues.{k}.channel.file")
                read_input(f"ues.{k}.channel.file", ch["file"], p)
                ch["file"] = p
                inputs[f"ues.{k}.channel.file"] = p
    return inputs


def load_text(text: str, *, base: Path, overrides: list[str] | None = None, seed: int | None = None,
              path: Path | None = None, json_text: bool = False) -> Scenario:
    """Loads a scenario from TOML text (or JSON text, as a run directory's
    ``scenario.resolved.json``). Raises :class:`ScenarioError`."""
    overrides = list(overrides or [])
    text = text.removeprefix("\ufeff")
    if json_text:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise ScenarioError(f"not valid JSON: {e}") from None
        except RecursionError:
            raise ScenarioError("not a scenario: tables or lists nested too deeply") from None
        if not isinstance(doc, dict):
            raise ScenarioError("a JSON scenario is an object of fields")
    else:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"not valid TOML: {e}") from None
        except RecursionError:
            raise ScenarioError("not a scenario: tables or lists nested too deeply") from None
    for o in overrides:
        apply_override(doc, o)
    if seed is not None:
        doc["seed"] = seed
    _representable(doc)
    if "seed" not in doc:
        raise ScenarioError("seed: missing; every run needs a master seed (give `seed = N` in the scenario or --seed N)")
    if "name" not in doc and path is not None:
        doc["name"] = path.stem
    inputs = _normalize(doc, base)
    try:
        resolved_json = _core.resolve(json.dumps(doc))
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    return Scenario(path=path, source_text=text, overrides=overrides, resolved=json.loads(resolved_json),
                    inputs=inputs)


def load(path: str | Path, *, overrides: list[str] | None = None, seed: int | None = None) -> Scenario:
    """Loads a scenario file: TOML, JSON (``.json``, e.g. a run directory's
    ``scenario.resolved.json``), or a run directory (what ran there). Raises
    :class:`ScenarioError`."""
    p = Path(path)
    try:
        if p.is_dir() and (p / "scenario.resolved.json").is_file():
            p = p / "scenario.resolved.json"
        if p.is_dir():
            raise ScenarioError(f"{str(path)!r} is a directory but not a run directory (no scenario.resolved.json); "
                                "give a scenario file or a run directory")
        if not p.exists():
            # A bundled scenario's name, as `xrc run` and `xrc.run` take
            # it (`xrc.load` said "not found" and suggested the very name).
            from .bundled import find_scenario, not_found

            bundled = find_scenario(str(path))
            if bundled is None:
                raise ScenarioError(not_found(str(path)))
            p = bundled
        regular = p.is_file()
        text = _read_bounded(p).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"cannot read scenario {str(path)!r}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ScenarioError(f"cannot read scenario {str(path)!r}: {e.strerror or e}") from None
    if not regular and not text.strip():
        raise ScenarioError(f"scenario {str(path)!r} is not a regular file and gave no text "
                            "(a device, or a pipe with no writer)")
    # A pipe (`xrc run <(make-scenario)`) has no directory of its own:
    # relative trace paths are taken from the working directory.
    sc = load_text(text, base=p.resolve().parent if regular else Path.cwd(), overrides=overrides, seed=seed,
                   path=p, json_text=p.suffix.lower() == ".json")
    if regular:
        _check_recorded_inputs(p, sc)
    return sc


def _check_recorded_inputs(p: Path, sc: "Scenario") -> None:
    """A scenario of a run directory (``RUN/scenario.toml``,
    ``RUN/scenario.resolved.json``, or ``RUN``) is what ran there: an input
    file (a trace, a CQI file) whose contents changed since would silently
    run something else (goodput 22.67 became 11.60 Mbit/s), so it is
    refused, naming the file and both digests. The run's ``metadata.json``
    records each input's SHA-256."""
    meta = p.resolve().parent / "metadata.json"
    if p.name not in ("scenario.toml", "scenario.resolved.json") or not meta.is_file():
        return
    from .rundir import read_json

    try:
        recorded = read_json(meta).get("inputs") or {}
    except ScenarioError:
        return
    if not isinstance(recorded, dict):
        return
    import hashlib

    for field_, path in sc.inputs.items():
        want = (recorded.get(field_) or {}).get("sha256") if isinstance(recorded.get(field_), dict) else None
        if not want:
            continue
        try:
            got = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError as e:
            raise ScenarioError(f"{field_}: {path}: {e.strerror or e} (the run in {str(p.parent)!r} read it)") from None
        if got != want:
            raise ScenarioError(f"{field_}: {path} changed since the run in {str(p.parent)!r} read it (SHA-256 then "
                                f"{want[:16]}..., now {got[:16]}...); that run cannot be repeated as it ran: restore "
                                "the file, or run the scenario anew into another directory")


#: The largest scenario file read, bytes (a scenario is a few kB; a device
#: such as /dev/zero never ends).
MAX_SCENARIO_BYTES = 64 << 20


def _read_bounded(p: Path) -> bytes:
    """The file's bytes, at most :data:`MAX_SCENARIO_BYTES`. Opened without
    blocking, so that a named pipe with no writer reads as empty instead of
    waiting for one; then read blocking, so that a pipe with a writer
    (process substitution) gives all its text."""
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            size += len(b)
            if size > MAX_SCENARIO_BYTES:
                raise ScenarioError(f"scenario {str(p)!r} is larger than {MAX_SCENARIO_BYTES >> 20} MiB")
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def from_dict(doc: dict[str, Any], *, base: Path | None = None) -> Scenario:
    """Resolves a scenario given as a Python dict (for sweeps and tests)."""
    doc = copy.deepcopy(doc)
    _representable(doc)
    if "seed" not in doc:
        raise ScenarioError("seed: missing; every run needs a master seed")
    inputs = _normalize(doc, base or Path.cwd())
    try:
        resolved_json = _core.resolve(json.dumps(doc))
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    return Scenario(path=None, source_text="", overrides=[], resolved=json.loads(resolved_json), inputs=inputs)
