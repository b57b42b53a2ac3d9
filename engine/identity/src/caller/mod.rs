//! Who calls, and what they may use ([`Callers`]): static keys, checked against sha256
//! hashes in constant time (here), and users with OAuth access tokens (`oauth`), each
//! mapped to a [`Caller`] with the services, tiers and risks it may use; which
//! browser origins may call (`origin`); what verifies an upstream's callbacks
//! (`callbacks`).
//!
//! May import: the catalog, config and [`crate::error`].

pub mod callbacks;
pub mod oauth;
pub mod origin;

use std::collections::BTreeSet;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::catalog::Tool;
use crate::catalog::descriptor::{Risk, Tier};
use crate::config::KeyEntry;
use crate::error::{CallError, Classification};

/// Who is calling and what they may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Name for logs.
    pub name: String,
    /// Allowed services (`None`: all).
    pub services: Option<BTreeSet<String>>,
    /// Allowed tiers (`None`: all).
    pub tiers: Option<BTreeSet<Tier>>,
    /// Allowed risks (`None`: all).
    pub risks: Option<BTreeSet<Risk>>,
    /// Profiles this caller may route to.
    pub profiles: Vec<String>,
    /// What MCP `tools/list` shows this caller.
    pub toolset: crate::config::Toolset,
    /// Who confirms this caller's writes.
    pub confirmation: crate::config::WriteConfirmation,
    /// The person behind an access token (`None` for a key).
    pub user: Option<User>,
    /// What the access token's scopes allow (`None` for a key: nothing narrows it).
    pub scopes: Option<oauth::scopes::Scopes>,
    /// Further permission sets (a user's other roles): a tool any of them allows is
    /// allowed too.
    pub other_grants: Vec<Grant>,
    /// The roles policies see it in (`Role::"<role>"`): a key's `roles`, a user's roles
    /// claim and the default role when it applied.
    pub roles: Vec<String>,
    /// The access token's claims `[policy]` names, as the user's attributes in policies
    /// (empty for a key).
    pub claims: Vec<(String, Claim)>,
}

/// A claim's value as a policy reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// A string claim (`String` in policies).
    One(String),
    /// An array of strings (`Set<String>` in policies).
    Many(Vec<String>),
}

/// The person an access token names: issuer and subject, never the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// `iss`.
    pub issuer: String,
    /// `sub`.
    pub subject: String,
}

impl Caller {
    /// A caller allowed everything, listing the default toolset.
    pub fn unrestricted(name: &str) -> Self {
        Self {
            name: name.to_string(),
            services: None,
            tiers: None,
            risks: None,
            profiles: Vec::new(),
            toolset: crate::config::Toolset::default(),
            confirmation: crate::config::WriteConfirmation::Flag,
            user: None,
            scopes: None,
            other_grants: Vec::new(),
            roles: Vec::new(),
            claims: Vec::new(),
        }
    }

    /// Refuses a tool this caller may not use, or one not exposed, with `forbidden`;
    /// one the access token's scopes do not cover with `forbidden` and a step-up
    /// challenge.
    pub fn check(&self, tool: &Tool) -> Result<(), CallError> {
        self.check_permission(tool)?;
        match &self.scopes {
            Some(scopes) => scopes.check(tool),
            None => Ok(()),
        }
    }

    /// Whether this caller sees a tool in lists and searches: its permission set
    /// allows it. Scopes are not asked: a client sees a write tool and steps up when it
    /// calls it.
    pub fn may_see(&self, tool: &Tool) -> bool {
        self.check_permission(tool).is_ok()
    }

    /// The permission set alone (exposure, services, tiers, risks), not the scopes.
    pub fn check_permission(&self, tool: &Tool) -> Result<(), CallError> {
        if !tool.exposed {
            return Err(CallError::new(
                Classification::Forbidden,
                format!(
                    "`{}` is recorded for endpoint coverage but not exposed by this broker",
                    tool.full_name
                ),
            ));
        }
        let denied = match self.denial(tool) {
            None => return Ok(()),
            Some(what) => what,
        };
        // A user with several roles may use what any one of them allows.
        if self.other_grants.iter().any(|g| g.denial(tool).is_none()) {
            return Ok(());
        }
        Err(CallError::new(
            Classification::Forbidden,
            format!(
                "this {} may not use {denied}; ask the broker's operator to allow it",
                if self.user.is_some() {
                    "user"
                } else {
                    "API key"
                }
            ),
        ))
    }

    /// Whether any of this caller's permission sets allows a service.
    pub fn may_use_service(&self, service: &str) -> bool {
        let allows = |s: &Option<BTreeSet<String>>| s.as_ref().is_none_or(|s| s.contains(service));
        allows(&self.services) || self.other_grants.iter().any(|g| allows(&g.services))
    }

    /// What the first permission set denies of a tool (its service, tier or risk).
    fn denial(&self, tool: &Tool) -> Option<String> {
        Grant::denial_of(&self.services, &self.tiers, &self.risks, tool)
    }
}

/// One more permission set of a caller (a user's further roles): services, tiers
/// and risks, `None` meaning all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grant {
    /// Allowed services.
    pub services: Option<BTreeSet<String>>,
    /// Allowed tiers.
    pub tiers: Option<BTreeSet<Tier>>,
    /// Allowed risks.
    pub risks: Option<BTreeSet<Risk>>,
}

impl Grant {
    fn denial(&self, tool: &Tool) -> Option<String> {
        Self::denial_of(&self.services, &self.tiers, &self.risks, tool)
    }

    fn denial_of(
        services: &Option<BTreeSet<String>>,
        tiers: &Option<BTreeSet<Tier>>,
        risks: &Option<BTreeSet<Risk>>,
        tool: &Tool,
    ) -> Option<String> {
        if services
            .as_ref()
            .is_some_and(|s| !s.contains(&tool.service))
        {
            return Some(format!("the `{}` service", tool.service));
        }
        if tiers.as_ref().is_some_and(|t| !t.contains(&tool.tier)) {
            return Some(format!("`{}` tools", tool.tier.as_str()));
        }
        if risks.as_ref().is_some_and(|r| !r.contains(&tool.risk)) {
            return Some(format!("`{}` tools", tool.risk.as_str()));
        }
        None
    }
}

/// The configured keys.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    entries: Vec<([u8; 32], Arc<Caller>)>,
    /// The toolset of keys that name none.
    default_toolset: crate::config::Toolset,
    /// The confirmation mode of keys that name none.
    default_confirmation: crate::config::WriteConfirmation,
}

/// sha256 of a token.
pub fn hash_token(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn parse_hex32(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Refuses a service id the catalog does not have, naming where the config wrote it and
/// the nearest service.
pub(crate) fn known_service(
    place: &str,
    id: &str,
    catalog: &crate::catalog::Catalog,
) -> Result<(), String> {
    if catalog.services.contains_key(id) {
        return Ok(());
    }
    Err(format!(
        "config {place} names `{id}`, which is not a catalog service{}",
        crate::catalog::diag::did_you_mean(id, catalog.services.keys().map(String::as_str))
            .map(|h| format!("; {h}"))
            .unwrap_or_default()
    ))
}

impl Keys {
    /// The caller keys of a deployment: `[[keys]]` of the config, each key's and the
    /// top-level `toolset` checked against the catalog's services, and the key in
    /// `TOOL_BROKER_API_KEY` (read through `env`) when set.
    pub fn new(
        config: &crate::config::ConfigFile,
        catalog: &crate::catalog::Catalog,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let mut keys = Self::from_config(
            &config.keys,
            config.toolset.clone().unwrap_or_default(),
            config.confirmation.unwrap_or_default(),
        )?;
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
                    known_service(&place, id, catalog)?;
                }
            }
        }
        if let Some(token) = env("TOOL_BROKER_API_KEY").filter(|t| !t.is_empty()) {
            keys.add_plain("env:TOOL_BROKER_API_KEY", &token);
        }
        Ok(keys)
    }

    /// Keys from config entries; an entry with a malformed hash is an error. Entries
    /// without a `toolset` list `default_toolset`.
    pub fn from_config(
        entries: &[KeyEntry],
        default_toolset: crate::config::Toolset,
        default_confirmation: crate::config::WriteConfirmation,
    ) -> Result<Self, String> {
        let mut keys = Self {
            entries: Vec::new(),
            default_toolset,
            default_confirmation,
        };
        for e in entries {
            let hash = parse_hex32(&e.sha256.to_ascii_lowercase()).ok_or_else(|| {
                format!(
                    "key `{}`: sha256 must be 64 hex digits (the sha256 of the token)",
                    e.name
                )
            })?;
            if e.name.contains("://") {
                return Err(format!(
                    "key `{}`: a key's name may not hold `://` (users' names are `<issuer>#<subject>`)",
                    e.name
                ));
            }
            keys.entries.push((
                hash,
                Arc::new(Caller {
                    name: e.name.clone(),
                    services: e.services.as_ref().map(|s| s.iter().cloned().collect()),
                    tiers: e.tiers.as_ref().map(|s| s.iter().copied().collect()),
                    risks: e.risks.as_ref().map(|s| s.iter().copied().collect()),
                    profiles: e.profiles.clone(),
                    toolset: e
                        .toolset
                        .clone()
                        .unwrap_or_else(|| keys.default_toolset.clone()),
                    confirmation: e.confirmation.unwrap_or(keys.default_confirmation),
                    user: None,
                    scopes: None,
                    other_grants: Vec::new(),
                    roles: e.roles.clone(),
                    claims: Vec::new(),
                }),
            ));
        }
        Ok(keys)
    }

    /// Adds an unrestricted key given in clear (from `TOOL_BROKER_API_KEY` or generated).
    pub fn add_plain(&mut self, name: &str, token: &str) {
        let caller = Caller {
            toolset: self.default_toolset.clone(),
            confirmation: self.default_confirmation,
            ..Caller::unrestricted(name)
        };
        self.entries.push((hash_token(token), Arc::new(caller)));
    }

    /// Every key's caller (never its hash), in the config's order.
    pub fn callers(&self) -> impl Iterator<Item = &Caller> {
        self.entries.iter().map(|(_, caller)| caller.as_ref())
    }

    /// Whether no key is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The key whose sha256 is `hash`; every stored hash is compared, in constant
    /// time, whatever matches.
    pub fn find(&self, hash: &[u8; 32]) -> Option<&Arc<Caller>> {
        let mut found = None;
        for (stored, caller) in &self.entries {
            if bool::from(stored.ct_eq(hash)) && found.is_none() {
                found = Some(caller);
            }
        }
        found
    }
}

/// Everyone who may call: the static keys and, with `[oauth]`, the users of access
/// tokens.
#[derive(Debug, Default)]
pub struct Callers {
    /// The static keys.
    pub keys: Keys,
    /// Access tokens of the configured issuer (`[oauth]`).
    pub oauth: Option<oauth::OAuth>,
}

impl Callers {
    /// The keys of the config and the environment ([`Keys::new`]) and `[oauth]`.
    pub fn new(
        config: &crate::config::ConfigFile,
        catalog: &crate::catalog::Catalog,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let keys = Keys::new(config, catalog, env)?;
        let oauth = match &config.oauth {
            None => None,
            Some(table) => Some(
                oauth::OAuth::new(
                    table,
                    catalog,
                    config.toolset.clone().unwrap_or_default(),
                    config.confirmation.unwrap_or_default(),
                )?
                .with_policy_claims(config.policy.as_ref()),
            ),
        };
        Ok(Self { keys, oauth })
    }

    /// The 401 challenge for a request without a usable credential.
    fn unauthorized(&self, message: &str, refused: bool) -> CallError {
        let mut err = CallError::new(Classification::Unauthorized, message);
        err.challenge = Some(match &self.oauth {
            Some(oauth) => oauth
                .challenges()
                .unauthorized(refused.then_some("unknown API key or access token")),
            None => "Bearer".to_string(),
        });
        err
    }

    /// Who an `Authorization` header names: a static key (compared by hash in constant
    /// time), else, with `[oauth]`, the user of a verified access token. A missing or
    /// unknown credential is `unauthorized` with its `WWW-Authenticate` challenge.
    pub async fn authenticate(
        &self,
        authorization: Option<&str>,
        now: jiff::Timestamp,
    ) -> Result<Arc<Caller>, CallError> {
        let what = if self.oauth.is_some() {
            "API key or access token"
        } else {
            "API key"
        };
        let Some(value) = authorization else {
            return Err(self.unauthorized(
                &format!("missing `Authorization: Bearer <{what}>` header"),
                false,
            ));
        };
        let token = bearer_token(value).unwrap_or("");
        if token.is_empty() {
            return Err(self.unauthorized(
                &format!("the `Authorization` header must be `Bearer <{what}>`"),
                false,
            ));
        }
        // Three dot-separated parts: a JWT. One verified before is found by its tag
        // first, without the sha256 a key look-up costs (20k instructions on a JWT).
        let jwt = memchr::memchr_iter(b'.', token.as_bytes()).take(3).count() == 2;
        if let Some(oauth) = self.oauth.as_ref().filter(|_| jwt)
            && let Some(caller) = oauth.kept(token, now)
        {
            return Ok(caller);
        }
        if let Some(caller) = self.keys.find(&hash_token(token)) {
            return Ok(Arc::clone(caller));
        }
        match &self.oauth {
            Some(oauth) if jwt => oauth.authenticate(token, now).await,
            _ => Err(self.unauthorized(&format!("unknown {what}"), true)),
        }
    }
}

/// A fresh random API key, `tb_` + 48 hex digits.
pub fn generate_key() -> Result<String, String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness available: {e}"))?;
    Ok(format!("tb_{}", crate::catalog::identity::hex(&bytes)))
}

/// The token of an `Authorization: Bearer <token>` value (the scheme in either case
/// the broker accepts), trimmed; `None` for another scheme.
pub fn bearer_token(value: &str) -> Option<&str> {
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authenticates_by_hash_only() {
        let mut keys = Keys::default();
        keys.add_plain("a", "secret-one");
        assert!(keys.find(&hash_token("secret-one")).is_some());
        assert!(keys.find(&hash_token("secret-two")).is_none());
    }

    #[tokio::test]
    async fn a_missing_or_unknown_credential_is_challenged() {
        let mut callers = Callers::default();
        callers.keys.add_plain("a", "secret-one");
        let now = jiff::Timestamp::now();
        assert!(
            callers
                .authenticate(Some("Bearer secret-one"), now)
                .await
                .is_ok()
        );
        for header in [
            None,
            Some("secret-one"),
            Some("Bearer secret-two"),
            Some("Bearer "),
        ] {
            let err = callers.authenticate(header, now).await.unwrap_err();
            assert_eq!(err.classification, Classification::Unauthorized);
            assert_eq!(err.challenge.as_deref(), Some("Bearer"), "{header:?}");
        }
    }

    #[test]
    fn config_hashes_must_be_hex() {
        let entry = KeyEntry {
            name: "x".into(),
            sha256: "zz".into(),
            services: None,
            tiers: None,
            risks: None,
            profiles: vec![],
            toolset: None,
            confirmation: None,
            roles: vec![],
        };
        assert!(
            Keys::from_config(
                &[entry],
                crate::config::Toolset::default(),
                crate::config::WriteConfirmation::Flag
            )
            .is_err()
        );
    }

    #[test]
    fn a_toolset_must_name_catalog_services_and_the_env_key_is_added() {
        let catalog =
            crate::catalog::compile::compile(&crate::catalog::source::Sources::embedded())
                .unwrap_or_else(|d| panic!("{d}"));
        let config: crate::config::ConfigFile = toml::from_str("toolset = [\"paymnets\"]").unwrap();
        let err = Keys::new(&config, &catalog, &|_| None).unwrap_err();
        assert!(
            err.contains("the top-level `toolset` names `paymnets`") && err.contains("payments"),
            "{err}"
        );
        let config: crate::config::ConfigFile = toml::from_str("toolset = [\"payments\"]").unwrap();
        let env = |name: &str| (name == "TOOL_BROKER_API_KEY").then(|| "tb_env_key".to_string());
        let keys = Keys::new(&config, &catalog, &env).unwrap();
        assert!(keys.find(&hash_token("tb_env_key")).is_some());
        let none = Keys::new(&config, &catalog, &|_| None).unwrap();
        assert!(none.find(&hash_token("tb_env_key")).is_none());
    }
}
