//! `[connect.<service>]`: how a service's accounts connect to the hub by OAuth
//! instead of a pasted key (docs/hub.md, "Connecting an account"). The deployment's,
//! not the catalog's: client ids and secrets belong to whoever runs the broker.
//!
//! ```toml
//! [connect.crm]
//! authorization_url = "https://app.crm.example/oauth/authorize"
//! token_url = "https://api.crm.example/oauth/token"
//! revocation_url = "https://api.crm.example/oauth/revoke"   # optional (RFC 7009)
//! scopes = ["contacts.read", "contacts.write"]
//! client_id = "broker-crm"
//! client_secret_env = "CRM_OAUTH_CLIENT_SECRET"
//! token_placement = "bearer"          # or "key_header": the service's own key header
//! authorization_params = { access_type = "offline" }
//!
//! [connect.hosting]
//! issuer = "https://login.hosting.example"   # the endpoints from its metadata (RFC 8414)
//! client_id = "broker-hosting"
//! client_secret_env = "HOSTING_OAUTH_CLIENT_SECRET"
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

use super::oauth::TokenEndpointAuth;

/// How long before expiry an access token is refreshed, when not set.
pub const DEFAULT_REFRESH_SKEW_SECONDS: u64 = 60;

/// Where a connection's access token goes in the service's requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenPlacement {
    /// `Authorization: Bearer <token>`.
    #[default]
    Bearer,
    /// Where the service's catalog `credential` puts a caller's key (its header or
    /// query parameter, with its prefix).
    KeyHeader,
}

/// One `[connect.<service>]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectConfig {
    /// The authorization server's issuer: its endpoints are read from its metadata
    /// (RFC 8414, else OpenID discovery). Either this or the URLs below.
    #[serde(default)]
    pub issuer: Option<String>,
    /// The authorization endpoint.
    #[serde(default)]
    pub authorization_url: Option<String>,
    /// The token endpoint.
    #[serde(default)]
    pub token_url: Option<String>,
    /// The revocation endpoint (RFC 7009); without one, disconnecting only deletes.
    #[serde(default)]
    pub revocation_url: Option<String>,
    /// Scopes asked for (shown to the user before they consent).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The client id registered at the provider; absent: the broker registers itself
    /// (RFC 7591) at the provider's registration endpoint, once, for every replica.
    #[serde(default)]
    pub client_id: Option<String>,
    /// The variable holding the client secret; absent: a public client (PKCE alone).
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// How the secret reaches the token endpoint (default `client_secret_basic`).
    #[serde(default)]
    pub token_endpoint_auth: Option<TokenEndpointAuth>,
    /// Further parameters of the authorization request (`access_type = "offline"`,
    /// `prompt = "consent"`); the flow's own (`state`, `code_challenge`, ...) cannot be
    /// set here.
    #[serde(default)]
    pub authorization_params: BTreeMap<String, String>,
    /// Further parameters of every token request (the crm marketplace's
    /// `user_type = "Location"`); the grant's own cannot be set here.
    #[serde(default)]
    pub token_params: BTreeMap<String, String>,
    /// Where the access token goes (default `bearer`).
    #[serde(default)]
    pub token_placement: TokenPlacement,
    /// Seconds before expiry a token is refreshed (default 60).
    #[serde(default)]
    pub refresh_skew_seconds: Option<u64>,
    /// On-behalf-of: the service trusts the broker's own identity provider, and each
    /// call's access token is exchanged there (RFC 8693) for one with this service's
    /// `audience` and `scopes`; nothing is stored, nothing is connected by hand.
    #[serde(default)]
    pub token_exchange: bool,
    /// The `audience` of an exchanged token (the service's identifier at the provider).
    #[serde(default)]
    pub audience: Option<String>,
    /// The resource indicator (RFC 8707) sent on the authorization and token requests;
    /// for an MCP server found by its protected resource metadata, the resource it
    /// names there.
    #[serde(default)]
    pub resource: Option<String>,
}

/// The parameters the flow sets itself, which `authorization_params` may not.
pub const FLOW_PARAMS: &[&str] = &[
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
    "nonce",
];

/// The parameters a token request sets itself, which `token_params` may not.
pub const TOKEN_PARAMS: &[&str] = &[
    "grant_type",
    "code",
    "redirect_uri",
    "code_verifier",
    "refresh_token",
    "client_id",
    "client_secret",
    "token",
    "token_type_hint",
    "scope",
    "audience",
    "subject_token",
    "subject_token_type",
    "requested_token_type",
];

impl ConnectConfig {
    /// Checks what can be checked without the network: one way to find the endpoints,
    /// each URL https (or loopback http), no flow parameter overridden. The error names
    /// the table.
    pub fn check(&self, service: &str) -> Result<(), String> {
        let at = format!("[connect.{service}]");
        if self
            .client_id
            .as_deref()
            .is_some_and(|c| c.trim().is_empty())
        {
            return Err(format!("{at} client_id is empty"));
        }
        if let Some(resource) = &self.resource {
            check_url(resource).map_err(|e| format!("{at} resource `{resource}`: {e}"))?;
        }
        if self.token_exchange {
            self.check_exchange(&at)?;
        } else {
            self.check_endpoints(&at)?;
        }
        if let Some(taken) = self
            .authorization_params
            .keys()
            .find(|k| FLOW_PARAMS.contains(&k.as_str()))
        {
            return Err(format!(
                "{at} authorization_params sets `{taken}`, which the flow sets itself; remove it"
            ));
        }
        if let Some(taken) = self
            .token_params
            .keys()
            .find(|k| TOKEN_PARAMS.contains(&k.as_str()))
        {
            return Err(format!(
                "{at} token_params sets `{taken}`, which the token request sets itself; remove it"
            ));
        }
        if self.scopes.iter().any(|s| {
            s.is_empty()
                || !s
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
        }) {
            return Err(format!(
                "{at} scopes must be non-empty words of visible ASCII (RFC 6749 section 3.3)"
            ));
        }
        Ok(())
    }

    /// A table of a flow: `issuer`, or the authorization and token URLs; each URL
    /// https (or loopback http); no `audience`.
    fn check_endpoints(&self, at: &str) -> Result<(), String> {
        if self.audience.is_some() {
            return Err(format!(
                "{at} audience is for token_exchange = true (an exchanged token's audience)"
            ));
        }
        match (&self.issuer, &self.authorization_url, &self.token_url) {
            // Found from the service's protected resource metadata (an MCP server).
            (None, None, None) => {}
            (Some(_), None, None) => {}
            (None, Some(_), Some(_)) if self.client_id.is_none() => {
                return Err(format!(
                    "{at} gives the endpoints by URL and no client_id: give the client id registered there (registering by itself needs `issuer`, whose metadata names the registration endpoint)"
                ));
            }
            (None, Some(_), Some(_)) => {}
            (Some(_), _, _) => {
                return Err(format!(
                    "{at} gives both `issuer` and endpoint URLs: give `issuer` (the endpoints come from its metadata) or `authorization_url` and `token_url`, not both"
                ));
            }
            _ => {
                return Err(format!(
                    "{at} needs `issuer`, or both `authorization_url` and `token_url` (or neither, for an MCP server that names its authorization server)"
                ));
            }
        }
        for (name, url) in [
            ("issuer", &self.issuer),
            ("authorization_url", &self.authorization_url),
            ("token_url", &self.token_url),
            ("revocation_url", &self.revocation_url),
        ] {
            if let Some(url) = url {
                check_url(url).map_err(|e| format!("{at} {name} `{url}`: {e}"))?;
            }
        }
        Ok(())
    }

    /// A table with `token_exchange = true`: the token endpoint (by `issuer` or
    /// `token_url`), no authorization endpoint (nobody consents: the caller's token is
    /// exchanged), an audience or scopes to ask for.
    fn check_exchange(&self, at: &str) -> Result<(), String> {
        if self.authorization_url.is_some() || self.revocation_url.is_some() {
            return Err(format!(
                "{at} token_exchange = true exchanges each call's token at the token endpoint: it has no authorization_url or revocation_url"
            ));
        }
        match (&self.issuer, &self.token_url) {
            (Some(_), None) | (None, Some(_)) => {}
            _ => {
                return Err(format!(
                    "{at} token_exchange = true needs `issuer` (the broker's own [oauth] issuer) or `token_url`, one of them"
                ));
            }
        }
        if self.client_id.is_none() {
            return Err(format!(
                "{at} token_exchange = true needs the broker's client_id at its identity provider"
            ));
        }
        if self.audience.is_none() && self.scopes.is_empty() {
            return Err(format!(
                "{at} token_exchange = true needs `audience` or `scopes`: what the exchanged token is for"
            ));
        }
        for (name, url) in [("issuer", &self.issuer), ("token_url", &self.token_url)] {
            if let Some(url) = url {
                check_url(url).map_err(|e| format!("{at} {name} `{url}`: {e}"))?;
            }
        }
        Ok(())
    }

    /// Whether the endpoints are found from the service's protected resource metadata
    /// (RFC 9728): no issuer, no URLs.
    pub fn discovers(&self) -> bool {
        !self.token_exchange
            && self.issuer.is_none()
            && self.authorization_url.is_none()
            && self.token_url.is_none()
    }

    /// The skew in milliseconds.
    pub fn skew_ms(&self) -> i64 {
        let seconds = self
            .refresh_skew_seconds
            .unwrap_or(DEFAULT_REFRESH_SKEW_SECONDS)
            .min(86_400);
        i64::try_from(seconds).unwrap_or(86_400) * 1000
    }
}

/// A provider URL: absolute, https, or http to a loopback host (a provider on the
/// same machine); no fragment.
fn check_url(text: &str) -> Result<(), String> {
    let url = url::Url::parse(text).map_err(|e| e.to_string())?;
    if url.fragment().is_some() {
        return Err("has a fragment".into());
    }
    let loopback = matches!(
        url.host(),
        Some(url::Host::Ipv4(a)) if a.is_loopback()
    ) || matches!(url.host(), Some(url::Host::Ipv6(a)) if a.is_loopback())
        || url.host_str() == Some("localhost");
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err("must be https (http only to a loopback address)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ConnectConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_table_is_checked_before_the_network() {
        let ok = parse(
            "authorization_url = \"https://a.example/authorize\"\ntoken_url = \"https://a.example/token\"\nclient_id = \"c\"",
        );
        assert_eq!(ok.check("crm"), Ok(()));
        assert_eq!(ok.token_placement, TokenPlacement::Bearer);
        assert_eq!(ok.skew_ms(), 60_000);
        let cases = [
            (
                "issuer = \"https://a.example\"\ntoken_url = \"https://a.example/t\"\nclient_id = \"c\"",
                "not both",
            ),
            (
                "token_url = \"https://a.example/t\"\nclient_id = \"c\"",
                "needs `issuer`",
            ),
            (
                "authorization_url = \"https://a.example/a\"\ntoken_url = \"https://a.example/t\"",
                "no client_id",
            ),
            (
                "issuer = \"http://a.example\"\nclient_id = \"c\"",
                "must be https",
            ),
            (
                "issuer = \"https://a.example\"\nclient_id = \" \"",
                "client_id is empty",
            ),
            (
                "issuer = \"https://a.example\"\nclient_id = \"c\"\nauthorization_params = { state = \"x\" }",
                "sets `state`",
            ),
            (
                "issuer = \"https://a.example\"\nclient_id = \"c\"\nscopes = [\"a b\"]",
                "scopes must be",
            ),
        ];
        for (text, expected) in cases {
            let error = parse(text).check("crm").unwrap_err();
            assert!(
                error.starts_with("[connect.crm]") && error.contains(expected),
                "{error}"
            );
        }
        assert_eq!(
            parse("issuer = \"http://127.0.0.1:9/\"\nclient_id = \"c\"").check("crm"),
            Ok(())
        );
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(
            toml::from_str::<ConnectConfig>("client_id = \"c\"\nclient_secret = \"x\"").is_err()
        );
    }
}
