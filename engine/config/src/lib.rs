//! The deployment's config file: strict tables read once at start and checked against
//! the catalog. Knows no caller, no store, no upstream.

pub mod config;

// The floors below, under the names their modules have in every crate, so a path
// (`crate::catalog::Catalog`) reads the same wherever it is written.
pub use broker_catalog::{catalog, error};
