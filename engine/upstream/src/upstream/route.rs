//! Where a service's requests go and with which key: each service's base URL (the
//! environment, then `[upstreams]`, then the catalog), the deployment's server-side keys
//! and routing profiles, and the caller's own key read from its credential header. Also
//! the secrets an answer is searched for: every key the broker holds, and the keys a
//! request's headers carry. Keys never leave this struct except to be attached
//! ([`super::Target`]) or searched for.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::catalog::diag::did_you_mean;
use crate::catalog::rules::Redaction;
use crate::catalog::{Catalog, Tool};
use crate::config::ConfigFile;
use crate::error::{CallError, Classification};

/// Base URLs and keys per service, built once from the config and the environment.
pub struct Routes {
    base_urls: BTreeMap<String, String>,
    server_keys: BTreeMap<String, String>,
    /// Routing profiles: `(service, id, slug, key)`; keys never leave the broker.
    profiles: Vec<(String, String, String, String)>,
    /// The keys the broker itself holds (server-side, callback and routing-profile
    /// keys), gathered once: every answer is searched for them ([`Routes::secrets`]).
    held_secrets: Vec<String>,
    /// The headers that carry callers' upstream keys, one entry per name, each with
    /// whether its name is credential-like by the redaction rules (decided once).
    credential_headers: Vec<(hyper::header::HeaderName, bool)>,
    /// A bit per length of those names ([`length_bit`]): most headers of a request
    /// have none of these lengths and are compared with none of the names.
    credential_lengths: u64,
    /// Whether `Authorization` is credential-like by the redaction rules.
    authorization_secret: bool,
}

impl std::fmt::Debug for Routes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routes")
            .field("base_urls", &self.base_urls)
            .field("server_keys", &self.server_keys.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Routes {
    /// Reads base URLs (`TOOL_BROKER_UPSTREAM_<SERVICE>`, `[upstreams]`, the catalog),
    /// server-side keys and routing profiles. `other_secrets` are keys held elsewhere
    /// (callback secrets) that answers are searched for too.
    pub fn new<'s>(
        catalog: &Catalog,
        config: &ConfigFile,
        env: &dyn Fn(&str) -> Option<String>,
        other_secrets: impl Iterator<Item = &'s str>,
    ) -> Result<Self, String> {
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
            .cloned()
            .chain(other_secrets.map(str::to_owned))
            .chain(profiles.iter().map(|p| p.3.clone()))
            .collect();
        Ok(Self {
            base_urls,
            server_keys,
            profiles,
            held_secrets,
            credential_headers,
            credential_lengths,
            authorization_secret,
        })
    }

    /// The base URL in effect for a service.
    pub fn base_url(&self, service: &str) -> Option<&str> {
        self.base_urls.get(service).map(String::as_str)
    }

    /// The upstream key for a service: the caller's BYOK header, else a server-side key.
    pub fn upstream_key<'a>(
        &'a self,
        catalog: &Catalog,
        service: &str,
        headers: &'a hyper::HeaderMap,
    ) -> Option<&'a str> {
        let service = catalog.services.get(service)?;
        service.credential.as_ref()?;
        self.caller_key(service, headers)
            .or_else(|| self.server_key(service))
    }

    /// The key a caller's credential header carries for `service`, if any.
    pub fn caller_key<'a>(
        &self,
        service: &crate::catalog::Service,
        headers: &'a hyper::HeaderMap,
    ) -> Option<&'a str> {
        headers
            .get(service.headers.caller_key.as_ref()?)
            .and_then(|v| v.to_str().ok())
            .and_then(caller_key)
    }

    /// The deployment's server-side key for `service`, where its catalog entry allows one.
    pub fn server_key(&self, service: &crate::catalog::Service) -> Option<&str> {
        service
            .credential
            .as_ref()
            .is_some_and(|c| c.server_side)
            .then(|| self.server_keys.get(&service.id).map(String::as_str))
            .flatten()
    }

    /// The server-side key a call's routing profile names (`profileId` / `profileSlug`),
    /// for services whose credential routes by profile. The caller's key must list the
    /// profile; a profile the deployment does not have is `not_configured`.
    pub fn profile_key(
        &self,
        catalog: &Catalog,
        tool: &Tool,
        args: &Map<String, Value>,
        allowed: &[String],
    ) -> Result<Option<&str>, CallError> {
        let Some(names) = catalog
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
        if !allowed
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
    pub fn secrets<'a>(
        &'a self,
        redaction: &Redaction,
        headers: &'a hyper::HeaderMap,
    ) -> Vec<&'a str> {
        // Room for the held keys and a request's few credential headers, allocated once.
        let mut out: Vec<&str> = Vec::with_capacity(self.held_secrets.len() + 8);
        out.extend(self.held_secrets.iter().map(String::as_str));
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
}

/// The bit of a header name's length in [`Routes::credential_lengths`] (63 for every
/// name of 63 bytes or more).
fn length_bit(name: &str) -> u64 {
    1 << name.len().min(63)
}

/// The upstream key a credential header's value holds: trimmed, and none when blank.
fn caller_key(value: &str) -> Option<&str> {
    Some(value.trim()).filter(|key| !key.is_empty())
}
