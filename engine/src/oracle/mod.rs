//! Differential oracles for the hand-written fast paths each takes any
//! bytes, runs the fast path and the reference it must agree with, and says how they
//! disagree. The fuzz targets under `fuzz/` run them on what libFuzzer makes; property
//! tests run them in `cargo test`. A finding becomes a regression test beside the oracle.
//!
//! | oracle | fast path | reference |
//! |---|---|---|
//! | [`http1::head`] | the own HTTP/1.1 server's request head reading | hyper's HTTP/1.1 server |
//! | [`held::answer`] | held connections' answer reading | hyper's HTTP/1.1 client |
//! | [`readers::jsonrpc`] | the one-pass `POST /` reader | the body read as a `Value` |
//! | [`readers::mcp_message`] | the one-pass MCP message reader | the body read as a `Value` |
//! | [`readers::json_string`] | the envelope's JSON string escaper | serde_json |
//! | [`scan::answer`] | the one-pass answer scan with redaction | parse, redact, cut, write |
//! | [`render::hostile`] | request mapping with hostile arguments | no panic, bounded fuel |
//!
//! Not on any request path. May import what it checks: `answer`, `catalog`, `error`,
//! `mcp`, `serve`, `upstream`.

pub mod held;
pub mod http1;
pub mod readers;
pub mod render;
pub mod scan;

/// Agreement, or what differed (the input is the caller's to show).
pub type Verdict = Result<(), String>;

/// Runs `work` on a current-thread runtime of this thread's own (hyper's side of an
/// oracle is async).
fn block_on<F: std::future::Future>(work: F) -> Option<F::Output> {
    thread_local! {
        static RUNTIME: Option<tokio::runtime::Runtime> = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok();
    }
    RUNTIME.with(|rt| rt.as_ref().map(|rt| rt.block_on(work)))
}
