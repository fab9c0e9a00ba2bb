//! Scenarios: the resolved configuration and the world that runs it.

pub mod access;
pub mod bench;
pub mod config;
mod error_paths;
mod flow;
#[cfg(feature = "schema")]
pub mod schema;
pub mod world;

pub use access::TraceTexts;
pub use config::ScenarioConfig;
pub use world::{RunResult, World};

/// Parses, completes and validates a scenario given as JSON.
pub fn from_json(text: &str) -> Result<ScenarioConfig, String> {
    ScenarioConfig::resolve(text)
}
