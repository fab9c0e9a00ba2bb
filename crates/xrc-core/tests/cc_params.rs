//! Every scheme's parameters, probed at the edges of what the core can
//! represent (found by fuzzing, issue 9 item 16).

use serde_json::{json, Value};
use xrc_core::transport::cc::registry::{resolve, SCHEMES};

/// Every numeric parameter of every scheme, with its default.
fn numeric_params() -> Vec<(&'static str, String, Value)> {
    let mut out = Vec::new();
    for &scheme in SCHEMES {
        let Value::Object(params) = resolve(scheme, &Value::Null).unwrap() else {
            panic!("{scheme}: parameters are an object");
        };
        for (name, v) in params {
            if v.is_number() {
                out.push((scheme, name, v));
            }
        }
    }
    out
}

#[test]
fn a_parameter_of_the_wrong_type_is_named_in_the_message() {
    // bbr's probe_rtt_mode_ms = 1e20 read "flows.0.bbr: invalid type:
    // floating point `1e+20`, expected u32": which of its parameters?
    for (scheme, name, default) in numeric_params() {
        for v in [json!("x"), json!([1]), json!({"a": 1})] {
            let e = resolve(scheme, &json!({ name.clone(): v }))
                .expect_err(&format!("{scheme}.{name} = {v} was accepted (default {default})"));
            assert!(
                e.starts_with(&format!("{name}: ")) || e.contains(&format!("{name} ")),
                "{scheme}.{name}: {e}"
            );
        }
    }
}

#[test]
fn a_duration_parameter_the_core_cannot_hold_is_refused_naming_it_not_replaced_by_its_default() {
    // xrc's budget_ms = 1e300 ran as 10 ms (its default), oracle's
    // allowance_ms = 1e300 as 0: the conversion to nanoseconds failed and
    // the constructor fell back silently.
    let durations: Vec<_> = numeric_params()
        .into_iter()
        .filter(|(_, n, _)| n.ends_with("_ms"))
        .collect();
    assert!(durations.len() >= 8, "{durations:?}");
    for (scheme, name, default) in durations {
        for v in [1e20, 1e300] {
            let e = resolve(scheme, &json!({ name.clone(): v }))
                .expect_err(&format!("{scheme}.{name} = {v} was accepted (default {default})"));
            assert!(e.contains(&name), "{scheme}.{name}: {e}");
        }
        resolve(scheme, &json!({ name.clone(): default })).unwrap();
    }
}
