//! The HTTP front doors: the broker's own HTTP/1.1 door for the call paths (`door`),
//! hyper's server and the routing of every path (`server`), what a connection may cost
//! (`bounds`), the `POST /` JSON-RPC reader (`jsonrpc`), the OpenAPI projection
//! (`projection`) and the hub's routes (`hub`).
//!
//! May import everything below it: the call driver, the MCP door, webhooks, and the
//! stages under them. Only [`crate::cli`] imports it.

pub mod bounds;
pub mod door;
pub mod hub;
pub mod jsonrpc;
pub mod projection;
pub mod server;
