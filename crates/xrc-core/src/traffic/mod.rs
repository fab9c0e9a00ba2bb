//! Traffic: what the application at a sender writes.
//!
//! A bulk transfer writes as long as its flow runs; a finite transfer
//! writes its size and completes. Sources drive the TCP sender through two
//! calls, `app_write` and `app_close`, so richer sources (video ON/OFF,
//! short-flow generators) build on the same interface.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Traffic {
    /// Sends as long as the flow runs.
    #[default]
    Bulk,
    /// Sends `size_bytes` and completes.
    Transfer { size_bytes: u64 },
}
