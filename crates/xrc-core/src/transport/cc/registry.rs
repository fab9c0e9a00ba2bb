//! Scheme name → configuration type. Adding an algorithm is one module
//! (its controller and its [`CcConfig`], which builds it) plus one line in
//! [`REGISTRY`].
//!
//! Every algorithm has a `Config` that deserializes from the scenario's
//! parameter table for that scheme (unknown keys rejected) and whose
//! `Default` carries the reference values.

use super::{CcConfig, CongestionControl};

/// A built controller, or the message naming what was wrong.
type Built = Result<Box<dyn CongestionControl>, String>;

/// One scheme: its name in `cc = "..."` and what its `Config` type does,
/// as functions (so the list is a table, not three matches to keep in step).
pub struct Scheme {
    /// The name scenarios use.
    pub name: &'static str,
    build: fn(&serde_json::Value, u64) -> Built,
    resolve: fn(&serde_json::Value) -> Result<serde_json::Value, String>,
    #[cfg(feature = "schema")]
    schema: fn() -> schemars::Schema,
}

macro_rules! scheme {
    ($name:literal, $cfg:ty) => {
        Scheme {
            name: $name,
            build: build_with::<$cfg>,
            resolve: roundtrip::<$cfg>,
            #[cfg(feature = "schema")]
            schema: schema_of::<$cfg>,
        }
    };
}

/// Every scheme, in the order `xrc list`, the schema and the sweeps show
/// them.
pub const REGISTRY: &[Scheme] = &[
    scheme!("newreno", super::newreno::Config),
    scheme!("cubic", super::cubic::Config),
    scheme!("xrc", super::xrc::Config),
    scheme!("illinois", super::illinois::Config),
    scheme!("veno", super::veno::Config),
    scheme!("vegas", super::vegas::Config),
    scheme!("copa", super::copa::Config),
    scheme!("abc", super::abc::Config),
    scheme!("pbe", super::pbe::Config),
    scheme!("natcp", super::natcp::Config),
    scheme!("nacubic", super::nacubic::Config),
    scheme!("oracle", super::oracle::Config),
    scheme!("bbr", super::bbr::v1::Config),
    scheme!("bbr3", super::bbr::v3::Config),
    scheme!("roccet", super::roccet::Config),
    scheme!("oracle-rate", super::oracle_rate::Config),
    scheme!("xrc2", super::xrc2::Config),
    scheme!("external", super::external::Config),
];

/// The names scenarios may use in `cc = "..."`, in [`REGISTRY`] order.
pub const SCHEMES: &[&str] = &NAMES;

const NAMES: [&str; REGISTRY.len()] = {
    let mut names = [""; REGISTRY.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = REGISTRY[i].name;
        i += 1;
    }
    names
};

fn find(name: &str) -> Result<&'static Scheme, String> {
    REGISTRY.iter().find(|s| s.name == name).ok_or_else(|| unknown(name))
}

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
    (find(name)?.build)(params, stream)
}

/// The fully resolved parameters (defaults filled in) for a scheme.
pub fn resolve(name: &str, params: &serde_json::Value) -> Result<serde_json::Value, String> {
    (find(name)?.resolve)(params)
}

/// The JSON Schema of a scheme's parameter table (field names, types,
/// defaults and doc comments, from its `Config`); `None` for an unknown
/// name.
#[cfg(feature = "schema")]
pub fn schema(name: &str) -> Option<schemars::Schema> {
    find(name).ok().map(|s| (s.schema)())
}

fn unknown(name: &str) -> String {
    format!("unknown congestion control {name:?}; known: {}", SCHEMES.join(", "))
}

fn build_with<T: CcConfig>(params: &serde_json::Value, stream: u64) -> Built {
    Ok(parse::<T>(params)?.build(stream))
}

#[cfg(feature = "schema")]
fn schema_of<T: schemars::JsonSchema>() -> schemars::Schema {
    schemars::schema_for!(T)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_builds_a_controller_that_answers_to_it() {
        for &name in SCHEMES {
            let cc = build(name, &serde_json::Value::Null).expect("defaults build");
            assert_eq!(cc.name(), name);
            assert!(resolve(name, &serde_json::Value::Null).unwrap().is_object(), "{name}");
        }
    }

    #[test]
    fn names_are_unique_and_an_unknown_one_lists_them_all() {
        let mut seen = std::collections::BTreeSet::new();
        assert!(SCHEMES.iter().all(|n| seen.insert(*n)), "{SCHEMES:?}");
        let e = build("fastest", &serde_json::Value::Null).err().expect("unknown");
        assert!(
            e.contains("\"fastest\"") && SCHEMES.iter().all(|n| e.contains(n)),
            "{e}"
        );
        assert_eq!(resolve("fastest", &serde_json::Value::Null).unwrap_err(), e);
    }

    #[test]
    fn a_bad_parameter_is_refused_by_build_and_resolve_alike_naming_it() {
        let p = serde_json::json!({"beta": 2.0});
        let b = build("cubic", &p).err().expect("refused");
        assert_eq!(resolve("cubic", &p).unwrap_err(), b);
        assert!(b.contains("beta"), "{b}");
    }
}
