"""Writing TOML: the types a scenario holds (tables, arrays, strings,
numbers, booleans; and dates and times, which only a fuzzer's mutations
put there), so a run directory can record the scenario as it ran in the
form users write. ``None`` has no TOML form: such keys are left out (the
default then applies), which callers check by reading back.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from typing import Any

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else _string(k)


def _string(s: str) -> str:
    # JSON's escapes are TOML's; DEL is a control character TOML forbids raw.
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        items = [f"{_key(k)} = {_value(x)}" for k, x in v.items() if x is not None]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    raise TypeError(f"no TOML form for {type(v).__name__}: {v!r}")


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _table(out: list[str], path: list[str], d: dict[str, Any]) -> None:
    """Emits the body of table `d` whose header (if any) is already out."""
    for k, v in d.items():
        if v is None or isinstance(v, dict) or _is_table_array(v):
            continue
        out.append(f"{_key(k)} = {_value(v)}")
    for k, v in d.items():
        if isinstance(v, dict):
            out.append("")
            out.append("[" + ".".join(_key(p) for p in path + [k]) + "]")
            _table(out, path + [k], v)
        elif _is_table_array(v):
            for item in v:
                out.append("")
                out.append("[[" + ".".join(_key(p) for p in path + [k]) + "]]")
                _table(out, path + [k], item)


def dumps(doc: dict[str, Any]) -> str:
    """TOML text for `doc` (a dict of the types above)."""
    out: list[str] = []
    _table(out, [], doc)
    return "\n".join(out).lstrip("\n") + "\n"
