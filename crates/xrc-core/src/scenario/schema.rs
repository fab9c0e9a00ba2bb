//! The JSON Schema of scenarios, derived by schemars from the configuration
//! types themselves: field names, types, required fields, defaults, the
//! tagged variants (`kind = "..."`) and the doc comments come from the same
//! serde attributes and comments the deserializer and the docs use, so the
//! schema cannot drift from what the core accepts. Ranges are not stated
//! here: validation checks them in code, and the front end asks the
//! validator for them (`xrc.schema`).

use schemars::Schema;

use super::ScenarioConfig;
use crate::transport::cc::registry;

/// The schema of a resolved scenario (the core's view: scheme parameters
/// as `cc_params`, a CQI file already read into points).
pub fn scenario() -> Schema {
    schemars::schema_for!(ScenarioConfig)
}

/// Every scheme's parameter table, by name, in [`registry::SCHEMES`] order.
pub fn cc_params() -> Vec<(&'static str, Schema)> {
    registry::SCHEMES
        .iter()
        .map(|&n| (n, registry::schema(n).expect("every registered scheme has a schema")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scenario_schema_names_every_top_level_field_and_forbids_others() {
        let s = serde_json::to_value(scenario()).unwrap();
        let props = s["properties"].as_object().unwrap();
        for k in [
            "seed",
            "duration_s",
            "topology",
            "internet",
            "cell",
            "ues",
            "trace",
            "flows",
            "output",
        ] {
            assert!(props.contains_key(k), "{k}");
        }
        assert_eq!(s["additionalProperties"], serde_json::json!(false));
        let required: Vec<_> = s["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            required.contains(&"seed") && required.contains(&"flows"),
            "{required:?}"
        );
    }

    #[test]
    fn every_registered_scheme_has_a_parameter_schema_with_defaults() {
        let all = cc_params();
        assert_eq!(all.len(), registry::SCHEMES.len());
        let xrc = serde_json::to_value(&all.iter().find(|(n, _)| *n == "xrc").unwrap().1).unwrap();
        assert!(xrc["properties"]["budget_ms"]["default"].is_number(), "{xrc}");
    }
}
