//! The `tool-broker` command line: `serve` and the `catalog` commands authors and
//! auditors use (`check`, `lock`, `verify`, `diff`, `list`, `schema`).
//!
//! May import everything; the only module that starts the server.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;

use crate::call::Broker;
use crate::catalog::Catalog;
use crate::catalog::compile::compile;
use crate::catalog::identity::{LOCK_PATH, Lock, diff, verify};
use crate::catalog::source::Sources;
use crate::config::ConfigFile;

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

/// `tool-broker catalog ...`.
#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Validate everything; print every problem with its file and line.
    Check,
    /// Rewrite catalog/catalog.lock from the current catalog.
    Lock,
    /// Fail when the lock is stale or a hash changed without a version bump.
    Verify,
    /// List tools added, removed and changed against another catalog root.
    Diff {
        /// The older catalog root.
        old_dir: PathBuf,
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
    /// Generate catalog/<service>/openapi.toml from OpenAPI documents and import/<service>.toml.
    ImportOpenapi {
        /// The service id (reads import/<service>.toml).
        #[arg(long)]
        service: String,
        /// OpenAPI 3.0/3.1 documents, JSON or YAML (repeatable).
        #[arg(long = "spec")]
        specs: Vec<PathBuf>,
        /// Take the documents named by `specs` in import/<service>.toml from this folder.
        #[arg(long)]
        specs_dir: Option<PathBuf>,
        /// Do not write: fail when the generated file would differ from the committed one.
        #[arg(long)]
        check: bool,
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

fn load(dir: &Path) -> Result<Catalog, String> {
    CatalogRoot::Dir(dir.to_path_buf()).load()
}

/// Which catalog a `catalog` command reads: a folder on disk, or the copy embedded in
/// this binary (the catalog `serve` runs without `--catalog-dir`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogRoot {
    /// A folder holding `catalog/`, `rules/` and `templates/`.
    Dir(PathBuf),
    /// The catalog, rules and templates built into the binary.
    Embedded,
}

impl CatalogRoot {
    /// The root a command reads: the folder given; else the current folder when it is a
    /// catalog root; else the embedded catalog.
    pub fn choose(given: Option<PathBuf>) -> Self {
        match given {
            Some(dir) => Self::Dir(dir),
            None if Path::new("catalog").is_dir() => Self::Dir(PathBuf::from(".")),
            None => Self::Embedded,
        }
    }

    /// How the root is named in messages.
    pub fn describe(&self) -> String {
        match self {
            Self::Dir(dir) => format!("the catalog root `{}`", dir.display()),
            Self::Embedded => format!(
                "the catalog embedded in tool-broker {} (no catalog root here; pass --catalog-dir to read one)",
                env!("CARGO_PKG_VERSION")
            ),
        }
    }

    fn sources(&self) -> Result<Sources, String> {
        match self {
            Self::Dir(dir) => Sources::from_dir(dir).map_err(|e| e.to_string()),
            Self::Embedded => Ok(Sources::embedded()),
        }
    }

    fn load(&self) -> Result<Catalog, String> {
        compile(&self.sources()?).map_err(|d| d.to_string())
    }

    /// The folder, for commands that read or write files beside the catalog.
    fn dir(&self, command: &str) -> Result<&Path, String> {
        match self {
            Self::Dir(dir) => Ok(dir),
            Self::Embedded => Err(format!(
                "`catalog {command}` works on a catalog root folder, and there is none here: \
                 run it in a checkout or pass --catalog-dir DIR"
            )),
        }
    }

    /// The committed lock file's text and where it was read.
    fn lock_text(&self) -> Result<(String, String), String> {
        match self {
            Self::Dir(dir) => {
                let path = dir.join(LOCK_PATH);
                std::fs::read_to_string(&path)
                    .map(|text| (text, path.display().to_string()))
                    .map_err(|e| {
                        format!(
                            "cannot read `{}`: {e}; run `tool-broker catalog lock`",
                            path.display()
                        )
                    })
            }
            Self::Embedded => Sources::embedded()
                .get(LOCK_PATH)
                .map(|text| (text.to_string(), format!("embedded {LOCK_PATH}")))
                .ok_or_else(|| format!("the embedded catalog has no `{LOCK_PATH}`")),
        }
    }
}

impl From<&Path> for CatalogRoot {
    fn from(dir: &Path) -> Self {
        Self::Dir(dir.to_path_buf())
    }
}

impl From<&PathBuf> for CatalogRoot {
    fn from(dir: &PathBuf) -> Self {
        Self::Dir(dir.clone())
    }
}

/// Writes command output to stdout. A reader that closed the pipe early (`| head`) is
/// not an error: the rest of the output is dropped quietly.
fn write_stdout(text: &str) -> std::io::Result<()> {
    write_quietly(&mut std::io::stdout().lock(), text)
}

/// Writes all of `text`; a closed pipe ends the output without an error.
pub fn write_quietly(out: &mut impl std::io::Write, text: &str) -> std::io::Result<()> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

fn write_stderr(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// Runs the CLI; returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve {
            listen,
            config,
            catalog_dir,
            store,
        } => serve(&listen, config.as_deref(), catalog_dir.as_deref(), &store),
        Command::Audit { command, store } => printed(audit(command, &store)),
        Command::Vault { command, store } => {
            printed(vault(command, &store, &|name| std::env::var(name).ok()))
        }
        Command::Catalog {
            command,
            catalog_dir,
        } => {
            let root = CatalogRoot::choose(catalog_dir);
            write_stderr(&format!("tool-broker: reading {}", root.describe()));
            match catalog(command, root) {
                Ok(out) => match write_stdout(&out) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        write_stderr(&format!("tool-broker: cannot write the output: {e}"));
                        ExitCode::FAILURE
                    }
                },
                Err(message) => {
                    write_stderr(&message);
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// Runs a `catalog` command; returns what it prints on success, the diagnostics on failure.
pub fn catalog(command: CatalogCommand, root: impl Into<CatalogRoot>) -> Result<String, String> {
    use std::fmt::Write as _;
    let root = root.into();
    let mut out = String::new();
    match command {
        CatalogCommand::Check => {
            let catalog = root.load()?;
            let _ = writeln!(
                out,
                "ok: {} services, {} tools, snapshot {}",
                catalog.services.len(),
                catalog.tools.len(),
                catalog.snapshot_id
            );
            Ok(out)
        }
        CatalogCommand::Lock => {
            let catalog = root.load()?;
            match &root {
                CatalogRoot::Dir(dir) => {
                    let path = dir.join(LOCK_PATH);
                    std::fs::write(&path, catalog.lock().to_text())
                        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
                    let _ = writeln!(out, "wrote {} ({})", path.display(), catalog.snapshot_id);
                }
                // Nothing to write beside a binary: the lock is printed for the auditor.
                CatalogRoot::Embedded => out.push_str(&catalog.lock().to_text()),
            }
            Ok(out)
        }
        CatalogCommand::Verify => {
            let catalog = root.load()?;
            let (text, path) = root.lock_text()?;
            let committed = Lock::parse(&text)
                .map_err(|e| format!("`{path}` does not parse: {}", e.message()))?;
            let problems = verify(&committed, &catalog.lock());
            if problems.is_empty() {
                let _ = writeln!(
                    out,
                    "ok: lock matches ({} tools, {})",
                    catalog.tools.len(),
                    catalog.snapshot_id
                );
                Ok(out)
            } else {
                Err(problems
                    .iter()
                    .map(|p| format!("error: {p}"))
                    .collect::<Vec<_>>()
                    .join("\n"))
            }
        }
        CatalogCommand::Diff { old_dir, format } => {
            let old = load(&old_dir).map_err(|e| format!("old catalog: {e}"))?;
            let new = root.load()?;
            let entries = diff(&old.lock(), &new.lock());
            match format {
                Format::Json => {
                    let _ = writeln!(
                        out,
                        "{}",
                        serde_json::to_string_pretty(&entries).unwrap_or_default()
                    );
                }
                Format::Text => {
                    for e in &entries {
                        let _ = writeln!(
                            out,
                            "{:<8} {}  {} -> {}",
                            e.change,
                            e.tool,
                            e.old_hash.as_deref().unwrap_or("-"),
                            e.new_hash.as_deref().unwrap_or("-")
                        );
                    }
                    let _ = writeln!(
                        out,
                        "{} change{}",
                        entries.len(),
                        if entries.len() == 1 { "" } else { "s" }
                    );
                }
            }
            Ok(out)
        }
        CatalogCommand::List { format } => {
            let catalog = root.load()?;
            let rows: Vec<_> = catalog
                .tools
                .iter()
                .map(|t| list_row(&catalog, t))
                .collect();
            match format {
                Format::Json => {
                    let _ = writeln!(
                        out,
                        "{}",
                        serde_json::to_string_pretty(&rows).unwrap_or_default()
                    );
                }
                Format::Text => {
                    for t in &catalog.tools {
                        let (method, path, hook) = t.upstream_label();
                        let target = match (method, path, hook) {
                            (Some(m), Some(p), _) => format!("{m} {p}"),
                            (_, _, Some(h)) => format!("hook {h}"),
                            _ => String::new(),
                        };
                        let _ = writeln!(
                            out,
                            "{:<55} {:<11} {:<5} {}",
                            t.full_name,
                            t.tier.as_str(),
                            t.risk.as_str(),
                            target
                        );
                    }
                }
            }
            Ok(out)
        }
        CatalogCommand::ImportOpenapi {
            service,
            mut specs,
            specs_dir,
            check,
        } => {
            let dir = root.dir("import-openapi")?;
            let import_path = dir.join("import").join(format!("{service}.toml"));
            let text = std::fs::read_to_string(&import_path)
                .map_err(|e| format!("cannot read `{}`: {e}", import_path.display()))?;
            let config: crate::import::config::ImportFile = toml::from_str(&text).map_err(|e| {
                let line = e
                    .span()
                    .map_or(0, |s| crate::catalog::diag::line_of(&text, s.start));
                format!("{}:{line}: {}", import_path.display(), e.message().trim())
            })?;
            if config.service != service {
                return Err(format!(
                    "`{}` says service `{}`, not `{service}`",
                    import_path.display(),
                    config.service
                ));
            }
            if let Some(folder) = specs_dir {
                for spec in &config.specs {
                    specs.extend(crate::import::expand_spec(&folder, spec)?);
                }
            }
            if specs.is_empty() {
                return Err(format!(
                    "no OpenAPI document: pass --spec FILE, or --specs-dir DIR with `specs` in `{}`",
                    import_path.display()
                ));
            }
            let report = crate::import::import(&config, &specs, dir)?;
            let target = dir.join(&report.path);
            let _ = write!(out, "{}", report.summary());
            if check {
                let committed = std::fs::read_to_string(&target).unwrap_or_default();
                if committed != report.text {
                    return Err(format!(
                        "{out}`{}` is not what the import generates; run the import without --check",
                        report.path
                    ));
                }
            } else {
                std::fs::write(&target, &report.text)
                    .map_err(|e| format!("cannot write `{}`: {e}", target.display()))?;
            }
            if !report.is_clean() {
                return Err(format!(
                    "{out}the import is not clean: see DROPPED and UNUSED above"
                ));
            }
            // The result must compile with the rest of the catalog.
            load(dir).map_err(|e| format!("{out}the generated catalog does not compile:\n{e}"))?;
            Ok(out)
        }
        CatalogCommand::Openapi { include_legacy } => {
            let catalog = root.load()?;
            let text = crate::serve::projection::text(&catalog, include_legacy)
                .map_err(|e| format!("the projection did not serialise: {e}"))?;
            let _ = writeln!(out, "{text}");
            Ok(out)
        }
        CatalogCommand::Lint => {
            let catalog = root.load()?;
            let findings: Vec<_> = catalog
                .tools
                .iter()
                .filter(|t| t.exposed)
                .flat_map(|t| crate::mcp::schemas::lint(&catalog, t))
                .collect();
            let refused = findings.iter().filter(|f| f.refused).count();
            let refused_tools: std::collections::BTreeSet<&str> = findings
                .iter()
                .filter(|f| f.refused)
                .map(|f| f.tool.as_str())
                .collect();
            for f in &findings {
                let _ = writeln!(
                    out,
                    "{}: {} {}: {}",
                    if f.refused { "error" } else { "warning" },
                    f.tool,
                    if f.pointer.is_empty() {
                        "/"
                    } else {
                        &f.pointer
                    },
                    f.problem
                );
            }
            let _ = writeln!(
                out,
                "lint: {} tools, {} refused by model providers ({refused} findings), {} warnings",
                catalog.tools.iter().filter(|t| t.exposed).count(),
                refused_tools.len(),
                findings.len() - refused
            );
            if refused > 0 { Err(out) } else { Ok(out) }
        }
        CatalogCommand::Surface { format } => {
            let catalog = root.load()?;
            let rows = crate::mcp::surface::surfaces(&catalog);
            match format {
                Format::Json => {
                    let _ = writeln!(
                        out,
                        "{}",
                        serde_json::to_string_pretty(&rows).unwrap_or_default()
                    );
                }
                Format::Text => {
                    let _ = writeln!(
                        out,
                        "| toolset | tools | bytes | est. tokens (bytes/{}) | largest entry |",
                        crate::mcp::surface::BYTES_PER_TOKEN
                    );
                    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
                    for r in &rows {
                        let _ = writeln!(
                            out,
                            "| {} | {} | {} | {} | {} |",
                            r.toolset, r.tools, r.bytes, r.tokens, r.largest
                        );
                    }
                }
            }
            Ok(out)
        }
        CatalogCommand::Schema { write } => {
            for (name, text) in crate::catalog::schema::format_schemas() {
                if write {
                    let path = root.dir("schema --write")?.join("schemas").join(name);
                    std::fs::write(&path, text)
                        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
                    let _ = writeln!(out, "wrote {}", path.display());
                } else {
                    let _ = writeln!(out, "// {name}\n{text}");
                }
            }
            Ok(out)
        }
    }
}

/// One row of `catalog list --format json`.
pub fn list_row(catalog: &Catalog, t: &crate::catalog::Tool) -> serde_json::Value {
    let (method, path, hook) = t.upstream_label();
    json!({
        "name": t.full_name,
        "service": t.service,
        "tier": t.tier,
        "risk": t.risk,
        "classes": t.classes,
        "method": method,
        "path": path,
        "hook": hook,
        "exposed": t.exposed,
        "catalogVersion": catalog.services.get(&t.service).map(|s| s.catalog_version.clone()),
        "descriptorHash": t.descriptor_hash,
    })
}

/// Parses `--since`: RFC 3339, or an age before `now` (`24h`, `7d`, `30m`).
pub fn parse_since(text: &str, now: jiff::Timestamp) -> Result<jiff::Timestamp, String> {
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    let age: jiff::Span = text.parse().map_err(|_| {
        format!("--since `{text}` is neither an RFC 3339 time (2026-11-23T00:00:00Z) nor an age (24h, 7d, 30m)")
    })?;
    now.to_zoned(jiff::tz::TimeZone::UTC)
        .checked_sub(age)
        .map(|z| z.timestamp())
        .map_err(|e| format!("--since `{text}`: {e}"))
}

/// Runs an `audit` command on its own runtime; returns what it prints.
pub fn audit(command: AuditCommand, store: &StoreArgs) -> Result<String, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(audit_list(command, store))
}

/// Prints a command's output, or its error prefixed with `tool-broker:`; the exit code.
fn printed(result: Result<String, String>) -> ExitCode {
    match result {
        Ok(out) => match write_stdout(&out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                write_stderr(&format!("tool-broker: cannot write the output: {e}"));
                ExitCode::FAILURE
            }
        },
        Err(message) => {
            write_stderr(&format!("tool-broker: {message}"));
            ExitCode::FAILURE
        }
    }
}

/// Runs a `vault` command with the variables `env` reads; returns what it prints.
pub fn vault(
    command: VaultCommand,
    store: &StoreArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let VaultCommand::Rekey { config } = command;
    let config = config.as_path();
    let file = crate::config::ConfigFile::load(config)?;
    let cipher = crate::hub::Hub::cipher(&file, env)?.ok_or_else(|| {
        format!(
            "`{}` sets no vault_key_env: there is no vault to re-seal",
            config.display()
        )
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        let store = crate::store::Store::open(&store.config()?)
            .await
            .map_err(|e| e.to_string())?;
        write_stderr(&format!(
            "tool-broker: re-sealing the hub's keys in {} under vault key {}",
            store.location(),
            cipher.current_id()
        ));
        let done = crate::hub::Hub::rekey(&cipher, &store)
            .await
            .map_err(|e| e.to_string())?;
        let mut out = format!(
            "re-sealed {} key(s) under vault key {}",
            done.resealed,
            cipher.current_id()
        );
        if done.changed_meanwhile > 0 {
            out.push_str(&format!(
                "; {} changed by their user meanwhile (already under the current key)",
                done.changed_meanwhile
            ));
        }
        if done.unopened > 0 {
            return Err(format!(
                "{out}; {} key(s) open under no vault key given: keep the key that sealed them in vault_previous_key_envs, or have those users store their keys again",
                done.unopened
            ));
        }
        out.push('\n');
        Ok(out)
    })
}

/// `audit list`: reads the store and formats the records.
pub async fn audit_list(command: AuditCommand, store: &StoreArgs) -> Result<String, String> {
    use std::fmt::Write as _;
    let AuditCommand::List {
        since,
        tool,
        limit,
        format,
    } = command;
    let since = since
        .map(|s| parse_since(&s, jiff::Timestamp::now()))
        .transpose()?;
    let config = store.config()?;
    let store = crate::store::Store::open(&config)
        .await
        .map_err(|e| e.to_string())?;
    write_stderr(&format!(
        "tool-broker: reading the write audit in {}",
        store.location()
    ));
    let records = store
        .list_audit(&crate::store::audit::AuditQuery { since, tool, limit })
        .await
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    match format {
        Format::Json => {
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&records).unwrap_or_default()
            );
        }
        Format::Text => {
            for r in &records {
                let _ = writeln!(
                    out,
                    "{:>6} {} {:<12} {:<5} {:<22} {} {} {} args:{} {}ms {}",
                    r.seq,
                    r.at,
                    r.outcome.as_str(),
                    r.confirmation.as_deref().unwrap_or("-"),
                    r.classification,
                    r.upstream_status.map_or("-".to_string(), |s| s.to_string()),
                    r.key_name,
                    r.tool,
                    r.args_sha256.get(..16).unwrap_or_default(),
                    r.duration_ms,
                    r.trace_id
                );
            }
            let _ = writeln!(out, "{} records", records.len());
        }
    }
    Ok(out)
}

fn serve(
    listen: &str,
    config: Option<&Path>,
    catalog_dir: Option<&Path>,
    store: &StoreArgs,
) -> ExitCode {
    match serve_inner(listen, config, catalog_dir, store) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tool-broker: {message}");
            ExitCode::FAILURE
        }
    }
}

fn serve_inner(
    listen: &str,
    config: Option<&Path>,
    catalog_dir: Option<&Path>,
    store: &StoreArgs,
) -> Result<(), String> {
    let store_config = store.config()?;
    let config = match config {
        Some(path) => ConfigFile::load(path)?,
        None => ConfigFile::default(),
    };
    let started = std::time::Instant::now();
    let sources = match catalog_dir {
        Some(dir) => Sources::from_dir(dir).map_err(|e| e.to_string())?,
        None => Sources::embedded(),
    };
    let catalog = compile(&sources).map_err(|d| format!("the catalog does not compile:\n{d}"))?;
    // The catalog's text is not needed once compiled (about 6.5 MB).
    drop(sources);
    let compile_ms = started.elapsed().as_millis() as u64;
    // This thread's runtime holds the store's pool, background work (webhook key
    // refresh) and the signal handling; the calls are served by worker threads, each
    // with its own runtime (`crate::serve::server::serve_workers`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let store = runtime
        .block_on(crate::store::Store::open(&store_config))
        .map_err(|e| e.to_string())?;
    tracing::info!(store = %store.location(), "store ready");
    let env = |name: &str| std::env::var(name).ok();
    let mut broker = Broker::new(Arc::new(catalog), &config, &env, store)?;
    // With `[oauth]`, users sign in; a key is generated only where no one else could call.
    if broker.callers.keys.is_empty() && broker.callers.oauth.is_none() {
        let key = crate::caller::generate_key()?;
        broker.callers.keys.add_plain("generated", &key);
        eprintln!(
            "tool-broker: no API key is configured, so this run accepts a generated one:\n\n    Authorization: Bearer {key}\n\n\
             It is printed only here and changes at every start. To fix a key, set TOOL_BROKER_API_KEY,\n\
             or add [[keys]] entries (sha256 of each token) to a --config file."
        );
    }
    let listen = config
        .listen
        .as_deref()
        .filter(|_| listen == "127.0.0.1:8080")
        .unwrap_or(listen)
        .to_string();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let workers = broker.doors.bounds.worker_threads();
        tracing::info!(
            listen = %listen,
            workers,
            snapshot = %broker.catalog.snapshot_id,
            tools = broker.catalog.tools.len(),
            catalog = %broker.catalog.origin,
            compile_ms,
            ready_ms = started.elapsed().as_millis() as u64,
            "tool-broker listening"
        );
        // SIGTERM (an orchestrator stopping the broker) or Ctrl-C: drain, then stop.
        let shutdown = async {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{SignalKind, signal};
                match signal(SignalKind::terminate()) {
                    Ok(mut term) => {
                        tokio::select! {
                            _ = term.recv() => tracing::info!("SIGTERM received"),
                            _ = tokio::signal::ctrl_c() => tracing::info!("interrupt received"),
                        }
                    }
                    Err(_) => {
                        let _ = tokio::signal::ctrl_c().await;
                    }
                }
            }
            #[cfg(not(unix))]
            {
                let _ = tokio::signal::ctrl_c().await;
            }
        };
        crate::serve::server::serve_workers(Arc::new(broker), listener, workers, shutdown)
            .await
            .map_err(|e| format!("server failed: {e}"))
    })
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

    /// A reader that takes `room` bytes and then closes the pipe (`| head -c room`).
    struct ClosingPipe {
        room: usize,
    }

    impl std::io::Write for ClosingPipe {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_ends_output_quietly() {
        let text = "x".repeat(10_000);
        assert!(write_quietly(&mut ClosingPipe { room: 10 }, &text).is_ok());
        assert!(write_quietly(&mut ClosingPipe { room: 0 }, &text).is_ok());
        assert!(write_quietly(&mut ClosingPipe { room: 20_000 }, &text).is_ok());
    }

    #[test]
    fn without_a_root_the_commands_read_the_embedded_catalog() {
        assert_eq!(
            CatalogRoot::choose(Some(PathBuf::from("x"))),
            CatalogRoot::Dir(PathBuf::from("x"))
        );
        let listed = catalog(
            CatalogCommand::List {
                format: Format::Json,
            },
            CatalogRoot::Embedded,
        )
        .unwrap_or_default();
        let rows: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap_or_default();
        assert!(rows.len() > 1000, "{}", rows.len());
        let verified = catalog(CatalogCommand::Verify, CatalogRoot::Embedded).unwrap_or_default();
        assert!(verified.starts_with("ok: lock matches"), "{verified}");
        let lock = catalog(CatalogCommand::Lock, CatalogRoot::Embedded).unwrap_or_default();
        assert_eq!(
            Some(lock.as_str()),
            Sources::embedded().get(LOCK_PATH),
            "lock on the embedded catalog prints the lock it carries"
        );
        let openapi = catalog(
            CatalogCommand::Openapi {
                include_legacy: false,
            },
            CatalogRoot::Embedded,
        )
        .unwrap_or_default();
        assert!(openapi.starts_with("{\"components\"") || openapi.contains("\"openapi\""));
        let import = catalog(
            CatalogCommand::ImportOpenapi {
                service: "agent".into(),
                specs: Vec::new(),
                specs_dir: None,
                check: true,
            },
            CatalogRoot::Embedded,
        )
        .unwrap_err();
        assert!(
            import.contains("works on a catalog root folder"),
            "{import}"
        );
    }
}
