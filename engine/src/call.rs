//! One call, end to end (DECISIONS sections 2-5):
//!
//! resolve -> may the caller use it -> validate arguments -> preconditions ->
//! confirmation (preview or refusal, nothing sent) -> hook, or: base URL and upstream
//! key (refused before any contact) -> render -> send -> classify -> redact -> data,
//! pagination, truncation -> envelope.
//!
//! [`Broker`] holds everything a call needs that is not in the request: the compiled
//! catalog, the caller keys, the upstream client and the deployment's settings.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::args;
use crate::auth::{Keys, Principal};
use crate::catalog::{Action, Catalog, JsonPath, Tool};
use crate::config::ConfigFile;
use crate::confirm::{Decision, PreviewReason, decide};
use crate::descriptor::{Class, ConfirmationMode, EnvelopeKind, Risk};
use crate::diag::did_you_mean;
use crate::envelope::{self, Meta, Portal, Response, Truncation};
use crate::error::{CallError, Classification};
use crate::hooks::{self, Hook};
use crate::redact::redact;
use crate::render::render;
use crate::response::{extract_data, extract_pagination, refusal_error, select, truncate};
use crate::template::Scope;
use crate::upstream::{Outcome, Target, Upstream};

/// The broker: catalog, callers, upstream client, deployment settings.
pub struct Broker {
    /// The compiled catalog.
    pub catalog: Arc<Catalog>,
    /// Caller keys.
    pub keys: Keys,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// What a connection may cost (the `[server]` table).
    pub bounds: crate::bounds::ServerBounds,
    /// Set on shutdown: readiness answers 503 while calls in flight finish.
    pub draining: std::sync::atomic::AtomicBool,
    /// Counters for `GET /metrics`.
    pub metrics: crate::metrics::Metrics,
    /// The durable store: jobs, rate-limit windows, the write audit.
    pub store: crate::store::Store,
    /// Seals confirmation tokens (keys in the store).
    pub(crate) sealer: crate::seal::Sealer,
    /// Who may approve writes (mode `human`).
    pub(crate) approvers: crate::approval::Approvers,
    /// Seals what approvers are shown.
    pub(crate) approval_cipher: Option<crate::approval::PreviewCipher>,
    /// How long an approval lasts.
    pub(crate) approval_ttl_seconds: u64,
    /// How long a repeat waits on a pending approval.
    pub(crate) approval_wait_seconds: u64,
    /// The public base URL for approval links.
    pub(crate) public_url: Option<String>,
    /// How long a confirmation token stays valid.
    pub(crate) confirmation_ttl_seconds: u64,
    /// What verifies each service's callbacks; secrets never leave the broker.
    pub(crate) webhooks: crate::webhook::keys::Receivers,
    /// Routing profiles: `(service, id, slug, key)`; keys never leave the broker.
    profiles: Vec<(String, String, String, String)>,
    /// Each service's readiness that does not depend on the caller
    /// (`hooks::check::readiness`), built on first use.
    pub(crate) readiness: std::sync::OnceLock<BTreeMap<String, serde_json::Map<String, Value>>>,
    /// `portal.check_connection` answers by what they depend on
    /// (`hooks::portal::check_connection`), as JSON text with their service count.
    pub(crate) connection_answers: std::sync::Mutex<crate::hooks::ConnectionAnswers>,
    /// MCP `tools/list` entries of every catalog tool, built on first use.
    pub mcp_entries: std::sync::OnceLock<Vec<crate::mcp::tools::EntryText>>,
    /// Which browser origins may call (`allowed_origins`) and the Host rule.
    pub origins: crate::origin::OriginPolicy,
    /// The OpenAPI projection text (without and with legacy tools), built on first use;
    /// shared, not copied, by every answer.
    pub projection: [std::sync::OnceLock<bytes::Bytes>; 2],
    upstream: Upstream,
    base_urls: BTreeMap<String, String>,
    server_keys: BTreeMap<String, String>,
    /// The keys the broker itself holds (server-side, webhook and routing-profile keys),
    /// gathered once: every answer is searched for them ([`Broker::secrets`]).
    held_secrets: Vec<String>,
    /// The headers that carry callers' upstream keys, one entry per name, each with
    /// whether its name is credential-like by the redaction rules (decided once).
    credential_headers: Vec<(hyper::header::HeaderName, bool)>,
    /// A bit per length of those names ([`length_bit`]): most headers of a request
    /// have none of these lengths and are compared with none of the names.
    credential_lengths: u64,
    /// Whether `Authorization` is credential-like by the redaction rules.
    authorization_secret: bool,
    settings: BTreeMap<String, Value>,
    trace_seed: u64,
    trace_counter: AtomicU64,
    clock: fn() -> jiff::Timestamp,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("snapshot_id", &self.catalog.snapshot_id)
            .field("base_urls", &self.base_urls)
            .field("server_keys", &self.server_keys.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// What a tool produced, before it is put in an envelope.
#[derive(Debug, Clone, Default)]
pub struct Exec {
    /// The result.
    pub data: Value,
    /// The result as JSON text instead (then `data` is null): a local answer built once
    /// and kept (`hooks::portal::check_connection`), or an upstream answer written in one
    /// pass ([`crate::scan`]). Always whole JSON. Read both with [`Exec::take_data`].
    pub data_text: Option<std::sync::Arc<str>>,
    /// Upstream status, when contacted.
    pub upstream_status: Option<u16>,
    /// Pagination figures.
    pub pagination: Option<Value>,
    /// Truncated lists.
    pub truncation: Vec<Truncation>,
    /// Whether this was a preview.
    pub dry_run: bool,
    /// Values replaced by redaction.
    pub redacted: Option<usize>,
    /// Next-action text.
    pub next_action: Option<String>,
    /// Summary text.
    pub summary: Option<String>,
    /// The resource acted on (portal envelope).
    pub resource: Option<Value>,
    /// The raw tool a wrapper ran.
    pub dispatched_to: Option<String>,
    /// A preview that answered a confirmation token (mode `bound`; audited).
    pub token_issued: bool,
}

impl Exec {
    /// Puts a result kept as text into `data` (for readers that look into it).
    pub fn materialize(&mut self) {
        if self.data_text.is_some() {
            self.data = self.take_data();
        }
    }

    /// The result as a `Value`, whichever form it has.
    pub fn take_data(&mut self) -> Value {
        match self.data_text.take() {
            // Whole JSON, written from a `Value` or by `scan`: it always parses.
            Some(text) => serde_json::from_str(&text).unwrap_or_default(),
            None => self.data.take(),
        }
    }
}

/// The form a caller of a tool wants its result in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A `Value` in [`Exec::data`]: a hook reads into the result of its step tools.
    Value,
    /// JSON text in [`Exec::data_text`] where the tool's plan allows it (an answer in
    /// one pass, [`crate::scan`]): the envelope only writes the result out.
    Text,
}

/// The request-scoped facts a tool may use.
#[derive(Debug)]
pub struct RequestCtx<'a> {
    /// Who is calling.
    pub principal: &'a Principal,
    /// Request headers (BYOK keys, context headers).
    pub headers: &'a hyper::HeaderMap,
    /// Trace id.
    pub trace_id: &'a str,
    /// The idempotency key sent upstream (derived), when this call holds one.
    pub idempotency: Option<String>,
    /// What an MCP 2026-07-28 request brought for elicitation (`/mcp` only).
    pub elicitation: Option<&'a crate::approval::elicit::Elicitation>,
    /// Run as an MCP task: tools that wait watch their job for the task's bound instead
    /// of their own, until the task is cancelled.
    pub task_watch: Option<TaskWatch>,
}

/// How a call run as an MCP task watches its job.
#[derive(Debug, Clone)]
pub struct TaskWatch {
    /// The longest watch.
    pub limit: std::time::Duration,
    /// Set when the task is cancelled: the watch ends at its next read.
    pub stop: Arc<std::sync::atomic::AtomicBool>,
}

impl TaskWatch {
    /// Whether the task was cancelled.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// One `tools/call`.
#[derive(Debug)]
pub struct CallInput<'a> {
    /// JSON-RPC id as a string.
    pub request_id: String,
    /// `params.name`.
    pub name: &'a str,
    /// `params.arguments`.
    pub arguments: Option<Value>,
    /// Request headers.
    pub headers: &'a hyper::HeaderMap,
    /// The authenticated caller.
    pub principal: &'a Principal,
    /// An idempotency key given outside the headers (MCP `_meta.idempotencyKey`); the
    /// `Idempotency-Key` header is read when this is `None`.
    pub idempotency_key: Option<String>,
    /// The MCP door's elicitation capability and round (`None` on other doors).
    pub elicitation: Option<crate::approval::elicit::Elicitation>,
    /// Run as an MCP task (see [`RequestCtx::task_watch`]).
    pub task_watch: Option<TaskWatch>,
}

impl Broker {
    /// Builds a broker. `env` reads environment variables (injectable for tests).
    pub fn new(
        catalog: Arc<Catalog>,
        config: &ConfigFile,
        env: &dyn Fn(&str) -> Option<String>,
        store: crate::store::Store,
    ) -> Result<Self, String> {
        let mut keys = Keys::from_config(
            &config.keys,
            config.toolset.clone().unwrap_or_default(),
            config.confirmation.unwrap_or_default(),
        )?;
        let human = config.confirmation == Some(crate::config::WriteConfirmation::Human)
            || config
                .keys
                .iter()
                .any(|k| k.confirmation == Some(crate::config::WriteConfirmation::Human));
        let approvers = crate::approval::Approvers::from_config(&config.approvers)?;
        let mut previous = Vec::new();
        for old in &config.approval_previous_key_envs {
            let Some(key) = env(old).filter(|v| !v.is_empty()) else {
                return Err(format!(
                    "config approval_previous_key_envs: the variable `{old}` is not set; set it or remove it from the list"
                ));
            };
            previous.push(key);
        }
        let approval_cipher = match &config.approval_key_env {
            Some(variable) => match env(variable).filter(|v| !v.is_empty()) {
                Some(secret) => Some(
                    crate::approval::PreviewCipher::with_previous(&secret, &previous)
                        .map_err(|e| format!("config approval_key_env `{variable}`: {e}"))?,
                ),
                None => None,
            },
            None => None,
        };
        let approval_wait_seconds = config
            .approval_wait_seconds
            .unwrap_or(crate::approval::DEFAULT_WAIT_SECONDS);
        if approval_wait_seconds > crate::approval::MAX_WAIT_SECONDS {
            return Err(format!(
                "config approval_wait_seconds = {approval_wait_seconds}: at most {} (a call waits that long for a person; clients time out)",
                crate::approval::MAX_WAIT_SECONDS
            ));
        }
        if human && (approvers.is_empty() || approval_cipher.is_none()) {
            return Err("confirmation = \"human\" needs [[approvers]] (who may approve) and approval_key_env (a variable holding a key of at least 32 characters that seals what approvers are shown)".into());
        }
        if let Some(url) = &config.public_url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            return Err("config public_url must be an absolute http(s) URL".into());
        }
        if let Some(token) = env("TOOL_BROKER_API_KEY").filter(|t| !t.is_empty()) {
            keys.add_plain("env:TOOL_BROKER_API_KEY", &token);
        }
        let toolsets = config
            .toolset
            .iter()
            .map(|t| ("the top-level `toolset`".to_string(), t))
            .chain(config.keys.iter().filter_map(|k| {
                k.toolset
                    .as_ref()
                    .map(|t| (format!("key `{}`: `toolset`", k.name), t))
            }));
        for (place, toolset) in toolsets {
            if let crate::config::Toolset::Services(services) = toolset {
                for id in services {
                    if !catalog.services.contains_key(id) {
                        return Err(format!(
                            "config {place} names `{id}`, which is not a catalog service{}",
                            did_you_mean(id, catalog.services.keys().map(String::as_str))
                                .map(|h| format!("; {h}"))
                                .unwrap_or_default()
                        ));
                    }
                }
            }
        }
        let origins = crate::origin::OriginPolicy::new(&config.allowed_origins)?;
        let mut base_urls = BTreeMap::new();
        for (id, service) in &catalog.services {
            let env_name = format!("TOOL_BROKER_UPSTREAM_{}", id.to_ascii_uppercase());
            let url = env(&env_name)
                .filter(|u| !u.is_empty())
                .or_else(|| config.upstreams.get(id).cloned())
                .or_else(|| service.base_url.clone());
            if let Some(url) = url {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!(
                        "upstream URL for `{id}` must start with http:// or https://"
                    ));
                }
                base_urls.insert(id.clone(), url.trim_end_matches('/').to_string());
            }
        }
        for id in config.upstreams.keys() {
            if !catalog.services.contains_key(id) {
                return Err(format!(
                    "config [upstreams] names `{id}`, which is not a catalog service{}",
                    did_you_mean(id, catalog.services.keys().map(String::as_str))
                        .map(|h| format!("; {h}"))
                        .unwrap_or_default()
                ));
            }
        }
        let webhooks =
            crate::webhook::keys::Receivers::build(&catalog, &config.webhook_secrets, env)?;
        let mut server_keys = BTreeMap::new();
        for (id, source) in &config.server_keys {
            let allowed = catalog
                .services
                .get(id)
                .and_then(|s| s.credential.as_ref())
                .is_some_and(|c| c.server_side);
            if !allowed {
                return Err(format!(
                    "config [server_keys] names `{id}`, whose catalog entry does not allow a server-side key"
                ));
            }
            if let Some(value) = env(&source.env).filter(|v| !v.is_empty()) {
                server_keys.insert(id.clone(), value);
            }
        }
        let mut profiles = Vec::new();
        for p in &config.profiles {
            let allowed = catalog
                .services
                .get(&p.service)
                .and_then(|s| s.credential.as_ref())
                .is_some_and(|c| c.server_side && c.profile_args.is_some());
            if !allowed {
                return Err(format!(
                    "config [[profiles]] `{}` names service `{}`, whose catalog entry does not route by profile",
                    p.id, p.service
                ));
            }
            if let Some(key) = env(&p.env).filter(|v| !v.is_empty()) {
                profiles.push((p.service.clone(), p.id.clone(), p.slug.clone(), key));
            } else {
                tracing::warn!(profile = %p.id, variable = %p.env, "profile key variable is empty; the profile is not routable");
            }
        }
        let settings = config
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(Value::Null)))
            .collect();
        let mut seed = [0u8; 8];
        let _ = getrandom::fill(&mut seed);
        config.server.validate()?;
        let redaction = &catalog.rules.redaction;
        let mut credential_headers: Vec<(hyper::header::HeaderName, bool)> = Vec::new();
        for service in catalog.services.values() {
            if let Some(name) = service
                .credential
                .as_ref()
                .and_then(|c| hyper::header::HeaderName::from_bytes(c.header.as_bytes()).ok())
                && !credential_headers.iter().any(|(known, _)| *known == name)
            {
                let secret_name = redaction.is_secret_key(name.as_str());
                credential_headers.push((name, secret_name));
            }
        }
        let authorization_secret = redaction.is_secret_key(hyper::header::AUTHORIZATION.as_str());
        let credential_lengths = credential_headers
            .iter()
            .fold(0, |bits, (name, _)| bits | length_bit(name.as_str()));
        let held_secrets = server_keys
            .values()
            .map(String::as_str)
            .chain(webhooks.secrets())
            .chain(profiles.iter().map(|p| p.3.as_str()))
            .map(str::to_owned)
            .collect();
        Ok(Self {
            bounds: config.server.clone(),
            draining: std::sync::atomic::AtomicBool::new(false),
            max_body_bytes: config
                .max_body_bytes
                .unwrap_or(catalog.rules.limits.max_body_bytes),
            catalog,
            keys,
            metrics: crate::metrics::Metrics::default(),
            upstream: Upstream::new()?,
            base_urls,
            server_keys,
            held_secrets,
            credential_headers,
            credential_lengths,
            authorization_secret,
            settings,
            trace_seed: u64::from_le_bytes(seed),
            trace_counter: AtomicU64::new(0),
            store,
            webhooks,
            sealer: crate::seal::Sealer::default(),
            approvers,
            approval_cipher,
            approval_ttl_seconds: config
                .approval_ttl_seconds
                .unwrap_or(crate::approval::DEFAULT_TTL_SECONDS),
            approval_wait_seconds,
            public_url: config.public_url.clone(),
            confirmation_ttl_seconds: config
                .confirmation_ttl_seconds
                .unwrap_or(crate::bound::DEFAULT_TTL_SECONDS),
            profiles,
            readiness: std::sync::OnceLock::new(),
            connection_answers: std::sync::Mutex::default(),
            mcp_entries: std::sync::OnceLock::new(),
            origins,
            projection: [std::sync::OnceLock::new(), std::sync::OnceLock::new()],
            clock: jiff::Timestamp::now,
        })
    }

    /// Replaces the clock (tests pin "now").
    pub fn with_clock(mut self, clock: fn() -> jiff::Timestamp) -> Self {
        self.clock = clock;
        self
    }

    /// The current time.
    pub fn now(&self) -> jiff::Timestamp {
        (self.clock)()
    }

    /// A new trace id that carries the request id.
    pub fn trace_id(&self, request_id: &str) -> String {
        let n = self.trace_counter.fetch_add(1, Ordering::Relaxed);
        let mixed = self.trace_seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        trace_text(mixed, request_id)
    }

    /// The base URL in effect for a service.
    pub fn base_url(&self, service: &str) -> Option<&str> {
        self.base_urls.get(service).map(String::as_str)
    }

    /// The upstream key for a service: the caller's BYOK header, else a server-side key.
    pub fn upstream_key<'a>(
        &'a self,
        service: &str,
        headers: &'a hyper::HeaderMap,
    ) -> Option<&'a str> {
        let service_of = self.catalog.services.get(service)?;
        let cred = service_of.credential.as_ref()?;
        headers
            .get(service_of.headers.caller_key.as_ref()?)
            .and_then(|v| v.to_str().ok())
            .and_then(caller_key)
            .or_else(|| {
                cred.server_side
                    .then(|| self.server_keys.get(service).map(String::as_str))
                    .flatten()
            })
    }

    /// A request id for a call that brought none (the REST door without `X-Request-Id`).
    pub fn next_request_id(&self) -> String {
        let n = self
            .trace_counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("rest-{:x}-{n}", self.trace_seed & 0xffff_ffff)
    }

    /// Who owns jobs submitted in this request (see [`crate::jobs::owner`]).
    pub fn job_owner(&self, service: &str, ctx: &RequestCtx<'_>) -> String {
        crate::jobs::owner(&ctx.principal.name, self.upstream_key(service, ctx.headers))
    }

    /// The server-side key a call's routing profile names (`profileId` / `profileSlug`),
    /// for services whose credential routes by profile. The caller's key must list the
    /// profile; a profile the deployment does not have is `not_configured`.
    fn profile_key(
        &self,
        tool: &Tool,
        args: &Map<String, Value>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Option<&str>, CallError> {
        let Some(names) = self
            .catalog
            .services
            .get(&tool.service)
            .and_then(|s| s.credential.as_ref())
            .and_then(|c| c.profile_args.as_ref())
        else {
            return Ok(None);
        };
        let id = args.get(&names.id).and_then(Value::as_str);
        let slug = args.get(&names.slug).and_then(Value::as_str);
        if id.is_none() && slug.is_none() {
            return Ok(None);
        }
        let found = self.profiles.iter().find(|(service, pid, pslug, _)| {
            service == &tool.service
                && id.is_none_or(|i| i == pid)
                && slug.is_none_or(|s| s == pslug)
        });
        let Some((_, pid, pslug, key)) = found else {
            // The caller named it: a bad argument, not a broken deployment.
            let pointer = format!("/{}", if id.is_some() { &names.id } else { &names.slug });
            let which = match (id, slug) {
                (Some(_), Some(_)) => "id and slug",
                (Some(_), None) => "id",
                _ => "slug",
            };
            let message = format!(
                "this deployment has no `{}` routing profile with that {which}; omit `{}`/`{}` to use your own key",
                tool.service, names.id, names.slug
            );
            return Err(CallError::validation(message.clone())
                .with_details(json!([{ "pointer": pointer, "message": message }])));
        };
        if !ctx
            .principal
            .profiles
            .iter()
            .any(|allowed| allowed == pid || allowed == pslug)
        {
            return Err(CallError::new(
                Classification::Forbidden,
                format!(
                    "this API key may not route to the `{pslug}` profile; ask the broker's operator to allow it"
                ),
            ));
        }
        Ok(Some(key.as_str()))
    }

    /// How many routing profiles with a key the deployment has for a service.
    pub fn profile_count(&self, service: &str) -> usize {
        self.profiles.iter().filter(|p| p.0 == service).count()
    }

    /// Whether a service's key would come from the server (for configuration checks).
    pub fn has_server_key(&self, service: &str) -> bool {
        self.server_keys.contains_key(service)
    }

    /// Secrets of this request, searched for in upstream answers: the server-side,
    /// webhook and routing-profile keys, then from the request's headers (read once)
    /// every upstream key a service's credential header carries, the bearer token, and
    /// the value of every header with a credential-like name.
    pub(crate) fn secrets<'a>(&'a self, headers: &'a hyper::HeaderMap) -> Vec<&'a str> {
        // Room for the held keys and a request's few credential headers, allocated once.
        let mut out: Vec<&str> = Vec::with_capacity(self.held_secrets.len() + 8);
        out.extend(self.held_secrets.iter().map(String::as_str));
        let redaction = &self.catalog.rules.redaction;
        for (name, value) in headers {
            // By name first: most headers carry nothing secret, and their values are not
            // read. The names the broker knows were judged once.
            let known = match self.credential_lengths & length_bit(name.as_str()) {
                0 => None,
                _ => self.credential_headers.iter().find(|(h, _)| h == name),
            };
            let credential = known.is_some();
            let bearer = !credential && name == hyper::header::AUTHORIZATION;
            let secret_name = match known {
                Some(&(_, secret_name)) => secret_name,
                None if bearer => self.authorization_secret,
                None => redaction.is_secret_key(name.as_str()),
            };
            if !(credential || bearer || secret_name) {
                continue;
            }
            let Ok(value) = value.to_str() else {
                continue;
            };
            if credential {
                out.extend(caller_key(value));
            } else if bearer && let Some((_, token)) = value.split_once(' ') {
                out.push(token.trim());
            }
            if secret_name {
                out.push(value);
            }
        }
        out
    }

    /// Runs one `tools/call` and returns the response to send.
    pub async fn call(&self, mut input: CallInput<'_>) -> Response {
        let started = Instant::now();
        // The broker's own arguments: taken out before anything hashes or validates.
        let token = crate::bound::take_token(&mut input.arguments);
        let approval_id =
            crate::bound::take_arg(&mut input.arguments, crate::approval::APPROVAL_ARG);
        let trace_id = self.trace_id(&input.request_id);
        let mut meta = Meta {
            request_id: std::mem::take(&mut input.request_id),
            trace_id: trace_id.clone(),
            ..Meta::default()
        };
        let portal_name = input.name.starts_with("portal.");
        let Some(tool) = self.catalog.resolve(input.name) else {
            let err = unknown_tool(&self.catalog, input.name);
            meta.duration_ms = elapsed_ms(started);
            self.metrics
                .record_call("unknown", err.classification.as_str(), meta.duration_ms);
            return if portal_name {
                self.portal_response(input.name, &trace_id, Err(err))
            } else {
                envelope::standard_err(&err, meta, &self.catalog.rules)
            };
        };
        let mut ctx = RequestCtx {
            principal: input.principal,
            headers: input.headers,
            trace_id: &trace_id,
            idempotency: None,
            elicitation: input.elicitation.as_ref(),
            task_watch: input.task_watch,
        };
        let task_args = (ctx.task_watch.is_some() && tool.task.is_some()).then(|| {
            input
                .arguments
                .as_ref()
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        });
        let started_at = self.now();
        let write = tool.risk == Risk::Write;
        let args_sha256 = write.then(|| audit_hash(input.arguments.as_ref()));
        let mut held = None;
        let result = match input.principal.check(tool) {
            Err(e) => Err(e),
            Ok(()) => match (
                &args_sha256,
                crate::idempotency::key_of(input.idempotency_key.as_deref(), input.headers),
            ) {
                (Some(_), Err(e)) => Err(e),
                (Some(sha), Ok(Some(key))) => {
                    let owner = self.job_owner(&tool.service, &ctx);
                    match crate::idempotency::begin(&self.store, tool, &owner, &key, sha, || {
                        self.now()
                    })
                    .await
                    {
                        Ok(crate::idempotency::Begin::Replay(response)) => {
                            self.metrics.record_call(
                                &tool.full_name,
                                "replayed",
                                elapsed_ms(started),
                            );
                            tracing::info!(tool = %tool.full_name, caller = %input.principal.name, "idempotent repeat answered from the store");
                            return response;
                        }
                        Ok(crate::idempotency::Begin::Run(h)) => {
                            ctx.idempotency = Some(h.upstream.clone());
                            held = Some(h);
                            self.execute_confirmed(
                                tool,
                                input.arguments,
                                (token, approval_id),
                                &ctx,
                            )
                            .await
                        }
                        Err(e) => Err(e),
                    }
                }
                _ => {
                    self.execute_confirmed(tool, input.arguments, (token, approval_id), &ctx)
                        .await
                }
            },
        };
        // Run as an MCP task, a tool that answered a job at once watches it.
        let result = match (result, &tool.task) {
            (Ok(exec), Some(plan)) if ctx.task_watch.is_some() && !exec.dry_run => {
                let args = task_args.unwrap_or_default();
                Ok(crate::hooks::watch_answered_job(self, tool, plan, &args, exec, &ctx).await)
            }
            (result, _) => result,
        };
        let duration_ms = elapsed_ms(started);
        let ran = write_outcome(&result) == Some(crate::store::audit::Outcome::Executed);
        if let Some(args_sha256) = args_sha256 {
            self.audit(tool, &ctx, &result, args_sha256, started_at, duration_ms)
                .await;
        }
        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) => e.classification.as_str(),
        };
        self.metrics
            .record_call(&tool.full_name, outcome, duration_ms);
        tracing::info!(
            tool = %tool.full_name,
            caller = %input.principal.name,
            outcome,
            duration_ms,
            trace_id = %ctx.trace_id,
            "tool call"
        );
        let response = self.respond(tool, &trace_id, meta, duration_ms, result);
        if let Some(held) = &held {
            crate::idempotency::finish(&self.store, held, ran, &response).await;
        }
        response
    }

    /// The envelope of a finished call (portal or standard, by the tool's service).
    fn respond(
        &self,
        tool: &Tool,
        trace_id: &str,
        mut meta: Meta,
        duration_ms: u64,
        result: Result<Exec, CallError>,
    ) -> Response {
        if self.catalog.services.get(&tool.service).map(|s| s.envelope)
            == Some(EnvelopeKind::Portal)
        {
            return self.portal_response(&tool.full_name, trace_id, result);
        }
        let names = &tool.meta_names;
        meta.service = Some(names.service.clone());
        meta.tool = Some(names.tool.clone());
        meta.catalog_version = Some(names.catalog_version.clone());
        meta.descriptor_hash = Some(names.descriptor_hash.clone());
        meta.consumes_credits = tool
            .classes
            .iter()
            .any(|c| matches!(c, Class::Spend | Class::Credits));
        meta.snapshot_id = Some(names.snapshot_id.clone());
        meta.duration_ms = duration_ms;
        match result {
            Ok(exec) => {
                meta.dry_run = exec.dry_run;
                meta.upstream_status = exec.upstream_status;
                meta.pagination = exec.pagination;
                meta.truncation = exec.truncation;
                meta.redacted = exec.redacted;
                meta.dispatched_to = exec.dispatched_to;
                match exec.data_text {
                    Some(text) => envelope::standard_ok_text(text, meta),
                    None => envelope::standard_ok(exec.data, meta),
                }
            }
            Err(err) => {
                meta.upstream_status = err.upstream_status;
                envelope::standard_err(&err, meta, &self.catalog.rules)
            }
        }
    }

    /// Appends the audit record of a write call (a preview is not a write and is not
    /// recorded). A store that fails is logged; the caller still gets its answer, since
    /// the write may already have run.
    async fn audit(
        &self,
        tool: &Tool,
        ctx: &RequestCtx<'_>,
        result: &Result<Exec, CallError>,
        args_sha256: String,
        at: jiff::Timestamp,
        duration_ms: u64,
    ) {
        use crate::store::audit::AuditRecord;
        let Some(outcome) = write_outcome(result) else {
            return;
        };
        let (upstream_status, classification) = match result {
            Ok(exec) => (exec.upstream_status, "ok"),
            Err(e) => (e.upstream_status, e.classification.as_str()),
        };
        let record = AuditRecord {
            seq: 0,
            at: at.to_string(),
            key_name: ctx.principal.name.clone(),
            tool: tool.full_name.clone(),
            descriptor_hash: tool.descriptor_hash.clone(),
            catalog_version: self
                .catalog
                .services
                .get(&tool.service)
                .map(|s| s.catalog_version.clone())
                .unwrap_or_default(),
            args_sha256,
            outcome,
            upstream_status,
            classification: classification.to_string(),
            trace_id: ctx.trace_id.to_string(),
            duration_ms,
            confirmation: Some(ctx.principal.confirmation.as_str().to_string()),
        };
        if let Err(e) = self.store.append_audit(&record).await {
            tracing::error!(error = %e, tool = %tool.full_name, trace_id = %ctx.trace_id, "write audit record not stored");
        }
    }

    fn portal_response(
        &self,
        name: &str,
        trace_id: &str,
        result: Result<Exec, CallError>,
    ) -> Response {
        let (service_id, tool_name) = name.split_once('.').unwrap_or(("portal", name));
        let rules = &self.catalog.rules;
        match result {
            Ok(exec) => envelope::portal(
                Portal {
                    service_id: service_id.to_string(),
                    tool_name: tool_name.to_string(),
                    trace_id: trace_id.to_string(),
                    summary: exec.summary.unwrap_or_default(),
                    data: exec.data,
                    data_text: exec.data_text,
                    resource: exec.resource.unwrap_or(Value::Null),
                    pagination: exec.pagination.unwrap_or(Value::Null),
                    next_action: exec.next_action,
                },
                None,
                rules,
            ),
            Err(err) => envelope::portal(
                Portal {
                    service_id: service_id.to_string(),
                    tool_name: tool_name.to_string(),
                    trace_id: trace_id.to_string(),
                    summary: format!("{name} failed: {}", err.classification.as_str()),
                    ..Portal::default()
                },
                Some(&err),
                rules,
            ),
        }
    }

    /// Runs a resolved tool the caller may use: everything after the permission check.
    pub async fn execute(
        &self,
        tool: &Tool,
        arguments: Option<Value>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        self.execute_as(tool, arguments, ctx, false, Want::Value)
            .await
    }

    /// [`Broker::execute`] for a call whose result goes straight into its envelope: the
    /// result may be JSON text ([`Want::Text`]).
    async fn execute_for_envelope(
        &self,
        tool: &Tool,
        arguments: Option<Value>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        self.execute_as(tool, arguments, ctx, false, Want::Text)
            .await
    }

    /// Runs a write under its caller's confirmation mode (DECISIONS section 8). Under
    /// `bound`, a call without a token answers its preview (whatever the flags say) and
    /// a token bound to it; a call with one runs only if the token holds, and spends it
    /// when the call asks to run. Other modes and reads run as they are.
    async fn execute_confirmed(
        &self,
        tool: &Tool,
        arguments: Option<Value>,
        (token, approval_id): (Option<String>, Option<String>),
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        use crate::config::WriteConfirmation;
        let mode = ctx.principal.confirmation;
        if mode == WriteConfirmation::Flag || tool.risk != Risk::Write {
            return self.execute_for_envelope(tool, arguments, ctx).await;
        }
        let rules = &self.catalog.rules.confirmation;
        let map = arguments.as_ref().and_then(Value::as_object);
        let digest = crate::bound::digest(tool, map, rules);
        let caller = self.job_owner(&tool.service, ctx);
        if mode == WriteConfirmation::Human {
            let spend = crate::bound::asks_to_run(tool, map, rules);
            if let Some(id) = approval_id {
                crate::approval::redeem(self, tool, ctx, &caller, &digest, &id, spend).await?;
                return self.execute_for_envelope(tool, arguments, ctx).await;
            }
            if !spend {
                // A preview (or the spec's own refusal without its flag): free.
                return self.execute_for_envelope(tool, arguments, ctx).await;
            }
            let elicitation = ctx.elicitation.filter(|e| e.applies());
            if let Some(e) = elicitation.filter(|e| e.state.is_some()) {
                crate::approval::elicit::answer(self, tool, ctx, (&caller, &digest), e).await?;
                return self.execute_for_envelope(tool, arguments, ctx).await;
            }
            // What the person will see: the preview of exactly this request.
            let preview = self.approval_preview(tool, arguments, ctx).await?;
            return Err(match elicitation {
                Some(_) => {
                    crate::approval::elicit::ask(self, tool, ctx, &caller, &digest, &preview).await
                }
                None => crate::approval::ask(self, tool, ctx, &caller, &digest, &preview).await,
            });
        }
        if let Some(token) = token {
            let spend = crate::bound::asks_to_run(tool, map, rules);
            crate::bound::redeem(self, tool, &caller, &digest, &token, spend).await?;
            return self.execute_for_envelope(tool, arguments, ctx).await;
        }
        // No token: the preview and a token for exactly this request.
        let result = self.execute_unconfirmed(tool, arguments, ctx).await;
        let refused_unconfirmed =
            matches!(&result, Err(e) if e.classification == Classification::ConfirmationRequired);
        if result.as_ref().is_ok_and(|e| !e.dry_run) || (result.is_err() && !refused_unconfirmed) {
            return result;
        }
        let issued = crate::bound::issue(self, tool, &caller, &digest).await?;
        let next = format!(
            "This deployment confirms writes by token. Show the user this preview; only after they approve it, call `{}` again with the same arguments, `confirmationToken` set to the token here{} (single use, valid until {}).",
            tool.full_name,
            match tool.confirmation {
                ConfirmationMode::ConfirmApply =>
                    format!(" and `{}` \"{}\"", rules.apply_arg, rules.apply_phrase),
                ConfirmationMode::None | ConfirmationMode::Auto => String::new(),
                _ => format!(" and `{}=true`", rules.confirm_arg),
            },
            issued.expires_at
        );
        match result {
            Ok(mut exec) => {
                exec.materialize();
                if let Value::Object(data) = &mut exec.data {
                    data.insert("confirmationToken".into(), json!(issued.token));
                    data.insert(
                        "confirmationExpiresAt".into(),
                        json!(issued.expires_at.to_string()),
                    );
                    data.insert("nextAction".into(), json!(next));
                }
                exec.next_action = Some(next);
                exec.token_issued = true;
                Ok(exec)
            }
            Err(mut e) => {
                e.message = next;
                e.details = Some(json!({
                    "confirmationToken": issued.token,
                    "confirmationExpiresAt": issued.expires_at.to_string(),
                }));
                Err(e)
            }
        }
    }

    /// A write as if unconfirmed: an HTTP tool's preview whatever its flags say; a hook
    /// run without the flags, so it answers its own unconfirmed preview or refusal.
    async fn execute_unconfirmed(
        &self,
        tool: &Tool,
        mut arguments: Option<Value>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        if matches!(tool.action, Action::Hook(_))
            && let Some(map) = arguments.as_mut().and_then(Value::as_object_mut)
        {
            let rules = &self.catalog.rules.confirmation;
            map.remove(&rules.confirm_arg);
            map.remove(&rules.apply_arg);
        }
        self.execute_as(tool, arguments, ctx, true, Want::Text)
            .await
    }

    /// What an approver is shown: the tool's preview of this request (a hook tool's
    /// arguments when it has no request preview), with the tool's words.
    async fn approval_preview(
        &self,
        tool: &Tool,
        arguments: Option<Value>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Value, CallError> {
        let shown_args = arguments.clone().unwrap_or(Value::Null);
        let request = match self.execute_unconfirmed(tool, arguments, ctx).await {
            Ok(exec) if exec.dry_run => exec.data.get("request").cloned().unwrap_or(Value::Null),
            Ok(_) => Value::Null,
            Err(e) if e.classification == Classification::ConfirmationRequired => Value::Null,
            Err(e) => return Err(e),
        };
        let mut arguments = shown_args;
        let secrets = self.secrets(ctx.headers);
        crate::redact::redact(&mut arguments, &self.catalog.rules.redaction, &[], &secrets);
        let mut request = request;
        crate::redact::redact(&mut request, &self.catalog.rules.redaction, &[], &secrets);
        Ok(json!({
            "title": tool.title,
            "risk": tool.risk.as_str(),
            "classes": json!(tool.classes),
            "consumesCredits": tool.classes.iter().any(|c| matches!(c, Class::Spend | Class::Credits)),
            "request": request,
            "arguments": arguments,
        }))
    }

    /// [`Broker::execute`], or with `preview_only` the tool's preview whatever its
    /// confirmation flags say (HTTP tools; hooks answer as they are).
    async fn execute_as(
        &self,
        tool: &Tool,
        arguments: Option<Value>,
        ctx: &RequestCtx<'_>,
        preview_only: bool,
        want: Want,
    ) -> Result<Exec, CallError> {
        let mut args = args::prepare(tool, arguments)?;
        let routed = crate::tenancy::route(self, tool, &mut args, ctx.headers)?;
        // Built only if a template reads it (`routed_context` copies the arguments).
        let (arguments, routed_to) = (&args, routed.as_deref());
        let template_ctx = Scope::lazy(arguments, move || {
            self.routed_context(tool, arguments, ctx.headers, routed_to)
        });
        let templates = &self.catalog.templates;
        for rule in &tool.require {
            let ok = templates.truthy(&rule.check, &template_ctx).map_err(|e| {
                tracing::error!(template = %e.name, kind = %e.kind, "precondition failed to evaluate");
                CallError::internal()
            })?;
            if !ok {
                return Err(CallError::new(rule.classification, rule.message.clone()));
            }
        }
        let decision = if preview_only {
            Decision::Preview(PreviewReason::NotConfirmed)
        } else {
            decide(tool, &args, &self.catalog.rules.confirmation)?
        };
        match &tool.action {
            Action::Hook(hook) => {
                drop(template_ctx);
                self.run_hook(*hook, tool, args, ctx).await
            }
            Action::Http(plan) => {
                let request = render(plan, templates, &template_ctx)?;
                if let Decision::Preview(reason) = decision {
                    return Ok(self.preview(tool, request.preview(), reason));
                }
                if let Some(limit) = &tool.rate_limit {
                    crate::ratelimit::check(
                        &self.store,
                        &tool.full_name,
                        &self.job_owner(&tool.service, ctx),
                        limit,
                        self.now(),
                    )
                    .await?;
                }
                self.send_rendered(tool, &request, &args, &template_ctx, ctx, (None, want))
                    .await
            }
        }
    }

    /// Sends a rendered request of `tool` upstream and turns the answer into its result:
    /// key (profile, BYOK or server-side), refusals classified, redaction, job recording,
    /// shaping and truncation. `max_response` lowers the largest answer read; `want` says
    /// whether the result may be JSON text.
    pub async fn send_rendered(
        &self,
        tool: &Tool,
        request: &crate::render::RenderedRequest,
        args: &Map<String, Value>,
        template_ctx: &Scope<'_>,
        ctx: &RequestCtx<'_>,
        (max_response, want): (Option<usize>, Want),
    ) -> Result<Exec, CallError> {
        let templates = &self.catalog.templates;
        let Some(base_url) = self.base_url(&tool.service) else {
            return Err(CallError::new(
                Classification::NotConfigured,
                format!(
                    "the `{0}` upstream has no base URL; set TOOL_BROKER_UPSTREAM_{1} or [upstreams] {0} in the config file",
                    tool.service,
                    tool.service.to_ascii_uppercase()
                ),
            ));
        };
        let service = self
            .catalog
            .services
            .get(&tool.service)
            .ok_or_else(CallError::internal)?;
        let key = match self.profile_key(tool, args, ctx)? {
            Some(key) => Some(key),
            None => self.upstream_key(&tool.service, ctx.headers),
        };
        if let Some(cred) = &service.credential
            && key.is_none()
        {
            return Err(CallError::new(
                Classification::MissingRequiredCredentials,
                format!(
                    "`{}` needs your `{}` key in the `{}` request header; nothing was sent upstream",
                    tool.full_name, tool.service, cred.header
                ),
            ));
        }
        let target = Target {
            service,
            base_url,
            key,
            idempotency_key: ctx.idempotency.as_deref(),
            timeout: tool.timeout,
            max_body_bytes: max_response
                .unwrap_or(self.catalog.rules.limits.max_upstream_body_bytes),
        };
        let secrets = self.secrets(ctx.headers);
        match self.upstream.send(request, &target).await? {
            Outcome::Refusal(refusal) => {
                Err(refusal_error(tool, refusal, &self.catalog.rules, &secrets))
            }
            Outcome::Answer(answer) => {
                let asked = Asked::of(&tool.response, args, tool.item_budget);
                if want == Want::Text && asked.one_pass(&tool.response) {
                    return self.one_pass(tool, &answer, &secrets, asked.budget);
                }
                let mut body = answer.json(&tool.service)?;
                let mut paths: Vec<&JsonPath> = tool.response.redact.iter().collect();
                for (unless, extra) in &tool.response.redact_unless {
                    let keep = templates.truthy(unless, template_ctx).map_err(|e| {
                        tracing::error!(template = %e.name, kind = %e.kind, "redaction condition failed");
                        CallError::internal()
                    })?;
                    if !keep {
                        paths.extend(extra.iter());
                    }
                }
                let redacted = redact(&mut body, &self.catalog.rules.redaction, &paths, &secrets);
                let pagination = extract_pagination(tool, &body);
                if let Some(path) = &tool.response.job_id
                    && let Some(Value::String(id)) = select(path, &body)
                {
                    // The answer goes back whatever the store says: the upstream did the
                    // work, and its id is in the answer the caller gets.
                    if let Err(e) = self
                        .store
                        .record_job(
                            &tool.service,
                            &self.job_owner(&tool.service, ctx),
                            &id,
                            &tool.name,
                            self.now(),
                        )
                        .await
                    {
                        tracing::error!(error = %e, tool = %tool.full_name, "job not recorded");
                    }
                }
                if let Some((id, path)) = &tool.response.job_status {
                    self.note_job_status(tool, id, path, &body, template_ctx, ctx)
                        .await;
                }
                let plan = &tool.response;
                let raw = asked.raw.then(|| body.clone());
                let mut data = extract_data(tool, body);
                if let Some(fields) = asked.fields {
                    data = crate::shape::project(data, &fields);
                } else if asked.compact {
                    data = crate::shape::compact(data, plan.compact_fields.as_ref());
                }
                let truncation = match asked.budget {
                    Some(budget) => truncate(&mut data, budget),
                    None => Vec::new(),
                };
                if let Some(raw) = raw {
                    data = crate::envelope::object([("data", data), ("raw", raw)]);
                }
                Ok(Exec {
                    data,
                    upstream_status: Some(answer.status),
                    pagination,
                    truncation,
                    redacted: Some(redacted),
                    ..Exec::default()
                })
            }
        }
    }

    /// The result of an answer written in one pass ([`crate::scan`]): the same text,
    /// redaction count and truncation the tree path gives, kept as text.
    fn one_pass(
        &self,
        tool: &Tool,
        answer: &crate::upstream::UpstreamAnswer,
        secrets: &[&str],
        budget: Option<usize>,
    ) -> Result<Exec, CallError> {
        let scanned = if answer.is_empty() {
            crate::scan::Scanned {
                text: "null".into(),
                redacted: 0,
                truncation: Vec::new(),
            }
        } else {
            let rules = &self.catalog.rules.redaction;
            crate::scan::scan(&answer.bytes, rules, secrets, budget)
                .map_err(|_| crate::upstream::not_json(&tool.service, answer.status))?
        };
        Ok(Exec {
            data_text: Some(Arc::from(scanned.text)),
            upstream_status: Some(answer.status),
            truncation: scanned.truncation,
            redacted: Some(scanned.redacted),
            ..Exec::default()
        })
    }

    async fn run_hook(
        &self,
        hook: Hook,
        tool: &Tool,
        args: Map<String, Value>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        match hook {
            Hook::PortalCallReadTool => Box::pin(hooks::call_read_tool(self, args, ctx)).await,
            Hook::PortalCheckConnection => hooks::check_connection(self, args, ctx),
            Hook::CheckConfiguration => hooks::check_configuration(self, tool, ctx).await,
            Hook::CategoryDispatch => {
                Box::pin(hooks::category_dispatch(self, tool, args, ctx)).await
            }
            Hook::RescheduleOverdue => {
                Box::pin(hooks::reschedule_overdue(self, tool, args, ctx)).await
            }
            Hook::FindTools => hooks::find_tools(self, tool, &args),
            Hook::ToolReference => hooks::tool_reference(self, tool, &args),
            Hook::Capabilities => hooks::capabilities(self, tool, &args),
            Hook::EndpointCoverage => hooks::endpoint_coverage(self, tool, &args),
            Hook::SubmitAndPoll => Box::pin(hooks::submit_and_poll(self, tool, args, ctx)).await,
            Hook::TableLookup => hooks::table_lookup(self, tool, &args, ctx),
            Hook::ListJobs => hooks::list_jobs(self, tool, &args, ctx).await,
            Hook::RuntimeHealth => hooks::runtime_health(self, tool, ctx),
            Hook::AllowlistedRequest => {
                Box::pin(hooks::allowlisted_request(self, tool, args, ctx)).await
            }
        }
    }

    /// Writes the status a job status read answered to the caller's job record. The
    /// answer goes back whatever the store says: the upstream is the source of truth.
    async fn note_job_status(
        &self,
        tool: &Tool,
        id: &crate::template::Expr,
        path: &crate::catalog::JsonPath,
        body: &Value,
        template_ctx: &Scope<'_>,
        ctx: &RequestCtx<'_>,
    ) {
        let job = match self.catalog.templates.eval(id, template_ctx) {
            Ok(Some(Value::String(s))) if !s.is_empty() => s,
            Ok(Some(Value::Number(n))) => n.to_string(),
            _ => return,
        };
        let status = match select(path, body) {
            Some(Value::String(s)) if !s.is_empty() => s,
            _ => return,
        };
        let owner = self.job_owner(&tool.service, ctx);
        if let Err(e) = self
            .store
            .update_job(&tool.service, &owner, &job, &status, self.now())
            .await
        {
            tracing::error!(error = %e, tool = %tool.full_name, "job status not recorded");
        }
    }

    /// One non-secret deployment setting of a service (`[settings.<service>]`).
    pub fn setting(&self, service: &str, key: &str) -> Option<&Value> {
        self.settings.get(service).and_then(|s| s.get(key))
    }

    /// The template context of a call: `args`, `ctx`, `settings`, `tool`.
    pub fn template_context(
        &self,
        tool: &Tool,
        args: &Map<String, Value>,
        headers: &hyper::HeaderMap,
    ) -> Value {
        self.routed_context(tool, args, headers, None)
    }

    /// The template context with the location tenant routing chose as the service's
    /// runtime-location context value ([`crate::tenancy`]).
    pub fn routed_context(
        &self,
        tool: &Tool,
        args: &Map<String, Value>,
        headers: &hyper::HeaderMap,
        routed: Option<&str>,
    ) -> Value {
        let mut context = Map::new();
        if let Some(service) = self.catalog.services.get(&tool.service) {
            for (name, header) in &service.context_headers {
                if let Some(v) = headers.get(header.as_str()).and_then(|v| v.to_str().ok()) {
                    context.insert(name.clone(), json!(v));
                }
            }
            if let (Some(tenancy), Some(location)) = (&service.tenancy, routed) {
                context.insert(tenancy.context.clone(), json!(location));
            }
        }
        // Built from copies, not through `json!` (which would serialise `args` into a
        // new tree): this context is made for every call.
        let text = |s: &str| Value::String(s.to_string());
        crate::envelope::object([
            ("args", Value::Object(args.clone())),
            ("ctx", Value::Object(context)),
            (
                "settings",
                self.settings
                    .get(&tool.service)
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            ),
            (
                "tool",
                crate::envelope::object([
                    ("service", text(&tool.service)),
                    ("name", text(&tool.name)),
                    ("title", text(&tool.title)),
                ]),
            ),
        ])
    }

    fn preview(&self, tool: &Tool, mut request: Value, reason: PreviewReason) -> Exec {
        // Credential-like fields of the request (an `apiKey` the caller passes on to the
        // upstream) are shown redacted, as everywhere else in an answer.
        let redacted = crate::redact::redact(&mut request, &self.catalog.rules.redaction, &[], &[]);
        let needs_confirm = matches!(
            tool.confirmation,
            ConfirmationMode::ConfirmFlag | ConfirmationMode::DryRunDefault
        );
        let next = self.render_shared(
            "dry_run_next_action.j2",
            &json!({
                "tool": { "name": tool.full_name, "title": tool.title },
                "confirm_arg": self.catalog.rules.confirmation.confirm_arg,
                "preview_arg": (reason == PreviewReason::Requested).then_some(tool.preview_arg.clone()).flatten(),
                "needs_confirm": needs_confirm,
            }),
        );
        Exec {
            data: crate::envelope::object([
                ("dryRun", Value::Bool(true)),
                ("request", request),
                ("nextAction", Value::String(next.clone())),
            ]),
            dry_run: true,
            redacted: (redacted > 0).then_some(redacted),
            next_action: Some(next),
            summary: Some(format!("dry run of {}: nothing was sent", tool.full_name)),
            ..Exec::default()
        }
    }

    /// Renders a shared template from `templates/`; a failure is logged and yields "".
    pub fn render_shared(&self, name: &str, ctx: &Value) -> String {
        self.catalog
            .templates
            .render(name, &Scope::borrowed(ctx))
            .unwrap_or_else(|e| {
                tracing::error!(template = %e.name, kind = %e.kind, "shared template failed");
                String::new()
            })
    }

    /// The one-line summary of a tool's result (portal envelopes only): the tool's
    /// `response.summary` template, else `summary_default.j2`.
    pub fn summary(&self, tool: &Tool, data: &Value) -> String {
        let ctx = json!({ "data": data, "tool": { "name": tool.full_name, "title": tool.title } });
        let name = tool
            .response
            .summary
            .as_deref()
            .unwrap_or("summary_default.j2");
        self.render_shared(name, &ctx).trim().to_string()
    }
}

/// How a write call ended, for the audit and idempotency: `None` for a dry-run preview
/// (not a write); executed when a request went upstream (an answer, or a timeout after
/// sending); refused when nothing was sent.
/// What a call's arguments ask of its answer's shape (`response.*_arg`).
struct Asked {
    /// The whole redacted answer beside `data` (`raw_arg` true).
    raw: bool,
    /// Only these fields of each item (`fields_arg`, when it names any).
    fields: Option<Vec<String>>,
    /// Compact items (`mode_arg` other than `"full"`, when the tool has one).
    compact: bool,
    /// The item budget lists are cut to; `None` when `compact_arg` is false.
    budget: Option<usize>,
}

impl Asked {
    fn of(plan: &crate::catalog::ResponsePlan, args: &Map<String, Value>, default: usize) -> Self {
        let flag = |name: &Option<String>| name.as_ref().and_then(|n| args.get(n));
        let fields: Option<Vec<String>> = flag(&plan.fields_arg)
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .filter(|f: &Vec<String>| !f.is_empty());
        let compact = fields.is_none()
            && plan.mode_arg.is_some()
            && flag(&plan.mode_arg).and_then(Value::as_str) != Some("full");
        let budget = flag(&plan.budget_arg)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(default);
        Self {
            raw: flag(&plan.raw_arg) == Some(&Value::Bool(true)),
            fields,
            compact,
            budget: (flag(&plan.compact_arg) != Some(&Value::Bool(false))).then_some(budget),
        }
    }

    /// Whether the answer can be written in one pass: nothing selected, redacted by
    /// path, read for pagination or a job, or reshaped; only cut to the budget.
    fn one_pass(&self, plan: &crate::catalog::ResponsePlan) -> bool {
        !self.raw
            && self.fields.is_none()
            && !self.compact
            && plan.data.is_none()
            && plan.redact.is_empty()
            && plan.redact_unless.is_empty()
            && plan.pagination.is_empty()
            && plan.job_id.is_none()
            && plan.job_status.is_none()
    }
}

fn write_outcome(result: &Result<Exec, CallError>) -> Option<crate::store::audit::Outcome> {
    use crate::store::audit::Outcome;
    match result {
        Ok(exec) if exec.token_issued => Some(Outcome::TokenIssued),
        Ok(exec) if exec.dry_run => None,
        Ok(_) => Some(Outcome::Executed),
        Err(e)
            if e.upstream_status.is_some()
                || e.classification == Classification::UpstreamTimeout =>
        {
            Some(Outcome::Executed)
        }
        Err(_) => Some(Outcome::Refused),
    }
}

/// A person's decision on a write, for the audit.
pub struct Decided<'a> {
    /// The caller key that asked.
    pub key_name: &'a str,
    /// The tool's full name.
    pub tool: &'a str,
    /// The descriptor hash the decision was about.
    pub descriptor_hash: &'a str,
    /// The bound arguments' digest.
    pub args_sha256: &'a str,
    /// Approved (else declined).
    pub approve: bool,
    /// How and by whom: `human:<approver>`, `human:elicitation`.
    pub by: String,
    /// The trace id of the call or the approval.
    pub trace_id: String,
}

/// Appends the audit record of a person's decision: who decided, on which tool, for
/// which caller key (never a value). Logged if the store fails.
pub async fn audit_decided(broker: &Broker, d: Decided<'_>) {
    use crate::store::audit::{AuditRecord, Outcome};
    let record = AuditRecord {
        seq: 0,
        at: broker.now().to_string(),
        key_name: d.key_name.to_string(),
        tool: d.tool.to_string(),
        descriptor_hash: d.descriptor_hash.to_string(),
        catalog_version: broker
            .catalog
            .resolve(d.tool)
            .and_then(|t| broker.catalog.services.get(&t.service))
            .map(|s| s.catalog_version.clone())
            .unwrap_or_default(),
        args_sha256: d.args_sha256.to_string(),
        outcome: if d.approve {
            Outcome::Approved
        } else {
            Outcome::Declined
        },
        upstream_status: None,
        classification: if d.approve {
            "ok".into()
        } else {
            "confirmation_declined".into()
        },
        trace_id: d.trace_id,
        duration_ms: 0,
        confirmation: Some(d.by),
    };
    if let Err(e) = broker.store.append_audit(&record).await {
        tracing::error!(error = %e, "approval decision not audited");
    }
}

/// Appends the audit record of an approver's decision on approval `id`.
pub async fn audit_decision(broker: &Broker, id: &str, approver: &str, approve: bool) {
    let Ok(Some(a)) = broker.store.approval(id).await else {
        return;
    };
    audit_decided(
        broker,
        Decided {
            key_name: &a.key_name,
            tool: &a.tool,
            descriptor_hash: &a.descriptor_hash,
            args_sha256: &a.args_sha256,
            approve,
            by: format!("human:{approver}"),
            trace_id: format!("approval-{id}"),
        },
    )
    .await;
}

/// A trace id's text: `mixed` as 16 lower-case hex digits, a dash, the request id (as
/// `format!("{mixed:016x}-{request_id}")` writes it, at a tenth of its cost).
fn trace_text(mixed: u64, request_id: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(17 + request_id.len());
    for shift in (0..16).rev() {
        let digit = (mixed >> (4 * shift)) & 0xf;
        text.push(char::from(HEX[digit as usize]));
    }
    text.push('-');
    text.push_str(request_id);
    text
}

/// sha256 (hex) of the canonical JSON of a call's arguments (absent counts as `{}`).
fn audit_hash(arguments: Option<&Value>) -> String {
    let empty = Value::Object(Map::new());
    let text = crate::identity::canonical_json(arguments.unwrap_or(&empty));
    crate::identity::sha256_hex(text.as_bytes())
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// `unknown_tool` with a "did you mean" where a name is close.
pub fn unknown_tool(catalog: &Catalog, name: &str) -> CallError {
    let hint = did_you_mean(name, catalog.names())
        .map(|h| format!("; {h}"))
        .unwrap_or_default();
    CallError::new(
        Classification::UnknownTool,
        format!("no tool named `{name}`{hint}"),
    )
}

/// The bit of a header name's length in [`Broker::credential_lengths`] (63 for every
/// name of 63 bytes or more).
fn length_bit(name: &str) -> u64 {
    1 << name.len().min(63)
}

/// The upstream key a credential header's value holds: trimmed, and none when blank.
fn caller_key(value: &str) -> Option<&str> {
    Some(value.trim()).filter(|key| !key.is_empty())
}

#[cfg(test)]
mod tests {
    use super::trace_text;

    #[test]
    fn a_trace_id_is_written_as_format_writes_it() {
        let numbers = [
            0,
            1,
            0xf,
            0x10,
            0x0123_4567_89ab_cdef,
            0x8000_0000_0000_0000,
            u64::MAX,
        ];
        for mixed in numbers {
            for id in ["", "1", "req-é", "a-b-c"] {
                assert_eq!(trace_text(mixed, id), format!("{mixed:016x}-{id}"));
            }
        }
    }
}
