//! Differential oracles of the hand-written fast paths, each against its reference:
//! run by the fuzz targets under `fuzz/` and by the corpus replay in `cargo test`; never
//! on a request path (fuzz/README.md).

pub mod oracle;

// The floors below, under the names their modules have in every crate, so a path
// (`crate::catalog::Catalog`) reads the same wherever it is written.
pub use broker_catalog::{catalog, error};
pub use broker_core::call;
pub use broker_surfaces::{mcp, serve};
pub use broker_upstream::{answer, upstream};
