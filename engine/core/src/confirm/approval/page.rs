//! The approval page: server-rendered HTML, no script, no build step.
//!
//! - `GET /approvals/<id>`: without an approver session, a sign-in form; with one, the
//!   exact request (tool, method, path, the redacted body, risk and class words, whether
//!   it spends credits, the caller key's name, the expiry) and approve/decline buttons.
//! - `POST /approvals/<id>/sign-in`: an approver credential of `[[approvers]]`; starts a
//!   session in the store ([`crate::confirm::session`]: `HttpOnly`, `SameSite=Strict`,
//!   eight hours at most, ended after `session_idle_minutes` unused, on every replica
//!   by `tool-broker sessions revoke`).
//! - `POST /approvals/<id>/decision`: `approve` or `decline`.
//!
//! A person signed in at the deployment's identity provider through the hub's sign-in
//! (`[oauth.sign_in]`) whose roles hold its `approver_role` is an approver too; the endpoint
//! passes them in ([`Provider`]) and the sign-in form links to that sign-in.
//!
//! Every form carries a CSRF token sealed for its approval (and, after sign-in, its
//! approver); a post without it changes nothing (403). The page is never framed or
//! cached, and its URL never goes to another site as a referrer (`same-origin`: with
//! `no-referrer` Chromium sends `Origin: null` on the page's own forms, which the
//! broker's Origin rule refuses; found by the browser check).

use serde_json::{Value, json};

use crate::confirm::Context;
use crate::store::ratelimit::Count;

const SESSION_COOKIE: &str = "tb_approver";
const FORM_MS: i64 = 3600 * 1000;
/// Sign-in attempts allowed per approval in [`SIGN_IN_WINDOW_MS`].
pub const SIGN_IN_ATTEMPTS: u32 = 10;
/// Sign-in attempts allowed per client address in [`SIGN_IN_WINDOW_MS`], whatever
/// the approval (also the hub's sign-ins).
pub const SIGN_IN_ATTEMPTS_PER_ADDRESS: u32 = 30;
/// The window of the sign-in limits.
pub const SIGN_IN_WINDOW_MS: i64 = 15 * 60 * 1000;

pub use crate::html::{PAGE_HEADERS, Page, escape, layout, message, page};

/// What the endpoint knows of a person signed in at the deployment's identity provider
/// (the hub's sign-in, decision 012): an approver when their roles hold the
/// configured approver role.
#[derive(Debug, Clone, Default)]
pub struct Provider {
    /// Whether the provider sign-in is configured (the sign-in form links to it).
    pub available: bool,
    /// The approver signed in there (`<issuer>#<subject>`), if any.
    pub approver: Option<String>,
}

/// Who asked, as a person reads it: a user (`<issuer>#<subject>`, decision 011)
/// as "subject (signed in at issuer)", a key by its name.
pub fn asked_by(caller: &str) -> String {
    match caller.split_once('#') {
        Some((issuer, subject)) if issuer.contains("://") => {
            format!("{subject} (signed in at {issuer})")
        }
        _ => format!("API key {caller}"),
    }
}

/// The fields of an `application/x-www-form-urlencoded` body.
pub fn form(body: &[u8]) -> Form {
    url::form_urlencoded::parse(body)
        .map(|(name, value)| {
            (
                name.into_owned(),
                zeroize::Zeroizing::new(value.into_owned()),
            )
        })
        .collect()
}

/// A parsed form: its values (a credential, a key) are wiped from memory when the form
/// is dropped.
pub type Form = std::collections::BTreeMap<String, zeroize::Zeroizing<String>>;

/// Opens a sealed statement of `purpose` that has not expired.
async fn open(cx: Context<'_>, purpose: &str, sealed: &str) -> Option<Value> {
    let claims = cx
        .confirmations
        .sealer
        .open(&cx.store, purpose, sealed)
        .await
        .ok()?
        .ok()?;
    let exp = claims.get("exp").and_then(Value::as_i64)?;
    (exp > cx.now().as_millisecond()).then_some(claims)
}

async fn seal(cx: Context<'_>, purpose: &str, claims: Value) -> Option<String> {
    cx.confirmations
        .sealer
        .seal(&cx.store, cx.now().as_millisecond(), purpose, &claims)
        .await
        .ok()
}

/// The approver signed in on this request, if any: by an approver credential, else at
/// the identity provider with the approver role.
async fn approver(
    cx: Context<'_>,
    headers: &hyper::HeaderMap,
    provider: &Provider,
) -> Option<String> {
    match approver_by_credential(cx, headers).await {
        Some(name) => Some(name),
        None => provider.approver.clone(),
    }
}

async fn approver_by_credential(cx: Context<'_>, headers: &hyper::HeaderMap) -> Option<String> {
    let (name, _) = crate::confirm::session::find(
        &cx.parts.store,
        cx.confirmations.site,
        headers,
        SESSION_COOKIE,
        crate::confirm::session::Kind::Approver,
        cx.confirmations.session_times,
        cx.now().as_millisecond(),
    )
    .await?;
    // A credential removed from the config since signs in no more.
    cx.confirmations.approvers.has(&name).then_some(name)
}

fn unavailable() -> Page {
    message(
        503,
        "Approval unavailable",
        "The broker cannot read approvals right now. Try again shortly.",
    )
}

/// `GET /approvals/<id>`.
pub async fn view(
    cx: Context<'_>,
    id: &str,
    headers: &hyper::HeaderMap,
    provider: &Provider,
) -> Page {
    let Some(name) = approver(cx, headers, provider).await else {
        let exp = cx.now().as_millisecond() + FORM_MS;
        let Some(csrf) = seal(cx, "approval-sign-in", json!({ "id": id, "exp": exp })).await else {
            return unavailable();
        };
        return page(
            200,
            "Sign in to review a write",
            &format!(
                "<p>An agent asks to make a change on a user's account. Sign in with your approver credential to see exactly what it would send.</p>\
<form method=\"post\" action=\"/approvals/{id}/sign-in\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<label>Approver credential <input type=\"password\" name=\"credential\" autocomplete=\"current-password\" required></label> \
<button type=\"submit\">Sign in</button></form>{}",
                escape(&csrf),
                if provider.available {
                    format!(
                        "<p>Or <a href=\"/hub/login?next=%2Fapprovals%2F{}\">sign in with your organisation's account</a> (approvers only).</p>",
                        escape(id)
                    )
                } else {
                    String::new()
                },
                id = escape(id)
            ),
        );
    };
    let approval = match cx.store.approval(id).await {
        Ok(Some(a)) => a,
        Ok(None) => return message(404, "No such approval", "This approval does not exist."),
        Err(_) => return unavailable(),
    };
    let preview = super::preview(cx.confirmations, &approval);
    let now = cx.now().as_millisecond();
    let state = super::state_at(&approval, now);
    let mut details = summary(&preview, &approval, state);
    if state == "pending" {
        let Some(csrf) = seal(
            cx,
            "approval-decision",
            json!({ "id": id, "approver": name, "exp": now + FORM_MS }),
        )
        .await
        else {
            return unavailable();
        };
        details.push_str(&format!(
            "<p class=\"warn\">Approve only if the user asked for exactly this change.</p>\
<form method=\"post\" action=\"/approvals/{id}/decision\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
<button type=\"submit\" name=\"decision\" value=\"decline\">Decline</button></form>",
            escape(&csrf),
            id = escape(id)
        ));
    }
    details.push_str(&format!(
        "<p>Signed in as {}.</p>",
        escape(&if name.contains('#') {
            asked_by(&name)
        } else {
            name.clone()
        })
    ));
    page(200, "Review a write", &details)
}

/// What a person approves, exactly: the tool, who asked, risk, kinds of change (when
/// any), whether it spends credits, the request line, expiry, state, and the body that
/// would be sent (`preview` is the opened sealed preview). The approval page and the
/// console show the same.
pub fn summary(
    preview: &Value,
    approval: &crate::store::approvals::Approval,
    state: &str,
) -> String {
    let request = &preview["request"];
    let expires = jiff::Timestamp::from_millisecond(approval.expires_ms)
        .map(|t| t.to_string())
        .unwrap_or_default();
    let classes = preview["classes"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let classes = if classes.is_empty() {
        String::new()
    } else {
        format!("<dt>Kinds of change</dt><dd>{}</dd>", escape(&classes))
    };
    let mut details = format!(
        "<dl><dt>Tool</dt><dd>{} (<code>{}</code>)</dd><dt>Asked by</dt><dd>{}</dd>\
<dt>Risk</dt><dd>{}</dd>{classes}<dt>Spends credits</dt><dd>{}</dd>\
<dt>Request</dt><dd><code>{} {}</code></dd><dt>Expires</dt><dd>{}</dd><dt>State</dt><dd>{}</dd></dl>",
        escape(preview["title"].as_str().unwrap_or("")),
        escape(&approval.tool),
        escape(&asked_by(&approval.key_name)),
        escape(preview["risk"].as_str().unwrap_or("write")),
        if preview["consumesCredits"] == true {
            "yes"
        } else {
            "no"
        },
        escape(request["method"].as_str().unwrap_or("")),
        escape(
            request["url"]
                .as_str()
                .or(request["path"].as_str())
                .unwrap_or("")
        ),
        crate::html::time(&expires),
        escape(state),
    );
    if let Some(plan) = preview["plan"].as_array() {
        // A tool that runs others: the approval covers exactly these writes.
        details.push_str(&format!(
            "<h2>What would be sent: {} write{}, in this order</h2><ol>",
            plan.len(),
            if plan.len() == 1 { "" } else { "s" }
        ));
        for write in plan {
            let body = write.get("body").cloned().unwrap_or(Value::Null);
            details.push_str(&format!(
                "<li><code>{} {}</code> ({}){}</li>",
                escape(write["method"].as_str().unwrap_or("")),
                escape(write["path"].as_str().unwrap_or("")),
                escape(write["tool"].as_str().unwrap_or("")),
                crate::html::folded_json(&body, "The whole body")
            ));
        }
        details.push_str("</ol>");
        return details;
    }
    let body = request
        .get("body")
        .or(request.get("json"))
        .cloned()
        .unwrap_or_else(|| preview["arguments"].clone());
    details.push_str(&format!(
        "<h2>What would be sent</h2>{}",
        crate::html::folded_json(&body, "The whole body")
    ));
    details
}

/// The store key of a client address's sign-in attempts (approvals and the hub's).
pub fn address_key(client: &str) -> String {
    format!("sign-in-address\u{1f}{client}")
}

/// Counts one sign-in attempt under `key`: the 429 page when over `limit` in the
/// window (`what` begins its sentence), the 503 page when the store does not answer.
pub async fn limited(cx: Context<'_>, key: &str, limit: u32, what: &str) -> Result<(), Page> {
    match cx
        .store
        .count_request(key, limit, SIGN_IN_WINDOW_MS, cx.now().as_millisecond())
        .await
    {
        Ok(Count::Allowed) => Ok(()),
        Ok(Count::Refused { retry_after_ms }) => {
            let seconds = u64::try_from(retry_after_ms)
                .unwrap_or(1)
                .div_ceil(1000)
                .max(1);
            let mut page = message(
                429,
                "Too many sign-in attempts",
                &format!(
                    "{what} {limit} sign-in attempts in {} minutes. Try again in {} minutes.",
                    SIGN_IN_WINDOW_MS / 60_000,
                    seconds.div_ceil(60)
                ),
            );
            page.headers.push(("retry-after", seconds.to_string()));
            Err(page)
        }
        Err(e) => {
            tracing::error!(error = %e, "sign-in attempts not counted; sign-in refused");
            Err(unavailable())
        }
    }
}

/// `POST /approvals/<id>/sign-in`; `client` is the client's address
/// (`serve`'s `client_address`).
pub async fn sign_in(cx: Context<'_>, id: &str, body: &[u8], client: &str) -> Page {
    let fields = form(body);
    let csrf_ok = match fields.get("csrf") {
        Some(csrf) => open(cx, "approval-sign-in", csrf)
            .await
            .is_some_and(|c| c["id"] == id),
        None => false,
    };
    if !csrf_ok {
        return message(
            403,
            "Sign-in refused",
            "This form is stale or did not come from this page. Open the approval link again.",
        );
    }
    // Guessing is bounded per approval and per client address, across replicas (the
    // store counts).
    for (key, limit, what) in [
        (
            format!("approval-sign-in\u{1f}{id}"),
            SIGN_IN_ATTEMPTS,
            "This approval has had",
        ),
        (
            address_key(client),
            SIGN_IN_ATTEMPTS_PER_ADDRESS,
            "Your address has made",
        ),
    ] {
        if let Err(page) = limited(cx, &key, limit, what).await {
            tracing::warn!(approval = %id, client = %client, "approver sign-in attempts over the limit");
            return page;
        }
    }
    let credential = fields.get("credential").map_or("", |c| c.as_str());
    let Some(name) = cx.confirmations.approvers.authenticate(credential) else {
        tracing::warn!(approval = %id, "approver sign-in refused");
        return message(
            401,
            "Sign-in refused",
            "That is not an approver credential of this deployment.",
        );
    };
    let times = cx.confirmations.session_times;
    let Some(session) = crate::confirm::session::start(
        &cx.parts.store,
        crate::confirm::session::Kind::Approver,
        name,
        &json!({}),
        times,
        cx.now().as_millisecond(),
    )
    .await
    else {
        return unavailable();
    };
    tracing::info!(approval = %id, approver = %name, "approver signed in");
    Page {
        status: 303,
        headers: vec![
            ("location", format!("/approvals/{id}")),
            (
                "set-cookie",
                cx.confirmations.site.cookie(
                    SESSION_COOKIE,
                    &session,
                    "Strict",
                    times.lifetime_ms / 1000,
                ),
            ),
        ],
        body: layout("Signed in", "<p>Signed in.</p>"),
    }
}

/// `POST /approvals/<id>/decision`.
pub async fn decide(
    cx: Context<'_>,
    id: &str,
    headers: &hyper::HeaderMap,
    body: &[u8],
    provider: &Provider,
) -> Page {
    let Some(name) = approver(cx, headers, provider).await else {
        return message(
            401,
            "Not signed in",
            "Sign in from the approval link first.",
        );
    };
    let fields = form(body);
    let csrf_ok = match fields.get("csrf") {
        Some(csrf) => open(cx, "approval-decision", csrf)
            .await
            .is_some_and(|c| c["id"] == id && c["approver"] == name.as_str()),
        None => false,
    };
    if !csrf_ok {
        tracing::warn!(approval = %id, approver = %name, "approval decision refused: no valid CSRF token");
        return message(
            403,
            "Decision refused",
            "This form is stale or did not come from this page. Open the approval link again; nothing was changed.",
        );
    }
    let approve = match fields.get("decision").map(|d| d.as_str()) {
        Some("approve") => true,
        Some("decline") => false,
        _ => return message(400, "Decision refused", "Choose approve or decline."),
    };
    let now = cx.now().as_millisecond();
    match cx.store.decide_approval(id, &name, approve, now).await {
        Ok(true) => {
            tracing::info!(approval = %id, approver = %name, approved = approve, "approval decided");
            crate::confirm::audit::decision(cx.parts, id, &name, approve).await;
            if approve {
                message(
                    200,
                    "Approved",
                    "Approved. The agent can now run this write once.",
                )
            } else {
                message(200, "Declined", "Declined. The write will not run.")
            }
        }
        Ok(false) => message(
            409,
            "Already decided or expired",
            "This approval was already decided, or has expired. Nothing was changed.",
        ),
        Err(_) => unavailable(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_says_which_person_or_key_asked() {
        assert_eq!(
            super::asked_by("https://idp.example.com#alice@example.com"),
            "alice@example.com (signed in at https://idp.example.com)"
        );
        assert_eq!(super::asked_by("support-agent"), "API key support-agent");
    }
}
