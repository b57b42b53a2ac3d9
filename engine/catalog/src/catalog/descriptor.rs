//! Raw catalog structs: exactly what a catalog author writes in TOML.
//!
//! Every struct here denies unknown keys and uses `snake_case`, so a typo in a
//! catalog file is an error with a file and line, never a silent default. These
//! structs are only read by [`crate::catalog::compile`]; the request path never sees them.
//! The JSON Schema of this format (`schemas/catalog-format.schema.json`) is
//! generated from these structs by `tool-broker catalog schema`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A string value with its byte span in the source file, for diagnostics.
pub type SpannedStr = Spanned<String>;

/// A value with its byte span in the source file: TOML's [`toml::Spanned`], which also
/// writes its span when serialized, so that the tools a start parsed can be kept for
/// the next start with their spans ([`crate::catalog::start_cache`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T>(toml::Spanned<T>);

impl<T> Spanned<T> {
    /// `value` spanning the bytes `span` of its file.
    pub fn new(span: std::ops::Range<usize>, value: T) -> Self {
        Self(toml::Spanned::new(span, value))
    }

    /// The value's byte range in its file.
    pub fn span(&self) -> std::ops::Range<usize> {
        self.0.span()
    }

    /// The value.
    pub fn get_ref(&self) -> &T {
        self.0.get_ref()
    }

    /// The value, to change.
    pub fn get_mut(&mut self) -> &mut T {
        self.0.get_mut()
    }

    /// The value, taken.
    pub fn into_inner(self) -> T {
        self.0.into_inner()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spanned<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        toml::Spanned::deserialize(deserializer).map(Self)
    }
}

/// The three fields [`toml::Spanned`] reads a span from in any self-describing format
/// (serde_spanned's names; a start cache written otherwise is not read, and the
/// round-trip test in `start_cache` fails).
const SPAN_FIELDS: [&str; 3] = [
    "$__serde_spanned_private_start",
    "$__serde_spanned_private_end",
    "$__serde_spanned_private_value",
];

impl<T: Serialize> Serialize for Spanned<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let span = self.span();
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry(SPAN_FIELDS[0], &span.start)?;
        map.serialize_entry(SPAN_FIELDS[1], &span.end)?;
        map.serialize_entry(SPAN_FIELDS[2], self.get_ref())?;
        map.end()
    }
}

/// `catalog/<service_id>/service.toml`: one upstream service.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ServiceFile {
    /// The service id: one of the neutral ids of the contract (docs/contract.md) (`crm`, `hosting`, ...).
    #[schemars(with = "String")]
    pub id: SpannedStr,
    /// Human title of the service.
    pub title: String,
    /// One sentence on what the service does.
    pub description: String,
    /// The service's catalog version; must change whenever a descriptor hash changes.
    #[schemars(with = "String")]
    pub catalog_version: SpannedStr,
    /// The form `catalog_version` must take.
    pub version_format: VersionFormat,
    /// Which envelope the service's tools answer with.
    #[serde(default)]
    pub envelope: EnvelopeKind,
    /// Default upstream base URL; overridable by config and `TOOL_BROKER_UPSTREAM_<SERVICE>`.
    /// Absent for services whose upstream is always deployment-specific.
    #[serde(default)]
    pub base_url: Option<String>,
    /// How the caller's upstream key arrives and where it goes upstream.
    #[serde(default)]
    pub credential: Option<CredentialSpec>,
    /// Non-secret headers sent upstream on every call (for example an API `Version`).
    #[serde(default)]
    pub static_headers: BTreeMap<String, String>,
    /// The header the upstream reads an idempotency key from (payments:
    /// `Idempotency-Key`). A write called with an `Idempotency-Key` sends one derived
    /// from the caller, the tool and that key (engine/core/src/confirm/idempotency.rs).
    #[serde(default)]
    pub idempotency_header: Option<String>,
    /// Non-secret request headers exposed to templates as `ctx.<name>`.
    #[serde(default)]
    pub context_headers: BTreeMap<String, String>,
    /// Defaults applied to every tool of the service.
    #[serde(default)]
    pub defaults: ServiceDefaults,
    /// Named groups of argument properties (JSON Schema) that tools merge in with
    /// `argument_sets = ["name"]`, for arguments every tool of a service shares.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, BTreeMap<String, serde_json::Value>>")]
    pub argument_sets: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    /// Tenant and location routing (crm), see engine/core/src/call/tenancy.rs.
    #[serde(default)]
    pub tenancy: Option<Tenancy>,
    /// How the upstream's callbacks to `POST /webhooks/<service>` are verified and
    /// mapped to jobs (engine/core/src/webhook/).
    #[serde(default)]
    pub webhook: Option<WebhookSpec>,
    /// Non-secret reference tables the service's local tools read (`[tool.lookup]`):
    /// model lists, guides, planning data. Part of the hash of every tool that reads one.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub tables: BTreeMap<String, serde_json::Value>,
    /// The service is an MCP server (docs/mcp-upstreams.md): how the broker reaches it,
    /// over Streamable HTTP (`url`) or stdio (`command`). Its tools say `[tool.mcp]`.
    #[serde(default)]
    pub mcp: Option<McpSpec>,
}

/// `[mcp]` of a service: how the broker reaches an MCP server. Exactly one of `url`
/// (Streamable HTTP) and `command` (stdio, a process the broker starts itself).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct McpSpec {
    /// The server's Streamable HTTP endpoint; a deployment may point it elsewhere as
    /// any base URL (`[upstreams]`, `TOOL_BROKER_UPSTREAM_<SERVICE>`).
    #[serde(default)]
    pub url: Option<String>,
    /// The program and its arguments, started without a shell (stdio).
    #[serde(default)]
    pub command: Vec<String>,
    /// Names of environment variables passed through to the process (their values
    /// are the deployment's); nothing else of the broker's environment is, but `PATH`,
    /// `HOME`, `LANG` and `TMPDIR`.
    #[serde(default)]
    pub env: Vec<String>,
    /// The process's working directory (default: the broker's).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Calls in flight to one process at most; more wait (stdio; default 16).
    #[serde(default)]
    pub max_in_flight: Option<usize>,
}

/// The arguments naming a routing profile.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ProfileArgs {
    /// The profile id argument (`profileId`).
    pub id: String,
    /// The profile slug argument (`profileSlug`).
    pub slug: String,
}

/// A service's webhooks: verification and the event-to-job mapping, as data.
///
/// ```toml
/// [webhook]
/// scheme = "bearer"                 # the upstream sends the shared secret
/// header = "authorization"
/// prefix = "Bearer "
/// event_id = "$.id"                 # redeliveries repeat it (absent: sha256 of the body)
/// job_id = "$.data.object.id"
/// status = "$.data.object.status"
/// states = { COMPLETE = "succeeded", FAILED = "failed" }
/// ```
///
/// An RSA-signed callback names the signed message and where the key comes from:
///
/// ```toml
/// [webhook]
/// scheme = "rsa_sha256"
/// header = "x-webhook-signature"    # base64 RSASSA-PKCS1-v1_5 SHA-256 signature
/// timestamp_header = "x-webhook-timestamp"
/// max_age_seconds = 300
/// message = "{timestamp}.{url}.{body_sha256_hex}"
/// public_key = { tool = "get_webhook_public_key", path = "$.public_key" }
/// job_id = ["$.task_detail.task_id", "$.progress_detail.task_id"]
/// status = ["$.task_detail.stop_reason", "$.event_type"]
/// ```
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct WebhookSpec {
    /// How a callback proves it comes from the upstream.
    pub scheme: WebhookScheme,
    /// Request header carrying the proof (lowercase): the secret (bearer) or the
    /// base64 signature (rsa_sha256).
    pub header: String,
    /// Text before the secret or signature in that header.
    #[serde(default)]
    pub prefix: String,
    /// Header carrying the Unix time (seconds) the upstream signed at; with it, a
    /// callback outside `max_age_seconds` of the broker's clock is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_header: Option<String>,
    /// Freshness window in seconds, either side of now (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_seconds: Option<u64>,
    /// The signed message (rsa_sha256): text with `{timestamp}` (the timestamp header),
    /// `{url}` (the callback URL the upstream was given), `{body_sha256_hex}` and
    /// `{body}` (the raw body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Where the verification key comes from (rsa_sha256), besides a key the deployment
    /// configures: a read tool of the service answering a PEM public key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<PublicKeySource>,
    /// JSONPath of the event's id in the body.
    #[serde(default)]
    pub event_id: Option<String>,
    /// JSONPath(s) of the upstream job id; the first that holds a value counts (events
    /// of several shapes).
    pub job_id: Paths,
    /// JSONPath(s) of the job's status; the first that holds a value counts.
    pub status: Paths,
    /// Upstream status -> job state (decision 007), shown beside the upstream's
    /// status in job listings, for statuses from callbacks and from watchers alike.
    #[serde(default)]
    pub states: BTreeMap<String, JobState>,
}

/// One JSONPath, or several tried in order.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Paths {
    /// One path.
    One(String),
    /// Paths tried in order.
    Many(Vec<String>),
}

impl Paths {
    /// The paths, in order.
    pub fn as_slice(&self) -> &[String] {
        match self {
            Self::One(one) => std::slice::from_ref(one),
            Self::Many(many) => many,
        }
    }
}

/// A read tool whose answer carries the webhook verification key.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct PublicKeySource {
    /// Tool name within the service (a read without required arguments).
    pub tool: String,
    /// JSONPath of the PEM text in its answer.
    pub path: String,
}

/// Verification schemes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebhookScheme {
    /// A shared secret the deployment configures, sent by the upstream in `header`.
    Bearer,
    /// An RSASSA-PKCS1-v1_5 SHA-256 signature (base64) over `message`, checked with the
    /// upstream's RSA public key.
    RsaSha256,
}

/// Job states (decision 007).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Accepted, not started.
    Queued,
    /// Running.
    Running,
    /// Waiting for input.
    NeedsInput,
    /// Done.
    Succeeded,
    /// Failed.
    Failed,
    /// Cancelled.
    Cancelled,
    /// Expired.
    Expired,
}

impl JobState {
    /// The state's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::NeedsInput => "needs_input",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
        }
    }
}

/// Which arguments, request context and settings carry tenant routing.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Tenancy {
    /// The tenant argument (`tenantId`).
    pub tenant_arg: String,
    /// The location argument (`locationId`).
    pub location_arg: String,
    /// The strictness argument (`strictTenant`, default true).
    pub strict_arg: String,
    /// The `[context_headers]` name of the runtime location (`location_id`).
    pub context: String,
    /// The deployment setting listing tenants (`tenants`: `id`, `location_id`, `name`).
    #[serde(default = "tenants_setting")]
    pub tenants_setting: String,
    /// The deployment setting choosing `public` runtime mode (`runtime_mode`).
    #[serde(default = "mode_setting")]
    pub mode_setting: String,
}

fn tenants_setting() -> String {
    "tenants".into()
}

fn mode_setting() -> String {
    "runtime_mode".into()
}

/// Formats of a service's catalog version, as the contract (docs/contract.md) gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VersionFormat {
    /// `<service>-<YYYY.MM.DD.n>`, e.g. `hosting-2026.11.21.1`.
    ServiceDottedDate,
    /// `YYYY-MM-DD.n`, e.g. `2026-11-21.1`.
    DashedDate,
    /// `MAJOR.MINOR.PATCH`, e.g. `1.0.2`.
    Semver,
}

/// The two envelopes of the contract (docs/contract.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EnvelopeKind {
    /// `ok`, `data`, `meta`, `error`.
    #[default]
    Standard,
    /// The portal envelope (`serviceId`, `toolName`, `traceId`, `summary`, ...).
    Portal,
}

/// Where the caller's upstream key comes from and how it is placed upstream.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct CredentialSpec {
    /// The BYOK request header the caller sends (e.g. `x-hosting-api-key`).
    pub header: String,
    /// Whether a deployment may supply the key server-side instead (config `server_keys`).
    #[serde(default)]
    pub server_side: bool,
    /// Where the key goes in the upstream request.
    pub placement: Placement,
    /// Header or query parameter name upstream.
    pub name: String,
    /// Text put before the key, e.g. `Bearer `.
    #[serde(default)]
    pub prefix: String,
    /// Arguments that pick a server-side key by routing profile (config `[[profiles]]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_args: Option<ProfileArgs>,
}

/// Where an upstream key is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// An HTTP header.
    Header,
    /// A query-string parameter.
    Query,
}

/// Defaults for every tool of a service.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ServiceDefaults {
    /// Upstream timeout in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Most list items returned before truncation.
    #[serde(default)]
    pub item_budget: Option<usize>,
    /// Argument that asks for a preview instead of a call (hosting: `dry_run`).
    #[serde(default)]
    pub preview_arg: Option<String>,
    /// How list values go into query strings: `a=1&a=2` (repeat, the default) or
    /// `a[0]=1&a[1]=2` (indexed, for upstreams that read nested keys such as payments).
    #[serde(default)]
    pub query_arrays: QueryArrays,
}

/// Query-string encoding of lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueryArrays {
    /// `a=1&a=2`.
    #[default]
    Repeat,
    /// `a[0]=1&a[1]=2`.
    Indexed,
}

/// A tool file: `catalog/<service_id>/<anything>.toml` other than `service.toml`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ToolFile {
    /// The tools of this file.
    #[serde(default)]
    pub tool: Vec<RawTool>,
}

/// One tool as written in the catalog.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawTool {
    /// Native name without the service prefix, `snake_case`.
    #[schemars(with = "String")]
    pub name: SpannedStr,
    /// Human title.
    pub title: String,
    /// What the tool does and its confirmation rules.
    pub description: String,
    /// The upstream document's whole text on the operation (plain text), where the
    /// description keeps only its opening: `get_tool_reference` shows it.
    #[serde(default)]
    pub documentation: Option<String>,
    /// `agent_ready` or `legacy`.
    pub tier: Tier,
    /// `read` or `write`.
    pub risk: Risk,
    /// Class words: `spend`, `destructive`, `billing`, `token`.
    #[serde(default)]
    pub classes: Vec<Class>,
    /// Capability area used by discovery.
    #[serde(default)]
    pub category: Option<String>,
    /// Other names that resolve to this tool (titles, upstream operation ids).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Confirmation rule; `auto` takes it from `rules/confirmation.toml`.
    #[serde(default)]
    pub confirmation: ConfirmationMode,
    /// Upstream timeout in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Most list items returned before truncation.
    #[serde(default)]
    pub item_budget: Option<usize>,
    /// A native hook for local tools, instead of `[tool.http]`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub hook: Option<SpannedStr>,
    /// The upstream request, for provider tools.
    #[serde(default)]
    pub http: Option<RawHttp>,
    /// The MCP server's tool this one calls (a service with `[mcp]`), and the hash of
    /// the upstream descriptor it was reviewed as.
    #[serde(default)]
    pub mcp: Option<RawMcp>,
    /// Which raw tools a `category_dispatch` wrapper may run.
    #[serde(default)]
    pub dispatch: Option<Dispatch>,
    /// The steps of a `reschedule_overdue` tool.
    #[serde(default)]
    pub reschedule: Option<RawReschedule>,
    /// The steps of a `submit_and_poll` tool.
    #[serde(default)]
    pub poll: Option<RawPoll>,
    /// How a tool that answers a job at once watches it when run as an MCP task.
    #[serde(default)]
    pub task: Option<RawTask>,
    /// The table and answer of a `table_lookup` tool.
    #[serde(default)]
    pub lookup: Option<RawLookup>,
    /// The limits of an `allowlisted_request` tool.
    #[serde(default)]
    pub allowlist: Option<Allowlist>,
    /// At most this many upstream requests per caller per window (engine/core/src/call/ratelimit.rs).
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
    /// Preconditions checked before anything is sent.
    #[serde(default)]
    pub require: Vec<RawRequire>,
    /// How the upstream answer becomes the envelope.
    #[serde(default)]
    pub response: RawResponse,
    /// Service argument sets whose properties are merged into `arguments.properties`.
    #[serde(default)]
    pub argument_sets: Vec<String>,
    /// JSON Schema of the arguments (an object schema).
    #[schemars(with = "serde_json::Value")]
    pub arguments: Spanned<serde_json::Value>,
    /// JSON Schema of `data` on success.
    #[serde(default)]
    pub output: Option<serde_json::Value>,
    /// Whether the argument schema's top-level defaults are filled in before rendering.
    /// Imported tools say `false`: upstream defaults describe the upstream, and the
    /// broker never sends a value the caller did not give.
    #[serde(default = "yes")]
    pub fill_defaults: bool,
    /// Where an imported tool came from.
    #[serde(default)]
    pub source: Option<ToolSource>,
    /// Whether callers may run the tool. `false` records an upstream operation for
    /// endpoint coverage without exposing it (the scraper's raw tools): a call is refused
    /// with `forbidden` and discovery does not list it.
    #[serde(default = "yes")]
    pub exposed: bool,
}

fn yes() -> bool {
    true
}

/// `[tool.mcp]`: the MCP server's tool a catalog tool calls, pinned to the upstream
/// descriptor it was imported and reviewed as.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawMcp {
    /// The tool's name on the server (`tools/call`'s `params.name`).
    pub tool: String,
    /// sha256 of the upstream descriptor's canonical JSON (its name, title,
    /// description, input and output schemas and annotations): a server that now
    /// describes the tool otherwise is refused (`upstream_changed`).
    pub sha256: String,
    /// The server's `openWorldHint`, kept as it said it.
    #[serde(default)]
    pub open_world: Option<bool>,
}

/// Provenance of an imported tool.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ToolSource {
    /// The OpenAPI document, relative to the upstream descriptions folder.
    pub spec: String,
    /// `METHOD /path` in that document.
    pub operation: String,
    /// The operation's id, when it has one.
    #[serde(default)]
    pub operation_id: Option<String>,
}

/// Contract tier.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Listed by default.
    AgentReady,
    /// Listed only on opt-in.
    Legacy,
}

impl Tier {
    /// The catalog spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::AgentReady => "agent_ready",
            Tier::Legacy => "legacy",
        }
    }
}

/// Risk of a tool.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads only.
    Read,
    /// Changes upstream state.
    Write,
}

impl Risk {
    /// The catalog spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Read => "read",
            Risk::Write => "write",
        }
    }
}

/// Class words of write tools.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Consumes credits or money.
    Spend,
    /// Deletes or irreversibly changes.
    Destructive,
    /// Touches billing.
    Billing,
    /// Generates or rotates tokens.
    Token,
    /// Consumes upstream credits without moving money or needing confirmation (a
    /// credit-metered search). `spend` implies it.
    Credits,
}

/// How a tool is confirmed (decision 005).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationMode {
    /// Take the mode from the first matching policy in `rules/confirmation.toml`.
    #[default]
    Auto,
    /// Runs without confirmation.
    None,
    /// Needs `confirm=true`, else `confirmation_required` (428).
    ConfirmFlag,
    /// Without `confirm=true`, answers a dry-run preview and sends nothing.
    DryRunDefault,
    /// Needs `confirmApply` exactly `CONFIRM APPLY`, else `confirmation_required`.
    ConfirmApply,
}

/// The upstream request of a provider tool.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawHttp {
    /// HTTP method.
    #[schemars(with = "String")]
    pub method: SpannedStr,
    /// Path template with `{placeholder}` segments, relative to the base URL.
    #[schemars(with = "String")]
    pub path: SpannedStr,
    /// Expressions for placeholders; a placeholder without one takes `args.<placeholder>`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub path_params: BTreeMap<String, SpannedStr>,
    /// Query parameters: name -> expression. Undefined or `none` omits the parameter.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub query: BTreeMap<String, SpannedStr>,
    /// An expression giving an object whose entries are added to the query.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub query_object: Option<SpannedStr>,
    /// Request headers: name -> expression.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub headers: BTreeMap<String, SpannedStr>,
    /// An expression giving the request body.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub body: Option<SpannedStr>,
    /// A template in `templates/` that renders the body as JSON text.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub body_template: Option<SpannedStr>,
    /// How the body is encoded.
    #[serde(default)]
    pub body_encoding: BodyEncoding,
}

/// Encodings of an upstream request body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BodyEncoding {
    /// `application/json`.
    #[default]
    Json,
    /// `application/x-www-form-urlencoded`, nested keys as `a[b][0]`.
    Form,
}

/// A precondition: when `check` is falsy, the call fails with `classification`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawRequire {
    /// Expression that must be truthy.
    #[schemars(with = "String")]
    pub check: SpannedStr,
    /// `validation_error` or `not_configured`.
    pub classification: String,
    /// Message shown to the caller.
    pub message: String,
}

/// How the upstream answer is mapped into the envelope.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawResponse {
    /// JSONPath selecting `data` in the upstream body; default the whole body.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub data: Option<SpannedStr>,
    /// JSONPaths of pagination figures in the upstream body, copied into `meta.pagination`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub pagination: BTreeMap<String, SpannedStr>,
    /// JSONPaths (into the upstream body) whose values are redacted, besides the default keys.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub redact: Vec<SpannedStr>,
    /// Boolean argument that turns list truncation off when `false` (leads `compact`).
    #[serde(default)]
    pub compact_arg: Option<String>,
    /// Integer argument that sets the item budget for this call (leads `max_items`).
    #[serde(default)]
    pub budget_arg: Option<String>,
    /// Boolean argument that, when `true`, answers `{ "data": ..., "raw": <whole redacted
    /// upstream answer> }` (leads `include_raw`).
    #[serde(default)]
    pub raw_arg: Option<String>,
    /// String argument choosing `compact` (the default) or `full` answers (payments
    /// `response_mode`, see engine/upstream/src/answer/shape.rs).
    #[serde(default)]
    pub mode_arg: Option<String>,
    /// Array argument of dot paths keeping only those fields of each object (`fields`).
    #[serde(default)]
    pub fields_arg: Option<String>,
    /// JSONPath of a job id in a successful answer: the job is recorded for the caller's
    /// job listing (engine/store/src/store/jobs.rs).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub job_id: Option<SpannedStr>,
    /// A read that reports a job's status (Check Generation Status, Get Media Job): the
    /// status it answers is written to the caller's job record, so job listings on every
    /// replica show what was last seen.
    #[serde(default)]
    pub job_status: Option<RawJobStatus>,
    /// Service table mapping an object type to the fields compact answers keep.
    #[serde(default)]
    pub compact_table: Option<String>,
    /// Paths redacted unless an expression is truthy (e.g. an `include_emails` argument).
    #[serde(default)]
    pub redact_unless: Vec<RawRedactUnless>,
    /// Template text for the summary (portal envelope), with `data` and `tool` in scope.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub summary: Option<SpannedStr>,
    /// Upstream statuses mapped to a classification other than `upstream_http_error`.
    #[serde(default)]
    pub upstream_errors: BTreeMap<String, String>,
}

/// Where a job status read finds the job and its status.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawJobStatus {
    /// Expression giving the job id, e.g. `args.job_id`.
    #[schemars(with = "String")]
    pub id: SpannedStr,
    /// JSONPath of the status in the upstream answer.
    #[schemars(with = "String")]
    pub status: SpannedStr,
}

/// Paths redacted unless `unless` is truthy.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawRedactUnless {
    /// Expression, e.g. `args.includeBusinessDetails`.
    #[schemars(with = "String")]
    pub unless: SpannedStr,
    /// JSONPaths into the upstream body.
    #[schemars(with = "Vec<String>")]
    pub paths: Vec<SpannedStr>,
}

/// What a `category_dispatch` wrapper may run: raw tools of its own service in these
/// categories, of this risk, without these class words.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Dispatch {
    /// Categories of the raw tools.
    pub categories: Vec<String>,
    /// Risk the raw tools must have.
    pub risk: Risk,
    /// Class words that exclude a raw tool (e.g. `destructive`).
    #[serde(default)]
    pub exclude_classes: Vec<Class>,
}

/// The steps of a `submit_and_poll` tool: optionally submit a job through a write tool,
/// then read its status through a read tool until it is done, failed or waiting for
/// input, or the wait runs out. Tools are raw catalog tools of the same service. The
/// expressions see `args`, `ctx`, `settings`, and where they apply `submitted` (the
/// submit tool's `data`), `id` (the job id), `data` (the last status answer) and
/// `status` (its status word).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawPoll {
    /// Submit choices, first whose `when` holds wins; none: the job id comes from `args`.
    #[serde(default)]
    pub submit: Vec<RawPollSubmit>,
    /// Expression: the job id (from `submitted`, or from `args` when nothing is
    /// submitted). A null id after a submit ends the call with the submit's answer.
    #[schemars(with = "String")]
    pub id: SpannedStr,
    /// Read tool that reports the job.
    pub status_tool: String,
    /// Expression: the status tool's arguments for `id`.
    #[schemars(with = "String")]
    pub status_arguments: SpannedStr,
    /// Expression: the status word of a status answer (`data`).
    #[schemars(with = "String")]
    pub status: SpannedStr,
    /// Status words that mean finished.
    pub done: Vec<String>,
    /// Status words that mean failed.
    #[serde(default)]
    pub failed: Vec<String>,
    /// Status words that mean the job waits for the caller (stop polling).
    #[serde(default)]
    pub waiting: Vec<String>,
    /// Expression: the tool's `data` (sees `id`, `status`, `data`, `submitted`, `args`).
    #[schemars(with = "String")]
    pub result: SpannedStr,
    /// Pause between status reads; a deployment may lower it with the service setting
    /// `poll_interval_ms`.
    pub interval_ms: u64,
    /// Argument naming how long to wait, in seconds.
    #[serde(default = "wait_arg")]
    pub wait_arg: String,
    /// Wait when the argument is absent.
    pub default_wait_seconds: u64,
    /// Longest wait accepted.
    pub max_wait_seconds: u64,
    /// Tool a caller uses to look at the job later (named in the next action).
    #[serde(default)]
    pub check_tool: Option<String>,
}

/// A tool that submits a job and answers its id at once (a media queue tool), run as an
/// MCP task: after its own answer, the task watches the job through `watch` (a
/// `submit_and_poll` read tool of the same service without submit choices, which takes
/// the job from its arguments) for the task's bound, and settles with the tool's answer
/// plus `data.job` (the watch's data: `outcome`, `id`, `status`, ...). A preview or a
/// refusal settles as it is; without tasks nothing changes.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawTask {
    /// The watch tool (same service).
    pub watch: String,
    /// Expression: the watch tool's arguments (sees `args` and `data`, the tool's own
    /// answer); `none` means there is no job to watch.
    #[schemars(with = "String")]
    pub arguments: SpannedStr,
}

fn wait_arg() -> String {
    "wait_seconds".into()
}

/// Limits of the allowlisted-endpoint tool (engine/core/src/hooks/allowlist.rs).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Allowlist {
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Largest answer read, in bytes.
    pub max_response_bytes: usize,
    /// The deployment setting listing extra allowed path prefixes.
    #[serde(default = "paths_setting")]
    pub paths_setting: String,
}

fn paths_setting() -> String {
    "allowed_path_prefixes".into()
}

/// A per-caller limit on upstream requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RateLimit {
    /// Requests allowed in the window.
    pub requests: u32,
    /// The window, in seconds.
    pub per_seconds: u64,
}

/// A local answer from a service table (`table_lookup`): rows filtered by `filter`,
/// ranked by how many words of `query` they contain in `fields`, then `result` shapes
/// the answer. Expressions see `args`, `ctx`, `settings`, `tool`; `filter` also `row`;
/// `result` also `table` (the whole table), `ranked` (kept rows, best first, each with
/// a `score`) and `best` (the first, or none).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawLookup {
    /// A table of the service's `[tables]`.
    #[serde(default)]
    pub table: Option<String>,
    /// Expression: the text to rank rows by (absent: keep the table's order).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub query: Option<SpannedStr>,
    /// Expression: whether a row is kept.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub filter: Option<SpannedStr>,
    /// Row fields whose words are matched against the query.
    #[serde(default)]
    pub fields: Vec<String>,
    /// Expression: the tool's data.
    #[schemars(with = "String")]
    pub result: SpannedStr,
}

/// One way to submit the job.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawPollSubmit {
    /// Expression: whether this choice applies (absent: always).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub when: Option<SpannedStr>,
    /// Write tool that submits the job.
    pub tool: String,
    /// Expression: its arguments.
    #[schemars(with = "String")]
    pub arguments: SpannedStr,
}

/// The steps of a `reschedule_overdue` tool: page through a search tool, keep the items
/// whose due time has passed, and move each to the next business day through an update
/// tool. Tools are raw catalog tools of the same service; the argument mappings are
/// expressions with `args`, `ctx`, `settings`, `page` (`limit`, `skip`), `item` and `due`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawReschedule {
    /// Read tool that lists candidate items, one page per call.
    pub search_tool: String,
    /// Expression: the search tool's arguments for `page`.
    #[schemars(with = "String")]
    pub search_arguments: SpannedStr,
    /// JSONPath of the item list in the search tool's `data`.
    #[schemars(with = "String")]
    pub items: SpannedStr,
    /// Item field holding its due time (RFC 3339).
    pub due_field: String,
    /// Expression: an item's id, for the report.
    #[schemars(with = "String")]
    pub item_id: SpannedStr,
    /// Write tool that moves one item.
    pub update_tool: String,
    /// Expression: the update tool's arguments for `item` and the new `due`.
    #[schemars(with = "String")]
    pub update_arguments: SpannedStr,
    /// Optional read tool whose answer names the default time zone.
    #[serde(default)]
    pub zone_tool: Option<String>,
    /// Expression: the zone tool's arguments.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub zone_arguments: Option<SpannedStr>,
    /// JSONPath of the zone name in the zone tool's `data`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub zone_path: Option<SpannedStr>,
}

/// Whether a rule's selectors hold of a tool (its service, risk and classes): each that
/// is given matches, and `classes` when given shares a class with the tool. The one
/// reading of `service`, `risk` and `classes` across `rules/` (confirmation policies,
/// costs, guards).
pub fn selects(
    service: Option<&str>,
    risk: Option<Risk>,
    classes: &[Class],
    tool_service: &str,
    tool_risk: Risk,
    tool_classes: &[Class],
) -> bool {
    service.is_none_or(|s| s == tool_service)
        && risk.is_none_or(|r| r == tool_risk)
        && (classes.is_empty() || classes.iter().any(|c| tool_classes.contains(c)))
}

/// Selectors as a rule names them (costs, guards): a tool by full name, a service, a
/// risk, classes.
#[derive(Debug, Clone, Copy)]
pub struct Selecting<'a> {
    /// One tool, by full name.
    pub tool: Option<&'a str>,
    /// Tools of this service.
    pub service: Option<&'a str>,
    /// Tools of this risk.
    pub risk: Option<Risk>,
    /// Tools with at least one of these classes.
    pub classes: &'a [Class],
}

impl Selecting<'_> {
    /// How specifically these selectors pick the tool `full_name` of `service` with
    /// `risk` and `classes` (`None`: they do not): a tool named beats a service, a service
    /// beats classes, classes beat a risk, any of them beats none.
    pub fn rank(
        &self,
        full_name: &str,
        service: &str,
        risk: Risk,
        classes: &[Class],
    ) -> Option<u8> {
        let selected = selects(
            self.service,
            self.risk,
            self.classes,
            service,
            risk,
            classes,
        ) && self.tool.is_none_or(|t| t == full_name);
        selected.then(|| {
            (u8::from(self.tool.is_some()) << 3)
                | (u8::from(self.service.is_some()) << 2)
                | (u8::from(!self.classes.is_empty()) << 1)
                | u8::from(self.risk.is_some())
        })
    }
}
