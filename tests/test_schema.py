"""The scenario JSON Schema: generated from the core, shipped in the
package, accepting every bundled scenario and refusing bad ones, and never
stricter than the core."""

from __future__ import annotations

import copy
import json
import random
import tomllib

import pytest

from xrc import bundled
from xrc.cli import main
from xrc.scenario import ScenarioError, load_text
from xrc.schema import dumps, parse_bounds

from .conftest import SCENARIOS

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test extra (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def schema():
    return json.loads(bundled.schema_path().read_text())


@pytest.fixture(scope="module")
def validator(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_shipped_schema_is_what_the_core_generates_today(capsys):
    # Regenerate with: xrc schema --out python/xrc/data/scenario.schema.json
    assert bundled.schema_path().read_text() == dumps()
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == dumps()


BUNDLED = sorted(SCENARIOS.rglob("*.toml"))


@pytest.mark.parametrize("path", BUNDLED, ids=[str(p.relative_to(SCENARIOS)) for p in BUNDLED])
def test_every_bundled_scenario_validates(validator, path):
    errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(tomllib.loads(path.read_text()))]
    assert not errors, errors


def fig1():
    return tomllib.loads((SCENARIOS / "paper" / "fig1-time-varying.toml").read_text())


def _with(path: str, value):
    doc = fig1()
    node = doc
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if k.isdigit() else node.setdefault(k, {})
    node[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value
    return doc


@pytest.mark.parametrize("path,value,why", [
    ("bogus", 1, "an unknown field"),
    ("topology", "mesh", "not a topology"),
    ("internet.delay_ms", 1e20, "beyond the validator's range"),
    ("duration_s", "long", "a string for a number"),
    ("flows.0.cc", "tahoe", "not a scheme the core knows"),
    ("flows.0.xrc", {"budget_mss": 10}, "an unknown parameter of the scheme"),
    ("flows.0.cc_params", {"beta": 717}, "CUBIC's parameter on an XRC flow"),
    ("ues.0.channel", {"kind": "fixed_cqi", "cqi": 16}, "CQI above 15"),
    ("flows.0.traffic", {"kind": "video", "period_s": -1.0}, "a negative period"),
    ("flows.0.traffic", {"kind": "streaming"}, "not a traffic kind"),
    ("cell.harq.bler", 1.0, "a BLER of 1 (the range is open at 1)"),
    ("cc", {"cubic": {"beta": 0}}, "CUBIC's beta below 1"),
])
def test_bad_scenarios_do_not_validate(validator, path, value, why):
    doc = _with(path, value)
    assert not validator.is_valid(doc), why
    # ... and the core refuses them too: the schema states its rules.
    with pytest.raises(ScenarioError):
        load_text(json.dumps(doc), base=SCENARIOS / "paper", json_text=True)


def test_bounds_are_read_from_every_form_of_validator_message():
    assert parse_bounds("delay_ms", "internet.delay_ms must be in [0, 10000], got 1e300") == \
        {"minimum": 0.0, "maximum": 10000.0}
    assert parse_bounds("eta", "cell.abc.eta must be in (0, 1.5], got 1e300") == \
        {"exclusiveMinimum": 0.0, "maximum": 1.5}
    assert parse_bounds("bler", "cell.harq.bler must be in [0, 1), got 2") == {"minimum": 0.0, "exclusiveMaximum": 1.0}
    assert parse_bounds("cqi", "ues.0.channel.cqi must be in 1..=15, got 255") == {"minimum": 1.0, "maximum": 15.0}
    assert parse_bounds("theta", "flows.0.illinois: theta must be at most 255 rounds") == {"maximum": 255.0}
    assert parse_bounds("mss", "tcp.mss must be in [88, 65483], got 1e300") == {"minimum": 88.0, "maximum": 65483.0}
    assert parse_bounds("x", "something else entirely") is None


def _numeric_paths(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _numeric_paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, (dict, list)):
                yield from _numeric_paths(v, path + (i,))
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path


def test_the_schema_never_refuses_what_the_core_accepts(validator):
    # Bundled scenarios with one number changed at random: whenever the
    # front end and the core accept the result, so must the schema.
    rng = random.Random(9)
    values = [0, 1, -1, 0.5, 2, 7, 15, 16, 100, 1e3, 1e5, 1e7, 2**31, 1e-3, -0.001, 0.999]
    docs = [(p, tomllib.loads(p.read_text())) for p in BUNDLED]
    accepted = 0
    for _ in range(300):
        p, doc = rng.choice(docs)
        paths = list(_numeric_paths(doc))
        if not paths:
            continue
        path = rng.choice(paths)
        d = copy.deepcopy(doc)
        node = d
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = rng.choice(values)
        try:
            load_text(json.dumps(d), base=p.parent, json_text=True)
        except ScenarioError:
            continue
        accepted += 1
        errors = [e.message for e in validator.iter_errors(d)]
        assert not errors, (p.name, path, node[path[-1]], errors)
    assert accepted > 50
