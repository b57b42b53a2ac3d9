//! What the broker tells its operators (counters, log lines, traces and their export)
//! and its own rare outbound requests (identity provider, OTLP collector).

pub mod net;
pub mod telemetry;

// The floors below, under the names their modules have in every crate, so a path
// (`crate::error::CallError`) reads the same wherever it is written.
pub use broker_catalog::error;
