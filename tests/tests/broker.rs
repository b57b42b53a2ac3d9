//! Black-box tests of the tool broker: one integration test binary, modules by area.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test fails by panicking"
)]
#![allow(
    clippy::too_many_lines,
    reason = "a test reads top to bottom as one story; the 120-line bound (clippy.toml) is the engine's"
)]

mod approval;
mod architecture;
mod audit_console;
mod bad_input;
mod bounds;
mod budgets;
mod cases;
mod cli;
mod confirmation;
mod console;
mod console_approvals;
mod console_audit_page;
mod console_catalog;
mod console_users;
mod conventions;
mod costs;
mod diagnostics;
mod elicitation;
mod failures;
mod gate;
mod gate_property;
mod guards;
mod guards_corpus;
mod held;
mod http1;
mod hub;
mod hub_connect;
mod hub_pages;
mod hub_sessions;
mod hub_vault;
mod idempotency;
mod import;
mod leak;
mod local_tools;
mod mcp;
mod mcp_upstream;
mod navigation;
mod oauth;
mod origin;
mod pinning;
mod policy;
mod poll;
mod reschedule;
mod retrieval;
mod samples;
mod service_rules;
mod shaping;
mod snapshots_compiled;
mod start_cache;
mod store;
mod support;
mod surface;
mod tasks;
mod tls;
mod traces;
mod webhook;
