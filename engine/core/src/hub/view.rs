//! What the hub's pages share: [`HubCx`] (what a page reads), redirects and the
//! refusals every page may answer, and the connect link's state as a page reads it.
//! The key pages (`page`) and the connected accounts' pages (`connect::page`) both
//! build on it.

use serde_json::Value;

use super::signin::{self, Session};
use super::{CONNECT_PURPOSE, Hub};
use crate::caller::oauth::OAuth;
use crate::confirm::approval::page::{Page, message};
use crate::run::Parts;

/// What the pages read.
#[derive(Clone, Copy)]
pub struct HubCx<'a> {
    /// The hub.
    pub hub: &'a Hub,
    /// The parts (store, catalog, clock).
    pub parts: &'a Parts,
    /// The `[oauth]` provider (roles -> what the user may use).
    pub oauth: &'a OAuth,
}

impl HubCx<'_> {
    pub(crate) fn now_ms(&self) -> i64 {
        self.parts.now().as_millisecond()
    }

    pub(crate) async fn session(&self, headers: &hyper::HeaderMap) -> Option<Session> {
        let (site, times) = (self.hub.site, self.hub.times);
        signin::session(&self.parts.store, site, times, headers, self.now_ms())
            .await
            .filter(|s| s.issuer == self.oauth.issuer())
    }

    pub(crate) fn may_use(&self, session: &Session) -> impl Fn(&str) -> bool {
        let caller = self
            .oauth
            .signed_in_caller(&session.subject, &session.roles);
        move |service: &str| caller.may_use_service(service)
    }

    pub(crate) fn title_of(&self, service: &str) -> String {
        self.parts
            .catalog
            .services
            .get(service)
            .map_or_else(|| service.to_string(), |s| s.title.clone())
    }
}

/// The refusal of a form without a live CSRF token of `session` for `action`, or
/// `None` when it has one; `again` says what to open again and what did not happen.
pub(crate) fn stale_form(
    cx: HubCx<'_>,
    session: &Session,
    action: &str,
    csrf: Option<&str>,
    again: &str,
) -> Option<Page> {
    let ok = signin::form_token_ok(&cx.hub.cipher, session, action, csrf, cx.now_ms());
    (!ok).then(|| {
        message(
            403,
            "Refused",
            &format!("This form is stale or did not come from {again}"),
        )
    })
}

pub(crate) fn redirect(location: &str) -> Page {
    Page {
        status: 303,
        headers: vec![("location", location.to_string())],
        body: String::new(),
    }
}

pub(crate) fn unavailable(text: &str) -> Page {
    message(503, "Hub unavailable", text)
}

/// The user and service a connect link's state names, if it is this deployment's and
/// live.
pub(crate) fn connect_state(
    cx: HubCx<'_>,
    service: &str,
    state: Option<&str>,
) -> Option<(String, String)> {
    let claims = cx
        .hub
        .cipher
        .open_statement(CONNECT_PURPOSE, state?, cx.now_ms())?;
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(String::from);
    (text("svc")? == service).then_some((text("iss")?, text("sub")?))
}

pub(crate) fn stale_link() -> Page {
    message(
        400,
        "This link has expired",
        "This connect link is stale or altered. Ask your agent to make the call again: it answers a new link.",
    )
}

pub(crate) fn other_user(session: &Session) -> Page {
    tracing::warn!(user = %format!("{}#{}", session.issuer, session.subject), "a connect link opened by another user than the one who made the call; nothing stored");
    message(
        403,
        "This link is for another account",
        &format!(
            "You are signed in as {}, but this link was made for the account that made the call. Nothing was stored. Sign out and sign in with that account, or ask your own agent for a link.",
            session.name
        ),
    )
}
