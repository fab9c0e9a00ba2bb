"""Scenario cases: what a user could hand xrc as a scenario (a file,
``--set`` overrides, the trace or CQI files it names), generated from
``(seed, index)``, and running one of them in a worker (the harness that
catches panics, hangs, broken invariants and absurd summaries). The
package's docstring (:mod:`xrc.fuzz`) describes the kinds and the
outcomes."""

from __future__ import annotations

import contextlib
import copy
import datetime
import io
import json
import math
import os
import random
import re
import shutil
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# ---------------------------------------------------------------------------
# Inputs: base scenarios and the values mutations draw from.

#: Small scenarios of every topology and channel kind; the bundled ones are
#: added when found. Names in ``files`` are written beside the scenario.
BUILTIN: dict[str, tuple[str, dict[str, bytes]]] = {
    "builtin/cell-2ue": ("""
name = "cell-2ue"
seed = 7
duration_s = 2.0
topology = "cellular"
[cell]
prbs = 25
scheduler = "pf"
[cell.harq]
bler = 0.1
[[ues]]
channel = { kind = "fixed_cqi", cqi = 12 }
[[ues]]
channel = { kind = "distance", trajectory = { kind = "random_jumps", interval_s = 0.5, min_m = 100.0, max_m = 2000.0 }, fading_doppler_hz = 20.0, shadowing_std_db = 4.0 }
[[flows]]
ue = 0
cc = "cubic"
[[flows]]
ue = 1
cc = "xrc"
start_s = 0.2
stop_s = 1.5
[[flows]]
ue = 1
cc = "bbr"
traffic = { kind = "transfer", size_bytes = 200000 }
""", {}),
    "builtin/wired": ("""
name = "wired"
seed = 2
duration_s = 2.0
topology = "wired"
[internet]
rate_mbps = 20.0
delay_ms = 10.0
buffer_packets = 50
reverse_rate_mbps = 5.0
[[flows]]
cc = "newreno"
tcp = { recovery = "newreno", pacing = true }
[[flows]]
cc = "vegas"
extra_rtt_ms = 30.0
""", {}),
    "builtin/trace": ("""
name = "trace"
seed = 4
duration_s = 2.0
topology = "trace"
[internet]
delay_ms = 10.0
[trace]
downlink = "down.trace"
uplink = "up.trace"
uplink_buffer_packets = 20
buffer_bytes = 60000
[[flows]]
cc = "xrc"
[[flows]]
cc = "copa"
start_s = 0.5
""", {"down.trace": b"".join(b"%d\n" % ms for ms in range(1, 101) for _ in range(ms % 4)) + b"100\n",
      "up.trace": b"".join(b"%d\n" % ms for ms in range(1, 51)) + b"50\n"}),
    "builtin/cqi": ("""
name = "cqi"
seed = 5
duration_s = 2.0
topology = "cellular"
[[ues]]
channel = { kind = "cqi_trace", file = "cqi.txt" }
[[flows]]
ue = 0
cc = "bbr3"
[[flows]]
ue = 0
cc = "cubic"
traffic = { kind = "video", period_s = 1.0, on_s = 0.3, rate_mbps = 5.0 }
""", {"cqi.txt": b"0 15\n200 3\n400 9\n800 1\n1200 15\n"}),
}

#: Numbers at and beyond every edge a field may have.
EXTREME_NUMBERS: list[Any] = [
    0, -1, 1, 2, 3, 7, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63,
    2**64 - 1, 2**64, 10**30, -(2**63), -(10**30),
    0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e-12, 1e-9, 1e-6, 1e-3, 0.001, 0.1, 0.5, 0.999, 1.0, 1.5, 2.5, 100.0,
    1e6, 1e9, 1e12, 1e15, 1e20, 1e300, -1e300, 1.7976931348623157e308, math.inf, -math.inf, math.nan,
]
SCALES = [0.0, 1e-9, 1e-6, 1e-3, 0.1, 0.5, 0.9, 1.1, 2.0, 10.0, 1e3, 1e6, 1e9]
STRINGS = ["", " ", "nan", "NaN", "inf", "-1", "0", "1e300", "cubic", "xrc", "bbr", "newreno", "cellular",
           "trace", "wired", "pf", "rr", "sack", "fixed_cqi", "distance", "cqi_trace", "bulk", "transfer", "video",
           "urban_macro", "../../etc/passwd", "/proc/self/mem", "/dev/zero", "\u2603", "a\tb", "x" * 300, "\u00a0"]  # noqa: repo-path (hostile input)
DATES = [datetime.date(1979, 5, 27), datetime.datetime(1979, 5, 27, 7, 32), datetime.time(7, 32),
         datetime.datetime(1979, 5, 27, 7, 32, tzinfo=datetime.timezone.utc)]
GARBAGE: list[Any] = [{}, [], [[]], [{}], {"a": {"b": [1, "x", {}]}}, [1, "two", 3.0], True, False,
                      {"kind": "bogus"}, [0.0, 1e300], {"": 1}]
#: ``--set`` value texts (parsed as TOML values by the front end).
VALUE_TEXTS = ["0", "-0", "-1", "1", "1e-300", "5e-324", "1e300", "1.8e308", "nan", "inf", "-inf", "+inf",
               "'nan'", '""', "99999999999999999999999", "-9223372036854775809", "18446744073709551615",
               "4294967295", "4294967296", "65536", "1979-05-27", "1979-05-27T07:32:00Z", "07:32:00", "[]",
               "[1, 2]", "{}", "{a = 1}", "true", "false", "null", "none", "cubic", "xrc", "bbr", "foo",
               '"unterminated', "= =", "", "0.000001", "1e-12", "1e12", "1e20", "0.5", "2.5", "[[1.0, 3]]",
               "{kind = 'fixed_cqi', cqi = 16}", "{kind = 'transfer', size_bytes = 0}"]
BAD_PATHS = ["", ".", "..", "flows.99.cc", "flows.-1.cc", "flows.x", "a.b.c.d.e", "seed.x", "ues.0.channel.kind.x",
             "duration_s.", " duration_s ", "flows.0.tcp.mss.0", "flows.0.", "cell..prbs", "ues.1000000000000.x",
             "output.bin_ms.x.y", "trace.downlink", "flows.0.xrc.bogus", "cc.xrc.budget_ms", "cc.cubic"]


def _scheme_params() -> dict[str, dict[str, Any]]:
    from .. import _core

    return {s: json.loads(_core.resolve_cc(s, "null")) for s in _core.schemes()}


def bundled_scenarios(directory: Path | None) -> dict[str, tuple[str, dict[str, bytes]]]:
    """The built-in bases plus every ``*.toml`` scenario under `directory`
    (with the files it names beside it), in a stable order."""
    bases = dict(BUILTIN)
    if directory is None or not directory.is_dir():
        return bases
    import tomllib

    for p in sorted(directory.rglob("*.toml")):
        text = p.read_text(encoding="utf-8-sig")
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            continue
        if "flows" not in doc:  # a sweep file, not a scenario
            continue
        files = {}
        for key in ("downlink", "uplink"):
            name = (doc.get("trace") or {}).get(key)
            if isinstance(name, str) and (p.parent / name).is_file():
                files[name] = (p.parent / name).read_bytes()
        bases[str(p.relative_to(directory))] = (text, files)
    return bases


def toml_dumps(doc: dict[str, Any]) -> str:
    """TOML text for any document a mutation can make (dates, NaN, integers
    beyond 64 bits, keys that need quoting): the project's own writer."""
    from .. import tomlw

    return tomlw.dumps(doc)


# ---------------------------------------------------------------------------
# Case generation.


@dataclass
class Case:
    seed: int
    index: int
    kind: str
    base: str
    #: The scenario file's bytes.
    scenario: bytes
    overrides: list[str]
    #: Files written beside the scenario (traces, CQI files).
    files: dict[str, bytes]
    #: Run to completion (after validation).
    run: bool
    #: Run twice and compare the outputs.
    twice: bool
    #: Also through ``xrc validate``.
    cli: bool
    #: Self-tests of the harness: "raise", "hang", "abort" or "" (none).
    sabotage: str = ""


KINDS = ["mutate", "override", "trace", "cqi", "text", "edge"]
KIND_WEIGHTS = [30, 20, 12, 8, 8, 22]


def _leaves(node: Any, path: str = "") -> list[tuple[str, Any]]:
    """(dotted path, value) of every leaf, and of every table and list."""
    out = []
    if isinstance(node, dict):
        if path:
            out.append((path, node))
        for k, v in node.items():
            out += _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        out.append((path, node))
        for i, v in enumerate(node):
            out += _leaves(v, f"{path}.{i}")
    else:
        out.append((path, node))
    return out


def _set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    """Sets a dotted path, creating tables; indexes past a list's end append."""
    keys = path.split(".")
    node: Any = doc
    for i, k in enumerate(keys):
        last = i == len(keys) - 1
        if isinstance(node, list):
            if not k.isdigit():
                return
            j = int(k)
            if j >= len(node):
                node.append({} if not last else value)
                j = len(node) - 1
            if last:
                node[j] = value
                return
            node = node[j]
        elif isinstance(node, dict):
            if last:
                node[k] = value
                return
            if not isinstance(node.get(k), (dict, list)):
                node[k] = {}
            node = node[k]
        else:
            return


def _delete_path(doc: dict[str, Any], path: str) -> None:
    keys = path.split(".")
    node: Any = doc
    for k in keys[:-1]:
        if isinstance(node, list) and k.isdigit() and int(k) < len(node):
            node = node[int(k)]
        elif isinstance(node, dict) and k in node:
            node = node[k]
        else:
            return
    k = keys[-1]
    if isinstance(node, dict):
        node.pop(k, None)
    elif isinstance(node, list) and k.isdigit() and int(k) < len(node):
        node.pop(int(k))


def _any_value(rng: random.Random, like: Any = None) -> Any:
    """A value for a field that held `like`: mostly an extreme number for a
    number, a scaled one, another string for a string; else anything."""
    r = rng.random()
    if isinstance(like, (int, float)) and not isinstance(like, bool):
        if r < 0.55:
            return rng.choice(EXTREME_NUMBERS)
        if r < 0.8:
            v = like * rng.choice(SCALES) if like else rng.choice(SCALES)
            return int(v) if isinstance(like, int) and math.isfinite(v) else v
    elif isinstance(like, str) and r < 0.6:
        return rng.choice(STRINGS)
    elif isinstance(like, bool) and r < 0.5:
        return not like
    pool = rng.choice([EXTREME_NUMBERS, STRINGS, DATES, GARBAGE])
    return copy.deepcopy(rng.choice(pool))


def _mutate(doc: dict[str, Any], resolved: dict[str, Any] | None, rng: random.Random,
            schemes: dict[str, dict[str, Any]]) -> None:
    op = rng.choices(["set", "delete", "unknown", "grow", "empty", "cc", "topology", "channel", "retype"],
                     [40, 12, 5, 6, 3, 12, 5, 8, 9])[0]
    # Leaves of the resolved scenario reach every field with its default.
    leaves = _leaves(resolved if resolved is not None and rng.random() < 0.6 else doc)
    if op == "set" and leaves:
        path, like = rng.choice(leaves)
        _set_path(doc, path, _any_value(rng, like))
    elif op == "delete":
        paths = [p for p, _ in _leaves(doc)]
        if paths:
            _delete_path(doc, rng.choice(paths))
    elif op == "unknown":
        tables = [p for p, v in _leaves(doc) if isinstance(v, dict)] + [""]
        t = rng.choice(tables)
        key = rng.choice(["bogus", "Duration_s", "", "seed ", "flows", "0"])
        _set_path(doc, f"{t}.{key}" if t else key, _any_value(rng))
    elif op in ("grow", "empty"):
        name = rng.choice(["flows", "ues"])
        items = doc.get(name)
        if isinstance(items, list):
            if op == "empty":
                items.clear()
            elif items:
                for _ in range(rng.choice([1, 2, 5, 20, 40])):
                    items.append(copy.deepcopy(rng.choice(items)))
    elif op == "cc":
        flows = doc.get("flows")
        if isinstance(flows, list) and flows and isinstance(flows[0], dict):
            f = rng.choice(flows)
            if not isinstance(f, dict):
                return
            scheme = rng.choice(sorted(schemes))
            f["cc"] = scheme
            if rng.random() < 0.7 and schemes[scheme]:
                name, like = rng.choice(sorted(schemes[scheme].items()))
                where = rng.choice(["cc_params", scheme, "global"])
                value = _any_value(rng, like)
                if where == "global":
                    doc.setdefault("cc", {}).setdefault(scheme, {})[name] = value
                else:
                    table = f.setdefault(where, {})
                    if isinstance(table, dict):
                        table[name] = value
    elif op == "topology":
        doc["topology"] = rng.choice(["cellular", "wired", "trace", "Cellular", "nr", 1])
    elif op == "channel":
        ues = doc.get("ues")
        if isinstance(ues, list) and ues:
            k = rng.randrange(len(ues))
            ues[k] = {"channel": _random_channel(rng)}
    elif op == "retype" and leaves:
        path, _ = rng.choice(leaves)
        _set_path(doc, path, copy.deepcopy(rng.choice(rng.choice([DATES, GARBAGE, STRINGS]))))


def _scale_a_number(doc: dict[str, Any], resolved: dict[str, Any] | None, rng: random.Random) -> None:
    """A mild mutation, to explore valid scenarios: one number of the
    resolved scenario scaled within a few times its value."""
    nums = [(p, v) for p, v in _leaves(resolved if resolved is not None else doc)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and p != "seed"]
    if not nums:
        return
    path, v = rng.choice(nums)
    x = v * rng.choice([0.1, 0.5, 0.9, 1.1, 2.0, 3.0, 10.0]) if v else rng.choice([1, 2, 10])
    if isinstance(v, int):
        x = max(int(x), 1 if v >= 1 else 0)
    _set_path(doc, path, x)


def _random_channel(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(["fixed_cqi", "distance", "cqi_trace"])
    if kind == "fixed_cqi":
        return {"kind": kind, "cqi": rng.choice([0, 1, 7, 15, 16, 255, 256, -1, 1.5])}
    if kind == "cqi_trace":
        pts = [[rng.choice([0.0, 1.0, 5.0, 100.0, 1e12, -1.0, 1e300]) * i, rng.choice([0, 1, 15, 16])]
               for i in range(rng.randint(0, 5))]
        return {"kind": kind, "points": pts}
    traj = rng.choice([
        {"kind": "fixed", "distance_m": rng.choice([0.0, 1.0, 500.0, 1e9, -5.0])},
        {"kind": "random_jumps", "interval_s": rng.choice([1e-12, 1e-3, 0.1, 1.0, 1e20]),
         "min_m": rng.choice([0.0, 10.0, 100.0]), "max_m": rng.choice([5.0, 1000.0, 1e7])},
        {"kind": "schedule", "points": [[rng.choice([0.0, 0.1, 1.0, 1e20]) * i, rng.choice([1.0, 300.0, 1e6])]
                                        for i in range(rng.randint(0, 4))]},
    ])
    ch: dict[str, Any] = {"kind": "distance", "trajectory": traj}
    if rng.random() < 0.5:
        ch["fading_doppler_hz"] = rng.choice([0.0, 1e-300, 5.0, 300.0, 1e6])
    if rng.random() < 0.3:
        ch["pathloss"] = rng.choice([{"model": "urban_macro"}, {"model": "free_space", "frequency_mhz": 2000.0},
                                     {"model": "log_distance", "l0_db": 30.0, "exponent": rng.choice([0.0, 3.5, 1e9])}])
    return ch


_NUM_TOKENS = ["abc", "-1", "1.5", " 12 ", "\t", "", "1e3", "0x10", "+5", "\u0663", "\uff11", "0", "00",
               "18446744073709551615", "18446744073709551616", "9223372036854775807", "288230376151711745",
               "4294967296", "99999999999999999999999999", "nan", "inf", "# comment"]


def _line_ends(rng: random.Random, lines: list[str]) -> bytes:
    end = rng.choices(["\n", "\r\n", "\r", "mixed"], [70, 12, 10, 8])[0]
    parts = []
    for ln in lines:
        parts.append(ln + (rng.choice(["\n", "\r\n", "\r"]) if end == "mixed" else end))
    text = "".join(parts)
    if rng.random() < 0.1:
        text = text.rstrip("\r\n")
    data = text.encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.08:
        data = b"\xef\xbb\xbf" + data
    if rng.random() < 0.04 and data:
        k = rng.randrange(len(data))
        data = data[:k] + rng.choice([b"\xff", b"\x00", b"\xc3", b"\xfe\xff"]) + data[k:]
    return data


def random_trace(rng: random.Random) -> bytes:
    """A Mahimahi trace: valid, bursty, or broken in one of many ways."""
    mode = rng.choices(["valid", "sparse", "empty", "zeros", "overflow", "garbage", "decreasing", "huge", "single"],
                       [30, 10, 5, 5, 10, 15, 8, 7, 10])[0]
    period = rng.choice([1, 2, 10, 100, 500, 2000])
    lines: list[str] = []
    if mode in ("valid", "garbage", "decreasing"):
        for ms in range(1, period + 1):
            lines += [str(ms)] * rng.choice([0, 0, 1, 1, 2, 5])
        lines.append(str(period))
    if mode == "sparse":
        lines = [str(t) for t in sorted(rng.sample(range(1, 10**rng.randint(1, 6) + 2), rng.randint(1, 10)))]
    elif mode == "zeros":
        lines = ["0"] * rng.randint(1, 20)
    elif mode == "overflow":
        lines = rng.choice([["0", "288230376151711745"], ["18446744073709551615"], ["1", "18446744073709551616"],
                            ["9223372036854775807"], ["1", "18446744073709551"], ["18446744073709"] * 3])
    elif mode == "garbage":
        for _ in range(rng.randint(1, 5)):
            lines.insert(rng.randint(0, len(lines)), rng.choice(_NUM_TOKENS))
    elif mode == "decreasing":
        lines.reverse()
    elif mode == "huge":
        lines = [str(rng.choice([10**9, 10**12, 10**15, 2**53])) for _ in range(rng.randint(1, 3))]
        lines.sort(key=int)
    elif mode == "single":
        lines = [rng.choice(["1", "0", "5", "1000"])]
    return _line_ends(rng, lines[:5000])


def random_cqi_file(rng: random.Random) -> bytes:
    """A CQI file of `time_ms cqi` lines: valid or broken."""
    sep = rng.choice([" ", ",", "\t", ", ", "  ", ";"])
    n = rng.choice([0, 1, 2, 5, 50, 500])
    t = rng.choice([0.0, 0.0, 1.0, 5.0])
    lines = []
    if rng.random() < 0.1:
        lines.append(rng.choice(["time_ms,cqi", "# time cqi", "t cqi"]))
    for _ in range(n):
        lines.append(f"{t:g}{sep}{rng.randint(0, 15)}")
        t += rng.choice([1.0, 1.0, 10.0, 0.5, 100.0])
    for _ in range(rng.choice([0, 0, 1, 3])):
        bad = rng.choice([f"1{sep}16", f"1{sep}-1", f"1{sep}255", f"1e300{sep}3", f"nan{sep}3", f"inf{sep}3",
                          f"-1{sep}3", f"1e-300{sep}3", "", "7", f"1{sep}2{sep}3", f"x{sep}y", f"5{sep}1.5",
                          f"1e19{sep}4", f"18446744073709551616{sep}4", "# note", f"0{sep}15"])
        lines.insert(rng.randint(0, len(lines)), bad)
    return _line_ends(rng, lines)


def _mutate_text(rng: random.Random, data: bytes) -> bytes:
    for _ in range(rng.randint(1, 4)):
        if not data:
            break
        op = rng.choice(["flip", "cut", "dup", "insert", "truncate", "cr", "bom"])
        k = rng.randrange(len(data))
        if op == "flip":
            data = data[:k] + bytes([rng.randrange(256)]) + data[k + 1:]
        elif op == "cut":
            data = data[:k] + data[k + rng.randint(1, 40):]
        elif op == "dup":
            lines = data.split(b"\n")
            j = rng.randrange(len(lines))
            lines.insert(j, lines[j])
            data = b"\n".join(lines)
        elif op == "insert":
            data = data[:k] + rng.choice([b"[", b"]", b"{", b"}", b"=", b'"', b"'", b"#", b".", b"\n", b"\r",
                                          b"\\", b"\x00", b"\xff", b"[[flows]]\n", b"nan", b"1e999"]) + data[k:]
        elif op == "truncate":
            data = data[:k]
        elif op == "cr":
            data = data.replace(b"\n", rng.choice([b"\r", b"\r\n"]))
        elif op == "bom":
            data = b"\xef\xbb\xbf" + data
    return data


def _shorten(doc: dict[str, Any], rng: random.Random) -> None:
    """A short run: duration at most 2 s, start and stop times scaled."""
    d = doc.get("duration_s")
    if not isinstance(d, (int, float)) or isinstance(d, bool) or not d > 0:
        return
    new = min(float(d), rng.choice([0.05, 0.2, 0.5, 1.0, 2.0]))
    scale = new / float(d)
    doc["duration_s"] = new
    for f in doc.get("flows") or []:
        if isinstance(f, dict):
            for key in ("start_s", "stop_s"):
                v = f.get(key)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    f[key] = v * scale


_RANGE_MSG = re.compile(r"must be in [\[(]([-+0-9.e]+), ([-+0-9.e]+)[\])]")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _norm(path: str) -> str:
    return re.sub(r"\.\d+(?=\.|$)", ".#", path)


def _core_resolve_cc(scheme: str, name: str, value: str) -> str | None:
    from .. import _core

    try:
        _core.resolve_cc(scheme, json.dumps({name: json.loads(value)}))
        return None
    except ValueError as e:
        return str(e)


def _edge(rng: random.Random, lo: float, hi: float, integer: bool, like: Any) -> Any:
    """A value at or near an edge of [lo, hi], or a far scale of `like`
    brought inside."""
    if integer:
        lo_i, hi_i = int(lo), int(hi)
        return rng.choice([lo_i, hi_i, min(lo_i + 1, hi_i), max(hi_i - 1, lo_i),
                           max(lo_i, min(hi_i, int(like) * rng.choice([2, 10, 1000]) if like else 1))])
    cands = [lo, hi, hi * (1 - 1e-12), (lo + hi) / 2]
    if lo > 0:
        cands += [lo * (1 + 1e-12), lo * 2, math.sqrt(lo * hi)]
    else:
        cands += [1e-9, 1e-3]
    if _is_number(like) and like:
        cands += [min(hi, max(lo, like * f)) for f in (1e-3, 1e3)]
    return float(rng.choice([c for c in cands if lo <= c <= hi] or [lo]))


class Generator:
    """Makes case `index` of campaign `seed`; the same in every process."""

    def __init__(self, seed: int, scenarios: Path | None, run_fraction: float):
        import tomllib

        from ..scenario import ScenarioError, load_text

        self.seed = seed
        self.run_fraction = run_fraction
        self.bases = bundled_scenarios(scenarios)
        self.names = sorted(self.bases)
        self.docs = {n: tomllib.loads(t.removeprefix("\ufeff")) for n, (t, _) in self.bases.items()}
        self.schemes = _scheme_params()
        self.resolved: dict[str, dict[str, Any] | None] = {}
        self.ranges = {}
        for n, (text, files) in self.bases.items():
            with tempfile.TemporaryDirectory() as tmp:
                for name, data in files.items():
                    (Path(tmp) / name).write_bytes(data)
                try:
                    self.resolved[n] = load_text(text, base=Path(tmp)).resolved
                except ScenarioError:
                    self.resolved[n] = None
                    continue
                self._probe_ranges(text, Path(tmp), self.resolved[n])
        for scheme, params in self.schemes.items():
            for name, v in params.items():
                if _is_number(v):
                    self._learn(f"cc_params.{scheme}.{name}", v,
                                lambda text, s=scheme, k=name: _core_resolve_cc(s, k, text))

    #: Valid ranges learnt from the core's own messages, by path with list
    #: indices replaced by ``#`` (scheme parameters: ``cc_params.SCHEME.NAME``):
    #: (lo, hi, integer).
    ranges: dict[str, tuple[float, float, bool]]

    def _probe_ranges(self, text: str, base: Path, resolved: dict[str, Any]) -> None:
        """Learns each numeric field's valid range by asking the core about
        values beyond it: its message reads "must be in [lo, hi]"."""
        from ..scenario import ScenarioError, load_text

        def attempt(path: str, value: str) -> str | None:
            try:
                load_text(text, base=base, overrides=[f"{path}={value}"])
                return None
            except ScenarioError as e:
                return str(e)

        for path, v in _leaves(resolved):
            if _is_number(v) and ".cc_params." not in path and path != "seed":
                self._learn(_norm(path), v, lambda value, p=path: attempt(p, value))

    def _learn(self, key: str, like: Any, attempt: Any) -> None:
        if key in self.ranges:
            return
        integer = isinstance(like, int)
        lo = hi = None
        for probe in (("-1", "4294967295", "18446744073709551615") if integer else ("-1e300", "1e300")):
            msg = attempt(probe)
            m = _RANGE_MSG.search(msg or "")
            if m or "must be a positive number" in (msg or "") or "must be a number >= 0" in (msg or ""):
                a, b = (float(m.group(1)), float(m.group(2))) if m else (1e-300 if "positive" in msg else 0.0, 1e300)
                lo = a if lo is None else min(lo, a)
                hi = b if hi is None else max(hi, b)
        if lo is None and integer:
            lo, hi = 0.0, float(2**32 - 1)
        if lo is not None and hi is not None and lo <= hi:
            self.ranges[key] = (lo, hi, integer)

    def _edge_mutation(self, doc: dict[str, Any], resolved: dict[str, Any] | None, rng: random.Random) -> None:
        """A valid value at an edge of its range: a field of the scenario,
        or a parameter of a (possibly new) scheme of one flow."""
        flows = doc.get("flows")
        if rng.random() < 0.3 and isinstance(flows, list) and flows and isinstance(flows[0], dict):
            f = rng.choice(flows)
            if not isinstance(f, dict):
                return
            if rng.random() < 0.5:
                for k in [k for k in f if k in self.schemes or k == "cc_params"]:
                    del f[k]
                doc.pop("cc", None)
                f["cc"] = rng.choice(sorted(self.schemes))
            scheme = f.get("cc")
            params = self.schemes.get(scheme) if isinstance(scheme, str) else None
            if not params:
                return
            name = rng.choice(sorted(params))
            r = self.ranges.get(f"cc_params.{scheme}.{name}")
            if r is not None:
                table = f.setdefault(scheme if "cc_params" not in f else "cc_params", {})
                if isinstance(table, dict):
                    table[name] = _edge(rng, *r, params[name])
            return
        leaves = [(p, v) for p, v in _leaves(resolved or {}) if _norm(p) in self.ranges and ".cc_params." not in p]
        if leaves:
            path, like = rng.choice(leaves)
            _set_path(doc, path, _edge(rng, *self.ranges[_norm(path)], like))

    def case(self, index: int) -> Case:
        rng = random.Random(f"xrc-fuzz:{self.seed}:{index}")
        kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
        if kind == "trace":
            pool = [n for n in self.names if self.docs[n].get("topology") == "trace"]
        elif kind == "cqi":
            pool = [n for n in self.names if self.docs[n].get("topology") == "cellular"]
        else:
            pool = self.names
        base = rng.choice(pool)
        doc = copy.deepcopy(self.docs[base])
        files = dict(self.bases[base][1])
        resolved = self.resolved[base]
        run = rng.random() < self.run_fraction
        if run:
            _shorten(doc, rng)
        overrides: list[str] = []
        if kind == "mutate":
            mild = rng.random() < 0.35
            for _ in range(rng.randint(1, 3)):
                if mild:
                    _scale_a_number(doc, resolved, rng)
                else:
                    _mutate(doc, resolved, rng, self.schemes)
        elif kind == "override":
            for _ in range(rng.randint(1, 3)):
                if rng.random() < 0.8 and resolved is not None:
                    path, like = rng.choice(_leaves(resolved))
                    if rng.random() < 0.5 and isinstance(like, (int, float)) and not isinstance(like, bool):
                        text = repr(like * rng.choice(SCALES))
                    else:
                        text = rng.choice(VALUE_TEXTS)
                else:
                    path, text = rng.choice(BAD_PATHS), rng.choice(VALUE_TEXTS)
                overrides.append(f"{path}={text}")
            if rng.random() < 0.05:
                overrides.append(rng.choice(["novalue", "=1", "==", "duration_s"]))
        elif kind == "trace":
            files = {"down.trace": random_trace(rng)}
            tr = doc.setdefault("trace", {})
            tr["downlink"] = "down.trace"
            tr.pop("uplink", None)
            if rng.random() < 0.4:
                files["up.trace"] = random_trace(rng)
                tr["uplink"] = "up.trace"
                tr.pop("uplink_delay_ms", None)
            else:
                tr.pop("uplink_buffer_packets", None)
                tr.pop("uplink_buffer_bytes", None)
            if rng.random() < 0.3:
                _mutate(doc, resolved, rng, self.schemes)
        elif kind == "cqi":
            files = {"cqi.txt": random_cqi_file(rng)}
            ues = doc.get("ues") or [{}]
            doc["ues"] = ues
            ues[rng.randrange(len(ues))] = {"channel": {"kind": "cqi_trace", "file": "cqi.txt"}}
            if rng.random() < 0.3:
                _mutate(doc, resolved, rng, self.schemes)
        elif kind == "edge":
            for _ in range(rng.randint(1, 4)):
                self._edge_mutation(doc, resolved, rng)
        text = toml_dumps(doc).encode("utf-8", errors="surrogatepass")
        if kind == "text":
            text = _mutate_text(rng, text)
        elif rng.random() < 0.05:
            text = _mutate_text(rng, text) if rng.random() < 0.3 else b"\xef\xbb\xbf" + text.replace(b"\n", b"\r\n")
        return Case(seed=self.seed, index=index, kind=kind, base=base, scenario=text, overrides=overrides,
                    files=files, run=run, twice=run and rng.random() < 0.05, cli=rng.random() < 0.1)


# ---------------------------------------------------------------------------
# Running one case (in a worker process).

#: Cases whose (mutated) duration is longer are validated, not run.
MAX_RUN_S = 5.0
#: Outcomes that are not failures.
PASSING = ("rejected", "accepted", "ran", "heavy", "stopped", "output_error")
FAILURES = ("panic", "traceback", "crash", "hang", "memory", "invariant", "absurd", "nondeterministic", "message")


#: A JSON syntax error from the core: the front end handed it text that is
#: not JSON (NaN, infinities), and the message cannot name the value.
_JSON_SYNTAX = re.compile(r"expected value$|EOF while parsing|trailing characters|key must be a string")


class CaseTimeout(BaseException):
    """The case ran out of wall time (raised by the worker's timer)."""


class CaseHeavy(BaseException):
    """The run took more events than a case may (a legitimately large
    simulation: a 1 Tbit/s link, windows of a million segments)."""


def _progress() -> str:
    sim = _CheckedSimulation.last
    if sim is None:
        return "before the run started"
    try:
        return f"{sim.events} events, simulated {sim.now_s:.3f} of {sim.end_s:.3f} s"
    except Exception:  # noqa: BLE001 - a finished simulation has no state
        return "after the run"


class InvariantViolation(BaseException):
    """A conservation or ordering invariant failed during a run."""


class _CheckedSimulation:
    """The core's Simulation with its invariants checked after every step
    and before the end (the same checks debug builds make inside the core,
    here on the release build users run)."""

    _real: Any = None
    #: Events a run may take before it counts as heavy and is stopped.
    max_events: int = 5_000_000
    #: The latest simulation (to say how far a timed-out run got).
    last: Any = None

    def __init__(self, *args: Any):
        self._sim = self._real(*args)
        _CheckedSimulation.last = self._sim

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sim, name)

    def _check(self) -> None:
        try:
            self._sim.check_invariants()
        except RuntimeError as e:
            raise InvariantViolation(f"at {self._sim.now_s} s: {e}") from None

    def run_until(self, t: float, max_rows: int | None = None) -> bool:
        done = self._sim.run_until(t, max_rows=max_rows)
        self._check()
        if not done and self._sim.events > self.max_events:
            raise CaseHeavy(_progress())
        return done

    def finish(self) -> Any:
        self._check()
        return self._sim.finish()


def _install_checked_simulation() -> None:
    from .. import _core

    if not isinstance(_core.Simulation, type) or _core.Simulation is _CheckedSimulation:
        return
    _CheckedSimulation._real = _core.Simulation
    _core.Simulation = _CheckedSimulation  # type: ignore[misc]


def _json_strict(text: str) -> Any:
    def refuse(c: str) -> Any:
        raise ValueError(f"{c} in summary.json")

    return json.loads(text, parse_constant=refuse)


def check_summary(run_dir: Path, resolved: dict[str, Any]) -> list[str]:
    """What is absurd in a run directory's summary and tables (empty: nothing)."""
    import pyarrow.parquet as pq

    problems: list[str] = []
    try:
        s = _json_strict((run_dir / "summary.json").read_text())
    except ValueError as e:
        return [str(e)]

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}.{i}")
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            if not math.isfinite(node):
                problems.append(f"{path} = {node}")
            elif node < 0:
                problems.append(f"{path} = {node} is negative")
            elif (path.rsplit(".", 1)[-1].startswith("frac") or path.endswith("utilization")
                  or path == "jain_index") and node > 1 + 1e-9:
                problems.append(f"{path} = {node} is above 1")

    walk(s, "")
    flows = pq.read_table(run_dir / "flows.parquet").to_pydict()
    ues = pq.read_table(run_dir / "ues.parquet").to_pydict()
    tput = pq.read_table(run_dir / "flow_throughput.parquet").to_pydict()
    delivered = dict(zip(flows["flow"], flows["bytes_delivered"]))
    binned = {k: 0 for k in delivered}
    for k, b in zip(tput["flow"], tput["bytes"]):
        binned[k] = binned.get(k, 0) + b
    for k in delivered:
        if binned[k] != delivered[k]:
            problems.append(f"flow {k}: throughput bins hold {binned[k]} bytes, the flow delivered {delivered[k]}")
    for u, d, c in zip(ues["ue"], ues["delivered_bits"], ues["carried_bits"]):
        if d > c * (1 + 1e-9) + 1e-6:
            problems.append(f"UE {u}: delivered {d} bits, more than the {c} its radio carried")
        on_ue = sum(b for b, ue in zip(flows["bytes_delivered"], flows["ue"]) if ue == u)
        if on_ue * 8 > d * (1 + 1e-9) + 1e-6:
            problems.append(f"UE {u}: its flows delivered {on_ue * 8} bits to applications, more than the "
                            f"{d} bits the UE received")
    rate = (resolved.get("internet") or {}).get("rate_mbps")
    if rate is not None:
        total = sum(flows["bytes_delivered"]) * 8
        mss = max((f["tcp"]["mss"] for f in resolved["flows"]), default=0)
        allowed = rate * 1e6 * float(s["sim_time_s"]) + 8 * (mss + 100)
        if total > allowed:
            problems.append(f"the flows delivered {total} bits in {s['sim_time_s']} s, more than the Internet "
                            f"link's {rate} Mbit/s carries ({allowed:.0f} bits)")
        for f in s["flows"]:
            dur = float(f["end_s"]) - float(f["start_s"])
            slack = 8 * (mss + 100) / max(dur, 1e-9) / 1e6
            if f["goodput_mbps"] > rate * (1 + 1e-9) + slack:
                problems.append(f"flow {f['id']}: goodput {f['goodput_mbps']} Mbit/s above the Internet link's "
                                f"{rate} Mbit/s")
    return problems


def _same_outputs(a: Path, b: Path) -> list[str]:
    diffs = []
    names = sorted(p.name for p in a.iterdir() if p.is_file())
    if names != sorted(p.name for p in b.iterdir() if p.is_file()):
        return ["different files"]
    for n in names:
        if n == "metadata.json":
            continue
        x, y = (a / n).read_bytes(), (b / n).read_bytes()
        if n == "summary.json":
            x, y = (json.loads(v) for v in (x, y))
            x.pop("wall_time_s")
            y.pop("wall_time_s")
        if x != y:
            diffs.append(n)
    return diffs


def _write_case(case: Case, d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        (d / name).write_bytes(data)
    p = d / "scenario.toml"
    p.write_bytes(case.scenario)
    return p


def execute(case: Case, workdir: Path, timeout_s: float) -> dict[str, Any]:
    """Runs one case; returns ``{"outcome", "message", "seconds"}``."""
    from .. import cli
    from ..outdir import OutputError
    from ..runner import run_to_dir
    from ..scenario import ScenarioError, load

    t0 = time.perf_counter()
    _CheckedSimulation.last = None
    d = workdir / f"case-{case.index}"
    shutil.rmtree(d, ignore_errors=True)

    def on_alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    outcome, message = "accepted", ""
    try:
        path = _write_case(case, d)
        if case.sabotage == "raise":
            raise RuntimeError("sabotage: an exception the front end does not expect")
        if case.sabotage == "hang":
            while True:
                time.sleep(0.01)
        if case.sabotage == "abort":
            os.abort()
        try:
            sc = load(path, overrides=case.overrides)
        except ScenarioError as e:
            sc, outcome, message = None, "rejected", str(e)
            if not message.strip() or "Traceback" in message or _JSON_SYNTAX.search(message):
                outcome = "message"
        if case.cli:
            argv = ["validate", str(path)] + [a for o in case.overrides for a in ("--set", o)]
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = cli.main(argv)
            if rc != (0 if sc is not None else 2) or "Traceback" in err.getvalue():
                outcome, message = "message", f"xrc validate exited {rc}: {err.getvalue()[-2000:]}"
        if sc is not None and case.run and sc.resolved["duration_s"] > MAX_RUN_S:
            outcome, message = "accepted", f"not run: duration_s {sc.resolved['duration_s']} > {MAX_RUN_S}"
        elif sc is not None and case.run and outcome != "message":
            try:
                run_to_dir(sc, d / "out", plots=False)
                outcome = "ran"
                problems = check_summary(d / "out", sc.resolved)
                if problems:
                    outcome, message = "absurd", "; ".join(problems[:10])
                elif case.twice:
                    run_to_dir(sc, d / "out2", plots=False)
                    diffs = _same_outputs(d / "out", d / "out2")
                    if diffs:
                        outcome, message = "nondeterministic", f"outputs differ: {', '.join(diffs)}"
            except OutputError as e:   # before ScenarioError, of which it is one
                outcome, message = "output_error", str(e)
            except ScenarioError as e:
                outcome, message = "stopped", str(e)
    except CaseTimeout:
        outcome, message = "hang", f"more than {timeout_s} s of wall time ({_progress()})"
    except CaseHeavy as e:
        outcome, message = "heavy", f"stopped after more than {_CheckedSimulation.max_events} events: {e}"
    except InvariantViolation as e:
        outcome, message = "invariant", str(e)
    except BaseException as e:  # noqa: BLE001 - every escape is a finding
        if isinstance(e, KeyboardInterrupt):
            raise
        name = type(e).__name__
        outcome = "panic" if name == "PanicException" else "traceback"
        message = "".join(traceback.format_exception(e))[-4000:]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    shutil.rmtree(d, ignore_errors=True)
    return {"outcome": outcome, "message": message, "seconds": time.perf_counter() - t0}


