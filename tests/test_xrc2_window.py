"""scripts/xrc2_window.py's ``--xrc2 KEY=VALUE`` values."""

from __future__ import annotations

from .conftest import load_script


def _script():
    return load_script("xrc2_window")


def test_xrc2_values_keep_switches_as_booleans_and_counts_as_integers():
    v = _script().param_value
    assert v("true") is True and v("False") is False
    assert v("1000") == 1000 and isinstance(v("1000"), int)
    assert v("-2") == -2 and isinstance(v("-2"), int)
    assert v("0.5") == 0.5 and isinstance(v("0.5"), float)
    assert isinstance(v("1e3"), float)


def test_an_integer_count_reaches_xrc2_and_a_switch_is_written_as_toml():
    from xrc import bundled
    from xrc.scenario import load

    mod = _script()
    sc = load(bundled.scenario(mod.FIG1), overrides=[
        "flows.0.cc=xrc2", f"flows.0.cc_params.unfair_after_rtts={mod.param_value('12')}",
        "flows.0.cc_params.hol_floor=true"])
    params = sc.resolved["flows"][0]["cc_params"]
    assert params["unfair_after_rtts"] == 12 and params["hol_floor"] is True
