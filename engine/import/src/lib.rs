//! The importer: OpenAPI documents made catalog tool files (`tool-broker catalog
//! import`). Only the command line uses it; the request path never does.

pub mod import;

// The floors below, under the names their modules have in every crate, so a path
// (`crate::catalog::Catalog`) reads the same wherever it is written.
pub use broker_catalog::{catalog, error};
