//! The upstream side of a call: a request rendered and sent with the caller's key, and its
//! answer read, redacted, shaped and enveloped.

pub mod answer;
pub mod upstream;

// The floors below, under the names their modules have in every crate, so a path
// (`crate::catalog::Catalog`) reads the same wherever it is written.
pub use broker_catalog::{catalog, error};
pub use broker_config::config;
pub use broker_telemetry::telemetry;
