//! What the console's tests share: a deployment with the console, access tokens by
//! role, the JSON API and pages read, and a form's CSRF token.

use serde_json::{Value, json};

use crate::support::hub::{api, hub_setup, request};
use crate::support::idp::{Idp, Signer};
use crate::support::{Setup, TestBroker};

pub const ADMIN: &str = "[admin]\nroles = [\"admin\"]\nauditor_roles = [\"auditor\"]\n";

/// A hub deployment with the console, `top` prepended (top-level keys) and `tables`
/// appended.
pub fn console_setup(idp: &Idp, upstream: &wiremock::MockServer, top: &str, tables: &str) -> Setup {
    let mut setup = hub_setup(idp, upstream, "");
    setup.config = Some(format!(
        "{top}\n{}\n{ADMIN}{tables}",
        setup.config.take().unwrap_or_default()
    ));
    setup.config_as_file = true;
    setup
}

/// An access token of `subject` with `roles`.
pub fn token(idp: &Idp, subject: &str, roles: &[&str]) -> String {
    let mut claims = idp.claims(subject, "tools:read tools:write");
    claims["roles"] = json!(roles);
    idp.token_by(Signer::Rsa, &claims)
}

pub async fn get(broker: &TestBroker, path: &str, bearer: Option<&str>) -> (u16, Value) {
    let (status, text) = api(broker, reqwest::Method::GET, path, bearer, None).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: not JSON: {text}")),
    )
}

/// An API action by `DELETE` as `bearer`: `(status, body text)`.
pub async fn delete(broker: &TestBroker, path: &str, bearer: Option<&str>) -> (u16, String) {
    api(broker, reqwest::Method::DELETE, path, bearer, None).await
}

/// A decision on approval `id` through the API as `bearer`: `(status, body text)`.
pub async fn decide(
    broker: &TestBroker,
    id: &str,
    bearer: Option<&str>,
    body: Option<Value>,
) -> (u16, String) {
    let path = format!("/admin/api/approvals/{id}/decision");
    api(broker, reqwest::Method::POST, &path, bearer, body).await
}

/// A page with a session cookie: `(status, headers, html)`.
pub async fn page(
    broker: &TestBroker,
    path: &str,
    cookie: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("cookie", c)).into_iter().collect();
    request(broker, reqwest::Method::GET, path, &headers, None).await
}

/// The CSRF token of a page's form posting to `action` (for `user`, when given).
pub fn form_csrf(html: &str, action: &str, user: &str) -> String {
    html.split("<form ")
        .find(|form| {
            form.contains(&format!("action=\"{action}\""))
                && (user.is_empty() || form.contains(&format!("name=\"user\" value=\"{user}\"")))
        })
        .and_then(|form| form.split("name=\"csrf\" value=\"").nth(1))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no {action} form for {user}"))
        .to_string()
}
