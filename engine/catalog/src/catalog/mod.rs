//! The catalog side: the files authors write, compiled once into the immutable catalog
//! the request path looks things up in.
//!
//! `source` (where the files come from) -> `descriptor`, `rules` (raw, strict) ->
//! `compile` (with `tool_file`, `schema_check`, `start_cache`, `template`, `search`,
//! `diag`) ->
//! [`Catalog`] (`compiled`), hashed and locked by `identity`.
//!
//! May import: [`crate::error`] only. Nothing of the request side (callers, the store,
//! upstream, answers, the call) is named here: the catalog is data the request side reads.

pub mod compile;
mod compiled;
pub mod costs;
pub mod describe;
pub mod descriptor;
pub mod diag;
pub mod guards;
mod hook;
pub mod identity;
pub mod intents;
pub mod listed;
pub mod mcp;
pub mod rules;
pub mod sample;
pub mod schema;
pub mod schema_check;
pub mod search;
pub mod source;
pub mod start_cache;
pub mod template;
pub mod tool_file;
pub mod webhook;

pub use compiled::*;
pub use hook::Hook;
