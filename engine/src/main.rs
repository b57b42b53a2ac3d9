//! `tool-broker`: see `tool-broker --help`.

use std::process::ExitCode;

use clap::Parser;
use tool_broker::cli::{Cli, run};

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOL_BROKER_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    run(Cli::parse())
}
