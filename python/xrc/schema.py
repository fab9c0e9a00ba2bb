"""The JSON Schema of scenario files, for editors (``xrc schema``).

Nothing here is maintained by hand beside the core:

1. **Structure, types, defaults, docs**: the core derives the schema of its
   configuration types with schemars (``xrc-core/src/scenario/schema.rs``):
   field names, types, required fields, defaults, tagged variants and the
   doc comments, from the same serde attributes and comments that
   deserialize and document a scenario.
2. **The front end's surface** on top of the core's: per-scheme parameter
   tables (``[flows.xrc]``, ``[cc.cubic]``, each the core's schema of that
   scheme's parameters), ``cc`` as one of the core's schemes, and
   ``cc_params`` checked against the flow's scheme (:mod:`xrc.scenario`).
3. **Ranges**: the validator's, asked from the validator. For every
   numeric field of a set of valid scenarios covering every section and
   variant, the field is set far out of range and the core's error message
   ("``field must be in [lo, hi], got v``", ``1..=15``, "at most",
   "at least", "a positive number") gives the bound. A bound that differs
   between two base scenarios depends on another field (``rwnd_bytes``
   at least ``mss``) and is left to the validator; so are checks across
   fields (``stop_s`` after ``start_s``).

The schema shipped in the package (``xrc/data/scenario.schema.json``,
:func:`xrc.bundled.schema_path`) is this function's output; a test checks
they are equal, so a change to the core's configuration that is not
regenerated (``xrc schema --out python/xrc/data/scenario.schema.json``)
fails the tests.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from typing import Any, Iterator

from . import _core

#: The probes: far outside any range, but representable in each type.
_FLOAT_PROBES = (1e300, -1e300)
_INT_MAX = {"uint8": 255, "uint16": 65535, "uint32": 2**32 - 1, "uint64": 2**63, "uint": 2**63, "int64": 2**62}


def _defs_prefixed(schema: dict[str, Any], prefix: str) -> dict[str, Any]:
    """`schema` with its ``$defs`` renamed ``prefix.NAME`` (and refs to them)."""
    text = json.dumps(schema)
    for name in (schema.get("$defs") or {}):
        text = text.replace(f'"#/$defs/{name}"', f'"#/$defs/{prefix}.{name}"')
    return json.loads(text)


def _clean_docs(node: Any) -> None:
    """Doc comments as editors show them: one paragraph per blank line,
    Rust doc links as code spans."""
    if isinstance(node, dict):
        d = node.get("description")
        if isinstance(d, str):
            d = re.sub(r"\[`([^`]+)`\]", r"`\1`", d)
            node["description"] = "\n\n".join(" ".join(p.split()) for p in d.split("\n\n"))
        for v in node.values():
            _clean_docs(v)
    elif isinstance(node, list):
        for v in node:
            _clean_docs(v)


def raw() -> dict[str, Any]:
    """The core's schemas: ``{"scenario": ..., "cc": {scheme: ...}}``."""
    return json.loads(_core.json_schemas())


# ---------------------------------------------------------------- ranges

def _bases() -> list[dict[str, Any]]:
    """Valid scenarios that together hold every section, variant and scheme."""
    cellular = {
        "seed": 1, "duration_s": 10.0, "topology": "cellular",
        "internet": {"rate_mbps": 100.0, "reverse_rate_mbps": 100.0, "buffer_bytes": 1_000_000},
        "cell": {"rlc": {"buffer_bytes": 1_000_000}, "net_assist": {"delay_ms": 5.0}},
        "ues": [{"channel": {"kind": "distance", "trajectory": {"kind": "fixed", "distance_m": 100.0},
                             "interference_dbm": -100.0, "fading_doppler_hz": 10.0}}],
        "flows": [{"ue": 0, "cc": "xrc", "stop_s": 9.0, "tcp": {"rwnd_bytes": 1_000_000}}],
    }
    docs = [cellular]

    def variant(path: list[str | int], value: Any, base=cellular) -> dict[str, Any]:
        d = copy.deepcopy(base)
        node: Any = d
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        return d

    ch = ["ues", 0, "channel"]
    docs += [
        variant(ch, {"kind": "fixed_cqi", "cqi": 10}),
        variant(ch, {"kind": "cqi_trace", "points": [[0.0, 10], [100.0, 12]]}),
        variant(ch + ["pathloss"], {"model": "free_space", "frequency_mhz": 2000.0}),
        variant(ch + ["pathloss"], {"model": "log_distance", "l0_db": 40.0, "exponent": 3.0}),
        variant(ch + ["pathloss"], {"model": "tr38901", "scenario": "umi", "los": True, "frequency_ghz": 28.0,
                                    "bs_height_m": 10.0, "ue_height_m": 1.5}),
        variant(ch + ["blockage"], {"mean_clear_ms": 1000.0, "mean_blocked_ms": 200.0, "loss_db": 10.0}),
        variant(ch + ["trajectory"], {"kind": "schedule", "points": [[0.0, 100.0], [1.0, 200.0]]}),
        variant(ch + ["trajectory"], {"kind": "random_jumps", "interval_s": 1.0, "min_m": 10.0, "max_m": 20.0}),
        variant(ch, {"kind": "distance", "trajectory": {"kind": "path", "points": [[0.0, 100.0], [1.0, 200.0]]},
                     "shadowing_std_db": 6.0, "shadowing_decorrelation_m": 50.0}),
        variant(["cell"], {"rat": "nr", "bandwidth_mhz": 100, "rlc": {"buffer_bytes": 1_000_000},
                           "net_assist": {"delay_ms": 5.0}, "harq": {"k1_slots": 4, "processes": 16},
                           "nr": {"numerology": 1, "tdd_pattern": "DDDSU", "frequency_range": "fr1"}}),
        variant(["flows", 0, "traffic"], {"kind": "transfer", "size_bytes": 100_000}),
        variant(["flows", 0, "traffic"], {"kind": "video"}),
        {"seed": 1, "duration_s": 10.0, "topology": "trace", "internet": {"delay_ms": 5.0},
         "trace": {"downlink": "x.down", "uplink": "x.up", "uplink_buffer_packets": 100,
                   "uplink_buffer_bytes": 100_000, "buffer_packets": 100},
         "flows": [{"ue": 0, "cc": "xrc"}]},
        {"seed": 1, "duration_s": 10.0, "topology": "wired", "internet": {"rate_mbps": 10.0},
         "flows": [{"cc": "cubic"}]},
    ]
    return docs


def _resolve(doc: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    try:
        return json.loads(_core.resolve(json.dumps(doc))), ""
    except ValueError as e:
        return None, str(e)


def _leaves(node: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every number (not bool) in a resolved scenario with its path; lists
    other than ``ues`` and ``flows`` (points, tuples) are not entered, nor
    the scheme parameters (:func:`_cc_ranges` probes those per scheme)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k != "cc_params":
                yield from _leaves(v, path + (k,))
    elif isinstance(node, list):
        if path and path[-1] in ("ues", "flows"):
            for i, v in enumerate(node):
                yield from _leaves(v, path + (i,))
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, node


def _set(doc: dict[str, Any], path: tuple, value: Any) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    node: Any = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return d


_NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?"


def parse_bounds(field: str, message: str) -> dict[str, float] | None:
    """The bounds a validator message states for `field` (its last path
    component), as JSON Schema keywords; ``None`` if it states none."""
    i = message.find(f"{field} must be")
    if i < 0:
        return None
    m = message[i + len(field):]
    g = re.match(rf" must be in ([\[(])({_NUM}), ({_NUM})([\])])", m)
    if g:
        lo, hi = float(g.group(2)), float(g.group(3))
        return {("minimum" if g.group(1) == "[" else "exclusiveMinimum"): lo,
                ("maximum" if g.group(4) == "]" else "exclusiveMaximum"): hi}
    g = re.match(rf" must be in ({_NUM})\.\.=({_NUM})", m)
    if g:
        return {"minimum": float(g.group(1)), "maximum": float(g.group(2))}
    g = re.match(rf" must be at most ({_NUM})", m)
    if g:
        return {"maximum": float(g.group(1))}
    g = re.match(rf" must be at least ({_NUM})", m)
    if g:
        return {"minimum": float(g.group(1))}
    if m.startswith(" must be a positive number"):
        return {"exclusiveMinimum": 0.0}
    if re.match(r" must be a number >= 0", m):
        return {"minimum": 0.0}
    return None


def probe_ranges() -> dict[tuple, dict[str, float]]:
    """Bounds by path (indices as 0) that every base scenario agrees on."""
    found: dict[tuple, dict[str, float] | None] = {}
    for base in _bases():
        for perturbed in (False, True):
            doc = copy.deepcopy(base)
            if perturbed:
                # Bounds that follow another field show up as a difference.
                doc["duration_s"] = 123.0
                for f in doc["flows"]:
                    f.setdefault("tcp", {})["mss"] = 536
            resolved, err = _resolve(doc)
            if resolved is None:
                raise RuntimeError(f"a base scenario of the schema's range probe is invalid: {err}")
            for path, value in _leaves(resolved):
                key = tuple(0 if isinstance(k, int) else k for k in path)
                probes = _FLOAT_PROBES if isinstance(value, float) else (2**63, 2**32 - 1, 65535, 255, 0)
                bounds: dict[str, float] = {}
                for p in probes:
                    _, err = _resolve(_set(resolved, path, p))
                    b = parse_bounds(str(path[-1]), err) if err else None
                    if b:
                        bounds.update(b)
                    if "minimum" in bounds or "exclusiveMinimum" in bounds:
                        if "maximum" in bounds or "exclusiveMaximum" in bounds:
                            break
                if key in found and found[key] != (bounds or None):
                    found[key] = None  # depends on the scenario: the validator's business
                elif key not in found:
                    found[key] = bounds or None
    return {k: v for k, v in found.items() if v}


# ---------------------------------------------------------------- assembly

def _deref(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = root["$defs"][node["$ref"].split("/")[-1]]
    return node


def _object_nodes(root: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas `node` may be (through refs, optional and tagged unions)."""
    node = _deref(root, node)
    out = []
    for key in ("anyOf", "oneOf"):
        for sub in node.get(key, []):
            out += _object_nodes(root, sub)
    if "properties" in node or node.get("type") == "object":
        out.append(node)
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        out += _object_nodes(root, node["items"])
    return out


def _property_nodes(root: dict[str, Any], path: tuple) -> list[dict[str, Any]]:
    """The property schemas a path (``("cell", "uplink", "sr_period_ms")``)
    reaches, following every variant that has the next key."""
    nodes = [root]
    for k in path:
        nxt = []
        for n in nodes:
            if isinstance(k, int):
                nxt.append(n)  # an index: `n` is already the array's items
                continue
            for obj in _object_nodes(root, n):
                prop = (obj.get("properties") or {}).get(k)
                if prop is not None:
                    nxt.append(prop)
        nodes = nxt
    return nodes


def known_fields(path: tuple) -> set[str] | None:
    """The field names a scenario may hold at `path` (``("flows", 0)``; ``()``
    for the top), by the shipped schema; None where it cannot tell (a table
    of free-form names such as ``cc_params``, checked by the core against
    the flow's scheme)."""
    root = _shipped()
    names: set[str] = set()
    for node in _property_nodes(root, path):
        for obj in _object_nodes(root, node):
            if "properties" not in obj and obj.get("additionalProperties") is not False:
                return None
            names.update(obj.get("properties") or {})
    return names


def is_list(path: tuple) -> bool:
    """Whether a scenario may hold a list at `path` (``("flows",)``), by the
    shipped schema: where an index may follow."""
    root = _shipped()

    def arrays(node: dict[str, Any]) -> bool:
        node = _deref(root, node)
        t = node.get("type")
        if t == "array" or (isinstance(t, list) and "array" in t):
            return True
        return any(arrays(sub) for key in ("anyOf", "oneOf") for sub in node.get(key, []))

    return any(arrays(n) for n in _property_nodes(root, path))


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, Any]:
    from .bundled import schema_path

    return json.loads(schema_path().read_text())


def generate() -> dict[str, Any]:
    """The editor's schema of scenario files (see the module doc)."""
    core = raw()
    root = copy.deepcopy(core["scenario"])
    schemes = list(_core.schemes())
    defs = root.setdefault("$defs", {})
    for name, s in core["cc"].items():
        s = _defs_prefixed(s, f"cc.{name}")
        defs.update(s.pop("$defs", {}))
        s.pop("$schema", None)
        s.pop("title", None)
        defs[f"cc.{name}"] = s

    # Ranges, asked from the validator. The scheme parameters are reached
    # through cc_params with the flow's scheme.
    for path, bounds in sorted(probe_ranges().items(), key=lambda kv: [str(x) for x in kv[0]]):
        for node in _property_nodes(root, path):
            node.update(bounds)
    for scheme, bounds_by_param in _cc_ranges(schemes).items():
        props = defs[f"cc.{scheme}"].get("properties", {})
        for param, bounds in bounds_by_param.items():
            if param in props:
                props[param].update(bounds)

    # The front end's surface (xrc.scenario).
    flow = defs["FlowConfig"]
    flow["properties"]["cc"] = {
        "description": "The congestion control (`xrc doc NAME` prints its page).",
        "type": "string", "enum": schemes,
    }
    flow["properties"]["cc_params"] = {
        "description": "The scheme's parameters (or give them as a [flows.SCHEME] table, or for every flow of a "
                       "scheme as [cc.SCHEME]); unknown names are refused.",
        "type": "object",
    }
    for scheme in schemes:
        flow["properties"][scheme] = {"$ref": f"#/$defs/cc.{scheme}",
                                      "description": f"Parameters of {scheme} for this flow (needs cc = \"{scheme}\")."}
    flow["allOf"] = [{"if": {"properties": {"cc": {"const": s}}, "required": ["cc"]},
                      "then": {"properties": {"cc_params": {"$ref": f"#/$defs/cc.{s}"}}}} for s in schemes]
    root["properties"]["cc"] = {
        "description": "Default parameters per scheme for every flow using it ([cc.cubic] beta = 717, ...); a flow's "
                       "own table or cc_params overrides them.",
        "type": "object", "additionalProperties": False,
        "properties": {s: {"$ref": f"#/$defs/cc.{s}"} for s in schemes},
    }
    root["title"] = "xrc scenario"
    root["description"] = ("A scenario for xrc (docs/scenarios.md). Generated by `xrc schema` from the core's "
                           "configuration types and its validator; do not edit.")
    _clean_docs(root)
    return root


def _cc_ranges(schemes: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """Bounds of every scheme's parameters, asked from the validator
    (:func:`xrc._core.resolve_cc`)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for scheme in schemes:
        params = json.loads(_core.resolve_cc(scheme, "null"))
        found = {}
        for name, value in params.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            probes = _FLOAT_PROBES if isinstance(value, float) else (2**63, 2**32 - 1, 65535, 255, 0)
            bounds: dict[str, float] = {}
            for p in probes:
                try:
                    _core.resolve_cc(scheme, json.dumps({name: p}))
                except ValueError as e:
                    b = parse_bounds(name, str(e))
                    if b:
                        bounds.update(b)
            if bounds:
                found[name] = bounds
        out[scheme] = found
    return out


def dumps(schema: dict[str, Any] | None = None) -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(generate() if schema is None else schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
