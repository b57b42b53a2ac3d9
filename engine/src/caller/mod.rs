//! Who calls, and what they may use: bearer tokens checked against sha256 hashes in
//! constant time, each mapped to a [`Principal`] with the services, tiers and risks it
//! may use (here); which browser origins may call (`origin`); what verifies an
//! upstream's callbacks (`callbacks`).
//!
//! May import: the catalog, config and [`crate::error`].

pub mod callbacks;
pub mod origin;

use std::collections::BTreeSet;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::catalog::Tool;
use crate::catalog::descriptor::{Risk, Tier};
use crate::config::KeyEntry;
use crate::error::{CallError, Classification};

/// Who is calling and what they may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
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
}

impl Principal {
    /// A principal allowed everything, listing the default toolset.
    pub fn unrestricted(name: &str) -> Self {
        Self {
            name: name.to_string(),
            services: None,
            tiers: None,
            risks: None,
            profiles: Vec::new(),
            toolset: crate::config::Toolset::default(),
            confirmation: crate::config::WriteConfirmation::Flag,
        }
    }

    /// Refuses a tool this principal may not use, or one not exposed, with `forbidden`.
    pub fn check(&self, tool: &Tool) -> Result<(), CallError> {
        if !tool.exposed {
            return Err(CallError::new(
                Classification::Forbidden,
                format!(
                    "`{}` is recorded for endpoint coverage but not exposed by this broker",
                    tool.full_name
                ),
            ));
        }
        let deny = |what: String| {
            Err(CallError::new(
                Classification::Forbidden,
                format!("this API key may not use {what}; ask the broker's operator to allow it"),
            ))
        };
        if self
            .services
            .as_ref()
            .is_some_and(|s| !s.contains(&tool.service))
        {
            return deny(format!("the `{}` service", tool.service));
        }
        if self.tiers.as_ref().is_some_and(|t| !t.contains(&tool.tier)) {
            return deny(format!("`{}` tools", tool.tier.as_str()));
        }
        if self.risks.as_ref().is_some_and(|r| !r.contains(&tool.risk)) {
            return deny(format!("`{}` tools", tool.risk.as_str()));
        }
        Ok(())
    }
}

/// The configured keys.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    entries: Vec<([u8; 32], Principal)>,
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
                    if !catalog.services.contains_key(id) {
                        return Err(format!(
                            "config {place} names `{id}`, which is not a catalog service{}",
                            crate::catalog::diag::did_you_mean(
                                id,
                                catalog.services.keys().map(String::as_str)
                            )
                            .map(|h| format!("; {h}"))
                            .unwrap_or_default()
                        ));
                    }
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
            keys.entries.push((
                hash,
                Principal {
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
                },
            ));
        }
        Ok(keys)
    }

    /// Adds an unrestricted key given in clear (from `TOOL_BROKER_API_KEY` or generated).
    pub fn add_plain(&mut self, name: &str, token: &str) {
        let principal = Principal {
            toolset: self.default_toolset.clone(),
            confirmation: self.default_confirmation,
            ..Principal::unrestricted(name)
        };
        self.entries.push((hash_token(token), principal));
    }

    /// Whether no key is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks an `Authorization` header value; every stored hash is compared, in
    /// constant time, whatever matches.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<&Principal, CallError> {
        let unauthorized = |m: &str| Err(CallError::new(Classification::Unauthorized, m));
        let Some(value) = authorization else {
            return unauthorized("missing `Authorization: Bearer <API key>` header");
        };
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .map(str::trim)
            .unwrap_or("");
        if token.is_empty() {
            return unauthorized("the `Authorization` header must be `Bearer <API key>`");
        }
        let hash = hash_token(token);
        let mut found = None;
        for (stored, principal) in &self.entries {
            if bool::from(stored.ct_eq(&hash)) && found.is_none() {
                found = Some(principal);
            }
        }
        match found {
            Some(p) => Ok(p),
            None => unauthorized("unknown API key"),
        }
    }
}

/// A fresh random API key, `tb_` + 48 hex digits.
pub fn generate_key() -> Result<String, String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness available: {e}"))?;
    Ok(format!("tb_{}", crate::catalog::identity::hex(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authenticates_by_hash_only() {
        let mut keys = Keys::default();
        keys.add_plain("a", "secret-one");
        assert!(keys.authenticate(Some("Bearer secret-one")).is_ok());
        assert!(keys.authenticate(Some("Bearer secret-two")).is_err());
        assert!(keys.authenticate(Some("secret-one")).is_err());
        assert!(keys.authenticate(None).is_err());
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
        assert!(keys.authenticate(Some("Bearer tb_env_key")).is_ok());
        let none = Keys::new(&config, &catalog, &|_| None).unwrap();
        assert!(none.authenticate(Some("Bearer tb_env_key")).is_err());
    }
}
