//! Upstream: a tool's compiled HTTP plan rendered into an exact request (`render`), the
//! pooled client that attaches the caller's key and sends it (`client`), a serving
//! worker's own plain-HTTP connections (`held`) and HTTP/1.1 spoken on one of them
//! (`http1`: the request written, the answer read).
//!
//! `route` says where a service's requests go and with which key.
//!
//! May import: the catalog, config, telemetry and [`crate::error`]. Nothing here reads an
//! answer's data (that is [`crate::answer`]) or knows the call driver.

mod client;
pub mod held;
pub mod http1;
pub mod mcp;
pub mod render;
pub mod route;

pub use client::*;
