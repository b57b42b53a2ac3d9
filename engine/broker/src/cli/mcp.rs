//! `catalog import-mcp` and `catalog diff-mcp`: an MCP service's server asked for its
//! tools (every page), its answer written as `catalog/<service>/mcp.toml` or set
//! against the catalog's pins (docs/mcp-upstreams.md).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::catalog::{Action, Catalog};
use crate::import::mcp::{Change, McpImport, diff as diff_tools, tools_file};
use crate::upstream::mcp::{McpTarget, Servers};

/// How long asking a server for its tools may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the server is and the key it takes.
#[derive(Default)]
pub struct Reach {
    /// The server's URL instead of the catalog's.
    pub url: Option<String>,
    /// The key sent in the service's credential header (never printed).
    pub key: Option<String>,
}

impl Reach {
    /// The URL given, and the key read from the variable `key_env` names.
    pub fn from_env(url: Option<String>, key_env: Option<String>) -> Result<Self, String> {
        let key = match key_env {
            Some(name) => Some(std::env::var(&name).map_err(|_| format!("`{name}` is not set"))?),
            None => None,
        };
        Ok(Self { url, key })
    }
}

/// `catalog import-mcp`: the tools of `service`'s server written into the catalog root
/// at `dir` (or, with `check`, compared with the committed file).
pub fn import(
    catalog: &Catalog,
    dir: &Path,
    service: &str,
    reach: Reach,
    check: bool,
) -> Result<String, String> {
    let tools = list(catalog, service, &reach)?;
    let overrides_path = dir.join("import").join(format!("{service}.toml"));
    let overrides: McpImport = match std::fs::read_to_string(&overrides_path) {
        Ok(text) => {
            toml::from_str(&text).map_err(|e| format!("{}: {e}", overrides_path.display()))?
        }
        Err(_) => McpImport::default(),
    };
    let text = tools_file(
        service,
        &tools,
        &overrides,
        &catalog.rules.confirmation.confirm_arg,
    )?;
    let path = dir.join("catalog").join(service).join("mcp.toml");
    if check {
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != text {
            return Err(format!(
                "{} is not what the server lists now: run `tool-broker catalog import-mcp {service}`, review the change and lock",
                path.display()
            ));
        }
        return Ok(format!(
            "{} is up to date ({} tools)\n",
            path.display(),
            tools.len()
        ));
    }
    std::fs::write(&path, &text).map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    Ok(format!(
        "wrote {} ({} tools); review it, then `tool-broker catalog lock`\n",
        path.display(),
        tools.len()
    ))
}

/// `catalog diff-mcp`: fails when the server changed anything.
pub fn diff(catalog: &Catalog, service: &str, reach: Reach) -> Result<String, String> {
    let now = list(catalog, service, &reach)?;
    let confirm = &catalog.rules.confirmation.confirm_arg;
    let mut pinned: BTreeMap<String, (String, Option<Value>)> = BTreeMap::new();
    for tool in catalog.tools.iter().filter(|t| t.service == service) {
        if let Action::Mcp(plan) = &tool.action {
            // The server's descriptor as the catalog keeps it, to name what changed.
            let mut arguments = tool.arguments.value();
            if let Some(Value::Object(p)) = arguments.get_mut("properties") {
                p.remove(confirm.as_str());
            }
            let mut before = json!({
                "name": plan.tool,
                "description": tool.description,
                "inputSchema": arguments,
            });
            // A server's tool without a title was given its name as one.
            if tool.title != plan.tool {
                before["title"] = json!(tool.title);
            }
            pinned.insert(plan.tool.clone(), (plan.pinned.clone(), Some(before)));
        }
    }
    let changes = diff_tools(&pinned, &now);
    let mut out = String::new();
    for change in &changes {
        let _ = match change {
            Change::Added(name) => writeln!(out, "added    {name}: not exposed until imported"),
            Change::Removed(name) => writeln!(
                out,
                "removed  {name}: its catalog tool answers upstream_changed"
            ),
            Change::Changed { tool, members } => writeln!(
                out,
                "changed  {tool}: {} (its catalog tool answers upstream_changed)",
                members.join(", ")
            ),
        };
    }
    if changes.is_empty() {
        let _ = writeln!(
            out,
            "{service}: the server lists its {} tools as the catalog pinned them",
            now.len()
        );
        return Ok(out);
    }
    Err(format!(
        "{out}{} change(s) on the `{service}` MCP server; review, then `tool-broker catalog import-mcp {service}`",
        changes.len()
    ))
}

/// `catalog verify --upstreams`: `diff-mcp` for every MCP service, without a key; fails
/// when any server changed a tool (or cannot be listed).
pub fn verify_all(catalog: &Catalog) -> Result<String, String> {
    let mut out = String::new();
    let mut failed = Vec::new();
    for (id, service) in &catalog.services {
        if service.mcp.is_none() {
            continue;
        }
        match diff(catalog, id, Reach::default()) {
            Ok(said) => out.push_str(&said),
            Err(said) => {
                let _ = writeln!(out, "{said}");
                failed.push(id.as_str());
            }
        }
    }
    if failed.is_empty() {
        Ok(out)
    } else {
        Err(format!(
            "{out}MCP servers not as pinned: {}",
            failed.join(", ")
        ))
    }
}

/// Every tool the service's server lists now.
fn list(catalog: &Catalog, service: &str, reach: &Reach) -> Result<Vec<Value>, String> {
    let svc = catalog
        .services
        .get(service)
        .ok_or_else(|| format!("no service `{service}` in the catalog"))?;
    if svc.mcp.is_none() {
        return Err(format!(
            "service `{service}` has no `[mcp]` table: it is not an MCP server"
        ));
    }
    let env = |name: &str| std::env::var(name).ok();
    let servers = Servers::new(catalog, &env)?;
    let url = reach
        .url
        .clone()
        .or_else(|| {
            env(&format!(
                "TOOL_BROKER_UPSTREAM_{}",
                service.to_ascii_uppercase()
            ))
        })
        .or_else(|| svc.base_url.clone());
    let trace = crate::telemetry::trace::Tracer::default().start(None);
    let target = McpTarget {
        service: svc,
        base_url: url.as_deref(),
        key: reach.key.as_deref(),
        bearer: false,
        timeout: LIST_TIMEOUT,
        max_body_bytes: catalog.rules.limits.max_upstream_body_bytes,
        trace: &trace,
        relay: None,
        sweep: &[],
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    runtime
        .block_on(servers.list(&target))
        .map_err(|e| e.message.clone())
}
