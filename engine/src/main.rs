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
    if let Err(e) = tool_broker::telemetry::logging::init() {
        eprintln!("tool-broker: {e}");
        return ExitCode::from(2);
    }
    run(Cli::parse())
}
