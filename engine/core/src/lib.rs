//! One call, end to end: the context a call carries, who confirms a write, the keys
//! each user stores, local tools, upstream callbacks, and the one gate every upstream
//! request leaves by.

pub mod call;
pub mod confirm;
pub mod hooks;
pub mod html;
pub mod hub;
pub mod reply;
pub mod run;
pub mod webhook;

// The floors below, under the names their modules have in every crate, so a path
// (`crate::catalog::Catalog`) reads the same wherever it is written.
pub use broker_catalog::{catalog, error};
pub use broker_config::config;
pub use broker_identity::{caller, policy};
pub use broker_store::store;
pub use broker_telemetry::{net, telemetry};
pub use broker_upstream::{answer, upstream};
