//! Upstream callers: what verifies each service's callbacks at run time (the
//! deployment's bearer secret, or the upstream's RSA public key, configured as PEM or
//! fetched with the catalog's `public_key` tool using an API key the deployment gives).
//!
//! A callback never causes an upstream call: a fetched key is fetched by a background
//! task (`webhook::keys::spawn_refresh`, broker-core); until it arrives, callbacks are
//! answered 503 and the upstream retries them. Secrets and API keys stay here; only
//! booleans leave.

use std::collections::BTreeMap;
use std::sync::RwLock;

use base64::Engine as _;

use crate::catalog::Catalog;
use crate::catalog::descriptor::WebhookScheme;
use crate::config::WebhookSecret;

/// One service's verification material.
pub enum Proof {
    /// The shared secret.
    Bearer(String),
    /// An RSA public key (DER), configured or fetched.
    Rsa {
        /// The key in use, once known.
        key: RwLock<Option<Vec<u8>>>,
        /// The API key that fetches it (absent when the key is configured).
        fetch_with: Option<String>,
    },
}

/// One service's receiver settings.
pub struct Receiver {
    /// What verifies its callbacks.
    pub proof: Proof,
    /// The callback URL as registered upstream, when configured.
    pub url: Option<String>,
}

/// Receivers per service id.
#[derive(Default)]
pub struct Receivers(BTreeMap<String, Receiver>);

/// Reads a PEM public key (`BEGIN PUBLIC KEY` or `BEGIN RSA PUBLIC KEY`) into DER and
/// checks that it is an RSA key. The error never quotes the input.
pub fn pem_to_der(pem: &str) -> Result<Vec<u8>, String> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body.as_bytes())
        .map_err(|_| "the public key is not PEM (base64 between BEGIN/END lines)".to_string())?;
    aws_lc_rs::rsa::PublicKey::from_der(&der)
        .map_err(|_| "the public key is not an RSA public key".to_string())?;
    Ok(der)
}

impl Receivers {
    /// Builds the receivers from `[webhook_secrets]`; `env` reads the variables. A
    /// setting that cannot work is an error naming the service and the fix.
    pub fn build(
        catalog: &Catalog,
        config: &BTreeMap<String, WebhookSecret>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let mut out = BTreeMap::new();
        for (id, source) in config {
            let Some(webhook) = catalog.services.get(id).and_then(|s| s.webhook.as_ref()) else {
                return Err(format!(
                    "config [webhook_secrets] names `{id}`, whose catalog entry has no [webhook]"
                ));
            };
            let read = |name: &str| env(name).filter(|v| !v.trim().is_empty());
            if let Some(url) = &source.url
                && !(url.starts_with("https://") || url.starts_with("http://"))
            {
                return Err(format!(
                    "config [webhook_secrets.{id}] url must be the absolute http(s) URL registered upstream"
                ));
            }
            let proof = match webhook.spec.scheme {
                WebhookScheme::Bearer => {
                    if source.public_key_env.is_some() || source.api_key_env.is_some() {
                        return Err(format!(
                            "config [webhook_secrets.{id}]: the {id} catalog verifies callbacks by a shared secret; set `env` only"
                        ));
                    }
                    let Some(variable) = &source.env else {
                        return Err(format!(
                            "config [webhook_secrets.{id}] needs `env`, the variable holding the callback secret"
                        ));
                    };
                    match read(variable) {
                        Some(secret) => Proof::Bearer(secret),
                        None => {
                            tracing::warn!(service = %id, variable = %variable, "webhook secret variable is empty; callbacks are refused");
                            continue;
                        }
                    }
                }
                WebhookScheme::RsaSha256 => {
                    if source.env.is_some() {
                        return Err(format!(
                            "config [webhook_secrets.{id}]: the {id} catalog verifies RSA signatures; set `public_key_env` (a PEM key) or `api_key_env` (to fetch it), not `env`"
                        ));
                    }
                    let configured = match &source.public_key_env {
                        Some(variable) => match read(variable) {
                            Some(pem) => Some(pem_to_der(&pem).map_err(|e| {
                                format!(
                                    "config [webhook_secrets.{id}] public_key_env `{variable}`: {e}"
                                )
                            })?),
                            None => None,
                        },
                        None => None,
                    };
                    let fetch_with = match &source.api_key_env {
                        Some(_) if webhook.public_key.is_none() => {
                            return Err(format!(
                                "config [webhook_secrets.{id}] api_key_env: the {id} catalog names no tool that answers the public key; set `public_key_env`"
                            ));
                        }
                        Some(variable) => read(variable),
                        None => None,
                    };
                    if configured.is_none() && fetch_with.is_none() {
                        if source.public_key_env.is_none() && source.api_key_env.is_none() {
                            return Err(format!(
                                "config [webhook_secrets.{id}] needs `public_key_env` (a PEM key) or `api_key_env` (to fetch the key)"
                            ));
                        }
                        tracing::warn!(service = %id, "webhook public key variables are empty; callbacks are refused");
                        continue;
                    }
                    Proof::Rsa {
                        fetch_with: if configured.is_some() {
                            None
                        } else {
                            fetch_with
                        },
                        key: RwLock::new(configured),
                    }
                }
            };
            out.insert(
                id.clone(),
                Receiver {
                    proof,
                    url: source.url.clone(),
                },
            );
        }
        Ok(Self(out))
    }

    /// A service's receiver, when configured.
    pub fn get(&self, service: &str) -> Option<&Receiver> {
        self.0.get(service)
    }

    /// Whether a service's callbacks can be verified now (secret set, key known).
    pub fn ready(&self, service: &str) -> bool {
        match self.0.get(service).map(|r| &r.proof) {
            Some(Proof::Bearer(_)) => true,
            Some(Proof::Rsa { key, .. }) => key.read().is_ok_and(|k| k.is_some()),
            None => false,
        }
    }

    /// The secrets held (bearer secrets, fetch keys), for scrubbing answers and logs.
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        self.0.values().filter_map(|r| match &r.proof {
            Proof::Bearer(secret) => Some(secret.as_str()),
            Proof::Rsa { fetch_with, .. } => fetch_with.as_deref(),
        })
    }

    /// Services whose key is fetched, with the API key that fetches it.
    pub fn fetched(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().filter_map(|(id, r)| match &r.proof {
            Proof::Rsa {
                fetch_with: Some(api_key),
                ..
            } => Some((id.as_str(), api_key.as_str())),
            _ => None,
        })
    }

    /// The RSA key of a service, when known.
    pub fn rsa_key(&self, service: &str) -> Option<Vec<u8>> {
        match self.0.get(service).map(|r| &r.proof) {
            Some(Proof::Rsa { key, .. }) => key.read().ok().and_then(|k| k.clone()),
            _ => None,
        }
    }

    /// Puts a fetched public key (DER) in use for a service with a fetched key.
    pub fn set_rsa_key(&self, service: &str, der: Vec<u8>) {
        if let Some(Proof::Rsa { key, .. }) = self.0.get(service).map(|r| &r.proof)
            && let Ok(mut slot) = key.write()
        {
            *slot = Some(der);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pem_must_hold_an_rsa_public_key_and_errors_never_quote_it() {
        let err = pem_to_der(
            "-----BEGIN PUBLIC KEY-----\nnot-base64-secretish\n-----END PUBLIC KEY-----",
        )
        .unwrap_err();
        assert!(
            err.contains("not PEM") && !err.contains("secretish"),
            "{err}"
        );
        let err =
            pem_to_der("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----").unwrap_err();
        assert!(err.contains("not an RSA public key"), "{err}");
    }
}
