//! # tool-broker
//!
//! A broker that lets software agents call the tools of several upstream services
//! through one JSON-RPC endpoint. Every tool is data: a TOML catalog compiled once into
//! one generic engine. The folders are the pipeline's stages, each importing only the
//! stages below it (`engine/DESIGN.md` prints the table a test holds):
//!
//! | stage | module |
//! |---|---|
//! | the look of every page | [`html`] |
//! | the files authors write, compiled once | [`catalog`] |
//! | the deployment's config file | [`config`] |
//! | the one error type and its classifications | [`error`] |
//! | counters and log lines | [`telemetry`] |
//! | who calls | [`caller`] |
//! | the durable store | [`store`] |
//! | a request rendered and sent with the caller's key | [`upstream`] |
//! | an answer redacted, shaped and enveloped | [`answer`] |
//! | what the driver and the stages it drives share | [`run`] |
//! | who confirms a write | [`confirm`] |
//! | the keys each user stores | [`hub`] |
//! | local tools | [`hooks`] |
//! | upstream callbacks | [`webhook`] |
//! | one call, end to end | [`call`] |
//! | the MCP endpoint | [`mcp`] |
//! | the operator's console | [`console`] |
//! | the HTTP servers | [`serve`] |
//! | OpenAPI documents -> tool files | [`import`] |
//! | the command line | [`cli`] |

pub mod answer;
pub mod call;
pub mod caller;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod confirm;
pub mod console;
pub mod error;
pub mod hooks;
pub mod html;
pub mod hub;
pub mod import;
pub mod mcp;
pub mod net;
pub mod oracle;
pub mod policy;
pub mod run;
pub mod serve;
pub mod store;
pub mod telemetry;
pub mod upstream;
pub mod webhook;
