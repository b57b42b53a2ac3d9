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
pub mod naming;
pub mod openapi;
pub mod prose;
pub mod prune;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use config::{ImportFile, merge};
use naming::snake_case;
use openapi::{Documents, short_text};

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

/// Imports a service from its OpenAPI documents.
pub fn import(
    config: &ImportFile,
    specs: &[PathBuf],
    root_for_labels: &Path,
) -> Result<Report, String> {
    let mut docs = Documents::default();
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

    let mut report = Report {
        path: format!("catalog/{}/{}", config.service, config.output),
        ..Report::default()
    };
    let mut used = BTreeSet::new();
    let mut tools: Vec<toml::Table> = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for op in &operations {
        let keys: Vec<String> = std::iter::once(op.label()).chain(op.id.clone()).collect();
        if let Some((key, why)) = keys.iter().find_map(|k| config.skip.get_key_value(k)) {
            used.insert(key.clone());
            report.skipped.push((op.label(), why.clone()));
            continue;
        }
        let mut tool = match generate(config, &mut docs, op, root_for_labels) {
            Ok(t) => t,
            Err(why) => {
                report.dropped.push((op.label(), why));
                continue;
            }
        };
        let risk = tool
            .get("risk")
            .and_then(toml::Value::as_str)
            .unwrap_or("read")
            .to_string();
        merge(&mut tool, &config.defaults.all);
        merge(
            &mut tool,
            if risk == "read" {
                &config.defaults.read
            } else {
                &config.defaults.write
            },
        );
        for key in &keys {
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
                merge(&mut tool, &over);
            }
        }
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
    for key in config.operations.keys() {
        if !used.contains(key) {
            report.unused_overrides.push(key.clone());
        }
    }
    for key in config.skip.keys() {
        if !used.contains(key) {
            report.unused_overrides.push(key.clone());
        }
    }
    // An upstream operation id reused across documents is no alias at all.
    let mut alias_count: BTreeMap<String, usize> = BTreeMap::new();
    for tool in &tools {
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
    for tool in &mut tools {
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
    let mut file = toml::Table::new();
    file.insert(
        "tool".into(),
        toml::Value::Array(tools.into_iter().map(toml::Value::Table).collect()),
    );
    let body = toml::to_string(&file).map_err(|e| format!("cannot write TOML: {e}"))?;
    report.text = format!(
        "#:schema ../../schemas/catalog-tools.schema.json\n\
         # Generated by `tool-broker catalog import-openapi --service {}` from:\n{}\
         # Do not edit: change import/{}.toml and import again.\n\n{body}",
        config.service,
        sources
            .iter()
            .map(|s| format!("#   {s}\n"))
            .collect::<String>(),
        config.service,
    );
    Ok(report)
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

fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `args.name`, or `args["name"]` for names that are not identifiers.
fn arg_expr(name: &str) -> String {
    if is_identifier(name)
        && !matches!(
            name,
            "true" | "false" | "none" | "and" | "or" | "not" | "in" | "is"
        )
    {
        format!("args.{name}")
    } else {
        format!("args[{}]", serde_json::to_string(name).unwrap_or_default())
    }
}

fn json_to_toml(value: &Value) -> Result<toml::Value, String> {
    toml::Value::try_from(value).map_err(|e| format!("a schema cannot be written as TOML: {e}"))
}

fn generate(
    config: &ImportFile,
    docs: &mut Documents,
    op: &Operation,
    root: &Path,
) -> Result<toml::Table, String> {
    let depth = config.arguments.schema_depth;
    let method = op.method.to_uppercase();
    let mut properties = Map::new();
    let mut required: Vec<String> = Vec::new();
    let contract = config.arguments.style == config::ArgumentStyle::Contract;
    let query_body = config.arguments.style == config::ArgumentStyle::QueryBody;
    let location = config
        .arguments
        .location_arg
        .as_deref()
        .filter(|_| query_body);
    let mut query_props = Map::new();
    let mut query_required: Vec<String> = Vec::new();
    let nest_path = contract || config.arguments.path_params == config::PathParams::Object;
    let mut path_props = Map::new();
    let mut path_required: Vec<String> = Vec::new();
    let mut query = toml::Table::new();
    let mut headers = toml::Table::new();
    let mut path_params = toml::Table::new();
    let mut path = op.path.clone();

    // Parameters: the operation's own win over the path item's (same name and place).
    let mut params: BTreeMap<(String, String), Value> = BTreeMap::new();
    let own: Vec<Value> = op
        .op
        .get("parameters")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for p in op.path_params.iter().chain(own.iter()) {
        let (_, p) = docs.deref(&op.spec, p);
        let name = p
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let place = p
            .get("in")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if name.is_empty() {
            return Err("a parameter has no name".into());
        }
        params.insert((place, name), p);
    }
    // Some documents leave a path placeholder undeclared: it is still a required string.
    for part in crate::catalog::compile::parse_path(&op.path).unwrap_or_default() {
        if let crate::catalog::PathPart::Param(name) = part
            && !params.contains_key(&("path".to_string(), name.clone()))
        {
            params.insert(
                ("path".to_string(), name.clone()),
                json!({
                    "name": name,
                    "in": "path",
                    "required": true,
                    "schema": { "type": "string", "description": "Path parameter (not declared in the upstream document)." },
                }),
            );
        }
    }
    // A query parameter named like a path parameter is left to the path (documents that
    // repeat the path parameter in the query mean the same value).
    let path_names: BTreeSet<String> = params
        .keys()
        .filter(|(place, _)| place == "path")
        .map(|(_, n)| n.clone())
        .collect();
    params.retain(|(place, name), _| place == "path" || !path_names.contains(name));
    for ((place, name), p) in &params {
        // A header the document fixes to one value (crm's `Version` differs per product)
        // is sent as that constant, never asked of the caller.
        if place == "header" && !name.eq_ignore_ascii_case("authorization") {
            let fixed = p
                .get("schema")
                .and_then(|s| s.get("enum"))
                .and_then(Value::as_array)
                .filter(|e| e.len() == 1)
                .and_then(|e| e[0].as_str());
            if let Some(value) = fixed {
                headers.insert(
                    name.clone(),
                    toml::Value::String(serde_json::to_string(value).unwrap_or_default()),
                );
                continue;
            }
        }
        if place == "header"
            && (config
                .arguments
                .drop_headers
                .iter()
                .any(|h| h.eq_ignore_ascii_case(name))
                || name.eq_ignore_ascii_case("authorization"))
        {
            continue;
        }
        if place == "cookie" {
            return Err(format!("cookie parameter `{name}` is not supported"));
        }
        let mut schema = p
            .get("schema")
            .map(|s| docs.inline_schema(&op.spec, s, depth))
            .unwrap_or_else(|| json!({}));
        if let (Some(obj), Some(desc)) = (
            schema.as_object_mut(),
            p.get("description").and_then(Value::as_str),
        ) && !obj.contains_key("description")
        {
            obj.insert("description".into(), json!(short_text(desc)));
        }
        if properties.contains_key(name) {
            return Err(format!("two parameters are named `{name}`"));
        }
        let is_required = place == "path" || p.get("required") == Some(&Value::Bool(true));
        if place == "path" && nest_path {
            path_required.push(name.clone());
            path_props.insert(name.clone(), schema);
        } else if query_body && Some(name.as_str()) == location {
            // Filled from the routing argument or the runtime location.
        } else if query_body && place == "query" {
            if is_required {
                query_required.push(name.clone());
            }
            query_props.insert(name.clone(), schema);
        } else {
            if is_required {
                required.push(name.clone());
            }
            properties.insert(name.clone(), schema);
        }
        match place.as_str() {
            "path" => {
                let placeholder = format!("{{{name}}}");
                if !path.contains(&placeholder) {
                    return Err(format!("path parameter `{name}` is not in the path"));
                }
                if nest_path {
                    let safe: String = name
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                        .collect();
                    path = path.replace(&placeholder, &format!("{{{safe}}}"));
                    let inner = if is_identifier(name) {
                        format!("(args.path_params or {{}}).{name}")
                    } else {
                        format!(
                            "(args.path_params or {{}})[{}]",
                            serde_json::to_string(name).unwrap_or_default()
                        )
                    };
                    path_params.insert(safe, toml::Value::String(inner));
                } else if Some(name.as_str()) == location {
                    path_params.insert(
                        name.clone(),
                        toml::Value::String(format!("args.{name} or ctx.location_id")),
                    );
                } else if !is_identifier(name) {
                    let safe: String = name
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                        .collect();
                    path = path.replace(&placeholder, &format!("{{{safe}}}"));
                    path_params.insert(safe, toml::Value::String(arg_expr(name)));
                }
            }
            "query" if query_body => {
                if Some(name.as_str()) == location {
                    query.insert(
                        name.clone(),
                        toml::Value::String(format!(
                            "(args.query or {{}}).{name} or args.{name} or ctx.location_id"
                        )),
                    );
                }
            }
            "query" => {
                query.insert(name.clone(), toml::Value::String(arg_expr(name)));
            }
            "header" => {
                headers.insert(name.clone(), toml::Value::String(arg_expr(name)));
            }
            other => {
                return Err(format!(
                    "parameter `{name}` is in `{other}`, which is not supported"
                ));
            }
        }
    }
    if crate::catalog::compile::parse_path(&path).is_err() {
        return Err(format!(
            "the path `{}` cannot be expressed as a path template",
            op.path
        ));
    }
    for segment in crate::catalog::compile::parse_path(&path).unwrap_or_default() {
        if let crate::catalog::PathPart::Param(p) = segment
            && !properties.contains_key(&p)
            && !path_params.contains_key(&p)
            && !path_props.contains_key(&p)
        {
            return Err(format!(
                "path placeholder `{{{p}}}` has no parameter definition"
            ));
        }
    }

    if !path_props.is_empty() {
        required.push("path_params".into());
        properties.insert(
            "path_params".into(),
            json!({
                "type": "object",
                "description": "Values for the path placeholders.",
                "additionalProperties": false,
                "required": path_required,
                "properties": path_props,
            }),
        );
    }

    // Body.
    let mut body_expr = None;
    let mut encoding = "json";
    if let Some(body) = op.op.get("requestBody")
        && matches!(method.as_str(), "GET" | "HEAD")
    {
        // Some documents let query parameters also travel in an optional GET body; the
        // broker sends them as query parameters. A required GET body cannot be sent.
        let (body_doc, body) = docs.deref(&op.spec, body);
        if body.get("required") == Some(&Value::Bool(true)) {
            return Err(format!(
                "the document requires a request body on this {method}, which the broker does not send on a {method}"
            ));
        }
        let schema = body
            .get("content")
            .and_then(|c| c.get("application/json"))
            .and_then(|c| c.get("schema"))
            .map(|s| docs.inline_schema(&body_doc, s, depth))
            .unwrap_or_else(|| json!({}));
        for (k, v) in schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if !properties.contains_key(k) && !path_props.contains_key(k) {
                properties.insert(k.clone(), v.clone());
                query.insert(k.clone(), toml::Value::String(arg_expr(k)));
            }
        }
    }
    if let Some(body) = op
        .op
        .get("requestBody")
        .filter(|_| !matches!(method.as_str(), "GET" | "HEAD"))
    {
        let (body_doc, body) = docs.deref(&op.spec, body);
        let content = body
            .get("content")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let (media, schema) = if let Some(s) = content.get("application/json") {
            (
                "json",
                s.get("schema").cloned().unwrap_or_else(|| json!({})),
            )
        } else if let Some(s) = content
            .iter()
            .find(|(k, _)| k.ends_with("+json"))
            .map(|(_, v)| v)
        {
            (
                "json",
                s.get("schema").cloned().unwrap_or_else(|| json!({})),
            )
        } else if let Some(s) = content.get("application/x-www-form-urlencoded") {
            (
                "form",
                s.get("schema").cloned().unwrap_or_else(|| json!({})),
            )
        } else if content.is_empty() {
            ("json", json!({}))
        } else {
            let kinds: Vec<&String> = content.keys().collect();
            return Err(format!(
                "request body {kinds:?} is not JSON or form-encoded"
            ));
        };
        encoding = media;
        let schema = docs.inline_schema(&body_doc, &schema, depth);
        let body_required = body.get("required") == Some(&Value::Bool(true));
        let props = schema.get("properties").and_then(Value::as_object).cloned();
        let flat = props.as_ref().is_some_and(|p| {
            !p.is_empty()
                && p.keys().all(|k| {
                    !properties.contains_key(k)
                        && !matches!(k.as_str(), "body" | "confirm" | "dry_run" | "path_params")
                })
        }) && schema.get("type").is_none_or(|t| t == "object")
            && !contract
            && !query_body;
        if flat {
            let props = props.unwrap_or_default();
            let names: Vec<String> = props.keys().cloned().collect();
            // The body's own required properties are required arguments even when the
            // document forgets to mark the body itself required: the flat body is
            // always sent.
            if body_required || schema.get("required").is_some() {
                for r in schema
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(r) = r.as_str() {
                        required.push(r.to_string());
                    }
                }
            }
            for (k, v) in props {
                properties.insert(k, v);
            }
            body_expr = Some(format!(
                "args | pick({})",
                names
                    .iter()
                    .map(|n| serde_json::to_string(n).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        } else {
            if body_required {
                required.push("body".into());
            }
            properties.insert("body".into(), schema);
            body_expr = Some("args.body".into());
        }
    }

    // Output.
    let output = op
        .op
        .get("responses")
        .filter(|_| config.arguments.output_depth > 0)
        .and_then(Value::as_object)
        .and_then(|responses| {
            let (_, ok) = responses.iter().find(|(code, _)| code.starts_with('2'))?;
            let (doc, ok) = docs.deref(&op.spec, ok);
            let schema = ok
                .get("content")?
                .get("application/json")?
                .get("schema")?
                .clone();
            let inlined = docs.inline_schema(&doc, &schema, config.arguments.output_depth);
            (inlined.as_object().is_some_and(|o| !o.is_empty())).then_some(inlined)
        });

    // Identity.
    let mut id_name = op.id.clone().unwrap_or_default();
    for prefix in &config.naming.strip_prefix {
        if let Some(rest) = id_name.strip_prefix(prefix.as_str()) {
            id_name = rest.to_string();
        }
    }
    let base_name = if id_name.is_empty() || config.naming.from_method_path {
        let mut path = op.path.as_str();
        for prefix in &config.naming.strip_path_prefix {
            if let Some(rest) = path.strip_prefix(prefix.as_str()) {
                path = rest;
            }
        }
        if config.naming.path_only {
            snake_case(path)
        } else {
            snake_case(&format!("{} {path}", op.method))
        }
    } else {
        snake_case(&id_name)
    };
    let file_prefix = if config.naming.prefix_with_file {
        op.spec
            .file_stem()
            .map(|s| format!("{}_", snake_case(&s.to_string_lossy())))
            .unwrap_or_default()
    } else {
        String::new()
    };
    let name = format!("{}{file_prefix}{}", config.naming.prefix, base_name);
    let risk = if matches!(method.as_str(), "GET" | "HEAD") {
        "read"
    } else {
        "write"
    };
    // A summary that is only an identifier (`CreateProject`) is turned into words.
    let summary = op
        .op
        .get("summary")
        .and_then(Value::as_str)
        .map(short_text)
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.contains(' ') {
                s
            } else {
                naming::title_case(&snake_case(&s))
            }
        });
    let title = if id_name.is_empty() {
        None
    } else {
        match config.naming.title {
            config::TitleStyle::OperationIdGroups => Some(naming::operation_id_title(&id_name)),
            config::TitleStyle::OperationIdWords => Some(naming::camel_words(&id_name)),
            config::TitleStyle::Summary => None,
        }
    };
    // What the document says the operation does: its description, else its summary.
    let said = op
        .op
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let skip = &config.text.skip_paragraphs;
    let title = if let Some(t) = title {
        format!("{}{t}", config.naming.title_prefix)
    } else {
        // The summary, else the description's first sentence ("Update a specified
        // refund"), else the name's words.
        let plain = summary
            .clone()
            .or_else(|| {
                prose::first_sentence(said, TITLE_CHARS).filter(|s| prose::opens_with_verb(s))
            })
            .unwrap_or_else(|| naming::title_case(&base_name));
        format!("{}{plain}", config.naming.title_prefix)
    };
    let mut lead = prose::lead(said, skip);
    // A summary the title does not show opens the description (hosting's titles are
    // made from operation ids).
    if let Some(summary) = summary.as_ref().filter(|s| !title.ends_with(s.as_str())) {
        lead = if lead.is_empty() {
            summary.clone()
        } else if lead.starts_with(summary.as_str()) {
            lead
        } else {
            format!("{summary}: {lead}")
        };
    }
    if lead.is_empty() {
        lead = title.clone();
    }
    if !lead.ends_with(['.', '!', '?', '…']) {
        lead.push('.');
    }
    let mut description = format!("{lead} {method} {}.", op.path);
    description.push_str(match (risk, method.as_str()) {
        ("read", _) => " Reads only.",
        (_, "DELETE") => " Deletes upstream data (destructive).",
        _ => " Changes upstream state.",
    });
    // The whole text, where the description keeps only its opening.
    let documentation = Some(prose::plain(said, skip))
        .filter(|whole| whole.chars().count() > lead.chars().count() + 1);
    let deprecated = op.op.get("deprecated") == Some(&Value::Bool(true));
    if deprecated {
        description.push_str(" Deprecated upstream.");
    }
    let category = op
        .op
        .get("tags")
        .and_then(Value::as_array)
        .and_then(|t| t.first())
        .and_then(Value::as_str)
        .map(snake_case);
    let mut aliases: Vec<String> = Vec::new();
    // The upstream's own operation id resolves too (e.g. `DNS_getDNSRecordsV1`).
    if !id_name.is_empty() && id_name != base_name {
        aliases.push(id_name.clone());
    }

    let mut tool = toml::Table::new();
    tool.insert("name".into(), toml::Value::String(name));
    tool.insert("title".into(), toml::Value::String(title));
    tool.insert("description".into(), toml::Value::String(description));
    if let Some(text) = documentation {
        tool.insert("documentation".into(), toml::Value::String(text));
    }
    tool.insert(
        "tier".into(),
        toml::Value::String(if deprecated { "legacy" } else { "agent_ready" }.into()),
    );
    tool.insert("risk".into(), toml::Value::String(risk.into()));
    if method == "DELETE" {
        tool.insert(
            "classes".into(),
            toml::Value::Array(vec![toml::Value::String("destructive".into())]),
        );
    }
    if let Some(c) = category {
        tool.insert("category".into(), toml::Value::String(c));
    }
    if !aliases.is_empty() {
        tool.insert(
            "aliases".into(),
            toml::Value::Array(aliases.into_iter().map(toml::Value::String).collect()),
        );
    }
    tool.insert("fill_defaults".into(), toml::Value::Boolean(false));
    let mut source = toml::Table::new();
    source.insert(
        "spec".into(),
        toml::Value::String(spec_label(&op.spec, root)),
    );
    source.insert("operation".into(), toml::Value::String(op.label()));
    if let Some(id) = &op.id {
        source.insert("operation_id".into(), toml::Value::String(id.clone()));
    }
    tool.insert("source".into(), toml::Value::Table(source));
    let mut http = toml::Table::new();
    http.insert("method".into(), toml::Value::String(method.clone()));
    http.insert("path".into(), toml::Value::String(path));
    if !path_params.is_empty() {
        http.insert("path_params".into(), toml::Value::Table(path_params));
    }
    if !query.is_empty() {
        http.insert("query".into(), toml::Value::Table(query));
    }
    if !headers.is_empty() {
        http.insert("headers".into(), toml::Value::Table(headers));
    }
    if let Some(b) = body_expr {
        http.insert("body".into(), toml::Value::String(b));
        if encoding == "form" {
            http.insert("body_encoding".into(), toml::Value::String("form".into()));
        }
    }
    tool.insert("http".into(), toml::Value::Table(http));
    if contract {
        contract_arguments(&method, &mut tool, &mut properties, &mut required)?;
    }
    if query_body && (!query_props.is_empty() || location.is_some()) {
        let mut q = json!({
            "type": "object",
            "description": "Upstream query parameters.",
            "properties": query_props,
        });
        if !query_required.is_empty() {
            q["required"] = json!(query_required);
            required.push("query".into());
        }
        properties.insert("query".into(), q);
        if let Some(toml::Value::Table(http)) = tool.get_mut("http") {
            http.insert(
                "query_object".into(),
                toml::Value::String("args.query".into()),
            );
        }
    }
    let mut arguments = Map::new();
    arguments.insert("type".into(), json!("object"));
    arguments.insert("additionalProperties".into(), json!(false));
    required.sort();
    required.dedup();
    if !required.is_empty() {
        arguments.insert("required".into(), json!(required));
    }
    arguments.insert("properties".into(), Value::Object(properties));
    tool.insert("arguments".into(), json_to_toml(&Value::Object(arguments))?);
    if let Some(o) = output {
        tool.insert("output".into(), json_to_toml(&o)?);
    }
    Ok(tool)
}

/// Rewrites flat arguments into the leads shared input contract: query parameters move
/// into `params`, the body stays `body`, path placeholders are in `path_params`, and
/// `compact`, `max_items`, `include_raw` and `confirm` shape the call and its answer.
fn contract_arguments(
    method: &str,
    tool: &mut toml::Table,
    properties: &mut Map<String, Value>,
    required: &mut Vec<String>,
) -> Result<(), String> {
    let Some(toml::Value::Table(http)) = tool.get_mut("http") else {
        return Err("no http table".into());
    };
    let query_names: Vec<String> = match http.remove("query") {
        Some(toml::Value::Table(q)) => q.keys().cloned().collect(),
        _ => Vec::new(),
    };
    http.insert(
        "query_object".into(),
        toml::Value::String("args.params".into()),
    );
    let mut params = Map::new();
    let mut params_required = Vec::new();
    for name in &query_names {
        if let Some(schema) = properties.remove(name) {
            params.insert(name.clone(), schema);
        }
        if let Some(i) = required.iter().position(|r| r == name) {
            required.remove(i);
            params_required.push(name.clone());
        }
    }
    let mut params_schema = json!({
        "type": ["object", "null"],
        "description": "Query-string parameters.",
        "properties": params,
    });
    if !params_required.is_empty() {
        params_schema["required"] = json!(params_required);
        // Required query parameters make `params` itself required (and not null).
        params_schema["type"] = json!("object");
        required.push("params".into());
    }
    properties.insert("params".into(), params_schema);
    match properties.get_mut("path_params") {
        Some(p) => {
            // Required when the path has placeholders: it cannot be built without them.
            p["description"] =
                json!("A value for every `{placeholder}` in the path, keys matching exactly.");
        }
        None => {
            properties.insert(
                "path_params".into(),
                json!({ "type": ["object", "null"], "description": "This endpoint has no path placeholders.", "maxProperties": 0 }),
            );
        }
    }
    match properties.get_mut("body") {
        Some(b) => {
            // Prefer a nullable type over anyOf, so validation errors keep their pointers.
            let mut inner = b.take();
            match inner.get("type").cloned() {
                Some(Value::String(t)) => {
                    inner["type"] = json!([t, "null"]);
                    *b = inner;
                }
                _ => {
                    *b = json!({ "description": "JSON request body.", "anyOf": [inner, { "type": "null" }] });
                }
            }
        }
        None if matches!(method, "GET" | "HEAD") => {
            properties.insert(
                "body".into(),
                json!({ "type": "null", "description": "This endpoint takes no body." }),
            );
        }
        None => {
            properties.insert(
                "body".into(),
                json!({ "type": ["object", "array", "null"], "description": "JSON request body (this endpoint documents none)." }),
            );
            http.insert("body".into(), toml::Value::String("args.body".into()));
        }
    }
    properties.insert("compact".into(), json!({ "type": ["boolean", "null"], "description": "Overrides the default list truncation: false returns whole lists." }));
    properties.insert("max_items".into(), json!({ "type": ["integer", "null"], "minimum": 1, "description": "Most list items returned when compact mode is on." }));
    properties.insert("include_raw".into(), json!({ "type": "boolean", "default": false, "description": "Also return the unnormalized (still redacted) upstream answer." }));
    properties.insert("confirm".into(), json!({ "type": "boolean", "default": false, "description": "Must be true for write-intent endpoints." }));
    let mut response = toml::Table::new();
    response.insert("compact_arg".into(), toml::Value::String("compact".into()));
    response.insert("budget_arg".into(), toml::Value::String("max_items".into()));
    response.insert("raw_arg".into(), toml::Value::String("include_raw".into()));
    let mut merged = match tool.remove("response") {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    config::merge(&mut merged, &response);
    tool.insert("response".into(), toml::Value::Table(merged));
    Ok(())
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
