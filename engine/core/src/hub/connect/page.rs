//! The hub's pages for accounts that connect by OAuth: a service's row on `/hub`
//! (connected as whom, with which scopes, since when; or not; or needing a reconnect),
//! the consent step a connect link shows (the scopes asked, before the provider's
//! screen), `POST /hub/connect/<service>` starting the flow, and the provider's
//! redirect back to `/hub/oauth/<service>/callback`.

use crate::confirm::approval::page::{Page, escape, form, message, page};
use crate::hub::signin::{self, Session};
use crate::hub::view::{
    HubCx, connect_state, other_user, redirect, stale_form, stale_link, unavailable,
};
use crate::hub::{Entry, Linked};

/// The scopes `service` asks for, as the page lists them.
fn scopes_html(cx: HubCx<'_>, service: &str) -> String {
    let scopes = cx
        .hub
        .connections()
        .provider(service)
        .map(|p| p.scopes().to_vec())
        .unwrap_or_default();
    if scopes.is_empty() {
        return "no particular scope".into();
    }
    scopes
        .iter()
        .map(|s| format!("<code>{}</code>", escape(s)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn state_html(linked: Option<&Linked>, key_stored: bool) -> String {
    let mut text = match linked {
        Some(c) if c.needs_reconnect => {
            "needs a reconnect (the provider no longer accepts it)".to_string()
        }
        Some(c) => format!(
            "connected{} since {}; scopes {}",
            c.account
                .as_deref()
                .map(|a| format!(" as {}", escape(a)))
                .unwrap_or_default(),
            escape(&c.since),
            escape(&c.scopes)
        ),
        None => "not connected".into(),
    };
    if key_stored {
        text.push_str("; a pasted key is stored too");
    }
    text
}

/// A row of `/hub` for a service whose accounts connect by OAuth: its state, a
/// Connect (or Reconnect) form naming the scopes asked, and Disconnect.
pub fn row(cx: HubCx<'_>, session: &Session, e: &Entry, now: i64) -> Option<String> {
    let service = escape(&e.service);
    let connect = signin::form_token(
        &cx.hub.cipher,
        session,
        &format!("connect:{}", e.service),
        now,
    )?;
    let delete = signin::form_token(
        &cx.hub.cipher,
        session,
        &format!("delete:{}", e.service),
        now,
    )?;
    let again = e.connection.is_some();
    let disconnect = if again || e.set_at.is_some() {
        format!(
            "<form method=\"post\" action=\"/hub/delete/{service}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Disconnect</button></form>",
            escape(&delete)
        )
    } else {
        String::new()
    };
    Some(format!(
        "<tr><td>{} <small>({service})</small></td><td>{}</td><td>\
<form method=\"post\" action=\"/hub/connect/{service}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<button type=\"submit\">{}</button> <small>asks for {}</small></form></td><td>{disconnect}</td></tr>",
        escape(&cx.title_of(&e.service)),
        state_html(e.connection.as_ref(), e.set_at.is_some()),
        escape(&connect),
        if again { "Reconnect" } else { "Connect" },
        scopes_html(cx, &e.service),
    ))
}

/// A row of `/hub` for a service called on the person's behalf: nothing to connect.
pub fn on_behalf_row(cx: HubCx<'_>, e: &Entry) -> String {
    format!(
        "<tr><td>{} <small>({})</small></td><td>called on your behalf: your own sign-in is exchanged for access to it on each call (asks for {}); nothing is stored</td><td></td><td></td></tr>",
        escape(&cx.title_of(&e.service)),
        escape(&e.service),
        scopes_html(cx, &e.service),
    )
}

/// What a connect link shows a service that connects by OAuth, once the person signed
/// in is the one who made the call: the scopes asked, and the button that starts the
/// flow (carrying the link's state, so the start checks the user again).
pub fn consent(cx: HubCx<'_>, session: &Session, service: &str, state: &str) -> Page {
    let Some(csrf) = signin::form_token(
        &cx.hub.cipher,
        session,
        &format!("connect:{service}"),
        cx.now_ms(),
    ) else {
        return unavailable("no randomness available");
    };
    let title = cx.title_of(service);
    page(
        200,
        &format!("Connect {title}"),
        &format!(
            "<p>Your agent needs your <strong>{}</strong> account. Connecting sends you to {} to sign in and agree; the broker then keeps the access it grants sealed, uses it for your calls only, and never shows it, not to the agent either.</p>\
<p>It asks for: {}.</p>\
<form method=\"post\" action=\"/hub/connect/{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"state\" value=\"{}\">\
<button type=\"submit\">Connect</button></form><p>Signed in as {}.</p>",
            escape(&title),
            escape(&title),
            scopes_html(cx, service),
            escape(service),
            escape(&csrf),
            escape(state),
            escape(&session.name),
        ),
    )
}

/// `POST /hub/connect/<service>` for a service that connects by OAuth: the form's
/// token checked (and a connect link's state, when the form carries one, naming this
/// user), then on to the provider (a page, not a redirect: see `onward`).
pub async fn start(cx: HubCx<'_>, headers: &hyper::HeaderMap, service: &str, body: &[u8]) -> Page {
    let fields = form(body);
    let Some(session) = cx.session(headers).await else {
        return message(
            401,
            "Not signed in",
            "Sign in on the hub page first; nothing was started.",
        );
    };
    if let Some(state) = fields.get("state").filter(|s| !s.is_empty()) {
        match connect_state(cx, service, Some(state)) {
            None => return stale_link(),
            Some((issuer, subject)) if issuer != session.issuer || subject != session.subject => {
                return other_user(&session);
            }
            Some(_) => {}
        }
    }
    let again = "the hub. Open the hub again; nothing was started.";
    if let Some(refused) = stale_form(
        cx,
        &session,
        &format!("connect:{service}"),
        fields.get("csrf").map(|c| c.as_str()),
        again,
    ) {
        return refused;
    }
    if !cx.may_use(&session)(service) {
        return message(
            403,
            "Refused",
            "Your account may not use this service; nothing was started.",
        );
    }
    let Some(digest) = signin::session_digest(cx.hub.site, headers) else {
        return message(
            401,
            "Not signed in",
            "Sign in on the hub page first; nothing was started.",
        );
    };
    match cx
        .hub
        .start_connect(cx.parts, &session, &digest, service)
        .await
    {
        Ok(url) => onward(cx, service, &url),
        Err(e) => message(e.status, "Cannot connect", &e.text),
    }
}

/// The page a started flow answers: on to the provider by the `Refresh` header, and a
/// link. Not a redirect: the pages' `form-action 'self'` stops a form's submission
/// redirected to another origin, and the provider is one.
fn onward(cx: HubCx<'_>, service: &str, url: &str) -> Page {
    let title = cx.title_of(service);
    let mut out = page(
        200,
        &format!("On to {title}"),
        &format!(
            "<p>Taking you to {} to sign in and agree.</p><p><a id=\"onward\" href=\"{}\">Continue to {}</a></p>",
            escape(&title),
            escape(url),
            escape(&title),
        ),
    );
    out.headers.push(("refresh", format!("0; url={url}")));
    out
}

/// `GET /hub/oauth/<service>/callback`: the provider's redirect back.
pub async fn callback(
    cx: HubCx<'_>,
    headers: &hyper::HeaderMap,
    service: &str,
    query: &str,
) -> Page {
    let session = cx.session(headers).await;
    let digest = signin::session_digest(cx.hub.site, headers);
    let signed_in = session.as_ref().zip(digest.as_deref());
    match cx
        .hub
        .finish_connect(cx.parts, signed_in, service, query)
        .await
    {
        Ok(_) => redirect("/hub"),
        Err(e) => message(e.status, "Not connected", &e.text),
    }
}
