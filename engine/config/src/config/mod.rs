//! The deployment config file (`--config FILE`, TOML, strict): caller keys, upstream
//! overrides, server-side upstream keys and non-secret per-service settings.
//!
//! ```toml
//! listen = "127.0.0.1:8080"
//! max_body_bytes = 1048576
//!
//! toolset = "discovery"          # what MCP tools/list shows keys without their own
//! allowed_origins = ["https://console.example.com"]
//! vault_key_env = "TOOL_BROKER_VAULT_KEY"   # the hub: keys users store (docs/hub.md)
//!
//! [[keys]]
//! name = "support-agent"
//! sha256 = "<hex sha256 of the bearer token>"
//! services = ["hosting", "crm"]   # default: all
//! tiers = ["agent_ready"]         # default: all
//! risks = ["read"]                # default: all
//!
//! [upstreams]
//! payments = "http://127.0.0.1:4010"
//!
//! [server_keys.payments]
//! env = "PAYMENTS_SECRET_KEY"     # the key is read from this variable at start
//!
//! [settings.media]
//! drive_folder_id = "folder-123"
//!
//! [server]                        # connection limits (docs/deployment.md)
//! header_read_timeout_ms = 10000
//! max_connections = 4096
//!
//! [tls]                           # HTTPS without an ingress (docs/deployment.md)
//! cert_file = "/etc/tool-broker/tls.crt"
//! key_file = "/etc/tool-broker/tls.key"
//!
//! [oauth]                         # users with access tokens (docs/oauth.md)
//! issuer = "https://idp.example.com"
//! resource = "https://broker.example.com/mcp"
//!
//! [connect.crm]                   # accounts connected by OAuth (docs/hub.md)
//! issuer = "https://login.crm.example"
//! client_id = "broker-crm"
//!
//! [admin]                         # the operator's console (docs/console.md)
//! roles = ["admin"]
//! auditor_roles = ["auditor"]
//! ```
//!
//! May import: the catalog (to name services, risks and tiers) and [`crate::error`].

pub mod admin;
pub mod budgets;
pub mod connect;
pub mod oauth;
pub mod server;
pub mod view;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::catalog::descriptor::{Risk, Tier};

/// How long the write audit is kept when `audit_retention_days` is not set.
pub const DEFAULT_AUDIT_RETENTION_DAYS: u32 = 90;

/// The config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ConfigFile {
    /// Listen address (the CLI flag wins).
    #[serde(default)]
    pub listen: Option<String>,
    /// Largest accepted request body; default from `rules/limits.toml`.
    #[serde(default)]
    pub max_body_bytes: Option<usize>,
    /// Caller keys.
    #[serde(default)]
    pub keys: Vec<KeyEntry>,
    /// Upstream base URL per service id.
    #[serde(default)]
    pub upstreams: BTreeMap<String, String>,
    /// Server-side upstream keys per service id (only for services that allow them).
    #[serde(default)]
    pub server_keys: BTreeMap<String, ServerKey>,
    /// How this deployment verifies each service's callbacks (services whose catalog
    /// entry has `[webhook]`): the shared secret, or the RSA public key and the URL the
    /// upstream signs.
    #[serde(default)]
    pub webhook_secrets: BTreeMap<String, WebhookSecret>,
    /// Non-secret settings per service id, visible to templates as `settings`.
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Table>,
    /// Server-side upstream keys chosen per call by `profileId` / `profileSlug`.
    #[serde(default)]
    pub profiles: Vec<ProfileEntry>,
    /// What MCP `tools/list` shows a key that names no `toolset` of its own (including
    /// `TOOL_BROKER_API_KEY` and the generated key). Default: `"discovery"`, the three
    /// discovery tools (about 5 KB), so a default client gets a list a model can hold;
    /// `"all"` lists every agent-ready tool the key may use (about 3 MB).
    #[serde(default)]
    pub toolset: Option<Toolset>,
    /// Who confirms a write (decision 008) for keys that name no `confirmation`:
    /// `flag` (the default: the contract's flags), `bound` (a token the preview answered),
    /// `human` (a person; not built yet, refused at start).
    #[serde(default)]
    pub confirmation: Option<WriteConfirmation>,
    /// How long a confirmation token stays valid, in seconds (default 300).
    #[serde(default)]
    pub confirmation_ttl_seconds: Option<u64>,
    /// The people who approve writes under `confirmation = "human"`.
    #[serde(default)]
    pub approvers: Vec<ApproverEntry>,
    /// Environment variable holding the key (at least 32 characters) that seals what
    /// approvers are shown; needed for `human`; the same on every replica.
    #[serde(default)]
    pub approval_key_env: Option<String>,
    /// Variables holding earlier approval keys: previews sealed under them still open
    /// (rotation: put the new key in `approval_key_env`, the old one here, and drop it
    /// once its approvals have expired).
    #[serde(default)]
    pub approval_previous_key_envs: Vec<String>,
    /// Environment variable holding the key (at least 32 characters) that seals the
    /// upstream keys users store in the hub (decision 012); needed for the hub;
    /// the same on every replica.
    #[serde(default)]
    pub vault_key_env: Option<String>,
    /// Variables holding earlier vault keys: keys sealed under them still open
    /// (rotation: put the new key in `vault_key_env`, the old one here, run
    /// `tool-broker vault rekey`, then drop it).
    #[serde(default)]
    pub vault_previous_key_envs: Vec<String>,
    /// How long an approval may wait and then be used, in seconds (default 900).
    #[serde(default)]
    pub approval_ttl_seconds: Option<u64>,
    /// How long a call repeated with the `approvalId` of a pending approval waits for
    /// the person's decision before it answers `approval_pending`, in seconds (default
    /// 20, at most 60; 0 answers at once).
    #[serde(default)]
    pub approval_wait_seconds: Option<u64>,
    /// The broker's public base URL (`https://broker.example.com`), for approval links;
    /// default: the host a call came to, over http.
    #[serde(default)]
    pub public_url: Option<String>,
    /// Minutes a signed-in session of the hub or the approval page may go unused before
    /// it ends (default 30); a session also ends after eight hours, on sign-out, and
    /// when an operator runs `tool-broker sessions revoke`.
    #[serde(default)]
    pub session_idle_minutes: Option<u64>,
    /// Browser origins (`scheme://host[:port]`) allowed besides the broker's own. A
    /// request carrying any other `Origin` is refused with 403 before any tool runs.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// What a connection may cost: timeouts, the connection cap, header limits, the
    /// shutdown grace ([`server::ServerBounds`]; every field has a default).
    #[serde(default)]
    pub server: server::ServerBounds,
    /// HTTPS served by the broker itself ([`server::TlsFiles`]; docs/deployment.md, "TLS").
    #[serde(default)]
    pub tls: Option<server::TlsFiles>,
    /// Cedar policies over every tool (docs/policy.md).
    #[serde(default)]
    pub policy: Option<PolicyConfig>,
    /// Units and costs besides `rules/costs.toml`'s (docs/budgets.md): `units = [...]`
    /// and `[[costs.cost]]` tables, which win over the rules' at equal specificity.
    #[serde(default)]
    pub costs: Option<crate::catalog::costs::RawCosts>,
    /// Guard rules besides `rules/guards.toml`'s (docs/guards.md): `[[guards.rule]]`
    /// tables that change a shipped rule by its id, extend one, or add one.
    #[serde(default)]
    pub guards: Option<crate::catalog::guards::RawGuards>,
    /// How much each user, role or key may spend per window (`[[budgets]]`,
    /// [`budgets::BudgetEntry`], docs/budgets.md).
    #[serde(default)]
    pub budgets: Vec<budgets::BudgetEntry>,
    /// Who may open the operator's console at `/admin` ([`admin::AdminConfig`];
    /// docs/console.md).
    #[serde(default)]
    pub admin: Option<admin::AdminConfig>,
    /// Days the write audit and finished jobs and tasks are kept before the broker
    /// prunes them in the background (default 90; 0 keeps them forever).
    #[serde(default)]
    pub audit_retention_days: Option<u32>,
    /// The file this config was read from and its text (for the lines of its costs).
    #[serde(skip)]
    pub file: Option<(String, String)>,
    /// Access tokens of an OAuth 2.1 authorization server, besides the keys
    /// ([`oauth::OAuthConfig`], decision 011).
    #[serde(default)]
    pub oauth: Option<oauth::OAuthConfig>,
    /// How each service's accounts connect to the hub by OAuth instead of a pasted key
    /// (`[connect.<service>]`, [`connect::ConnectConfig`], docs/hub.md).
    #[serde(default)]
    pub connect: BTreeMap<String, connect::ConnectConfig>,
}

/// One routing profile: a server-side key of one service, named by id and slug.
///
/// ```toml
/// [[profiles]]
/// service = "payments"
/// id = "prof_eu"
/// slug = "eu-store"
/// env = "PAYMENTS_EU_SECRET_KEY"   # the key is read from this variable at start
/// ```
/// A caller key may route to it only when its `profiles` list names the id or slug.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ProfileEntry {
    /// Service id (its credential must allow server-side keys).
    pub service: String,
    /// Profile id (`profileId`).
    pub id: String,
    /// Profile slug (`profileSlug`).
    pub slug: String,
    /// Environment variable holding the key.
    pub env: String,
}

/// One caller key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct KeyEntry {
    /// A name for logs (never the key).
    pub name: String,
    /// Hex sha256 of the bearer token.
    pub sha256: String,
    /// Allowed services; absent means all.
    #[serde(default)]
    pub services: Option<Vec<String>>,
    /// Allowed tiers; absent means all.
    #[serde(default)]
    pub tiers: Option<Vec<Tier>>,
    /// Allowed risks; absent means all.
    #[serde(default)]
    pub risks: Option<Vec<Risk>>,
    /// Profiles this key may route to.
    #[serde(default)]
    pub profiles: Vec<String>,
    /// What MCP `tools/list` shows this key: `"discovery"` (only the find / reference /
    /// call tools), `"all"`, or a list of service ids. Absent: the deployment's
    /// top-level `toolset`.
    #[serde(default)]
    pub toolset: Option<Toolset>,
    /// Who confirms this key's writes; default: the top-level `confirmation`.
    #[serde(default)]
    pub confirmation: Option<WriteConfirmation>,
    /// The roles this key's calls have in policies (`Key::"<name>" in Role::"<role>"`).
    #[serde(default)]
    pub roles: Vec<String>,
}

/// `[policy]`: the folder of the deployment's Cedar policies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Every `*.cedar` file of this folder is read at start (relative to the working
    /// folder).
    pub dir: std::path::PathBuf,
    /// Claims of a user's access token that become `String` attributes of the user's
    /// entity (`principal.email`).
    #[serde(default)]
    pub claims: Vec<String>,
    /// Claims holding arrays of strings that become `Set<String>` attributes
    /// (`principal.groups.contains("finance")`).
    #[serde(default)]
    pub set_claims: Vec<String>,
    /// The cost units `context.cost` is typed with besides the catalog's (the
    /// deployment's `[costs] units`); set from the config's costs, never written.
    #[serde(skip)]
    pub units: Vec<String>,
}

/// `[[approvers]]`: a person who approves writes on the approval page.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproverEntry {
    /// Shown on the page and in the audit.
    pub name: String,
    /// sha256 (hex) of the approver's credential.
    pub sha256: String,
}

/// Who confirms a write (decision 008). Ordered from the weakest to the strictest, so
/// `max` is the stricter of two modes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteConfirmation {
    /// The contract's flags decide (`confirm=true`, `confirmApply`).
    #[default]
    Flag,
    /// A write runs only with the `confirmationToken` its preview answered, bound to the
    /// caller, the tool, its descriptor hash and the arguments; single use, expiring.
    Bound,
    /// A person approves (MCP elicitation or the approval page).
    Human,
}

impl WriteConfirmation {
    /// The mode's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Flag => "flag",
            Self::Bound => "bound",
            Self::Human => "human",
        }
    }
}

/// The tools an MCP client of one key sees in `tools/list` (calls are still governed
/// by the key's services, tiers and risks).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum Toolset {
    /// A named set: `all` or `discovery`.
    Named(ToolsetName),
    /// The agent-ready tools of these services.
    Services(Vec<String>),
}

impl Default for Toolset {
    /// The discovery tools: a surface every model can hold.
    fn default() -> Self {
        Self::Named(ToolsetName::Discovery)
    }
}

impl Toolset {
    /// How the toolset is written in config and docs.
    pub fn label(&self) -> String {
        match self {
            Self::Named(ToolsetName::All) => "all".into(),
            Self::Named(ToolsetName::Discovery) => "discovery".into(),
            Self::Services(services) => services.join(","),
        }
    }
}

/// Named toolsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolsetName {
    /// Every agent-ready tool the key may use.
    All,
    /// Only `find_tools`, `get_tool_reference` and `call_tool`.
    Discovery,
}

/// Where a server-side upstream key comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ServerKey {
    /// Environment variable holding the key.
    pub env: String,
}

/// `[webhook_secrets.<service>]`: where the broker finds what verifies a service's
/// callbacks. Which fields apply follows the catalog's `[webhook] scheme`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSecret {
    /// Bearer: environment variable holding the shared secret the upstream sends.
    #[serde(default)]
    pub env: Option<String>,
    /// RSA: environment variable holding the upstream's PEM public key.
    #[serde(default)]
    pub public_key_env: Option<String>,
    /// RSA: environment variable holding an upstream API key the broker uses to fetch
    /// the public key with the catalog's `public_key` tool (at start, then hourly).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The callback URL exactly as registered upstream (signed messages with `{url}`);
    /// default: rebuilt from the request (`X-Forwarded-Proto`, `Host`, path and query).
    #[serde(default)]
    pub url: Option<String>,
}

impl ConfigFile {
    /// Reads and parses a config file; the error names the file and line.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config file `{}`: {e}", path.display()))?;
        let mut config: Self = toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map_or(0, |s| crate::catalog::diag::line_of(&text, s.start));
            format!("{}:{line}: {}", path.display(), e.message().trim())
        })?;
        config.file = Some((path.display().to_string(), text));
        if let (Some(policy), Some(costs)) = (config.policy.as_mut(), config.costs.as_ref()) {
            policy.units.clone_from(&costs.units);
        }
        Ok(config)
    }
}
