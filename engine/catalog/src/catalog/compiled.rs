//! The compiled catalog: what the request path looks things up in.
//!
//! Built once by [`crate::catalog::compile`]; immutable afterwards and shared behind an `Arc`.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::Value;

use crate::catalog::Hook;
use crate::catalog::descriptor::{
    BodyEncoding, Class, ConfirmationMode, CredentialSpec, EnvelopeKind, Risk, Tier, VersionFormat,
};
use crate::catalog::identity::{Lock, LockedService, snapshot_id};
use crate::catalog::rules::Rules;
use crate::catalog::template::{Expr, Templates};
use crate::error::Classification;

/// A compiled catalog with its rules and templates.
#[derive(Debug)]
pub struct Catalog {
    /// Services by id.
    pub services: BTreeMap<String, Service>,
    /// Tools sorted by full name.
    pub tools: Vec<Tool>,
    /// Compiled cross-cutting rules.
    pub rules: Rules,
    /// Every template and expression, parsed.
    pub templates: Templates,
    /// Snapshot id over all versions and hashes.
    pub snapshot_id: String,
    /// Where the sources came from (`embedded` or a folder).
    pub origin: String,
    /// Ranked search over each service's tools (`find_tools`), built on first use
    /// ([`Catalog::search`]).
    search: std::sync::OnceLock<crate::catalog::search::SearchIndex>,
    index: LookupIndex,
    /// Listed name (`/mcp`) -> the tool's index.
    listed: HashMap<String, usize>,
    /// What each tool costs by `rules/costs.toml` (a deployment's `[costs]` compiles
    /// its own on top: `run::Parts::costs`).
    pub costs: crate::catalog::costs::Costs,
    /// The units and costs of `rules/costs.toml` as written, for a deployment's own to
    /// be compiled with.
    pub cost_rules: (Vec<String>, Vec<crate::catalog::costs::Written>),
    /// Which guard rules read each tool's arguments and answers by `rules/guards.toml`
    /// (a deployment's `[[guards.rule]]` compiles its own on top: `run::Parts::guards`).
    pub guards: std::sync::Arc<crate::catalog::guards::applied::Applied>,
}

/// The catalog strings a tool's envelopes carry in `meta`, made once at assembly so a
/// call takes reference counts, not five copies.
#[derive(Debug, Clone, Default)]
pub struct MetaNames {
    /// The service id.
    pub service: std::sync::Arc<str>,
    /// The tool's full name.
    pub tool: std::sync::Arc<str>,
    /// The service's catalog version.
    pub catalog_version: std::sync::Arc<str>,
    /// The tool's descriptor hash.
    pub descriptor_hash: std::sync::Arc<str>,
    /// The catalog's snapshot id.
    pub snapshot_id: std::sync::Arc<str>,
}

/// One service.
#[derive(Debug, Clone)]
pub struct Service {
    /// Service id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Catalog version.
    pub catalog_version: String,
    /// Format of the version.
    pub version_format: VersionFormat,
    /// Envelope of its tools.
    pub envelope: EnvelopeKind,
    /// Default upstream base URL (no trailing slash).
    pub base_url: Option<String>,
    /// Caller key source and upstream placement.
    pub credential: Option<CredentialSpec>,
    /// Non-secret headers sent upstream on every call.
    pub static_headers: BTreeMap<String, String>,
    /// Where the upstream reads an idempotency key, if it does.
    pub idempotency_header: Option<String>,
    /// Webhook verification and mapping, compiled.
    pub webhook: Option<Webhook>,
    /// Non-secret request headers exposed to templates as `ctx.<name>`.
    pub context_headers: BTreeMap<String, String>,
    /// Reference tables for local tools.
    pub tables: BTreeMap<String, Value>,
    /// Tenant routing.
    pub tenancy: Option<crate::catalog::descriptor::Tenancy>,
    /// Counts over its tools, made once when the catalog is assembled.
    pub figures: ServiceFigures,
    /// Its header names and fixed values, parsed once at load.
    pub headers: ServiceHeaders,
    /// The MCP server it is (`[mcp]`), if it is one: its tools are `Action::Mcp`.
    pub mcp: Option<crate::catalog::mcp::Server>,
}

/// A service's header names and fixed header values, parsed when the service is
/// compiled so a call never parses one ([`ServiceHeaders::parse`] describes every name
/// or value that does not parse, and the compiler reports it, so none is missing here
/// from a catalog that compiled).
#[derive(Debug, Clone, Default)]
pub struct ServiceHeaders {
    /// The caller's BYOK request header (`credential.header`).
    pub caller_key: Option<hyper::header::HeaderName>,
    /// The upstream header the key is sent in (`credential.name`, placement `header`).
    pub upstream_key: Option<hyper::header::HeaderName>,
    /// `static_headers`, in name order.
    pub fixed: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
    /// `idempotency_header`.
    pub idempotency: Option<hyper::header::HeaderName>,
}

impl ServiceHeaders {
    /// Parses a service's header names and values, the one place they are parsed: what
    /// does not parse is left out and described in the second part, which the compiler
    /// reports against the service file.
    pub fn parse(
        credential: Option<&CredentialSpec>,
        fixed: &BTreeMap<String, String>,
        idempotency: Option<&str>,
    ) -> (Self, Vec<String>) {
        use hyper::header::{HeaderName, HeaderValue};
        fn name(text: &str, problems: &mut Vec<String>, what: &str) -> Option<HeaderName> {
            let parsed = HeaderName::from_bytes(text.as_bytes()).ok();
            if parsed.is_none() {
                problems.push(what.replace("{}", text));
            }
            parsed
        }
        const NOT_A_NAME: &str = "`{}` is not a valid header name";
        let mut problems = Vec::new();
        let caller_key = credential.and_then(|c| {
            name(
                &c.header,
                &mut problems,
                "credential header `{}` must be a lowercase header name",
            )
        });
        let upstream_key = credential
            .filter(|c| c.placement == crate::catalog::descriptor::Placement::Header)
            .and_then(|c| {
                name(
                    &c.name,
                    &mut problems,
                    "credential name `{}` is not a valid header name (placement `header` sends the key in it)",
                )
            });
        let idempotency = idempotency.and_then(|text| name(text, &mut problems, NOT_A_NAME));
        let mut fixed_parsed = Vec::new();
        for (key, value) in fixed {
            let parsed = name(key, &mut problems, NOT_A_NAME);
            match HeaderValue::from_str(value) {
                Ok(value) => fixed_parsed.extend(parsed.map(|k| (k, value))),
                Err(_) => problems.push(format!("static header `{key}` has a value HTTP headers cannot carry (a line break or control character)")),
            }
        }
        let headers = ServiceHeaders {
            caller_key,
            upstream_key,
            fixed: fixed_parsed,
            idempotency,
        };
        (headers, problems)
    }
}

/// Counts over a service's tools that `check_connection` reports on every call, made
/// once when the catalog is assembled (never by scanning the tools per call).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServiceFigures {
    /// Its tools.
    pub tools: usize,
    /// Its agent-ready tools.
    pub agent_ready: usize,
    /// Whether any of its tools records a job (`[tool.response] job_id`).
    pub records_jobs: bool,
}

/// A service's webhook spec with its JSONPaths and signed message compiled.
#[derive(Debug, Clone)]
pub struct Webhook {
    /// As written.
    pub spec: crate::catalog::descriptor::WebhookSpec,
    /// `event_id`, compiled.
    pub event_id: Option<JsonPath>,
    /// `job_id`, compiled, in order.
    pub job_id: Vec<JsonPath>,
    /// `status`, compiled, in order.
    pub status: Vec<JsonPath>,
    /// `message`, split into its parts (rsa_sha256).
    pub message: Vec<crate::catalog::webhook::MessagePart>,
    /// `public_key`: the tool (full name) and the JSONPath of the PEM in its answer.
    pub public_key: Option<(String, JsonPath)>,
}

/// One compiled tool.
#[derive(Debug)]
pub struct Tool {
    /// Service id.
    pub service: String,
    /// Native name without the service prefix.
    pub name: String,
    /// `<service>.<name>`.
    pub full_name: String,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// The upstream document's whole text on the operation, when the description keeps
    /// only its opening.
    pub documentation: Option<String>,
    /// Tier.
    pub tier: Tier,
    /// Risk.
    pub risk: Risk,
    /// Class words.
    pub classes: Vec<Class>,
    /// Capability area.
    pub category: Option<String>,
    /// Aliases as written.
    pub aliases: Vec<String>,
    /// Requests in a user's words that the tool serves (`catalog/<service>/intents.toml`):
    /// searched by `find_tools`, no part of the descriptor.
    pub intents: Vec<String>,
    /// Resolved confirmation mode (never `auto`).
    pub confirmation: ConfirmationMode,
    /// Argument that requests a preview (hosting `dry_run`).
    pub preview_arg: Option<String>,
    /// Upstream timeout.
    pub timeout: Duration,
    /// List budget.
    pub item_budget: usize,
    /// Hook or HTTP call.
    pub action: Action,
    /// What a `category_dispatch` wrapper may run.
    pub dispatch: Option<crate::catalog::descriptor::Dispatch>,
    /// The compiled steps of a `reschedule_overdue` tool.
    pub reschedule: Option<Reschedule>,
    /// The compiled steps of a `submit_and_poll` tool.
    pub poll: Option<Poll>,
    /// How the job this tool answers is watched when it runs as an MCP task.
    pub task: Option<TaskPlan>,
    /// The compiled answer of a `table_lookup` tool.
    pub lookup: Option<Lookup>,
    /// Per-caller limit on upstream requests.
    pub rate_limit: Option<crate::catalog::descriptor::RateLimit>,
    /// Limits of an `allowlisted_request` tool.
    pub allowlist: Option<crate::catalog::descriptor::Allowlist>,
    /// Preconditions.
    pub require: Vec<Require>,
    /// Response mapping.
    pub response: ResponsePlan,
    /// Argument JSON Schema.
    pub arguments: SchemaText,
    /// The argument names the schema declares (`properties`), sorted.
    pub argument_names: Vec<String>,
    /// The required arguments and their types, as a search hit lists them
    /// ([`crate::catalog::describe::required_arguments`]), compiled once.
    pub required_arguments: SchemaText,
    /// Whether the schema refuses arguments it does not declare
    /// (`additionalProperties = false`).
    pub closed_arguments: bool,
    /// Argument validator, built from `arguments` on the tool's first call (see
    /// [`argument_validator`]).
    pub(crate) validator: std::sync::OnceLock<jsonschema::Validator>,
    /// Output JSON Schema.
    pub output: Option<SchemaText>,
    /// Top-level argument defaults from the schema, applied before rendering.
    pub defaults: Vec<(String, Value)>,
    /// sha256 of the canonical normalized definition (the definition itself is not
    /// kept; `compile::compile_with` returns it with `keep_definitions`).
    pub descriptor_hash: String,
    /// What every envelope of this tool says in `meta`, shared (set at assembly).
    pub meta_names: std::sync::Arc<MetaNames>,
    /// The name `/mcp` lists it under (`payments_get_customers`; set at assembly,
    /// [`crate::catalog::listed`]).
    pub listed_name: String,
    /// Source file and line of the tool.
    pub source: (String, usize),
    /// Where an imported tool came from.
    pub provenance: Option<crate::catalog::descriptor::ToolSource>,
    /// Whether callers may run it (else recorded for coverage only).
    pub exposed: bool,
}

/// What a tool does.
#[derive(Debug)]
pub enum Action {
    /// A local native hook.
    Hook(Hook),
    /// An upstream HTTP call.
    Http(Box<HttpPlan>),
    /// A tool of the service's MCP server (`tools/call`).
    Mcp(Box<crate::catalog::mcp::McpPlan>),
}

/// A compiled upstream request.
#[derive(Debug)]
pub struct HttpPlan {
    /// Method.
    pub method: hyper::Method,
    /// Path template as written.
    pub path: String,
    /// Path split into literals and placeholders.
    pub segments: Vec<PathPart>,
    /// Expression per placeholder.
    pub path_params: BTreeMap<String, Expr>,
    /// Query parameters.
    pub query: Vec<(String, Expr)>,
    /// Object spread into the query.
    pub query_object: Option<Expr>,
    /// Headers.
    pub headers: Vec<(String, Expr)>,
    /// Body.
    pub body: Option<BodyPlan>,
    /// Body encoding.
    pub body_encoding: BodyEncoding,
    /// Whether query lists are indexed (`a[0]=`) rather than repeated.
    pub indexed_query: bool,
}

/// Part of a path template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathPart {
    /// Literal text.
    Literal(String),
    /// `{name}`.
    Param(String),
}

/// The placeholders of `segments` and the text each matches in `path`, if the path
/// matches the template: literal parts (which may hold several segments) as written,
/// each placeholder one non-empty segment.
pub fn match_template<'s, 'p>(
    segments: &'s [PathPart],
    path: &'p str,
) -> Option<Vec<(&'s str, &'p str)>> {
    let mut rest = path;
    let mut captured = Vec::new();
    for part in segments {
        match part {
            PathPart::Literal(text) => rest = rest.strip_prefix(text.as_str())?,
            PathPart::Param(name) => {
                let end = rest.find('/').unwrap_or(rest.len());
                if end == 0 {
                    return None;
                }
                captured.push((name.as_str(), &rest[..end]));
                rest = &rest[end..];
            }
        }
    }
    rest.is_empty().then_some(captured)
}

/// Where the body comes from.
#[derive(Debug)]
pub enum BodyPlan {
    /// An expression.
    Expr(Expr),
    /// A template rendering JSON text.
    Template(String),
}

/// Compiled steps of a `reschedule_overdue` tool (see [`crate::catalog::descriptor::RawReschedule`]).
#[derive(Debug)]
pub struct Reschedule {
    /// Search tool name (same service).
    pub search_tool: String,
    /// Search arguments.
    pub search_arguments: Expr,
    /// Item list in the search answer.
    pub items: JsonPath,
    /// Due-time field of an item.
    pub due_field: String,
    /// An item's id.
    pub item_id: Expr,
    /// Update tool name (same service).
    pub update_tool: String,
    /// Update arguments.
    pub update_arguments: Expr,
    /// Zone lookup: tool, arguments, path.
    pub zone: Option<(String, Expr, JsonPath)>,
}

/// Compiled steps of a `submit_and_poll` tool (see [`crate::catalog::descriptor::RawPoll`]).
#[derive(Debug)]
pub struct Poll {
    /// `(when, tool, arguments)`, first match wins.
    pub submit: Vec<(Option<Expr>, String, Expr)>,
    /// Job id.
    pub id: Expr,
    /// Status read tool.
    pub status_tool: String,
    /// Its arguments.
    pub status_arguments: Expr,
    /// Status word of an answer.
    pub status: Expr,
    /// Finished words.
    pub done: Vec<String>,
    /// Failed words.
    pub failed: Vec<String>,
    /// Waiting-for-input words.
    pub waiting: Vec<String>,
    /// The tool's data.
    pub result: Expr,
    /// Pause between reads.
    pub interval: Duration,
    /// Wait argument name.
    pub wait_arg: String,
    /// Default and longest wait.
    pub default_wait: Duration,
    /// Longest wait.
    pub max_wait: Duration,
    /// Tool named in the next action for a job still running.
    pub check_tool: Option<String>,
}

/// Compiled `[tool.task]` (see [`crate::catalog::descriptor::RawTask`]).
#[derive(Debug)]
pub struct TaskPlan {
    /// The watch tool's name (same service).
    pub watch: String,
    /// Its arguments, from `args` and `data`.
    pub arguments: Expr,
}

/// Compiled `table_lookup` (see [`crate::catalog::descriptor::RawLookup`]).
#[derive(Debug)]
pub struct Lookup {
    /// Table name (checked to exist in the service).
    pub table: Option<String>,
    /// Ranking text.
    pub query: Option<Expr>,
    /// Row filter.
    pub filter: Option<Expr>,
    /// Fields matched.
    pub fields: Vec<String>,
    /// The answer.
    pub result: Expr,
}

/// A compiled precondition.
#[derive(Debug)]
pub struct Require {
    /// Must be truthy.
    pub check: Expr,
    /// Classification when it is not.
    pub classification: Classification,
    /// Message.
    pub message: String,
}

/// A compiled JSONPath with its source.
#[derive(Debug, Clone)]
pub struct JsonPath {
    /// As written.
    pub source: String,
    /// Parsed.
    pub query: jsonpath_rust::parser::model::JpQuery,
    /// The same path as a JSON pointer, when it names exactly one location
    /// (`$.a.b[0]`, `$['a']`): then no query engine runs on the request path.
    pub pointer: Option<String>,
}

/// A JSON pointer for a JSONPath made only of names and indexes; `None` otherwise.
pub fn simple_pointer(path: &str) -> Option<String> {
    let mut rest = path.strip_prefix('$')?;
    let mut out = String::new();
    let escape = |s: &str| s.replace('~', "~0").replace('/', "~1");
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(r.len());
            if end == 0 {
                return None;
            }
            out.push('/');
            out.push_str(&escape(&r[..end]));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            let quoted = inner
                .strip_prefix('\'')
                .and_then(|x| x.strip_suffix('\''))
                .or_else(|| inner.strip_prefix('"').and_then(|x| x.strip_suffix('"')));
            match quoted {
                Some(name) if !name.contains(['\'', '"', '\\']) => {
                    out.push('/');
                    out.push_str(&escape(name));
                }
                Some(_) => return None,
                None if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) => {
                    out.push('/');
                    out.push_str(inner);
                }
                None => return None,
            }
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// Response mapping.
#[derive(Debug, Default)]
pub struct ResponsePlan {
    /// Where `data` is in the upstream body.
    pub data: Option<JsonPath>,
    /// Pagination figures.
    pub pagination: Vec<(String, JsonPath)>,
    /// Extra redaction paths.
    pub redact: Vec<JsonPath>,
    /// Paths redacted unless an expression is truthy.
    pub redact_unless: Vec<(Expr, Vec<JsonPath>)>,
    /// Argument turning truncation off when false.
    pub compact_arg: Option<String>,
    /// Argument setting the item budget.
    pub budget_arg: Option<String>,
    /// Argument adding the raw upstream answer.
    pub raw_arg: Option<String>,
    /// Where a successful answer carries a job id to record.
    pub job_id: Option<JsonPath>,
    /// A job status read: the job id expression and the status path.
    pub job_status: Option<(Expr, JsonPath)>,
    /// Argument choosing compact or full answers.
    pub mode_arg: Option<String>,
    /// Argument projecting fields.
    pub fields_arg: Option<String>,
    /// The compact field table (copied from the service's tables at compile).
    pub compact_fields: Option<Value>,
    /// Summary template name.
    pub summary: Option<String>,
    /// Upstream status -> classification.
    pub upstream_errors: BTreeMap<u16, Classification>,
}

/// Lowercase, with every run of characters other than letters and digits turned into
/// one `_`: how names, canonical names and aliases are matched.
pub fn lookup_key(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut gap = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if gap && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            out.push(c.to_ascii_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

impl Catalog {
    /// The ids of its services, in order (the console's service filters).
    pub fn service_ids(&self) -> Vec<&str> {
        self.services.keys().map(String::as_str).collect()
    }

    /// The search index over every tool (`find_tools`, lookups), built at its first use.
    /// Building it is a fifth of a compile and no call but a search needs it, so a
    /// served broker builds it on a thread of its own once it listens
    /// ([`Catalog::build_search_in_background`]); a search that comes first waits for it.
    pub fn search(&self) -> &crate::catalog::search::SearchIndex {
        self.search.get_or_init(|| {
            crate::catalog::search::SearchIndex::build(&self.rules.search, &self.tools)
        })
    }

    /// Starts building the search index on a thread of its own (a search meanwhile waits
    /// for that build rather than starting a second).
    pub fn build_search_in_background(self: &std::sync::Arc<Self>) {
        let catalog = std::sync::Arc::clone(self);
        let started = std::thread::Builder::new()
            .name("tool-broker-search".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                catalog.search();
                tracing::debug!(
                    search_ms = started.elapsed().as_millis() as u64,
                    "search index built"
                );
            });
        if let Err(e) = started {
            // The first search builds it instead.
            tracing::debug!(error = %e, "the search index waits for its first use");
        }
    }

    /// Assembles a catalog and its lookup index. Index collisions are reported by compile.
    pub(crate) fn assemble(
        services: BTreeMap<String, Service>,
        mut tools: Vec<Tool>,
        rules: Rules,
        templates: Templates,
        origin: String,
    ) -> Result<Self, Vec<(String, usize, String)>> {
        tools.sort_by(|a, b| a.full_name.cmp(&b.full_name));
        let (index, services) = Self::lookup(services, &tools)?;
        // The lock holds its snapshot id (hashed once).
        let snapshot_id = lock_of(&services, &tools).snapshot_id;
        let snapshot: std::sync::Arc<str> = snapshot_id.as_str().into();
        for tool in &mut tools {
            tool.meta_names = std::sync::Arc::new(MetaNames {
                service: tool.service.as_str().into(),
                tool: tool.full_name.as_str().into(),
                catalog_version: services
                    .get(&tool.service)
                    .map(|s| s.catalog_version.as_str())
                    .unwrap_or_default()
                    .into(),
                descriptor_hash: tool.descriptor_hash.as_str().into(),
                snapshot_id: snapshot.clone(),
            });
        }
        let listed_names =
            crate::catalog::listed::listed_names(tools.iter().map(|t| t.full_name.as_str()));
        let mut listed = HashMap::with_capacity(tools.len());
        for (i, name) in listed_names.iter().enumerate() {
            if let Some(other) = listed.insert(name.clone(), i) {
                let (tool, first) = (&tools[i], &tools[other]);
                return Err(vec![(
                    tool.source.0.clone(),
                    tool.source.1,
                    format!(
                        "tool `{}` would be listed on /mcp as `{name}`, as is `{}`; rename one of them",
                        tool.full_name, first.full_name
                    ),
                )]);
            }
        }
        for (tool, name) in tools.iter_mut().zip(listed_names) {
            tool.listed_name = name;
        }
        let guards = rules.guards.clone();
        Ok(Self {
            services,
            tools,
            rules,
            templates,
            snapshot_id,
            origin,
            search: std::sync::OnceLock::new(),
            index,
            listed,
            costs: crate::catalog::costs::Costs::default(),
            cost_rules: (Vec::new(), Vec::new()),
            guards: std::sync::Arc::new(crate::catalog::guards::applied::Applied::plain(guards)),
        })
    }

    /// The index of one of this catalog's tools in [`Catalog::tools`] (`None` for a tool
    /// of another catalog): found from its address, no name compared.
    pub fn index_of(&self, tool: &Tool) -> Option<usize> {
        let i = index_at(self.tools.as_ptr() as usize, tool)?;
        self.tools
            .get(i)
            .filter(|t| std::ptr::eq(*t, tool))
            .map(|_| i)
    }

    /// The lookup index of `tools` (sorted by full name) and the services with their
    /// figures; the collisions of names and aliases when there are any.
    fn lookup(
        services: BTreeMap<String, Service>,
        tools: &[Tool],
    ) -> Result<(LookupIndex, BTreeMap<String, Service>), Vec<Collision>> {
        let mut index = HashMap::new();
        let mut collisions = Vec::new();
        for (i, tool) in tools.iter().enumerate() {
            for key in tool.lookup_keys() {
                if let Some(&other) = index.get(&(tool.service.clone(), key.clone())) {
                    if other != i {
                        let first: &Tool = &tools[other];
                        collisions.push((
                            tool.source.0.clone(),
                            tool.source.1,
                            format!(
                                "tool `{}` answers to `{key}`, as does `{}` ({}:{}); names and aliases must be unique within a service",
                                tool.full_name, first.full_name, first.source.0, first.source.1
                            ),
                        ));
                    }
                } else {
                    index.insert((tool.service.clone(), key), i);
                }
            }
        }
        if !collisions.is_empty() {
            return Err(collisions);
        }
        // Titles resolve too, where exactly one tool of the service has that title and
        // it is nobody's name or alias.
        let mut title_count: HashMap<(String, String), usize> = HashMap::new();
        for tool in tools {
            *title_count
                .entry((tool.service.clone(), lookup_key(&tool.title)))
                .or_default() += 1;
        }
        for (i, tool) in tools.iter().enumerate() {
            let key = (tool.service.clone(), lookup_key(&tool.title));
            if title_count.get(&key) == Some(&1) {
                index.entry(key).or_insert(i);
            }
        }
        let mut services = services;
        for tool in tools {
            if let Some(service) = services.get_mut(&tool.service) {
                let f = &mut service.figures;
                f.tools += 1;
                f.agent_ready +=
                    usize::from(tool.tier == crate::catalog::descriptor::Tier::AgentReady);
                f.records_jobs |= tool.response.job_id.is_some();
            }
        }
        Ok((index, services))
    }

    /// Resolves `<service>.<tool>` by native name, canonical name, alias or unique title,
    /// or a tool's listed name (`/mcp`).
    pub fn resolve(&self, full_name: &str) -> Option<&Tool> {
        // A tool's own full name (what a client that listed the tools sends) is found by
        // a binary search of the tools, sorted by it at assembly: no key is built or
        // hashed (1.7k instructions per call otherwise). It is the tool the index gives
        // for that name, since two tools answering to one key do not compile.
        if let Ok(i) = self
            .tools
            .binary_search_by(|t| t.full_name.as_str().cmp(full_name))
        {
            return self.tools.get(i);
        }
        match full_name.split_once('.') {
            Some((service, tool)) => self.resolve_in(service, tool),
            // A name without a dot is the name `/mcp` lists the tool under.
            None => self.listed.get(full_name).and_then(|&i| self.tools.get(i)),
        }
    }

    /// Resolves a tool name, canonical name or alias within one service.
    pub fn resolve_in(&self, service: &str, tool: &str) -> Option<&Tool> {
        let key = lookup_key(tool);
        self.index
            .get(&(service.to_string(), key))
            .and_then(|&i| self.tools.get(i))
    }

    /// The HTTP tool of `service` whose method and path template `path` (a plain path,
    /// no query) matches, segment by segment, and the arguments its placeholders read
    /// from it: what an allowlisted endpoint request is, as a catalog tool.
    pub fn described_endpoint(
        &self,
        service: &str,
        method: &hyper::Method,
        path: &str,
    ) -> Option<(&Tool, Vec<(String, String)>)> {
        self.tools.iter().find_map(|t| match &t.action {
            Action::Http(plan) if t.service == service && plan.method == method => {
                let captured = match_template(&plan.segments, path)?;
                let named = captured
                    .into_iter()
                    .map(|(placeholder, value)| {
                        let name = plan
                            .path_params
                            .get(placeholder)
                            .and_then(Expr::argument)
                            .unwrap_or(placeholder);
                        (name.to_string(), value.to_string())
                    })
                    .collect();
                Some((t, named))
            }
            _ => None,
        })
    }

    /// All full tool names, for "did you mean".
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.full_name.as_str())
    }

    /// The lock of this catalog: versions and hashes.
    pub fn lock(&self) -> Lock {
        lock_of(&self.services, &self.tools)
    }
}

/// Two tools answering to one name, as `(file, line, message)`.
type Collision = (String, usize, String);

/// A catalog's lookup index: `(service, lookup key)` -> the tool's index.
type LookupIndex = HashMap<(String, String), usize>;

/// The lock of `services` and `tools`: versions and hashes.
fn lock_of(services: &BTreeMap<String, Service>, tools: &[Tool]) -> Lock {
    let mut lock = Lock::default();
    for (id, service) in services {
        lock.services.insert(
            id.clone(),
            LockedService {
                catalog_version: service.catalog_version.clone(),
                tools: BTreeMap::new(),
            },
        );
    }
    for tool in tools {
        if let Some(s) = lock.services.get_mut(&tool.service) {
            s.tools
                .insert(tool.full_name.clone(), tool.descriptor_hash.clone());
        }
    }
    lock.snapshot_id = snapshot_id(&lock);
    lock
}

/// A JSON Schema kept as its compact JSON text. Parsed into a `Value` it would take
/// about ten times the memory (a B-tree node per object): the catalog's argument and
/// output schemas were 40 MB of a served broker's 57 MB of heap. A served broker reads
/// a schema only to build a tool's validator, its listing or its description
/// (engine/DESIGN.md "Schemas are kept as text").
#[derive(Debug, Clone)]
pub struct SchemaText(Box<serde_json::value::RawValue>);

impl SchemaText {
    /// The compact text of `schema`.
    pub fn new(schema: &Value) -> Self {
        Self(
            serde_json::value::to_raw_value(schema)
                .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned()),
        )
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The schema, parsed.
    pub fn value(&self) -> Value {
        // The text was written from a `Value`: it always parses.
        serde_json::from_str(self.0.get()).unwrap_or_default()
    }
}

impl serde::Serialize for SchemaText {
    /// Written as the JSON it holds (inside `json!`, parsed into a `Value`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Builds the validator of an argument schema. The compiler checks that every tool's
/// builds ([`crate::catalog::schema_check`]), so a schema that does not build is reported with its
/// file and line at compile time, and keeps none: a built validator is about 20 KB, 37 MB for the whole catalog, and a
/// served broker builds one only for the tools it is asked to run (same schema, same
/// options, so it cannot fail then where it passed at compile time).
pub fn argument_validator(
    schema: &Value,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'_>> {
    argument_options().build(schema)
}

/// The options every argument validator is built with (formats are checked).
pub fn argument_options<'i>() -> jsonschema::ValidationOptions<'i> {
    jsonschema::options().should_validate_formats(true)
}

impl Tool {
    /// The argument validator, built on first use.
    pub fn validator(&self) -> Result<&jsonschema::Validator, crate::error::CallError> {
        if let Some(v) = self.validator.get() {
            return Ok(v);
        }
        match argument_validator(&self.arguments.value()) {
            Ok(v) => Ok(self.validator.get_or_init(|| v)),
            Err(e) => {
                tracing::error!(tool = %self.full_name, error = %e.masked(), "argument schema did not build");
                Err(crate::error::CallError::internal())
            }
        }
    }

    /// Whether the argument schema declares `name` in its `properties`.
    pub fn declares(&self, name: &str) -> bool {
        self.argument_names
            .binary_search_by(|n| n.as_str().cmp(name))
            .is_ok()
    }

    /// Keys this tool answers to: native name, canonical (hyphenated) name, aliases.
    pub fn lookup_keys(&self) -> Vec<String> {
        let mut keys = vec![lookup_key(&self.name)];
        keys.extend(self.aliases.iter().map(|a| lookup_key(a)));
        keys.sort();
        keys.dedup();
        keys
    }

    /// The canonical name: the projection form, `_` replaced by `-`.
    pub fn canonical_name(&self) -> String {
        self.name.replace('_', "-")
    }

    /// Upstream method and path, or the hook name, for listings.
    pub fn upstream_label(&self) -> (Option<String>, Option<String>, Option<&'static str>) {
        match &self.action {
            Action::Http(plan) => (Some(plan.method.to_string()), Some(plan.path.clone()), None),
            Action::Mcp(plan) => (Some("tools/call".into()), Some(plan.tool.clone()), None),
            Action::Hook(hook) => (None, None, Some(hook.name())),
        }
    }
}

/// `unknown_tool` with a "did you mean" where a name is close.
pub fn unknown_tool(catalog: &Catalog, name: &str) -> crate::error::CallError {
    let hint = crate::catalog::diag::did_you_mean(name, catalog.names())
        .map(|h| format!("; {h}"))
        .unwrap_or_default();
    crate::error::CallError::new(
        Classification::UnknownTool,
        format!("no tool named `{name}`{hint}"),
    )
}

/// Where `tool` would sit in a slice of tools that starts at address `start`, from its
/// address alone (no name compared): the caller checks the slice holds it there.
pub fn index_at(start: usize, tool: &Tool) -> Option<usize> {
    let offset = (tool as *const Tool as usize).checked_sub(start)?;
    Some(offset / std::mem::size_of::<Tool>().max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool's full name resolves to the tool, by the binary search and by the
    /// index alike, and every other spelling the index knows (canonical name, alias,
    /// other case) to the same tool as before.
    #[test]
    fn full_names_resolve_by_search_as_by_the_index() {
        let catalog =
            crate::catalog::compile::compile(&crate::catalog::source::Sources::embedded()).unwrap();
        assert!(catalog.tools.len() > 1000);
        for tool in &catalog.tools {
            let (service, name) = tool.full_name.split_once('.').unwrap();
            let found = catalog.resolve(&tool.full_name).unwrap();
            assert_eq!(found.full_name, tool.full_name);
            assert_eq!(
                catalog.resolve_in(service, name).unwrap().full_name,
                tool.full_name
            );
            let canonical = format!("{service}.{}", tool.canonical_name());
            assert_eq!(
                catalog.resolve(&canonical).unwrap().full_name,
                tool.full_name
            );
            let upper = format!("{service}.{}", name.to_ascii_uppercase());
            assert_eq!(catalog.resolve(&upper).unwrap().full_name, tool.full_name);
            for alias in &tool.aliases {
                let spelled = format!("{service}.{alias}");
                assert_eq!(catalog.resolve(&spelled).unwrap().full_name, tool.full_name);
            }
        }
        assert!(catalog.resolve("hosting.no_such_tool").is_none());
        assert!(catalog.resolve("no_service").is_none());
    }

    #[test]
    fn templates_match_by_segment_and_name_their_placeholders() {
        use super::{PathPart, match_template};
        let template = vec![
            PathPart::Literal("/contacts/".into()),
            PathPart::Param("id".into()),
        ];
        assert_eq!(
            match_template(&template, "/contacts/c1"),
            Some(vec![("id", "c1")])
        );
        assert_eq!(match_template(&template, "/contacts/c1/notes"), None);
        assert_eq!(match_template(&template, "/contacts/"), None);
        assert_eq!(match_template(&template, "/accounts/c1"), None);
        let nested = vec![
            PathPart::Literal("/contacts/".into()),
            PathPart::Param("contactId".into()),
            PathPart::Literal("/tasks/".into()),
            PathPart::Param("taskId".into()),
        ];
        assert_eq!(
            match_template(&nested, "/contacts/c1/tasks/t2"),
            Some(vec![("contactId", "c1"), ("taskId", "t2")])
        );
    }

    /// A served catalog holds no validator until a tool is called; the first call builds
    /// it and later calls reuse it, and it validates as the compile-time one did.
    #[test]
    fn validators_are_built_on_a_tools_first_call() {
        let catalog =
            crate::catalog::compile::compile(&crate::catalog::source::Sources::embedded())
                .unwrap_or_else(|d| panic!("{d}"));
        assert!(catalog.tools.iter().all(|t| t.validator.get().is_none()));
        let tool = catalog
            .resolve("agent.create_task")
            .unwrap_or_else(|| panic!("agent.create_task"));
        let validator = tool.validator().unwrap_or_else(|e| panic!("{e:?}"));
        assert!(
            !validator.is_valid(&serde_json::json!({ "message": 5 })),
            "the built validator refuses bad arguments"
        );
        let first = tool.validator.get().map(std::ptr::from_ref);
        assert!(first.is_some());
        let _ = tool.validator();
        assert_eq!(
            tool.validator.get().map(std::ptr::from_ref),
            first,
            "built once"
        );
        let built = catalog
            .tools
            .iter()
            .filter(|t| t.validator.get().is_some())
            .count();
        assert_eq!(built, 1, "only the called tool's");
    }

    #[test]
    fn simple_paths_become_pointers() {
        assert_eq!(simple_pointer("$.data"), Some("/data".into()));
        assert_eq!(simple_pointer("$.a.b[0]['c d']"), Some("/a/b/0/c d".into()));
        assert_eq!(simple_pointer("$"), Some(String::new()));
        assert_eq!(simple_pointer("$..token"), None);
        assert_eq!(simple_pointer("$.a[*]"), None);
        assert_eq!(simple_pointer("$.a[?(@.x)]"), None);
    }

    #[test]
    fn lookup_keys_fold_spelling() {
        assert_eq!(
            lookup_key("Hosting DNS Get Dnsrecords V1"),
            "hosting_dns_get_dnsrecords_v1"
        );
        assert_eq!(lookup_key("dns-get-dnsrecords-v1"), "dns_get_dnsrecords_v1");
        assert_eq!(lookup_key("DNS_getDNSRecordsV1"), "dns_getdnsrecordsv1");
    }
}
