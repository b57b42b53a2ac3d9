//! What the broker tells its operators: Prometheus counters (`metrics`) and the last
//! hour of calls per minute for the console (`recent`), log lines
//! (`logging`), traces (`trace`: W3C Trace Context, a call's spans), what a finished span
//! holds (`span`, read by both) and their OTLP export (`otlp`).
//!
//! May import: [`crate::error`] and [`crate::net`]; every stage may import it.

pub mod guard_hits;
pub mod log_writer;
pub mod logging;
pub mod metrics;
pub mod otlp;
pub mod recent;
pub mod span;
pub mod trace;

/// The `User-Agent` of the broker's own requests.
pub const USER_AGENT: &str = concat!("tool-broker/", env!("CARGO_PKG_VERSION"));
