//! Scenarios: the resolved configuration and the world that runs it.

pub mod config;
#[cfg(feature = "schema")]
pub mod schema;
pub mod world;

pub use config::ScenarioConfig;
pub use world::{RunResult, TraceTexts, World};

/// Parses, completes and validates a scenario given as JSON.
pub fn from_json(text: &str) -> Result<ScenarioConfig, String> {
    ScenarioConfig::resolve(text)
}
