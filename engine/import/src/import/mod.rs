//! `tool-broker catalog import-openapi`: OpenAPI operations -> catalog tool files.
//!
//! One tool per operation: method, path, path/query/header parameters, a JSON or
//! form-encoded body, an argument schema assembled from the parameters and the body
//! (`$ref`s inlined), an output schema from the 2xx answer, a name from the operation id
//! (snake_case) or from `<method>_<path>`, risk from the method (DELETE: `destructive`),
//! `legacy` for deprecated operations, and `[tool.source]` saying exactly where the tool
//! came from. `import/<service>.toml` supplies defaults, skip rules and per-operation
//! overrides; the generated file is rewritten whole on every run, so re-running is
//! idempotent and hand edits live only in the import file.
//!
//! Arguments are flat: path, query and header parameters by name, and the body's own
//! properties beside them when they do not collide (else one `body` argument). Upstream
//! schema defaults describe the upstream's behaviour, so generated tools set
//! `fill_defaults = false`: the broker never sends a value the caller did not give.
//!
//! May import: the catalog and [`crate::error`]: the importer writes catalog files and
//! knows nothing of serving them.

pub mod config;
mod generate;
pub mod mcp;
pub mod naming;
pub mod openapi;
pub mod prose;
pub mod prune;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use config::{ImportFile, merge};
use openapi::Documents;

const METHODS: [&str; 6] = ["get", "put", "post", "delete", "patch", "head"];

/// The longest first sentence that makes a title.
const TITLE_CHARS: usize = 100;

/// What an import produced.
#[derive(Debug, Default)]
pub struct Report {
    /// Generated tools.
    pub tools: usize,
    /// Operations skipped by a rule: `(operation, reason)`.
    pub skipped: Vec<(String, String)>,
    /// Operations that could not be imported and have no skip rule: `(operation, reason)`.
    pub dropped: Vec<(String, String)>,
    /// Override keys that matched no operation.
    pub unused_overrides: Vec<String>,
    /// The generated file's text.
    pub text: String,
    /// Where it belongs, relative to the catalog root.
    pub path: String,
}

impl Report {
    /// Whether the import may be written: nothing dropped silently, no stale override.
    pub fn is_clean(&self) -> bool {
        self.dropped.is_empty() && self.unused_overrides.is_empty()
    }

    /// A human summary listing every skipped and dropped operation with its reason.
    pub fn summary(&self) -> String {
        let mut out = format!("{}: {} tools generated\n", self.path, self.tools);
        for (op, why) in &self.skipped {
            out.push_str(&format!("  skipped  {op}: {why}\n"));
        }
        for (op, why) in &self.dropped {
            out.push_str(&format!(
                "  DROPPED  {op}: {why} (add a [skip] rule or fix the importer)\n"
            ));
        }
        for key in &self.unused_overrides {
            out.push_str(&format!(
                "  UNUSED   [operations.\"{key}\"] matches no operation\n"
            ));
        }
        out
    }
}

struct Operation {
    method: String,
    path: String,
    id: Option<String>,
    spec: PathBuf,
    op: Value,
    path_params: Vec<Value>,
}

impl Operation {
    fn label(&self) -> String {
        format!("{} {}", self.method.to_uppercase(), self.path)
    }
}

/// Imports a service from its OpenAPI documents: the documents read and their
/// operations listed, each made a tool (skips, defaults and overrides applied), the
/// aliases that are no alias dropped, and the tool file written.
pub fn import(
    config: &ImportFile,
    specs: &[PathBuf],
    root_for_labels: &Path,
) -> Result<Report, String> {
    let mut docs = Documents::default();
    let listed = operations(&mut docs, specs, root_for_labels)?;
    let mut report = Report {
        path: format!("catalog/{}/{}", config.service, config.output),
        ..Report::default()
    };
    let mut tools = tools(
        config,
        &mut docs,
        &listed.operations,
        root_for_labels,
        &mut report,
    );
    keep_unique_aliases(&mut tools);
    tools.sort_by(|a, b| {
        let n = |t: &toml::Table| {
            t.get("name")
                .and_then(toml::Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        n(a).cmp(&n(b))
    });
    report.tools = tools.len();
    report.text = written(config, tools, &listed.sources)?;
    Ok(report)
}

/// The operations of a service's documents, in path and method order, and each
/// document's label and hash for the file's header.
struct Listed {
    operations: Vec<Operation>,
    sources: Vec<String>,
}

/// Reads each document and lists its operations.
fn operations(
    docs: &mut Documents,
    specs: &[PathBuf],
    root_for_labels: &Path,
) -> Result<Listed, String> {
    let mut operations = Vec::new();
    let mut sources = Vec::new();
    for spec in specs {
        let canonical = docs.load(spec).map_err(|e| e.to_string())?;
        let text = std::fs::read(&canonical).map_err(|e| e.to_string())?;
        let label = spec_label(spec, root_for_labels);
        sources.push(format!(
            "{label} (sha256 {})",
            crate::catalog::identity::sha256_hex(&text)
        ));
        let doc = docs.get(&canonical).cloned().unwrap_or_default();
        let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
            return Err(format!(
                "`{label}` has no `paths`: is it an OpenAPI document?"
            ));
        };
        for (path, item) in paths {
            let (_, item) = docs.deref(&canonical, item);
            let shared: Vec<Value> = item
                .get("parameters")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for method in METHODS {
                if let Some(op) = item.get(method) {
                    operations.push(Operation {
                        method: method.to_string(),
                        path: path.clone(),
                        id: op
                            .get("operationId")
                            .and_then(Value::as_str)
                            .map(String::from),
                        spec: canonical.clone(),
                        op: op.clone(),
                        path_params: shared.clone(),
                    });
                }
            }
        }
    }
    operations.sort_by(|a, b| {
        (a.path.as_str(), a.method.as_str()).cmp(&(b.path.as_str(), b.method.as_str()))
    });
    Ok(Listed {
        operations,
        sources,
    })
}

/// Each operation made a tool, unless the import file skips it, it cannot be made one,
/// or its name is taken; the report says which, and which overrides matched nothing.
fn tools(
    config: &ImportFile,
    docs: &mut Documents,
    operations: &[Operation],
    root_for_labels: &Path,
    report: &mut Report,
) -> Vec<toml::Table> {
    let mut used = BTreeSet::new();
    let mut tools: Vec<toml::Table> = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for op in operations {
        let keys: Vec<String> = std::iter::once(op.label()).chain(op.id.clone()).collect();
        if let Some((key, why)) = keys.iter().find_map(|k| config.skip.get_key_value(k)) {
            used.insert(key.clone());
            report.skipped.push((op.label(), why.clone()));
            continue;
        }
        let mut tool = match generate::generate(config, docs, op, root_for_labels) {
            Ok(t) => t,
            Err(why) => {
                report.dropped.push((op.label(), why));
                continue;
            }
        };
        overridden(config, &mut tool, &keys, &mut used);
        let name = tool
            .get("name")
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(first) = names.get(&name) {
            report.dropped.push((
                op.label(),
                format!("its name `{name}` is already taken by {first}; give it a `name` in [operations]"),
            ));
            continue;
        }
        names.insert(name, op.label());
        tools.push(tool);
    }
    for key in config.operations.keys().chain(config.skip.keys()) {
        if !used.contains(key) {
            report.unused_overrides.push(key.clone());
        }
    }
    tools
}

/// A generated tool with the import file's defaults (all, then read or write) and
/// its own overrides merged in; `used` notes the overrides that matched. An override's
/// `risk` chooses the defaults: a search sent as a POST (`risk = "read"`) takes the read
/// tools' arguments, not the writes' confirmation.
fn overridden(
    config: &ImportFile,
    tool: &mut toml::Table,
    keys: &[String],
    used: &mut BTreeSet<String>,
) {
    let risk = keys
        .iter()
        .filter_map(|key| config.operations.get(key)?.get("risk"))
        .chain(tool.get("risk"))
        .find_map(toml::Value::as_str)
        .unwrap_or("read")
        .to_string();
    merge(tool, &config.defaults.all);
    merge(
        tool,
        if risk == "read" {
            &config.defaults.read
        } else {
            &config.defaults.write
        },
    );
    for key in keys {
        if let Some(over) = config.operations.get(key) {
            used.insert(key.clone());
            // `notes` is not a tool field: it is added to the generated description.
            let mut over = over.clone();
            if let Some(toml::Value::String(notes)) = over.remove("notes")
                && let Some(toml::Value::String(d)) = tool.get_mut("description")
            {
                d.push(' ');
                d.push_str(&notes);
            }
            merge(tool, &over);
        }
    }
}

/// Drops every alias two tools share: an upstream operation id reused across
/// documents is no alias at all.
fn keep_unique_aliases(tools: &mut [toml::Table]) {
    let mut alias_count: BTreeMap<String, usize> = BTreeMap::new();
    for tool in tools.iter() {
        for a in tool
            .get("aliases")
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(a) = a.as_str() {
                *alias_count
                    .entry(crate::catalog::lookup_key(a))
                    .or_default() += 1;
            }
        }
    }
    for tool in tools.iter_mut() {
        if let Some(toml::Value::Array(aliases)) = tool.get_mut("aliases") {
            aliases.retain(|a| {
                a.as_str()
                    .is_some_and(|a| alias_count.get(&crate::catalog::lookup_key(a)) == Some(&1))
            });
            if aliases.is_empty() {
                tool.remove("aliases");
            }
        }
    }
}

/// The tool file's text: its header (the documents it was made from), then the tools.
fn written(
    config: &ImportFile,
    tools: Vec<toml::Table>,
    sources: &[String],
) -> Result<String, String> {
    let mut file = toml::Table::new();
    file.insert(
        "tool".into(),
        toml::Value::Array(tools.into_iter().map(toml::Value::Table).collect()),
    );
    let body = toml::to_string(&file).map_err(|e| format!("cannot write TOML: {e}"))?;
    Ok(format!(
        "#:schema ../../schemas/catalog-tools.schema.json\n\
         # Generated by `tool-broker catalog import-openapi --service {}` from:\n{}\
         # Do not edit: change import/{}.toml and import again.\n\n{body}",
        config.service,
        sources
            .iter()
            .map(|s| format!("#   {s}\n"))
            .collect::<String>(),
        config.service,
    ))
}

/// A document's name for provenance: relative to the nearest `specs` folder (as the
/// upstream descriptions are filed), else to the catalog root, else its file name.
fn spec_label(spec: &Path, root: &Path) -> String {
    let spec = spec.canonicalize().unwrap_or_else(|_| spec.to_path_buf());
    let parts: Vec<String> = spec
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(i) = parts.iter().rposition(|p| p == "specs") {
        return parts[i + 1..].join("/");
    }
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    spec.strip_prefix(&root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| parts.last().cloned().unwrap_or_default())
}

/// A `specs` entry of an import file, relative to `folder`; a `*` in its file name
/// matches every file of that directory (sorted), e.g. `crm/apps/*.json`.
pub fn expand_spec(folder: &Path, spec: &str) -> Result<Vec<PathBuf>, String> {
    let path = folder.join(spec);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some((head, tail)) = name.split_once('*') else {
        return Ok(vec![path]);
    };
    let dir = path.parent().unwrap_or(folder);
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read `{}`: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .is_some_and(|n| {
                    n.starts_with(head) && n.ends_with(tail) && n.len() >= head.len() + tail.len()
                })
        })
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(format!("`{spec}` matches no file in `{}`", dir.display()));
    }
    Ok(out)
}
