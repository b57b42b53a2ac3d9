//! One operation of an OpenAPI document made one generated tool table, in the steps a
//! reader follows: its parameters become arguments and request mappings, its request
//! body the body mapping, its success answer the output schema, its id, summary and
//! description the tool's name and words; then the table is assembled.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Map, Value, json};

use super::config::{self, ImportFile};
use super::naming::{self, snake_case};
use super::openapi::{Documents, short_text};
use super::{Operation, TITLE_CHARS, prose, spec_label};

/// How the import file shapes arguments, read once per operation.
struct Style<'a> {
    depth: usize,
    contract: bool,
    query_body: bool,
    /// The routing argument that fills a location parameter (query-body style only).
    location: Option<&'a str>,
    /// Path parameters are asked for as one `path_params` object.
    nest_path: bool,
}

impl<'a> Style<'a> {
    fn of(config: &'a ImportFile) -> Self {
        let contract = config.arguments.style == config::ArgumentStyle::Contract;
        let query_body = config.arguments.style == config::ArgumentStyle::QueryBody;
        Self {
            depth: config.arguments.schema_depth,
            contract,
            query_body,
            location: config
                .arguments
                .location_arg
                .as_deref()
                .filter(|_| query_body),
            nest_path: contract || config.arguments.path_params == config::PathParams::Object,
        }
    }
}

/// The request a tool sends, as it is built from the operation: its argument schema and
/// where each argument goes.
#[derive(Default)]
struct Request {
    properties: Map<String, Value>,
    required: Vec<String>,
    query_props: Map<String, Value>,
    query_required: Vec<String>,
    path_props: Map<String, Value>,
    path_required: Vec<String>,
    query: toml::Table,
    headers: toml::Table,
    path_params: toml::Table,
    path: String,
    body_expr: Option<String>,
    /// `json` or `form`.
    encoding: &'static str,
}

/// What a tool is called and says of itself.
struct Identity {
    name: String,
    title: String,
    description: String,
    documentation: Option<String>,
    risk: &'static str,
    deprecated: bool,
    category: Option<String>,
    aliases: Vec<String>,
}

pub(super) fn generate(
    config: &ImportFile,
    docs: &mut Documents,
    op: &Operation,
    root: &Path,
) -> Result<toml::Table, String> {
    let style = Style::of(config);
    let method = op.method.to_uppercase();
    let mut request = Request {
        path: op.path.clone(),
        encoding: "json",
        ..Request::default()
    };
    for ((place, name), p) in &parameters(docs, op)? {
        request.parameter(config, docs, op, &style, Param { place, name, p })?;
    }
    request.check_path(op)?;
    request.nest_path_params();
    request.body(docs, op, &style, &method)?;
    let output = output(config, docs, op);
    let identity = identity(config, op, &method);
    assemble(op, root, &style, &method, request, identity, output)
}

/// The operation's parameters by place and name: the operation's own win over the path
/// item's (same name and place).
fn parameters(
    docs: &mut Documents,
    op: &Operation,
) -> Result<BTreeMap<(String, String), Value>, String> {
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
    Ok(params)
}

/// One parameter of an operation, by place and name, as the document describes it.
struct Param<'a> {
    /// Where it goes: `path`, `query`, `header` or `cookie`.
    place: &'a str,
    /// Its name there.
    name: &'a String,
    /// Its description in the document (`schema`, `required`, `style`...).
    p: &'a Value,
}

impl Request {
    /// One parameter: its argument schema (unless it is fixed or dropped) and its mapping.
    fn parameter(
        &mut self,
        config: &ImportFile,
        docs: &mut Documents,
        op: &Operation,
        style: &Style<'_>,
        param: Param<'_>,
    ) -> Result<(), String> {
        let Param { place, name, p } = param;
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
                self.headers.insert(
                    name.clone(),
                    toml::Value::String(serde_json::to_string(value).unwrap_or_default()),
                );
                return Ok(());
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
            return Ok(());
        }
        if place == "cookie" {
            return Err(format!("cookie parameter `{name}` is not supported"));
        }
        let mut schema = p
            .get("schema")
            .map(|s| docs.inline_schema(&op.spec, s, style.depth))
            .unwrap_or_else(|| json!({}));
        if let (Some(obj), Some(desc)) = (
            schema.as_object_mut(),
            p.get("description").and_then(Value::as_str),
        ) && !obj.contains_key("description")
        {
            obj.insert("description".into(), json!(short_text(desc)));
        }
        if self.properties.contains_key(name) {
            return Err(format!("two parameters are named `{name}`"));
        }
        let is_required = place == "path" || p.get("required") == Some(&Value::Bool(true));
        if place == "path" && style.nest_path {
            self.path_required.push(name.clone());
            self.path_props.insert(name.clone(), schema);
        } else if style.query_body && Some(name.as_str()) == style.location {
            // Filled from the routing argument or the runtime location.
        } else if style.query_body && place == "query" {
            if is_required {
                self.query_required.push(name.clone());
            }
            self.query_props.insert(name.clone(), schema);
        } else {
            if is_required {
                self.required.push(name.clone());
            }
            self.properties.insert(name.clone(), schema);
        }
        self.map_parameter(style, place, name)
    }

    /// Where a parameter's value goes in the request.
    fn map_parameter(
        &mut self,
        style: &Style<'_>,
        place: &str,
        name: &String,
    ) -> Result<(), String> {
        match place {
            "path" => {
                let placeholder = format!("{{{name}}}");
                if !self.path.contains(&placeholder) {
                    return Err(format!("path parameter `{name}` is not in the path"));
                }
                if style.nest_path {
                    let safe = safe_name(name);
                    self.path = self.path.replace(&placeholder, &format!("{{{safe}}}"));
                    let inner = if is_identifier(name) {
                        format!("(args.path_params or {{}}).{name}")
                    } else {
                        format!(
                            "(args.path_params or {{}})[{}]",
                            serde_json::to_string(name).unwrap_or_default()
                        )
                    };
                    self.path_params.insert(safe, toml::Value::String(inner));
                } else if Some(name.as_str()) == style.location {
                    self.path_params.insert(
                        name.clone(),
                        toml::Value::String(format!("args.{name} or ctx.location_id")),
                    );
                } else if !is_identifier(name) {
                    let safe = safe_name(name);
                    self.path = self.path.replace(&placeholder, &format!("{{{safe}}}"));
                    self.path_params
                        .insert(safe, toml::Value::String(arg_expr(name)));
                }
            }
            "query" if style.query_body => {
                if Some(name.as_str()) == style.location {
                    self.query.insert(
                        name.clone(),
                        toml::Value::String(format!(
                            "(args.query or {{}}).{name} or args.{name} or ctx.location_id"
                        )),
                    );
                }
            }
            "query" => {
                self.query
                    .insert(name.clone(), toml::Value::String(arg_expr(name)));
            }
            "header" => {
                self.headers
                    .insert(name.clone(), toml::Value::String(arg_expr(name)));
            }
            other => {
                return Err(format!(
                    "parameter `{name}` is in `{other}`, which is not supported"
                ));
            }
        }
        Ok(())
    }

    /// The path is a template the catalog takes, and every placeholder has a value.
    fn check_path(&self, op: &Operation) -> Result<(), String> {
        if crate::catalog::compile::parse_path(&self.path).is_err() {
            return Err(format!(
                "the path `{}` cannot be expressed as a path template",
                op.path
            ));
        }
        for segment in crate::catalog::compile::parse_path(&self.path).unwrap_or_default() {
            if let crate::catalog::PathPart::Param(p) = segment
                && !self.properties.contains_key(&p)
                && !self.path_params.contains_key(&p)
                && !self.path_props.contains_key(&p)
            {
                return Err(format!(
                    "path placeholder `{{{p}}}` has no parameter definition"
                ));
            }
        }
        Ok(())
    }

    /// Nested path parameters become the required `path_params` argument.
    fn nest_path_params(&mut self) {
        if self.path_props.is_empty() {
            return;
        }
        self.required.push("path_params".into());
        self.properties.insert(
            "path_params".into(),
            json!({
                "type": "object",
                "description": "Values for the path placeholders.",
                "additionalProperties": false,
                "required": self.path_required,
                "properties": self.path_props,
            }),
        );
    }

    /// The request body: on a `GET` or `HEAD` its properties go to the query; otherwise
    /// it is the body, flat (its properties are arguments) or as one `body` argument.
    fn body(
        &mut self,
        docs: &mut Documents,
        op: &Operation,
        style: &Style<'_>,
        method: &str,
    ) -> Result<(), String> {
        let Some(body) = op.op.get("requestBody") else {
            return Ok(());
        };
        if matches!(method, "GET" | "HEAD") {
            return self.body_as_query(docs, op, style, method, body);
        }
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
        self.encoding = media;
        let schema = docs.inline_schema(&body_doc, &schema, style.depth);
        let body_required = body.get("required") == Some(&Value::Bool(true));
        let props = schema.get("properties").and_then(Value::as_object).cloned();
        let flat = props.as_ref().is_some_and(|p| {
            !p.is_empty()
                && p.keys().all(|k| {
                    !self.properties.contains_key(k)
                        && !matches!(k.as_str(), "body" | "confirm" | "dry_run" | "path_params")
                })
        }) && schema.get("type").is_none_or(|t| t == "object")
            && !style.contract
            && !style.query_body;
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
                        self.required.push(r.to_string());
                    }
                }
            }
            for (k, v) in props {
                self.properties.insert(k, v);
            }
            self.body_expr = Some(format!(
                "args | pick({})",
                names
                    .iter()
                    .map(|n| serde_json::to_string(n).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        } else {
            if body_required {
                self.required.push("body".into());
            }
            self.properties.insert("body".into(), schema);
            self.body_expr = Some("args.body".into());
        }
        Ok(())
    }

    /// Some documents let query parameters also travel in an optional GET body; the
    /// broker sends them as query parameters. A required GET body cannot be sent.
    fn body_as_query(
        &mut self,
        docs: &mut Documents,
        op: &Operation,
        style: &Style<'_>,
        method: &str,
        body: &Value,
    ) -> Result<(), String> {
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
            .map(|s| docs.inline_schema(&body_doc, s, style.depth))
            .unwrap_or_else(|| json!({}));
        for (k, v) in schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if !self.properties.contains_key(k) && !self.path_props.contains_key(k) {
                self.properties.insert(k.clone(), v.clone());
                self.query
                    .insert(k.clone(), toml::Value::String(arg_expr(k)));
            }
        }
        Ok(())
    }
}

/// The first success answer's JSON schema, inlined to the import file's output depth.
fn output(config: &ImportFile, docs: &mut Documents, op: &Operation) -> Option<Value> {
    op.op
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
        })
}

/// The tool's name (from its operation id, or its method and path), title, description
/// and documentation, in the upstream's own words where it has some.
fn identity(config: &ImportFile, op: &Operation, method: &str) -> Identity {
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
    let risk = if matches!(method, "GET" | "HEAD") {
        "read"
    } else {
        "write"
    };
    let (title, description, documentation, deprecated) =
        words(config, op, method, &id_name, &base_name, risk);
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
    Identity {
        name,
        title,
        description,
        documentation,
        risk,
        deprecated,
        category,
        aliases,
    }
}

/// Title, description, documentation and whether the operation is deprecated.
fn words(
    config: &ImportFile,
    op: &Operation,
    method: &str,
    id_name: &str,
    base_name: &str,
    risk: &str,
) -> (String, String, Option<String>, bool) {
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
            config::TitleStyle::OperationIdGroups => Some(naming::operation_id_title(id_name)),
            config::TitleStyle::OperationIdWords => Some(naming::camel_words(id_name)),
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
            .unwrap_or_else(|| naming::title_case(base_name));
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
    description.push_str(match (risk, method) {
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
    (title, description, documentation, deprecated)
}

/// The generated tool table, keys in the order the generated files show them.
fn assemble(
    op: &Operation,
    root: &Path,
    style: &Style<'_>,
    method: &str,
    request: Request,
    identity: Identity,
    output: Option<Value>,
) -> Result<toml::Table, String> {
    let Request {
        mut properties,
        mut required,
        query_props,
        query_required,
        query,
        headers,
        path_params,
        path,
        body_expr,
        encoding,
        ..
    } = request;
    let mut tool = toml::Table::new();
    tool.insert("name".into(), toml::Value::String(identity.name));
    tool.insert("title".into(), toml::Value::String(identity.title));
    tool.insert(
        "description".into(),
        toml::Value::String(identity.description),
    );
    if let Some(text) = identity.documentation {
        tool.insert("documentation".into(), toml::Value::String(text));
    }
    let tier = if identity.deprecated {
        "legacy"
    } else {
        "agent_ready"
    };
    tool.insert("tier".into(), toml::Value::String(tier.into()));
    tool.insert("risk".into(), toml::Value::String(identity.risk.into()));
    if method == "DELETE" {
        tool.insert(
            "classes".into(),
            toml::Value::Array(vec![toml::Value::String("destructive".into())]),
        );
    }
    if let Some(c) = identity.category {
        tool.insert("category".into(), toml::Value::String(c));
    }
    if !identity.aliases.is_empty() {
        tool.insert(
            "aliases".into(),
            toml::Value::Array(
                identity
                    .aliases
                    .into_iter()
                    .map(toml::Value::String)
                    .collect(),
            ),
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
    http.insert("method".into(), toml::Value::String(method.to_string()));
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
    if style.contract {
        contract_arguments(method, &mut tool, &mut properties, &mut required)?;
    }
    if style.query_body && (!query_props.is_empty() || style.location.is_some()) {
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

/// A name with every character but ASCII letters and digits made `_`: a placeholder the
/// path template takes.
fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
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
