//! The `catalog` commands authors and auditors use: `check`, `lock`, `verify`, `diff`,
//! `list`, `schema`, `surface`, `lint`, `openapi`, `import-openapi`, on a catalog root
//! folder or the catalog embedded in the binary.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::args::{CatalogCommand, FindArgs, Format};
use super::output::pretty;
use crate::catalog::Catalog;
use crate::catalog::compile::compile;
use crate::catalog::describe::found;
use crate::catalog::identity::{LOCK_PATH, Lock, diff, verify};
use crate::catalog::source::Sources;

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

    /// The root's catalog, compiled.
    pub fn load(&self) -> Result<Catalog, String> {
        compile(&self.sources()?).map_err(|d| d.to_string())
    }

    /// The folder, for commands that read or write files beside the catalog.
    pub(super) fn dir(&self, command: &str) -> Result<&Path, String> {
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
        CatalogCommand::Verify { upstreams } => {
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
                if upstreams {
                    out.push_str(&super::mcp::verify_all(&catalog)?);
                }
                Ok(out)
            } else {
                Err(problems
                    .iter()
                    .map(|p| format!("error: {p}"))
                    .collect::<Vec<_>>()
                    .join("\n"))
            }
        }
        CatalogCommand::Diff {
            old_dir,
            policy_dir,
            format,
        } => diff_lock(&root, &old_dir, policy_dir.as_deref(), format),
        CatalogCommand::List { format } => list(&root, format),
        CatalogCommand::ImportOpenapi {
            service,
            specs,
            specs_dir,
            check,
        } => import_openapi(&root, &service, specs, specs_dir, check),
        CatalogCommand::Openapi { include_legacy } => {
            let catalog = root.load()?;
            let text = crate::serve::projection::text(&catalog, include_legacy)
                .map_err(|e| format!("the projection did not serialise: {e}"))?;
            let _ = writeln!(out, "{text}");
            Ok(out)
        }
        CatalogCommand::ImportMcp {
            service,
            url,
            key_env,
            check,
        } => super::mcp::import(
            &root.load()?,
            root.dir("import-mcp")?,
            &service,
            super::mcp::Reach::from_env(url, key_env)?,
            check,
        ),
        CatalogCommand::DiffMcp {
            service,
            url,
            key_env,
        } => super::mcp::diff(
            &root.load()?,
            &service,
            super::mcp::Reach::from_env(url, key_env)?,
        ),
        CatalogCommand::Lint => lint(&root),
        CatalogCommand::Surface { format } => surface(&root, format),
        CatalogCommand::Find(asked) => find(&root.load()?, &asked),
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

/// `catalog diff`: the tools added, removed and changed since the catalog at `old_dir`.
fn diff_lock(
    root: &CatalogRoot,
    old_dir: &Path,
    policy_dir: Option<&Path>,
    format: Format,
) -> Result<String, String> {
    use std::fmt::Write as _;
    let mut out = String::new();
    let old = load(old_dir).map_err(|e| format!("old catalog: {e}"))?;
    let new = root.load()?;
    let entries = diff(&old.lock(), &new.lock());
    let mentions = match policy_dir {
        Some(dir) => crate::policy::load::read_dir(dir)
            .and_then(|files| crate::policy::check::mentions(&files))
            .map_err(|problems| problems.join("\n"))?,
        None => Vec::new(),
    };
    // The policies a reviewer of each change should read again.
    let concerned = |e: &crate::catalog::identity::DiffEntry| -> Vec<&str> {
        mentions
            .iter()
            .filter(|m| e.change != "added" && m.concerns(&e.tool, e.old_hash.as_deref()))
            .map(|m| m.id.as_str())
            .collect()
    };
    match format {
        Format::Json => {
            let mut rows = serde_json::to_value(&entries).map_err(|e| e.to_string())?;
            if policy_dir.is_some()
                && let Some(rows) = rows.as_array_mut()
            {
                for (row, e) in rows.iter_mut().zip(&entries) {
                    row["policies"] = serde_json::json!(concerned(e));
                }
            }
            pretty(&mut out, &rows);
        }
        Format::Text => {
            for e in &entries {
                let policies = concerned(e);
                let _ = writeln!(
                    out,
                    "{:<8} {}  {} -> {}{}",
                    e.change,
                    e.tool,
                    e.old_hash.as_deref().unwrap_or("-"),
                    e.new_hash.as_deref().unwrap_or("-"),
                    if policies.is_empty() {
                        String::new()
                    } else {
                        format!("  policies: {}", policies.join(", "))
                    }
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

/// `catalog list`: one line (or JSON object) per tool.
fn list(root: &CatalogRoot, format: Format) -> Result<String, String> {
    use std::fmt::Write as _;
    let mut out = String::new();
    let catalog = root.load()?;
    let rows: Vec<_> = catalog
        .tools
        .iter()
        .map(|t| list_row(&catalog, t))
        .collect();
    match format {
        Format::Json => {
            pretty(&mut out, &rows);
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

/// `catalog import-openapi`: a service's tool file generated from its OpenAPI documents
/// (or, with `check`, compared with the committed one).
fn import_openapi(
    root: &CatalogRoot,
    service: &str,
    mut specs: Vec<PathBuf>,
    specs_dir: Option<PathBuf>,
    check: bool,
) -> Result<String, String> {
    use std::fmt::Write as _;
    let mut out = String::new();
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

/// `catalog lint`: input schemas as model providers receive them; a refusal fails.
fn lint(root: &CatalogRoot) -> Result<String, String> {
    use std::fmt::Write as _;
    let mut out = String::new();
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

/// `catalog find`: the tools `find_tools` ranks first for a query, for a key allowed
/// everything (the same index, filters and `why`).
fn find(catalog: &Catalog, asked: &FindArgs) -> Result<String, String> {
    use std::fmt::Write as _;
    if asked.query.trim().is_empty() {
        return Err("the query is empty: say what you want to do, in plain words".into());
    }
    if !(1..=50).contains(&asked.limit) {
        return Err(format!(
            "--limit {} is out of range: give 1 to 50",
            asked.limit
        ));
    }
    if let Some(service) = asked.service.as_deref()
        && !catalog.services.contains_key(service)
    {
        let known: Vec<&str> = catalog.services.keys().map(String::as_str).collect();
        return Err(format!(
            "no service `{service}`; the services are: {}",
            known.join(", ")
        ));
    }
    let filters = crate::hooks::FindFilters {
        risk: None,
        include_legacy: asked.include_legacy,
        limit: asked.limit,
    };
    let keep = |i: usize| catalog.tools.get(i).is_some_and(|t| filters.admits(t));
    let search = catalog.search();
    let hits = search.search_all(asked.service.as_deref(), &asked.query, keep);
    let rows = found(catalog, &hits, &search.why(&asked.query), asked.limit);
    let mut out = String::new();
    match asked.format {
        Format::Json => pretty(&mut out, &rows),
        Format::Text => {
            for row in &rows {
                let _ = writeln!(
                    out,
                    "{:>2}. {}  {:.3}  {}",
                    row["rank"].as_u64().unwrap_or_default(),
                    row["fullName"].as_str().unwrap_or_default(),
                    row["score"].as_f64().unwrap_or_default(),
                    row["why"].as_str().unwrap_or_default()
                );
            }
            let _ = writeln!(out, "{} tools matched", hits.len());
        }
    }
    Ok(out)
}

/// `catalog surface`: what each toolset's `tools/list` costs a client.
fn surface(root: &CatalogRoot, format: Format) -> Result<String, String> {
    use std::fmt::Write as _;
    let mut out = String::new();
    let catalog = root.load()?;
    let rows = crate::mcp::surface::surfaces(&catalog);
    match format {
        Format::Json => {
            pretty(&mut out, &rows);
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let verified = catalog(
            CatalogCommand::Verify { upstreams: false },
            CatalogRoot::Embedded,
        )
        .unwrap_or_default();
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

    fn find_of(query: &str, service: Option<&str>, limit: usize) -> Result<String, String> {
        catalog(
            CatalogCommand::Find(FindArgs {
                query: query.into(),
                service: service.map(String::from),
                limit,
                include_legacy: false,
                format: Format::Json,
            }),
            CatalogRoot::Embedded,
        )
    }

    #[test]
    fn find_ranks_as_find_tools_does_and_says_what_is_wrong() {
        let found = find_of("give the customer their money back", None, 3).unwrap_or_default();
        let rows: Vec<serde_json::Value> = serde_json::from_str(&found).unwrap_or_default();
        assert_eq!(rows.len(), 3, "{found}");
        assert_eq!(rows[0]["fullName"], "payments.post_refunds", "{found}");
        assert_eq!(rows[0]["rank"], 1);
        assert!(
            rows[0]["score"].as_f64().is_some_and(|s| s > 0.0),
            "{found}"
        );
        assert!(
            rows[0]["why"]
                .as_str()
                .is_some_and(|w| w.contains("refund")),
            "{found}"
        );
        let crm = find_of("create a contact", Some("crm"), 5).unwrap_or_default();
        let rows: Vec<serde_json::Value> = serde_json::from_str(&crm).unwrap_or_default();
        assert!(!rows.is_empty());
        assert!(
            rows.iter().all(|r| r["fullName"]
                .as_str()
                .is_some_and(|n| n.starts_with("crm."))),
            "{crm}"
        );
        for (query, service, limit, said) in [
            ("  ", None, 10, "the query is empty"),
            ("list refunds", None, 0, "--limit 0 is out of range"),
            ("list refunds", None, 51, "--limit 51 is out of range"),
            (
                "list refunds",
                Some("nope"),
                10,
                "no service `nope`; the services are: agent",
            ),
        ] {
            let error = find_of(query, service, limit).unwrap_err();
            assert!(error.contains(said), "{query:?}: {error}");
        }
    }
}
