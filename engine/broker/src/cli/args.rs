//! The command line's shape: every command, subcommand and option as clap reads them.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// A tool broker: one JSON-RPC endpoint in front of a versioned catalog of upstream tools.
#[derive(Debug, Parser)]
#[command(name = "tool-broker", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the broker.
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: String,
        /// Deployment config file (TOML): caller keys, upstreams, settings.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Load catalog/, rules/ and templates/ from this folder instead of the embedded copy.
        #[arg(long)]
        catalog_dir: Option<PathBuf>,
        /// Where the store lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// The write audit (read only: no command changes or removes a record).
    Audit {
        /// Which one.
        #[command(subcommand)]
        command: AuditCommand,
        /// Where the store lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// The hub's vault of users' upstream keys.
    Vault {
        /// Which one.
        #[command(subcommand)]
        command: VaultCommand,
        /// Where the store lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// What budgets have spent (read only).
    Budget {
        /// Which one.
        #[command(subcommand)]
        command: BudgetCommand,
        /// Where the store lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Signed-in sessions of the hub and the approval page.
    Sessions {
        /// Which one.
        #[command(subcommand)]
        command: SessionsCommand,
        /// Where the store lives.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Cedar policies: the schema they are typed by, and a folder checked against it.
    Policy {
        /// Which one.
        #[command(subcommand)]
        command: PolicyCommand,
        /// The catalog root (as for `catalog`). Default: the current folder when it is
        /// one, else the catalog embedded in this binary.
        #[arg(long, global = true)]
        catalog_dir: Option<PathBuf>,
    },
    /// Guards (`rules/guards.toml`, docs/guards.md): which rules fire on a text.
    Guards {
        /// Which one.
        #[command(subcommand)]
        command: GuardsCommand,
        /// The catalog root (as for `catalog`). Default: the current folder when it is
        /// one, else the catalog embedded in this binary.
        #[arg(long, global = true)]
        catalog_dir: Option<PathBuf>,
    },
    /// Catalog authoring and audit commands.
    Catalog {
        /// Which one.
        #[command(subcommand)]
        command: CatalogCommand,
        /// The catalog root (the folder holding catalog/, rules/, templates/). Default:
        /// the current folder when it is one, else the catalog embedded in this binary.
        #[arg(long, global = true)]
        catalog_dir: Option<PathBuf>,
    },
}

/// `tool-broker guards ...`.
#[derive(Debug, Subcommand)]
pub enum GuardsCommand {
    /// Which rules fire on TEXT (on or off), where and why, and the text as arguments
    /// and as answers would read after the rules that are on.
    Test {
        /// The text.
        text: String,
    },
}

/// `tool-broker policy ...`.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Print the Cedar schema generated from the compiled catalog.
    Schema {
        /// The deployment config whose `[policy] claims` become user attributes.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Cedar's schema syntax, or its JSON form.
        #[arg(long, value_enum, default_value_t = SchemaFormat::Cedar)]
        format: SchemaFormat,
    },
    /// Validate the policy folder against the catalog in strict mode; list, per policy,
    /// the tools it can apply to; warn of descriptor hashes the catalog no longer has.
    Check {
        /// The deployment config whose `[policy]` names the folder.
        #[arg(long)]
        config: Option<PathBuf>,
        /// A policy folder to check instead of the config's (claims: none).
        #[arg(long, conflicts_with = "config")]
        dir: Option<PathBuf>,
        /// Text, or one JSON object (every policy with all its tools, the warnings).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

/// How `policy schema` prints the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaFormat {
    /// Cedar's schema syntax (`entity Tool in [Service] = { ... };`).
    Cedar,
    /// Cedar's JSON schema format.
    Json,
}

/// Where the durable store lives: PostgreSQL when a URL is given, else SQLite in the data
/// folder.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// Folder of the embedded SQLite store (created when absent).
    #[arg(
        long,
        env = "TOOL_BROKER_DATA_DIR",
        default_value = "data",
        global = true
    )]
    pub data_dir: PathBuf,
    /// PostgreSQL instead of SQLite, for several replicas: postgres://user@host/db.
    #[arg(
        long,
        env = "TOOL_BROKER_DATABASE_URL",
        hide_env_values = true,
        global = true
    )]
    pub database_url: Option<String>,
}

impl StoreArgs {
    /// The store these arguments name.
    pub fn config(&self) -> Result<crate::store::StoreConfig, String> {
        crate::store::StoreConfig::choose(self.database_url.clone(), &self.data_dir)
    }
}

/// `tool-broker audit ...`.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Print audit records, oldest first (the newest `--limit` of them).
    List {
        /// Only records at or after this time: RFC 3339 (`2026-11-23T00:00:00Z`) or an
        /// age (`24h`, `7d`, `30m`).
        #[arg(long)]
        since: Option<String>,
        /// Only this tool (full name, `<service>.<tool>`).
        #[arg(long)]
        tool: Option<String>,
        /// At most this many records.
        #[arg(long, default_value_t = 1000)]
        limit: i64,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

/// `tool-broker budget ...`.
#[derive(Debug, Subcommand)]
pub enum BudgetCommand {
    /// What each budget spent per caller and window, newest window first: units
    /// settled and reserved (calls still upstream), calls charged, the last charge.
    List {
        /// Only charges at or after this time: RFC 3339 (`2026-11-23T00:00:00Z`) or an
        /// age (`24h`, `7d`, `30m`).
        #[arg(long)]
        since: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

/// `tool-broker vault ...`.
#[derive(Debug, Clone, Subcommand)]
pub enum VaultCommand {
    /// Re-seal every stored key under the current vault key (`vault_key_env`): after a
    /// rotation, with the old key still in `vault_previous_key_envs`; then drop it.
    Rekey {
        /// The deployment config file naming `vault_key_env` and
        /// `vault_previous_key_envs`.
        #[arg(long)]
        config: PathBuf,
    },
}

/// `tool-broker sessions ...`.
#[derive(Debug, Clone, Subcommand)]
pub enum SessionsCommand {
    /// End every session of one person at once, on every replica: a user
    /// (`<issuer>#<subject>`, as the audit names them) or an approver credential's name.
    /// Their next page view asks them to sign in again, with the roles they hold then.
    Revoke {
        /// Whose sessions.
        #[arg(long)]
        user: String,
    },
    /// The live sessions, newest first: kind, who, started, last used.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
}

/// `tool-broker catalog ...`.
#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Validate everything; print every problem with its file and line.
    Check,
    /// Rewrite catalog/catalog.lock from the current catalog.
    Lock,
    /// Fail when the lock is stale or a hash changed without a version bump.
    Verify {
        /// Also ask every MCP service's server for its tools and fail on any that it
        /// describes otherwise than the catalog pinned (listed without a caller's key:
        /// a server that needs one is checked with `diff-mcp S --key-env VAR`).
        #[arg(long)]
        upstreams: bool,
    },
    /// List tools added, removed and changed against another catalog root.
    Diff {
        /// The older catalog root.
        old_dir: PathBuf,
        /// A policy folder: each changed or removed tool is listed with the policies
        /// that name it or pin its old descriptor hash.
        #[arg(long)]
        policy_dir: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// List every tool.
    List {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Generate catalog/SERVICE/openapi.toml from OpenAPI documents and import/SERVICE.toml.
    ImportOpenapi {
        /// The service id (reads import/SERVICE.toml).
        #[arg(long)]
        service: String,
        /// OpenAPI 3.0/3.1 documents, JSON or YAML (repeatable).
        #[arg(long = "spec")]
        specs: Vec<PathBuf>,
        /// Take the documents named by `specs` in import/SERVICE.toml from this folder.
        #[arg(long)]
        specs_dir: Option<PathBuf>,
        /// Do not write: fail when the generated file would differ from the committed one.
        #[arg(long)]
        check: bool,
    },
    /// Connect to an MCP service's server, read every page of its tools/list and write
    /// catalog/SERVICE/mcp.toml (hand overrides: import/SERVICE.toml).
    ImportMcp {
        /// The service id (its service.toml has an `[mcp]` table).
        service: String,
        /// The server's URL instead of `[mcp] url` (else TOOL_BROKER_UPSTREAM_SERVICE).
        #[arg(long)]
        url: Option<String>,
        /// The environment variable holding the key sent in the service's credential
        /// header (HTTP servers that need one).
        #[arg(long)]
        key_env: Option<String>,
        /// Do not write: fail when the generated file would differ from the committed one.
        #[arg(long)]
        check: bool,
    },
    /// Print what an MCP service's server says now against the catalog, tool by tool
    /// (added, removed, changed and in which members); fails when anything changed.
    DiffMcp {
        /// The service id.
        service: String,
        /// The server's URL instead of `[mcp] url` (else TOOL_BROKER_UPSTREAM_SERVICE).
        #[arg(long)]
        url: Option<String>,
        /// The environment variable holding the key (HTTP servers that need one).
        #[arg(long)]
        key_env: Option<String>,
    },
    /// Print (or with --write, refresh) the JSON Schemas of the catalog formats.
    Schema {
        /// Write them into schemas/ under the catalog root.
        #[arg(long)]
        write: bool,
    },
    /// Print the OpenAPI 3.1 projection (what GET /openapi.json serves).
    Openapi {
        /// Also list legacy tools.
        #[arg(long)]
        include_legacy: bool,
    },
    /// Report argument schemas that model providers would refuse (`$ref`, `$defs`,
    /// `$schema`, non-object roots) or that some providers refuse (property names
    /// outside ^[a-zA-Z0-9_.-]{1,64}$). Fails on the first kind only.
    Lint,
    /// Rank the tools for a query as the MCP discovery `find_tools` does for a key
    /// allowed everything: rank, tool, score and why. See what an intent, a synonym or a
    /// weight changes before the retrieval test does.
    Find(FindArgs),
    /// The size of MCP `tools/list` per toolset (discovery, all, each service): tools,
    /// bytes and estimated tokens, for a key allowed everything.
    Surface {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text.
    Text,
    /// One JSON array.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed_and_vault_rekey_parses() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "tool-broker",
            "vault",
            "rekey",
            "--config",
            "broker.toml",
            "--data-dir",
            "d",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let Command::Vault {
            command: VaultCommand::Rekey { config },
            store,
        } = cli.command
        else {
            panic!("not vault rekey")
        };
        assert_eq!(config, PathBuf::from("broker.toml"));
        assert_eq!(store.data_dir, PathBuf::from("d"));
        assert!(Cli::try_parse_from(["tool-broker", "vault", "rekey"]).is_err());
    }
}

/// What `catalog find` is asked.
#[derive(Debug, Clone, clap::Args)]
pub struct FindArgs {
    /// What a person or a model asks, in its own words.
    pub query: String,
    /// Only this service's tools (scored against every service's words).
    #[arg(long)]
    pub service: Option<String>,
    /// Most results (1 to 50).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Legacy tools too.
    #[arg(long)]
    pub include_legacy: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}
