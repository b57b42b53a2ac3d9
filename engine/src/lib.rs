//! # tool-broker
//!
//! A broker that lets software agents call the tools of several upstream services
//! through one JSON-RPC endpoint. Every tool is data: a TOML catalog compiled once into
//! one generic engine. The pipeline can be read off the module names:
//!
//! | stage | module |
//! |---|---|
//! | where the files come from | [`source`] |
//! | what authors write | [`descriptor`], [`rules`] |
//! | compile once, report every problem | [`compile`], [`diag`], [`template`] |
//! | what the request path looks up | [`catalog`], [`identity`] |
//! | bringing in upstream operations | [`import`] (OpenAPI -> tool files) |
//! | who calls | [`auth`], [`config`] |
//! | one call, end to end | [`call`]: [`args`] -> [`confirm`] -> [`render`] -> [`upstream`] -> [`redact`] -> [`envelope`] |
//! | local tools | [`hooks`] |
//! | the HTTP front door | [`server`], [`bounds`] (what a connection may cost), [`metrics`] |
//!
//! See `engine/DESIGN.md` for the reasoning behind the shape.

pub mod approval;
pub mod args;
pub mod auth;
pub mod bound;
pub mod bounds;
pub mod call;
pub mod catalog;
pub mod cli;
pub mod compile;
pub mod config;
pub mod confirm;
pub mod describe;
pub mod descriptor;
pub mod diag;
pub mod door;
pub mod envelope;
pub mod error;
pub mod held;
pub mod hooks;
pub mod idempotency;
pub mod identity;
pub mod import;
pub mod jobs;
pub mod jsonrpc;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod origin;
pub mod projection;
pub mod ratelimit;
pub mod redact;
pub mod render;
pub mod response;
pub mod rules;
pub mod sample;
pub mod scan;
pub mod schema;
pub mod schema_check;
pub mod seal;
pub mod search;
pub mod server;
pub mod shape;
pub mod source;
pub mod store;
pub mod template;
pub mod tenancy;
pub mod tool_file;
pub mod upstream;
pub mod webhook;
