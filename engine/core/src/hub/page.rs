//! The hub's pages: server-rendered HTML like the approval page, no script.
//!
//! - `GET /hub`: without a session, a sign-in link; with one, each service the user may
//!   use with whether a key is stored and since when, a form to add or replace it (a
//!   password field: a stored key is never shown again) and one to delete it.
//! - `POST /hub/set/<service>`, `POST /hub/delete/<service>`, `POST /hub/logout`.
//! - `GET /hub/connect/<service>?state=...`: the link a call without a key answered.
//!   It stores a key only when the signed-in user is the user who made the call (the
//!   sealed state names them); signed in as anyone else, it stores nothing.
//! - `POST /hub/connect/<service>`: the key, the state and the form's token (for a
//!   service that connects by OAuth, the start of its flow: `connect::page`).
//!
//! Every form carries a CSRF token sealed for the user and the form's action; a post
//! without a valid one changes nothing (403).

use super::signin;
pub use super::view::HubCx;
use super::view::{connect_state, other_user, redirect, stale_form, stale_link, unavailable};
use crate::confirm::approval::page::{Page, escape, form, message, page};

fn sign_in_page(cx: HubCx<'_>, next: &str) -> Page {
    if cx.hub.sign_in.is_none() {
        return message(
            503,
            "Sign-in is not configured",
            "This broker has no [oauth.sign_in] client, so its pages cannot sign you in. Keys can still be stored through the JSON API (PUT /hub/keys/<service>) with an access token.",
        );
    }
    let link = format!(
        "/hub/login?next={}",
        url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
    );
    page(
        200,
        "Sign in to your key hub",
        &format!(
            "<p>The hub keeps your own keys for the services your agents use, sealed, and never shows them again.</p><p><a href=\"{}\">Sign in</a></p>",
            escape(&link)
        ),
    )
}

/// `GET /hub`.
pub async fn home(cx: HubCx<'_>, headers: &hyper::HeaderMap) -> Page {
    let Some(session) = cx.session(headers).await else {
        return sign_in_page(cx, "/hub");
    };
    let now = cx.now_ms();
    let user = session.user();
    let entries = match cx.hub.list(cx.parts, &user, &cx.may_use(&session)).await {
        Ok(entries) => entries,
        Err(e) => return unavailable(&e.message()),
    };
    let mut rows = String::new();
    for e in &entries {
        if e.on_behalf {
            rows.push_str(&super::connect::page::on_behalf_row(cx, e));
            continue;
        }
        if e.connects {
            match super::connect::page::row(cx, &session, e, now) {
                Some(row) => rows.push_str(&row),
                None => return unavailable("no randomness available"),
            }
            continue;
        }
        let (Some(set), Some(delete)) = (
            signin::form_token(&cx.hub.cipher, &session, &format!("set:{}", e.service), now),
            signin::form_token(
                &cx.hub.cipher,
                &session,
                &format!("delete:{}", e.service),
                now,
            ),
        ) else {
            return unavailable("no randomness available");
        };
        let state = match &e.set_at {
            Some(at) => format!("stored {}", escape(at)),
            None => "no key".into(),
        };
        let service = escape(&e.service);
        rows.push_str(&format!(
            "<tr><td>{} <small>({service})</small></td><td>{state}</td><td>\
<form method=\"post\" action=\"/hub/set/{service}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<label>Key <input type=\"password\" name=\"key\" autocomplete=\"off\" required></label> \
<button type=\"submit\">{}</button></form></td><td>{}</td></tr>",
            escape(&cx.title_of(&e.service)),
            escape(&set),
            if e.set_at.is_some() { "Replace" } else { "Store" },
            if e.set_at.is_some() {
                format!(
                    "<form method=\"post\" action=\"/hub/delete/{service}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Delete</button></form>",
                    escape(&delete)
                )
            } else {
                String::new()
            },
        ));
    }
    let Some(logout) = signin::form_token(&cx.hub.cipher, &session, "logout", now) else {
        return unavailable("no randomness available");
    };
    let caller = cx.oauth.signed_in_caller(&session.subject, &session.roles);
    let budgets: String = crate::run::budgets::standing(cx.parts, &caller, None, None)
        .await
        .iter()
        .map(|r| {
            format!(
                "<p class=\"budget\">Budget {}: {} of {} {} left until {}.</p>",
                escape(&r.name),
                r.remaining,
                r.limit,
                escape(&r.unit),
                escape(&r.resets_at)
            )
        })
        .collect();
    page(
        200,
        "Your key hub",
        &format!(
            "<p>Signed in as {}. Calls your agents make without a key header use the key stored here for that service. A stored key is never shown again.</p>{budgets}\
<table><thead><tr><th>Service</th><th>Key</th><th></th><th></th></tr></thead><tbody>{rows}</tbody></table>\
<form method=\"post\" action=\"/hub/logout\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Sign out</button></form>",
            escape(&session.name),
            escape(&logout)
        ),
    )
}

/// `POST /hub/set/<service>` and `POST /hub/delete/<service>`.
pub async fn change(
    cx: HubCx<'_>,
    headers: &hyper::HeaderMap,
    service: &str,
    set: bool,
    body: &[u8],
) -> Page {
    let Some(session) = cx.session(headers).await else {
        return message(
            401,
            "Not signed in",
            "Sign in on the hub page first; nothing was changed.",
        );
    };
    let mut fields = form(body);
    let action = format!("{}:{service}", if set { "set" } else { "delete" });
    if !signin::form_token_ok(
        &cx.hub.cipher,
        &session,
        &action,
        fields.get("csrf").map(|c| c.as_str()),
        cx.now_ms(),
    ) {
        tracing::warn!(service, "hub form refused: no valid CSRF token");
        return message(
            403,
            "Refused",
            "This form is stale or did not come from the hub page. Open the hub again; nothing was changed.",
        );
    }
    if !cx.may_use(&session)(service) {
        return message(
            403,
            "Refused",
            "Your account may not use this service; nothing was changed.",
        );
    }
    let user = session.user();
    let result = if set {
        let key = fields.remove("key").unwrap_or_default();
        cx.hub
            .put(cx.parts, &user, service, &key, "hub:page")
            .await
            .map(|_| ())
    } else {
        cx.hub
            .delete(cx.parts, &user, service, "hub:page")
            .await
            .map(|_| ())
    };
    match result {
        Ok(()) => redirect("/hub"),
        Err(super::Refused::Store) => unavailable(&super::Refused::Store.message()),
        Err(e) => message(
            400,
            "Refused",
            &format!("{}; nothing was changed.", e.message()),
        ),
    }
}

/// `POST /hub/logout`.
pub async fn logout(cx: HubCx<'_>, headers: &hyper::HeaderMap, body: &[u8]) -> Page {
    if let Some(session) = cx.session(headers).await {
        let fields = form(body);
        if !signin::form_token_ok(
            &cx.hub.cipher,
            &session,
            "logout",
            fields.get("csrf").map(|c| c.as_str()),
            cx.now_ms(),
        ) {
            return message(
                403,
                "Refused",
                "This form is stale or did not come from the hub page.",
            );
        }
    }
    signin::end_session(&cx.parts.store, cx.hub.site, headers).await;
    let mut out = message(200, "Signed out", "You are signed out of the hub.");
    for cookie in signin::cleared_cookies(cx.hub.site) {
        out.headers.push(("set-cookie", cookie));
    }
    out
}

/// `GET /hub/connect/<service>?state=...`.
pub async fn connect(
    cx: HubCx<'_>,
    headers: &hyper::HeaderMap,
    service: &str,
    query: &str,
) -> Page {
    let fields = form(query.as_bytes());
    let state = fields.get("state").map(|c| c.as_str());
    let Some((issuer, subject)) = connect_state(cx, service, state) else {
        return stale_link();
    };
    let Some(session) = cx.session(headers).await else {
        return sign_in_page(cx, &format!("/hub/connect/{service}?{query}"));
    };
    if session.issuer != issuer || session.subject != subject {
        return other_user(&session);
    }
    if cx.hub.connections().by_flow(service) {
        return super::connect::page::consent(cx, &session, service, state.unwrap_or_default());
    }
    let Some(csrf) = signin::form_token(
        &cx.hub.cipher,
        &session,
        &format!("connect:{service}"),
        cx.now_ms(),
    ) else {
        return unavailable("no randomness available");
    };
    let service_html = escape(service);
    page(
        200,
        &format!("Connect {}", cx.title_of(service)),
        &format!(
            "<p>Your agent needs your <strong>{}</strong> key. It is stored sealed in your hub, used for your calls only, and never shown again, not to the agent either.</p>\
<form method=\"post\" action=\"/hub/connect/{service_html}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"state\" value=\"{}\">\
<label>Key <input type=\"password\" name=\"key\" autocomplete=\"off\" required></label> <button type=\"submit\">Store</button></form>\
<p>Signed in as {}.</p>",
            escape(&cx.title_of(service)),
            escape(&csrf),
            escape(state.unwrap_or_default()),
            escape(&session.name),
        ),
    )
}

/// `POST /hub/connect/<service>`.
pub async fn connect_store(
    cx: HubCx<'_>,
    headers: &hyper::HeaderMap,
    service: &str,
    body: &[u8],
) -> Page {
    let mut fields = form(body);
    let Some((issuer, subject)) =
        connect_state(cx, service, fields.get("state").map(|c| c.as_str()))
    else {
        return stale_link();
    };
    let Some(session) = cx.session(headers).await else {
        return message(
            401,
            "Not signed in",
            "Open the link again and sign in; nothing was stored.",
        );
    };
    if session.issuer != issuer || session.subject != subject {
        return other_user(&session);
    }
    let again = "the connect page. Open the link again; nothing was stored.";
    if let Some(refused) = stale_form(
        cx,
        &session,
        &format!("connect:{service}"),
        fields.get("csrf").map(|c| c.as_str()),
        again,
    ) {
        return refused;
    }
    let key = fields.remove("key").unwrap_or_default();
    match cx
        .hub
        .put(cx.parts, &session.user(), service, &key, "hub:connect")
        .await
    {
        Ok(_) => message(
            200,
            "Connected",
            &format!(
                "Your {} key is stored. Go back to your agent: its next call uses it.",
                cx.title_of(service)
            ),
        ),
        Err(super::Refused::Store) => unavailable(&super::Refused::Store.message()),
        Err(e) => message(
            400,
            "Refused",
            &format!("{}; nothing was stored.", e.message()),
        ),
    }
}
