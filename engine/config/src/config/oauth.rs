//! The `[oauth]` table of the deployment config: the broker as an OAuth 2.1 resource
//! server (decision 011). Checked and compiled by `caller::oauth` (broker-identity);
//! design notes in docs/oauth.md.
//!
//! ```toml
//! [oauth]
//! issuer = "https://idp.example.com"           # exact `iss`
//! resource = "https://broker.example.com/mcp"  # what `aud` must name (RFC 8707)
//! scopes_supported = ["tools:read", "tools:write"]
//! roles_claim = "roles"
//! default_role = "reader"
//! leeway_seconds = 30
//!
//! [[oauth.roles]]
//! name = "support"
//! services = ["crm", "hosting"]
//! risks = ["read"]
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::catalog::descriptor::{Risk, Tier};
use crate::config::{Toolset, WriteConfirmation};

/// `[oauth]`: whose access tokens the broker accepts, for which resource, and what a
/// token's roles allow.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier, compared exactly with `iss`; its
    /// metadata (OpenID discovery, else RFC 8414) names the key set. `https`, or `http`
    /// on a loopback host.
    pub issuer: String,
    /// The broker's canonical resource URI (its MCP endpoint, e.g.
    /// `https://broker.example.com/mcp`): every token's `aud` must contain it.
    pub resource: String,
    /// Scopes the metadata document lists and a 401 challenge asks for; default
    /// `["tools:read", "tools:write"]`.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// The claim holding a token's roles (default `roles`; `groups` is common). A
    /// dotted path (`realm_access.roles`) is followed when no claim has the whole name.
    #[serde(default)]
    pub roles_claim: Option<String>,
    /// Roles: each maps a role name to the permission set a key would have.
    #[serde(default)]
    pub roles: Vec<RoleEntry>,
    /// The role of a token whose roles claim is absent or names no configured role;
    /// default: every service, tier and risk (the scopes still narrow it).
    #[serde(default)]
    pub default_role: Option<String>,
    /// Seconds of clock difference allowed on `exp` and `nbf` (default 30, at most 300).
    #[serde(default)]
    pub leeway_seconds: Option<u64>,
    /// The key set's URL, when the issuer publishes no metadata document (default: the
    /// `jwks_uri` of the issuer's metadata).
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// Seconds a fetched key set is used before it is fetched again in the background
    /// (default 3600, at least 1). Calls never wait for that fetch; until one succeeds
    /// the keys held stay in use (docs/oauth.md, "When the provider is down").
    #[serde(default)]
    pub keys_max_age_seconds: Option<u64>,
    /// Also take access tokens whose header `typ` is a plain `JWT` (or absent), for
    /// providers that issue no RFC 9068 `at+jwt` (docs/oauth.md says which). Off by
    /// default. Either way a token carrying an ID token's claims (`nonce`, `at_hash`,
    /// `c_hash`) is refused: an ID token is never an access token.
    #[serde(default)]
    pub accept_plain_jwt: bool,
    /// Scope names an identity provider cannot spell as the broker's, mapped to them
    /// (`"Tools.Read" = "tools:read"`).
    #[serde(default)]
    pub scope_aliases: BTreeMap<String, String>,
    /// How people sign in to the hub and the approval page: the broker as a
    /// confidential client of the same provider ([`SignInConfig`]). Absent: the hub's
    /// JSON API still takes access tokens, its pages say sign-in is not configured.
    #[serde(default)]
    pub sign_in: Option<SignInConfig>,
}

/// `[oauth.sign_in]`: the broker's own client at the provider, for the hub page, its
/// connect links and the approval page (authorization code with PKCE, the ID token
/// checked like an access token but for this client).
///
/// ```toml
/// [oauth.sign_in]
/// client_id = "tool-broker-hub"
/// client_secret_env = "TOOL_BROKER_HUB_CLIENT_SECRET"
/// redirect_url = "https://broker.example.com/hub/callback"  # default: public_url + /hub/callback
/// approver_role = "approver"   # a user with this role approves writes (mode `human`)
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignInConfig {
    /// The client id registered at the provider.
    pub client_id: String,
    /// The environment variable holding the client secret.
    pub client_secret_env: String,
    /// The redirect URI registered at the provider; it must end in `/hub/callback`.
    /// Default: `public_url` + `/hub/callback`.
    #[serde(default)]
    pub redirect_url: Option<String>,
    /// Scopes asked for (default `["openid"]`; `openid` is always asked).
    #[serde(default)]
    pub scopes: Option<Vec<String>>,
    /// How the secret is sent to the token endpoint: `client_secret_basic` (default)
    /// or `client_secret_post`.
    #[serde(default)]
    pub token_endpoint_auth: Option<TokenEndpointAuth>,
    /// A role (in the ID token's roles claim) that lets a signed-in user approve
    /// writes on the approval page, beside `[[approvers]]`.
    #[serde(default)]
    pub approver_role: Option<String>,
}

/// How the client secret reaches the token endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenEndpointAuth {
    /// HTTP Basic with the client id and secret (RFC 6749 section 2.3.1).
    #[default]
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body.
    ClientSecretPost,
}

/// `[[oauth.roles]]`: a role name and the fields a `[[keys]]` entry has.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleEntry {
    /// The role as the token's roles claim names it.
    pub name: String,
    /// Allowed services; absent means all.
    #[serde(default)]
    pub services: Option<Vec<String>>,
    /// Allowed tiers; absent means all.
    #[serde(default)]
    pub tiers: Option<Vec<Tier>>,
    /// Allowed risks; absent means all.
    #[serde(default)]
    pub risks: Option<Vec<Risk>>,
    /// Routing profiles this role may use.
    #[serde(default)]
    pub profiles: Vec<String>,
    /// What MCP `tools/list` shows; default: the top-level `toolset`.
    #[serde(default)]
    pub toolset: Option<Toolset>,
    /// Who confirms this role's writes; default: the top-level `confirmation`.
    #[serde(default)]
    pub confirmation: Option<WriteConfirmation>,
}
