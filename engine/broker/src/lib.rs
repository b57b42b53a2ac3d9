//! # tool-broker
//!
//! A broker that lets software agents call the tools of several upstream services
//! through one JSON-RPC endpoint. Every tool is data: a TOML catalog compiled once into
//! one generic engine. The engine is a workspace of crates, one per floor, each
//! depending only on the floors below it (`engine/DESIGN.md` prints the table a test
//! holds against the manifests). This crate is the top floor: the command line and the
//! `tool-broker` binary; it re-exports every floor's modules under one root, for the
//! binary, the benchmarks and the black-box tests.
//!
//! | floor (crate) | modules |
//! |---|---|
//! | `broker-catalog` | [`catalog`], [`error`] |
//! | `broker-config` | [`config`] |
//! | `broker-telemetry` | [`telemetry`], [`net`] |
//! | `broker-store` | [`store`] |
//! | `broker-identity` | [`caller`], [`policy`] |
//! | `broker-upstream` | [`upstream`], [`answer`] |
//! | `broker-core` | [`run`], [`webhook`], [`confirm`], [`html`], [`hub`], [`hooks`], [`call`] |
//! | `broker-surfaces` | [`served`], [`mcp`], [`console`], [`serve`] |
//! | `broker-import` | [`import`] |
//! | `tool-broker` | [`cli`] |

pub mod cli;

pub use broker_catalog::{catalog, error};
pub use broker_config::config;
pub use broker_core::{call, confirm, hooks, html, hub, reply, run, webhook};
pub use broker_identity::{caller, policy};
pub use broker_import::import;
pub use broker_store::store;
pub use broker_surfaces::{console, mcp, serve, served};
pub use broker_telemetry::{net, telemetry};
pub use broker_upstream::{answer, upstream};
