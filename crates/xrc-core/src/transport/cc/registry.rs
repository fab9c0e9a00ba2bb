//! Scheme name → constructor. Adding an algorithm is one module plus one
//! line here.
//!
//! Every algorithm has a `Config` that deserializes from the scenario's
//! parameter table for that scheme (unknown keys rejected) and whose
//! `Default` carries the reference values.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::CongestionControl;

/// The names scenarios may use in `cc = "..."`.
pub const SCHEMES: &[&str] = &[
    "newreno",
    "cubic",
    "xrc",
    "illinois",
    "veno",
    "vegas",
    "copa",
    "abc",
    "pbe",
    "natcp",
    "nacubic",
    "oracle",
    "bbr",
    "bbr3",
    "roccet",
    "oracle-rate",
    "xrc2",
];

/// Builds a controller from its name and parameter table. Errors name the
/// offending parameter. Randomized controllers start their stream at 0
/// (tests); a scenario builds with [`build_seeded`].
pub fn build(name: &str, params: &serde_json::Value) -> Result<Box<dyn CongestionControl>, String> {
    build_seeded(name, params, 0)
}

/// [`build`] for a flow of a scenario: `stream` is a draw from the flow's
/// named stream of the master seed, where randomized controllers (BBR,
/// BBRv3) take their randomness.
pub fn build_seeded(name: &str, params: &serde_json::Value, stream: u64) -> Result<Box<dyn CongestionControl>, String> {
    Ok(match name {
        "newreno" => Box::new(super::newreno::NewReno::new(parse(params)?)),
        "cubic" => Box::new(super::cubic::Cubic::new(parse(params)?)),
        "xrc" => Box::new(super::xrc::Xrc::new(parse(params)?)),
        "illinois" => Box::new(super::illinois::Illinois::new(parse(params)?)),
        "veno" => Box::new(super::veno::Veno::new(parse(params)?)),
        "vegas" => Box::new(super::vegas::Vegas::new(parse(params)?)),
        "copa" => Box::new(super::copa::Copa::new(parse(params)?)),
        "abc" => Box::new(super::abc::Abc::new(parse(params)?)),
        "pbe" => Box::new(super::pbe::Pbe::new(parse(params)?)),
        "natcp" => Box::new(super::natcp::Natcp::new(parse(params)?)),
        "nacubic" => Box::new(super::nacubic::NaCubic::new(parse(params)?)),
        "oracle" => Box::new(super::oracle::Oracle::new(parse(params)?)),
        "oracle-rate" => Box::new(super::oracle_rate::Oracle::new(parse(params)?)),
        "bbr" => Box::new(super::bbr::v1::Bbr::seeded(parse(params)?, stream)),
        "bbr3" => Box::new(super::bbr::v3::Bbr3::seeded(parse(params)?, stream)),
        "roccet" => Box::new(super::roccet::Roccet::new(parse(params)?)),
        "xrc2" => Box::new(super::xrc2::new(parse(params)?)),
        other => return Err(unknown(other)),
    })
}

/// The fully resolved parameters (defaults filled in) for a scheme.
pub fn resolve(name: &str, params: &serde_json::Value) -> Result<serde_json::Value, String> {
    match name {
        "newreno" => roundtrip::<super::newreno::Config>(params),
        "cubic" => roundtrip::<super::cubic::Config>(params),
        "xrc" => roundtrip::<super::xrc::Config>(params),
        "illinois" => roundtrip::<super::illinois::Config>(params),
        "veno" => roundtrip::<super::veno::Config>(params),
        "vegas" => roundtrip::<super::vegas::Config>(params),
        "copa" => roundtrip::<super::copa::Config>(params),
        "abc" => roundtrip::<super::abc::Config>(params),
        "pbe" => roundtrip::<super::pbe::Config>(params),
        "natcp" => roundtrip::<super::natcp::Config>(params),
        "nacubic" => roundtrip::<super::nacubic::Config>(params),
        "oracle" => roundtrip::<super::oracle::Config>(params),
        "oracle-rate" => roundtrip::<super::oracle_rate::Config>(params),
        "bbr" => roundtrip::<super::bbr::v1::Config>(params),
        "bbr3" => roundtrip::<super::bbr::v3::Config>(params),
        "roccet" => roundtrip::<super::roccet::Config>(params),
        "xrc2" => roundtrip::<super::xrc2::Config>(params),
        other => Err(unknown(other)),
    }
}

/// The JSON Schema of a scheme's parameter table (field names, types,
/// defaults and doc comments, from its `Config`); `None` for an unknown
/// name.
#[cfg(feature = "schema")]
pub fn schema(name: &str) -> Option<schemars::Schema> {
    use schemars::schema_for;
    Some(match name {
        "newreno" => schema_for!(super::newreno::Config),
        "cubic" => schema_for!(super::cubic::Config),
        "xrc" => schema_for!(super::xrc::Config),
        "illinois" => schema_for!(super::illinois::Config),
        "veno" => schema_for!(super::veno::Config),
        "vegas" => schema_for!(super::vegas::Config),
        "copa" => schema_for!(super::copa::Config),
        "abc" => schema_for!(super::abc::Config),
        "pbe" => schema_for!(super::pbe::Config),
        "natcp" => schema_for!(super::natcp::Config),
        "nacubic" => schema_for!(super::nacubic::Config),
        "oracle" => schema_for!(super::oracle::Config),
        "oracle-rate" => schema_for!(super::oracle_rate::Config),
        "bbr" => schema_for!(super::bbr::v1::Config),
        "bbr3" => schema_for!(super::bbr::v3::Config),
        "roccet" => schema_for!(super::roccet::Config),
        "xrc2" => schema_for!(super::xrc2::Config),
        _ => return None,
    })
}

fn unknown(name: &str) -> String {
    format!("unknown congestion control {name:?}; known: {}", SCHEMES.join(", "))
}

/// What every algorithm's `Config` provides.
pub trait CcConfig: DeserializeOwned + Serialize + Default {
    /// Rejects impossible parameter values, naming the parameter.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

fn parse<T: CcConfig>(params: &serde_json::Value) -> Result<T, String> {
    let cfg: T = if params.is_null() {
        T::default()
    } else {
        // The path names the parameter ("probe_rtt_mode_ms: invalid type").
        serde_path_to_error::deserialize(params.clone()).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner().to_string();
            if path.is_empty() || path == "." {
                inner
            } else {
                format!("{path}: {inner}")
            }
        })?
    };
    cfg.validate()?;
    Ok(cfg)
}

fn roundtrip<T: CcConfig>(params: &serde_json::Value) -> Result<serde_json::Value, String> {
    let cfg: T = parse(params)?;
    serde_json::to_value(cfg).map_err(|e| e.to_string())
}
