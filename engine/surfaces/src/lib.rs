//! What callers and operators reach: the MCP endpoint, the operator's console and the
//! HTTP servers that route every path.

pub mod console;
pub mod mcp;
pub mod serve;
pub mod served;

// The floors below, under the names their modules have in every crate, so a path
// (`crate::catalog::Catalog`) reads the same wherever it is written.
pub use broker_catalog::{catalog, error};
pub use broker_config::config;
pub use broker_core::{call, confirm, hooks, html, hub, reply, run, webhook};
pub use broker_identity::{caller, policy};
pub use broker_store::store;
pub use broker_telemetry::{net, telemetry};
pub use broker_upstream::{answer, upstream};
