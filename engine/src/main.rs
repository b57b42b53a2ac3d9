//! `tool-broker`: see `tool-broker --help`.

use std::process::ExitCode;

use clap::Parser;
use tool_broker::cli::{Cli, run};

fn main() -> ExitCode {
    if let Err(e) = tool_broker::logging::init() {
        eprintln!("tool-broker: {e}");
        return ExitCode::from(2);
    }
    run(Cli::parse())
}
