//! The broker as an OAuth 2.1 resource server (decision 011, docs/oauth.md):
//! an access token (a JWT of the configured issuer, for the broker's resource) makes the
//! caller a user, `iss` + `sub`, with the permission set its roles map to, narrowed by
//! its scopes.
//!
//! A token is checked once ([`OAuth::authenticate`]): decoded (`jwt`), its claims
//! checked (`iss` exactly, `aud` naming the resource, `exp` and `nbf` within the
//! leeway, `sub`), its signature verified with the issuer's published key (`jwks`),
//! its scopes read (`scopes`) and its roles mapped. The caller it makes is kept
//! until `exp` under the token's tag (never the token): SipHash-2-4 with 128-bit output
//! and a random key made at start, a pseudo-random function no one without the key can
//! aim a forged token at. A repeated call then costs the tag and a look-up, like a
//! static key's sha256 (a sha256 of a 400-byte JWT costs 20k instructions without SHA
//! extensions, a third of a whole call; bench/HISTORY.md).
//!
//! The token never leaves the broker: nothing here sends it anywhere, logs it or keeps
//! it; its tag, in memory, is the only trace.

pub mod jwks;
pub mod jwt;
pub mod scopes;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value, json};

use self::jwks::{KeySet, NoKey};
use self::jwt::Invalid;
use self::scopes::{Challenges, Scopes};
use super::{Caller, Claim, User};
use crate::config::oauth::{OAuthConfig, RoleEntry};
use crate::config::{Toolset, WriteConfirmation};
use crate::error::{CallError, Classification};

/// The default leeway on `exp` and `nbf`, in seconds.
pub const DEFAULT_LEEWAY_SECONDS: u64 = 30;
/// The most verified tokens kept at once; at this many, expired ones are dropped, and
/// if none has expired, all.
pub const MAX_KEPT: usize = 10_000;
/// The two paths the metadata document is served at: the root form and the form for
/// the `/mcp` endpoint (RFC 9728 section 3.1).
pub const METADATA_PATHS: [&str; 2] = [
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
];

/// A verified token's caller, kept until the token expires.
#[derive(Debug, Clone)]
struct Kept {
    caller: Arc<Caller>,
    /// `exp`, in seconds since the epoch.
    expires: i64,
}

/// Hashes a tag by its first eight bytes: the tag is a keyed PRF's output already.
#[derive(Default)]
struct FirstBytes(u64);

impl Hasher for FirstBytes {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for (i, b) in bytes.iter().take(8).enumerate() {
            self.0 ^= u64::from(*b) << (8 * i);
        }
    }
}

type KeptMap = HashMap<[u8; 16], Kept, BuildHasherDefault<FirstBytes>>;

/// The compiled `[oauth]` table with the issuer's keys and the verified tokens.
pub struct OAuth {
    issuer: String,
    resource: String,
    leeway: i64,
    /// Which header `typ` an access token may have (`accept_plain_jwt`).
    token_types: jwt::AccessTokenTypes,
    roles_claim: String,
    roles: Vec<RoleEntry>,
    default_role: Option<usize>,
    default_toolset: Toolset,
    default_confirmation: WriteConfirmation,
    aliases: BTreeMap<String, String>,
    services: BTreeSet<String>,
    challenges: Arc<Challenges>,
    metadata: String,
    keys: KeySet,
    kept: RwLock<KeptMap>,
    /// The key of the tags verified tokens are kept under.
    tag_key: [u8; 16],
    /// The claims policies read as the user's attributes, each with whether it is a set.
    policy_claims: Vec<(String, bool)>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

/// `scheme://host[:port]` and path of an absolute http(s) URL; `http` only on a
/// loopback host. `what` names the setting in errors.
fn checked_url(url: &str, what: &str) -> Result<(String, String), String> {
    let parsed = url::Url::parse(url)
        .map_err(|e| format!("[oauth] {what} `{url}` is not an absolute URL: {e}"))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => {
            return Err(format!(
                "[oauth] {what} `{url}` must be https (plain http only on a loopback host)"
            ));
        }
    }
    if parsed.fragment().is_some() || parsed.query().is_some() || !parsed.username().is_empty() {
        return Err(format!(
            "[oauth] {what} `{url}` must have no query, fragment or user"
        ));
    }
    let origin = parsed.origin().ascii_serialization();
    Ok((origin, parsed.path().trim_end_matches('/').to_string()))
}

impl OAuth {
    /// Compiles `[oauth]`: URLs checked, roles checked against the catalog's services,
    /// the metadata document written. `default_toolset` and `default_confirmation` are
    /// the deployment's, for roles that name none.
    pub fn new(
        config: &OAuthConfig,
        catalog: &crate::catalog::Catalog,
        default_toolset: Toolset,
        default_confirmation: WriteConfirmation,
    ) -> Result<Self, String> {
        checked_url(&config.issuer, "issuer")?;
        let (origin, path) = checked_url(&config.resource, "resource")?;
        if let Some(uri) = &config.jwks_uri {
            checked_url(uri, "jwks_uri")?;
        }
        let keys_max_age = match config.keys_max_age_seconds {
            None => jwks::MAX_AGE,
            Some(0) => {
                return Err(
                    "[oauth] keys_max_age_seconds is 0: at least 1 (default 3600)".to_string(),
                );
            }
            Some(seconds) => std::time::Duration::from_secs(seconds),
        };
        let leeway = config.leeway_seconds.unwrap_or(DEFAULT_LEEWAY_SECONDS);
        if leeway > 300 {
            return Err(format!(
                "[oauth] leeway_seconds is {leeway}: at most 300 (default {DEFAULT_LEEWAY_SECONDS})"
            ));
        }
        let services: BTreeSet<String> = catalog.services.keys().cloned().collect();
        let supported = config
            .scopes_supported
            .clone()
            .unwrap_or_else(|| vec!["tools:read".into(), "tools:write".into()]);
        for scope in &supported {
            let known = scope.rsplit_once(':').is_some_and(|(owner, kind)| {
                matches!(kind, "read" | "write") && (owner == "tools" || services.contains(owner))
            });
            if !known {
                return Err(format!(
                    "[oauth] scopes_supported names `{scope}`: the broker's scopes are tools:read, tools:write, <service>:read and <service>:write"
                ));
            }
        }
        for (from, to) in &config.scope_aliases {
            if !to.ends_with(":read") && !to.ends_with(":write") {
                return Err(format!(
                    "[oauth] scope_aliases maps `{from}` to `{to}`, which is no broker scope"
                ));
            }
        }
        let mut names = BTreeSet::new();
        for role in &config.roles {
            if !names.insert(role.name.as_str()) {
                return Err(format!("[oauth] role `{}` is configured twice", role.name));
            }
            let named = role.services.iter().flatten().chain(match &role.toolset {
                Some(Toolset::Services(list)) => list.iter(),
                _ => [].iter(),
            });
            for id in named {
                crate::caller::known_service(
                    &format!("[oauth] role `{}`", role.name),
                    id,
                    catalog,
                )?;
            }
        }
        let default_role = match &config.default_role {
            None => None,
            Some(name) => Some(
                config
                    .roles
                    .iter()
                    .position(|r| &r.name == name)
                    .ok_or_else(|| {
                        format!("[oauth] default_role `{name}` is not one of [[oauth.roles]]")
                    })?,
            ),
        };
        // The path-inserted form for the `/mcp` endpoint, else the root form: both are
        // served ([`METADATA_PATHS`]).
        let metadata_url = if path == "/mcp" {
            format!("{origin}{}", METADATA_PATHS[1])
        } else {
            format!("{origin}{}", METADATA_PATHS[0])
        };
        let metadata = json!({
            "resource": config.resource,
            "authorization_servers": [config.issuer],
            "scopes_supported": supported,
            "bearer_methods_supported": ["header"],
            "resource_name": "tool broker",
        })
        .to_string();
        Ok(Self {
            issuer: config.issuer.clone(),
            resource: config.resource.clone(),
            leeway: i64::try_from(leeway).unwrap_or(300),
            roles_claim: config.roles_claim.clone().unwrap_or_else(|| "roles".into()),
            roles: config.roles.clone(),
            default_role,
            default_toolset,
            default_confirmation,
            aliases: config.scope_aliases.clone(),
            services,
            challenges: Arc::new(Challenges {
                metadata_url,
                supported,
            }),
            metadata,
            token_types: if config.accept_plain_jwt {
                jwt::AccessTokenTypes::AlsoPlainJwt
            } else {
                jwt::AccessTokenTypes::AtJwt
            },
            keys: KeySet::new(&config.issuer, config.jwks_uri.as_deref(), keys_max_age)?,
            kept: RwLock::new(KeptMap::default()),
            tag_key: {
                let mut key = [0u8; 16];
                getrandom::fill(&mut key).map_err(|e| format!("no randomness available: {e}"))?;
                key
            },
            policy_claims: Vec::new(),
        })
    }

    /// The claims `[policy]` names become the users' attributes in policies.
    pub fn with_policy_claims(mut self, policy: Option<&crate::config::PolicyConfig>) -> Self {
        if let Some(policy) = policy {
            self.policy_claims = (policy.claims.iter().map(|c| (c.clone(), false)))
                .chain(policy.set_claims.iter().map(|c| (c.clone(), true)))
                .collect();
        }
        self
    }

    /// The attributes of a user in policies: each claim `[policy]` names that the token
    /// holds with the type the schema gives it (a string, or an array of strings);
    /// a claim of another type is left out, as if absent.
    fn policy_attributes(&self, claims: &Map<String, Value>) -> Vec<(String, Claim)> {
        self.policy_claims
            .iter()
            .filter_map(|(name, set)| {
                let value = match (claims.get(name)?, set) {
                    (Value::String(s), false) => Claim::One(s.clone()),
                    (Value::Array(items), true) => Claim::Many(
                        items
                            .iter()
                            .map(|v| v.as_str().map(String::from))
                            .collect::<Option<Vec<_>>>()?,
                    ),
                    _ => return None,
                };
                Some((name.clone(), value))
            })
            .collect()
    }

    /// The issuer identifier, exactly as configured.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The Protected Resource Metadata document (RFC 9728), as JSON text.
    pub fn metadata(&self) -> &str {
        &self.metadata
    }

    /// The challenges of this deployment.
    pub fn challenges(&self) -> &Challenges {
        &self.challenges
    }

    /// Fetches the issuer's keys once (at start, so the first call finds them).
    pub async fn warm(&self) -> bool {
        self.keys.warm().await
    }

    /// A 401 for a refused token, with the challenge saying why.
    fn refused(&self, why: Invalid) -> CallError {
        let description = why.describe();
        let mut err = CallError::new(
            Classification::Unauthorized,
            format!("{description}; sign in again to get a new one"),
        );
        err.challenge = Some(self.challenges.unauthorized(Some(&description)));
        err
    }

    /// The tag a verified token is kept under.
    fn tag(&self, token: &str) -> [u8; 16] {
        use std::hash::Hasher as _;
        let mut hasher = siphasher::sip128::SipHasher24::new_with_key(&self.tag_key);
        hasher.write(token.as_bytes());
        siphasher::sip128::Hasher128::finish128(&hasher).as_bytes()
    }

    /// The caller of a token verified before and not expired.
    pub fn kept(&self, token: &str, now: jiff::Timestamp) -> Option<Arc<Caller>> {
        self.kept_by(&self.tag(token), now.as_second())
    }

    fn kept_by(&self, tag: &[u8; 16], now: i64) -> Option<Arc<Caller>> {
        let kept = self.kept.read().ok()?;
        let entry = kept.get(tag)?;
        (now < entry.expires.saturating_add(self.leeway)).then(|| Arc::clone(&entry.caller))
    }

    fn keep(&self, tag: [u8; 16], caller: Arc<Caller>, expires: i64, now: i64) {
        let Ok(mut kept) = self.kept.write() else {
            return;
        };
        if kept.len() >= MAX_KEPT {
            let leeway = self.leeway;
            kept.retain(|_, e| now < e.expires.saturating_add(leeway));
            if kept.len() >= MAX_KEPT {
                kept.clear();
            }
        }
        kept.insert(tag, Kept { caller, expires });
    }

    /// The user an access token names, or why not: `unauthorized` (401) for a token
    /// that does not verify, `forbidden` (403, step-up) for one without any broker
    /// scope, `upstream_unavailable` when the issuer's keys cannot be had.
    pub async fn authenticate(
        &self,
        token: &str,
        now: jiff::Timestamp,
    ) -> Result<Arc<Caller>, CallError> {
        let now = now.as_second();
        let tag = self.tag(token);
        if let Some(caller) = self.kept_by(&tag, now) {
            return Ok(caller);
        }
        let decoded = jwt::decode(token).map_err(|e| self.refused(e))?;
        decoded
            .check_access_token(self.token_types)
            .map_err(|e| self.refused(e))?;
        let expires = self
            .check_claims(&decoded.claims, now)
            .map_err(|e| self.refused(e))?;
        let keys = self.keys.keys_for(&decoded).await.map_err(|e| match e {
            NoKey::Unknown => self.refused(Invalid::UnknownKey),
            NoKey::Unavailable => {
                let mut err = CallError::new(
                    Classification::UpstreamUnavailable,
                    "the broker cannot fetch its authorization server's keys to check this access token; retry shortly",
                );
                err.retry_after_seconds = Some(5);
                err
            }
        })?;
        if !keys.iter().any(|k| k.verifies(&decoded)) {
            return Err(self.refused(Invalid::Signature));
        }
        let caller = Arc::new(self.caller(&decoded.claims)?);
        self.keep(tag, Arc::clone(&caller), expires, now);
        Ok(caller)
    }

    /// `iss`, `aud`, `exp`, `nbf` and `sub`; gives `exp`.
    fn check_claims(&self, claims: &Map<String, Value>, now: i64) -> Result<i64, Invalid> {
        if claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Err(Invalid::Issuer);
        }
        let audience = match claims.get("aud") {
            Some(Value::String(aud)) => aud == &self.resource,
            Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(&self.resource)),
            _ => false,
        };
        if !audience {
            return Err(Invalid::Audience);
        }
        let seconds = |name: &'static str| match claims.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .or_else(|| v.as_f64().map(|f| f as i64))
                .map(Some)
                .ok_or(Invalid::Claim(name)),
        };
        let expires = seconds("exp")?.ok_or(Invalid::Claim("exp"))?;
        if now >= expires.saturating_add(self.leeway) {
            return Err(Invalid::Expired);
        }
        if let Some(nbf) = seconds("nbf")?
            && now.saturating_add(self.leeway) < nbf
        {
            return Err(Invalid::NotYetValid);
        }
        match claims.get("sub").and_then(Value::as_str) {
            Some(sub) if !sub.is_empty() && sub.len() <= 255 => Ok(expires),
            _ => Err(Invalid::Claim("sub")),
        }
    }

    /// The role names a token's claims hold (the roles claim, a dotted path followed
    /// when no claim has the whole name), configured or not.
    pub fn role_names(&self, claims: &Map<String, Value>) -> Vec<String> {
        let value = claims.get(&self.roles_claim).or_else(|| {
            let mut parts = self.roles_claim.split('.');
            let first = claims.get(parts.next()?)?;
            parts.try_fold(first, |v, part| v.get(part))
        });
        match value {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            Some(Value::String(text)) => text.split_ascii_whitespace().map(String::from).collect(),
            _ => Vec::new(),
        }
    }

    /// The configured roles among `names`, else the default role.
    fn roles_named(&self, names: &[String]) -> Vec<&RoleEntry> {
        let mut roles: Vec<&RoleEntry> = self
            .roles
            .iter()
            .filter(|r| names.contains(&r.name))
            .collect();
        if roles.is_empty()
            && let Some(role) = self.default_role.and_then(|i| self.roles.get(i))
        {
            roles.push(role);
        }
        roles
    }

    /// The caller of a person signed in to the hub's pages (no access token, so no
    /// scopes): the user and what their roles allow.
    pub fn signed_in_caller(&self, subject: &str, role_names: &[String]) -> Caller {
        let roles = self.roles_named(role_names);
        let policy_roles = policy_roles(role_names.to_vec(), &roles);
        let mut caller = self.with_roles(subject, roles, None);
        caller.roles = policy_roles;
        caller
    }

    /// Checks an OpenID Connect ID token issued to `client_id` (the hub's sign-in):
    /// signature by the issuer's keys, `iss`, `aud` (and `azp` when several audiences),
    /// `exp`, `nbf`, `sub`. Gives its claims; the caller checks `nonce`.
    pub async fn verify_id_token(
        &self,
        token: &str,
        client_id: &str,
        now: jiff::Timestamp,
    ) -> Result<Map<String, Value>, String> {
        let decoded = jwt::decode(token).map_err(Invalid::describe)?;
        let claims = &decoded.claims;
        let audiences: Vec<&str> = match claims.get("aud") {
            Some(Value::String(aud)) => vec![aud.as_str()],
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !audiences.contains(&client_id) {
            return Err("the ID token was issued to another client".into());
        }
        if audiences.len() > 1 && claims.get("azp").and_then(Value::as_str) != Some(client_id) {
            return Err("the ID token names several audiences and another authorized party".into());
        }
        // `aud` is checked above; the rest as for an access token.
        let mut as_access = claims.clone();
        as_access.insert("aud".into(), Value::String(self.resource.clone()));
        self.check_claims(&as_access, now.as_second())
            .map_err(Invalid::describe)?;
        let keys = self
            .keys
            .keys_for(&decoded)
            .await
            .map_err(|_| "the identity provider's keys cannot be had".to_string())?;
        if !keys.iter().any(|k| k.verifies(&decoded)) {
            return Err(Invalid::Signature.describe());
        }
        Ok(decoded.claims)
    }

    /// The caller of verified claims: the user, the roles' permission set (the
    /// union of the roles named, else the default role, else everything), the scopes.
    fn caller(&self, claims: &Map<String, Value>) -> Result<Caller, CallError> {
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let names = self.role_names(claims);
        let roles = self.roles_named(&names);
        let policy_roles = policy_roles(names, &roles);
        let scopes = Scopes::from_claims(
            claims,
            &self.aliases,
            &|s| self.services.contains(s),
            Arc::clone(&self.challenges),
        );
        if scopes.is_empty() {
            return Err(scopes.none_held());
        }
        let mut caller = self.with_roles(subject, roles, Some(scopes));
        caller.roles = policy_roles;
        caller.claims = self.policy_attributes(claims);
        Ok(caller)
    }

    /// The caller of a user with these roles and scopes.
    fn with_roles(&self, subject: &str, roles: Vec<&RoleEntry>, scopes: Option<Scopes>) -> Caller {
        let mut caller = Caller {
            name: format!("{}#{subject}", self.issuer),
            toolset: self.default_toolset.clone(),
            confirmation: self.default_confirmation,
            user: Some(User {
                issuer: self.issuer.clone(),
                subject: subject.to_string(),
            }),
            scopes,
            ..Caller::unrestricted("")
        };
        if roles.is_empty() {
            return caller;
        }
        // The first role's permission set, then each other's: a tool any allows.
        let set = |list: Option<&Vec<String>>| list.map(|l| l.iter().cloned().collect());
        let grants: Vec<crate::caller::Grant> = roles
            .iter()
            .map(|r| crate::caller::Grant {
                services: set(r.services.as_ref()),
                tiers: r.tiers.as_ref().map(|l| l.iter().copied().collect()),
                risks: r.risks.as_ref().map(|l| l.iter().copied().collect()),
            })
            .collect();
        let mut grants = grants.into_iter();
        if let Some(first) = grants.next() {
            caller.services = first.services;
            caller.tiers = first.tiers;
            caller.risks = first.risks;
        }
        caller.other_grants = grants.collect();
        let mut profiles: Vec<String> = roles.iter().flat_map(|r| r.profiles.clone()).collect();
        profiles.sort();
        profiles.dedup();
        caller.profiles = profiles;
        if let Some(toolset) = roles.iter().find_map(|r| r.toolset.clone()) {
            caller.toolset = toolset;
        }
        // The strictest confirmation of the roles named.
        caller.confirmation = roles
            .iter()
            .map(|r| r.confirmation.unwrap_or(self.default_confirmation))
            .max_by_key(|c| match c {
                WriteConfirmation::Flag => 0,
                WriteConfirmation::Bound => 1,
                WriteConfirmation::Human => 2,
            })
            .unwrap_or(self.default_confirmation);
        caller
    }
}

/// The roles a user has in policies: every name of the roles claim and the configured
/// roles that applied (the default role when none was named), sorted, once each.
fn policy_roles(mut names: Vec<String>, applied: &[&RoleEntry]) -> Vec<String> {
    names.extend(applied.iter().map(|r| r.name.clone()));
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(table: &str) -> Result<OAuth, String> {
        let catalog =
            crate::catalog::compile::compile(&crate::catalog::source::Sources::embedded())
                .unwrap_or_else(|d| panic!("{d}"));
        let config: crate::config::ConfigFile = toml::from_str(table).unwrap();
        OAuth::new(
            config.oauth.as_ref().unwrap(),
            &catalog,
            Toolset::default(),
            WriteConfirmation::Flag,
        )
    }

    #[test]
    fn the_table_is_checked_and_says_what_is_wrong() {
        let head = "[oauth]\nissuer = \"https://idp.example.com\"\nresource = \"https://b.example.com/mcp\"\n";
        let ok = compile(head).unwrap();
        assert_eq!(
            ok.challenges().metadata_url,
            "https://b.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert!(
            ok.metadata()
                .contains("\"bearer_methods_supported\":[\"header\"]")
        );
        for (table, expected) in [
            (
                "[oauth]\nissuer = \"http://idp.example.com\"\nresource = \"https://b.example.com/mcp\"\n",
                "must be https (plain http only on a loopback host)",
            ),
            (
                "[oauth]\nissuer = \"https://idp.example.com\"\nresource = \"https://b.example.com/mcp#x\"\n",
                "no query, fragment or user",
            ),
            (
                &format!("{head}scopes_supported = [\"files:read\"]\n"),
                "names `files:read`",
            ),
            (
                &format!("{head}default_role = \"admin\"\n"),
                "default_role `admin`",
            ),
            (
                &format!("{head}[[oauth.roles]]\nname = \"a\"\nservices = [\"paymnets\"]\n"),
                "`paymnets`, which is not a catalog service",
            ),
            (&format!("{head}leeway_seconds = 3600\n"), "at most 300"),
        ] {
            let err = compile(table).err().unwrap_or_default();
            assert!(err.contains(expected), "{table}: {err}");
        }
        let loopback =
            "[oauth]\nissuer = \"http://127.0.0.1:9000\"\nresource = \"http://localhost:8080/\"\n";
        assert_eq!(
            compile(loopback).unwrap().challenges().metadata_url,
            "http://localhost:8080/.well-known/oauth-protected-resource"
        );
    }
}
