//! What the broker tells its operators: Prometheus counters (`metrics`), log lines
//! (`logging`) and trace ids (`trace`).
//!
//! May import: [`crate::error`] only; every stage may import it.

pub mod logging;
pub mod metrics;
pub mod trace;
