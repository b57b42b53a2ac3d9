//! `tool-broker`: see `tool-broker --help`.

use std::process::ExitCode;

use clap::Parser;
use tool_broker::cli::{Cli, run};

/// jemalloc serves the broker's allocations (engine/DESIGN.md, "The allocator is
/// jemalloc"); the library and its tests keep the system allocator.
#[cfg(target_os = "linux")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let flush = match tool_broker::telemetry::logging::init() {
        Ok(flush) => flush,
        Err(e) => {
            eprintln!("tool-broker: {e}");
            return ExitCode::from(2);
        }
    };
    let code = run(Cli::parse());
    // What is queued is written before the process exits.
    drop(flush);
    code
}
