//! Who calls and what they may do: bearer keys, OAuth access tokens, browser origins,
//! upstream callback keys, and Cedar policies typed by the catalog.

pub mod caller;
pub mod policy;

// The floors below, under the names their modules have in every crate, so a path
// (`crate::catalog::Catalog`) reads the same wherever it is written.
pub use broker_catalog::{catalog, error};
pub use broker_config::config;
pub use broker_telemetry::net;
