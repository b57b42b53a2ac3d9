//! The authorization code flow that connects an account (RFC 6749 with PKCE S256).
//!
//! [`Hub::start_connect`] runs only for a person signed in to the hub: it records a
//! flow in the store (its id is the `state` parameter, 256 random bits; the row names
//! the user, the SHA-256 of the hub session's id and the service, and holds the PKCE
//! verifier sealed; ten minutes) and answers the provider's authorization URL, whose
//! `redirect_uri` is `public_url` + `/hub/oauth/<service>/callback`, exactly.
//!
//! [`Hub::finish_connect`] is that callback: the flow is taken once (deleted as it is
//! read: a replayed `state` finds nothing), and must be for this service and have been
//! started by this same browser session of this same user; then the code is exchanged
//! with the verifier, and the tokens are sealed and stored. A code meant for one user
//! can never be stored for another: the person whose browser brings the code back
//! must be the one who started the flow, in the same session.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::{Tokens, who};
use crate::hub::signin::{Session, random_text};
use crate::hub::{Hub, caller_name};
use crate::run::Parts;
use crate::store::hub_connections::{CONNECTED, Connection, Flow};

/// How long a flow may take, from the Connect button to the provider's redirect back.
pub const FLOW_MS: i64 = 10 * 60 * 1000;

/// The associated data of a flow's sealed verifier.
fn flow_binding(flow: &Flow) -> Vec<u8> {
    serde_json::to_vec(&[
        "hub-flow/v1",
        &flow.id,
        &flow.issuer,
        &flow.subject,
        &flow.service,
    ])
    .unwrap_or_default()
}

/// Why a flow did not connect: what the person reads (never a code or token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotConnected {
    /// The HTTP status of the page.
    pub status: u16,
    /// The page's text.
    pub text: String,
}

fn no(status: u16, text: impl Into<String>) -> NotConnected {
    NotConnected {
        status,
        text: text.into(),
    }
}

impl Hub {
    /// Starts connecting `session`'s account of `service`: the provider's
    /// authorization URL. `session_id_sha256` is the digest of the hub session's id.
    pub async fn start_connect(
        &self,
        parts: &Parts,
        session: &Session,
        session_id_sha256: &str,
        service: &str,
    ) -> Result<String, NotConnected> {
        let Some(provider) = self
            .connections
            .provider(service)
            .filter(|p| !p.exchanges())
        else {
            return Err(no(
                404,
                "This service's accounts do not connect by OAuth here.",
            ));
        };
        if self.public_url.is_none() {
            return Err(no(
                503,
                "This broker has no public_url, so it cannot give a provider its exact redirect address.",
            ));
        }
        let (Some(id), Some(verifier)) = (random_text(32), random_text(32)) else {
            return Err(no(503, "No randomness is available; try again."));
        };
        let verifier = Zeroizing::new(verifier);
        let now = parts.now().as_millisecond();
        let mut flow = Flow {
            id,
            issuer: session.issuer.clone(),
            subject: session.subject.clone(),
            service: service.to_string(),
            session: session_id_sha256.to_string(),
            sealed: String::new(),
            expires_ms: now + FLOW_MS,
        };
        flow.sealed = self
            .cipher
            .seal_row(&flow_binding(&flow), &verifier)
            .ok_or_else(|| no(503, "No randomness is available; try again."))?;
        let challenge = B64.encode(Sha256::digest(verifier.as_bytes()));
        let url = provider
            .authorization_url(self.reach(parts), &flow.id, &challenge)
            .await
            .map_err(|e| {
                tracing::warn!(service, error = %e, "a connection could not start: the provider could not be reached or registered at");
                no(503, "The service's sign-in provider cannot be reached right now. Try again shortly.")
            })?;
        parts.store.put_oauth_flow(&flow, now).await.map_err(|e| {
            tracing::error!(error = %e, "hub flow not stored");
            no(503, "The broker cannot start a connection right now (its store does not answer). Try again shortly.")
        })?;
        Ok(url)
    }

    /// The provider's redirect back for `service`: `query` as it came, `session` the
    /// signed-in person (with the digest of its id). `Ok(replaced)` once the account's
    /// tokens are stored.
    pub async fn finish_connect(
        &self,
        parts: &Parts,
        session: Option<(&Session, &str)>,
        service: &str,
        query: &str,
    ) -> Result<bool, NotConnected> {
        let fields: std::collections::BTreeMap<String, String> =
            url::form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect();
        let stale = || {
            no(
                400,
                "This connection attempt is stale, was already used, or did not start here. Start again from your hub.",
            )
        };
        let Some(state) = fields.get("state").filter(|s| s.len() <= 128) else {
            return Err(stale());
        };
        let now = parts.now().as_millisecond();
        let flow = parts.store.take_oauth_flow(state, now).await.map_err(|e| {
            tracing::error!(error = %e, "hub flow not read");
            no(503, "The broker cannot finish connections right now (its store does not answer). Start again shortly.")
        })?;
        let Some(flow) = flow.filter(|f| f.service == service) else {
            tracing::warn!(
                service,
                "a connection callback with an unknown, used or lapsed state"
            );
            return Err(stale());
        };
        let Some((session, digest)) = session else {
            return Err(no(
                401,
                "You are not signed in to the hub in this browser. Sign in and start the connection again.",
            ));
        };
        if session.issuer != flow.issuer || session.subject != flow.subject {
            tracing::warn!(user = %caller_name(&session.user()), service, "a connection callback reached another user than the one who started it; nothing stored");
            return Err(no(
                403,
                "This connection was started by another account. Nothing was stored.",
            ));
        }
        if digest != flow.session {
            tracing::warn!(user = %caller_name(&session.user()), service, "a connection callback in another session than the one that started it; nothing stored");
            return Err(no(
                403,
                "This connection was started in another sign-in session. Nothing was stored; start again from your hub.",
            ));
        }
        let provider = self
            .connections
            .provider(service)
            .ok_or_else(|| no(404, "This service's accounts do not connect by OAuth here."))?;
        if let Some(iss) = fields.get("iss")
            && let Some(expected) = provider.issuer(self.reach(parts)).await
            && iss != &expected
        {
            return Err(no(
                400,
                "The answer came from another authorization server than this service's. Nothing was stored.",
            ));
        }
        if let Some(error) = fields.get("error") {
            let code = crate::hub::token_endpoint::safe_code(error);
            return Err(no(
                400,
                format!("The provider did not connect the account ({code}). Nothing was stored."),
            ));
        }
        let code = fields.get("code").ok_or_else(stale)?;
        let verifier = self
            .cipher
            .open_row(&flow_binding(&flow), &flow.sealed)
            .map(|(v, _)| v)
            .ok_or_else(stale)?;
        let grant = provider
            .exchange(self.reach(parts), code, &verifier)
            .await
            .map_err(|e| {
                tracing::warn!(service, error = ?e, "a connection's code exchange failed");
                match e {
                    super::provider::TokenError::Refused(code) => no(400, format!("The provider refused to finish the connection ({code}). Nothing was stored; start again.")),
                    super::provider::TokenError::Unavailable(_) => no(503, "The provider's token endpoint does not answer. Nothing was stored; start again shortly."),
                }
            })?;
        self.store_grant(parts, &session.user(), service, grant, now)
            .await
    }

    /// Seals and stores what the code was exchanged for; audited.
    async fn store_grant(
        &self,
        parts: &Parts,
        user: &crate::caller::User,
        service: &str,
        grant: super::provider::Grant,
        now: i64,
    ) -> Result<bool, NotConnected> {
        let key = who(user, service);
        let scopes = self
            .connections
            .provider(service)
            .map(|p| p.scopes().join(" "))
            .unwrap_or_default();
        let tokens = Tokens {
            access: grant.access,
            refresh: grant.refresh,
        };
        let sealed = tokens
            .seal(&self.cipher, key)
            .ok_or_else(|| no(503, "No randomness is available; start again."))?;
        let row = Connection {
            issuer: user.issuer.clone(),
            subject: user.subject.clone(),
            service: service.to_string(),
            sealed,
            key_id: self.cipher.current_id().to_string(),
            account: grant.account,
            scopes: grant.scope.unwrap_or(scopes),
            expires_ms: grant.expires_in.map(|s| now + s * 1000),
            state: CONNECTED.into(),
            set_ms: now,
            refreshed_ms: None,
            version: 0,
        };
        let replaced = parts.store.put_connection(&row).await.map_err(|e| {
            tracing::error!(error = %e, "hub connection not stored");
            no(503, "The broker could not store the connection (its store does not answer). Start again shortly.")
        })?;
        crate::hub::audit(
            parts,
            user,
            service,
            crate::store::audit::Outcome::Connected,
            "hub:oauth",
        )
        .await;
        tracing::info!(user = %caller_name(user), service, replaced, "hub account connected");
        Ok(replaced)
    }
}
