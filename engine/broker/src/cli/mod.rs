//! The `tool-broker` command line, a file per command: `args` (what clap reads),
//! `serve`, `catalog` (the commands authors and auditors use), `audit`, `vault`,
//! `sessions`, `budget`, `policy`, and
//! `output` (stdout, stderr, the exit code).
//!
//! May import everything; the only module that starts the server.

mod args;
mod audit;
mod budget;
mod catalog;
mod guards;
mod mcp;
mod output;
mod policy;
mod serve;
mod sessions;
mod vault;

use std::process::ExitCode;

pub use args::{
    AuditCommand, BudgetCommand, CatalogCommand, Cli, Command, Format, GuardsCommand,
    PolicyCommand, SchemaFormat, SessionsCommand, StoreArgs, VaultCommand,
};
pub use audit::{audit, audit_list, parse_since};
pub use budget::budget;
pub use catalog::{CatalogRoot, catalog, list_row};
pub use guards::guards;
pub use mcp::{Reach, import as import_mcp};
pub use output::write_quietly;
pub use policy::policy;
pub use sessions::sessions;
pub use vault::vault;

use output::{print, printed, write_stderr};

/// Runs the CLI; returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve {
            listen,
            config,
            catalog_dir,
            store,
        } => serve::serve(&listen, config.as_deref(), catalog_dir.as_deref(), &store),
        Command::Audit { command, store } => printed(audit(command, &store)),
        Command::Sessions { command, store } => printed(sessions(command, &store)),
        Command::Budget { command, store } => printed(budget(command, &store)),
        Command::Vault { command, store } => {
            printed(vault(command, &store, &|name| std::env::var(name).ok()))
        }
        Command::Policy {
            command,
            catalog_dir,
        } => print(policy(command, &announced(catalog_dir))),
        Command::Guards {
            command,
            catalog_dir,
        } => print(guards(command, &announced(catalog_dir))),
        Command::Catalog {
            command,
            catalog_dir,
        } => print(catalog(command, announced(catalog_dir))),
    }
}

/// The catalog root a command reads, named on stderr.
fn announced(catalog_dir: Option<std::path::PathBuf>) -> CatalogRoot {
    let root = CatalogRoot::choose(catalog_dir);
    write_stderr(&format!("tool-broker: reading {}", root.describe()));
    root
}
