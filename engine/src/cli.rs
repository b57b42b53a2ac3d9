//! The `tool-broker` command line: `serve` and the `catalog` commands authors and
//! auditors use (`check`, `lock`, `verify`, `diff`, `list`, `schema`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;

use crate::call::Broker;
use crate::catalog::Catalog;
use crate::compile::compile;
use crate::config::ConfigFile;
use crate::identity::{LOCK_PATH, Lock, diff, verify};
use crate::source::Sources;

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
    },
    /// Catalog authoring and audit commands.
    Catalog {
        /// Which one.
        #[command(subcommand)]
        command: CatalogCommand,
        /// The catalog root (the folder holding catalog/, rules/, templates/).
        #[arg(long, global = true, default_value = ".")]
        catalog_dir: PathBuf,
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
    let sources = Sources::from_dir(dir).map_err(|e| e.to_string())?;
    compile(&sources).map_err(|d| d.to_string())
}

/// Runs the CLI; returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve {
            listen,
            config,
            catalog_dir,
        } => serve(&listen, config.as_deref(), catalog_dir.as_deref()),
        Command::Catalog {
            command,
            catalog_dir,
        } => match catalog(command, &catalog_dir) {
            Ok(out) => {
                print!("{out}");
                ExitCode::SUCCESS
            }
            Err(message) => {
                eprintln!("{message}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Runs a `catalog` command; returns what it prints on success, the diagnostics on failure.
pub fn catalog(command: CatalogCommand, dir: &Path) -> Result<String, String> {
    use std::fmt::Write as _;
    let mut out = String::new();
    match command {
        CatalogCommand::Check => {
            let catalog = load(dir)?;
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
            let catalog = load(dir)?;
            let path = dir.join(LOCK_PATH);
            std::fs::write(&path, catalog.lock().to_text())
                .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
            let _ = writeln!(out, "wrote {} ({})", path.display(), catalog.snapshot_id);
            Ok(out)
        }
        CatalogCommand::Verify => {
            let catalog = load(dir)?;
            let path = dir.join(LOCK_PATH);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                format!(
                    "cannot read `{}`: {e}; run `tool-broker catalog lock`",
                    path.display()
                )
            })?;
            let committed = Lock::parse(&text)
                .map_err(|e| format!("`{}` does not parse: {}", path.display(), e.message()))?;
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
            let new = load(dir)?;
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
            let catalog = load(dir)?;
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
            let import_path = dir.join("import").join(format!("{service}.toml"));
            let text = std::fs::read_to_string(&import_path)
                .map_err(|e| format!("cannot read `{}`: {e}", import_path.display()))?;
            let config: crate::import::config::ImportFile = toml::from_str(&text).map_err(|e| {
                let line = e.span().map_or(0, |s| crate::diag::line_of(&text, s.start));
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
            let catalog = load(dir)?;
            let _ = writeln!(
                out,
                "{}",
                crate::projection::document(&catalog, include_legacy)
            );
            Ok(out)
        }
        CatalogCommand::Lint => {
            let catalog = load(dir)?;
            let findings: Vec<_> = catalog
                .tools
                .iter()
                .filter(|t| t.exposed)
                .flat_map(crate::mcp::schemas::lint)
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
        CatalogCommand::Schema { write } => {
            for (name, text) in crate::schema::format_schemas() {
                if write {
                    let path = dir.join("schemas").join(name);
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

fn serve(listen: &str, config: Option<&Path>, catalog_dir: Option<&Path>) -> ExitCode {
    match serve_inner(listen, config, catalog_dir) {
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
) -> Result<(), String> {
    let config = match config {
        Some(path) => ConfigFile::load(path)?,
        None => ConfigFile::default(),
    };
    let sources = match catalog_dir {
        Some(dir) => Sources::from_dir(dir).map_err(|e| e.to_string())?,
        None => Sources::embedded(),
    };
    let catalog = compile(&sources).map_err(|d| format!("the catalog does not compile:\n{d}"))?;
    let env = |name: &str| std::env::var(name).ok();
    let mut broker = Broker::new(Arc::new(catalog), &config, &env)?;
    if broker.keys.is_empty() {
        let key = crate::auth::generate_key()?;
        broker.keys.add_plain("generated", &key);
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        tracing::info!(
            listen = %listen,
            snapshot = %broker.catalog.snapshot_id,
            tools = broker.catalog.tools.len(),
            catalog = %broker.catalog.origin,
            "tool-broker listening"
        );
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        crate::server::serve(Arc::new(broker), listener, shutdown)
            .await
            .map_err(|e| format!("server failed: {e}"))
    })
}
