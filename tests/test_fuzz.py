"""Defects the fuzzer (issue 9, item 16) found in the front end, each with
its regression test (the core's are beside its code).
"""

from __future__ import annotations

import pytest

from xrc.cli import main

from .conftest import MINIMAL_CELL


@pytest.mark.parametrize("value,shown", [
    ("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"),
    ("99999999999999999999999", "99999999999999999999999"),
    ("-9223372036854775809", "-9223372036854775809"),
])
@pytest.mark.parametrize("field", ["duration_s", "seed", "flows.0.tcp.mss", "internet.delay_ms"])
def test_a_non_finite_number_or_an_integer_beyond_64_bits_is_refused_naming_the_field_and_the_value(
        field, value, shown, write_scenario, capsys):
    # Found by the fuzzer: NaN reached the core as JSON text it cannot
    # parse ("duration_s: expected value"), and 10**23 as a float ("invalid
    # type: floating point `1e+23`" for an integer the user wrote).
    p = write_scenario(MINIMAL_CELL)
    assert main(["validate", str(p), "--set", f"{field}={value}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"xrc: error: {field}: ") and shown in err, err
    assert "expected value" not in err and "floating point" not in err, err
