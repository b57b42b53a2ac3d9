//! The durable store: one interface over SQLite and PostgreSQL, its migrations, and
//! every record the broker keeps between calls.

pub mod store;

// The floors below, under the names their modules have in every crate, so a path
// (`crate::catalog::Catalog`) reads the same wherever it is written.
pub use broker_catalog::{catalog, error};
