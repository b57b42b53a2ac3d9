//! The operator's console at `/admin` (docs/console.md): every call, user, key,
//! approval and policy in one place, for people whose provider roles `[admin]` names.
//! Each page is backed by a JSON API of the same name under `/admin/api/`.
//!
//! - `access`: who is looking ([`Viewer`]): a hub session (`[oauth.sign_in]`) or an
//!   access token whose roles hold an admin or auditor role; never a static API key.
//! - `shell`: the console's layout (navigation, who is signed in) and its one script.
//! - `overview`, `catalog`, `users`, `approvals`, `tasks`, `audit`, `settings`: what
//!   each page shows, as JSON and as HTML.
//! - `actions`: what an admin may change (end sessions, delete a stored key, decide an
//!   approval), each audited with who took it.
//!
//! Reads through the console's own store handle (`crate::served::EndpointState::console_store`), never
//! the calls' connections; nothing here runs on the call path. May import everything
//! below the endpoints: the broker, the hub's sign-in, the store, the catalog, policies.

pub mod access;
pub mod actions;
pub mod approvals;
pub mod audit;
pub mod catalog;
pub mod overview;
pub mod settings;
pub mod shell;
pub mod tasks;
pub mod users;

use crate::call::Broker;
use crate::reply::Reply;
use crate::served::Served;

/// What a viewer may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sees everything and may act (approve, deny, revoke, delete a stored key).
    Admin,
    /// Sees everything, changes nothing.
    Auditor,
}

impl Role {
    /// The word the pages and the API show.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Auditor => "auditor",
        }
    }
}

/// The person looking at the console.
#[derive(Debug, Clone)]
pub struct Viewer {
    /// `<issuer>#<subject>`: how the audit names them.
    pub caller: String,
    /// What the pages call them.
    pub name: String,
    /// Their console role.
    pub role: Role,
    /// An admin who also holds `[oauth.sign_in] approver_role`: may decide approvals.
    pub may_approve: bool,
    /// The hub session they are signed in with (`None` for an access token).
    pub session: Option<crate::hub::signin::Session>,
}

impl Viewer {
    /// A CSRF token of this viewer's session for the form `action`; `None` without a
    /// session (an access token posts no form) or a hub.
    pub fn form_token(&self, broker: &Broker, action: &str) -> Option<String> {
        let (session, hub) = self.session.as_ref().zip(broker.hub.as_ref())?;
        crate::hub::signin::form_token(
            &hub.cipher,
            session,
            action,
            broker.parts.now().as_millisecond(),
        )
    }

    /// Whether `token` is a live CSRF token of this viewer's session for `action`.
    pub fn form_token_ok(&self, broker: &Broker, action: &str, token: Option<&str>) -> bool {
        self.session
            .as_ref()
            .zip(broker.hub.as_ref())
            .is_some_and(|(session, hub)| {
                crate::hub::signin::form_token_ok(
                    &hub.cipher,
                    session,
                    action,
                    token,
                    broker.parts.now().as_millisecond(),
                )
            })
    }
}

/// 503: the store did not answer while reading `what` (logged, never shown).
pub fn store_down(what: &str, error: &dyn std::fmt::Display) -> Reply {
    tracing::error!(error = %error, "console: {what} not read");
    Reply::error(
        503,
        "store_unavailable",
        "the store did not answer; try again",
    )
}

/// The store the console reads: its own handle when `serve` opened one.
pub fn store(served: &Served) -> &crate::store::Store {
    served
        .endpoints
        .console_store
        .as_ref()
        .unwrap_or(&served.broker.parts.store)
}

/// Query parameters of a request, decoded; a name given twice keeps the last.
pub fn query(text: &str) -> std::collections::BTreeMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

/// A query field, trimmed; `None` when absent or empty.
pub fn field(fields: &std::collections::BTreeMap<String, String>, name: &str) -> Option<String> {
    fields
        .get(name)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
        .map(String::from)
}

/// A list's `limit`: `default` when absent, else a number from 1 to `most`.
pub fn limit(
    fields: &std::collections::BTreeMap<String, String>,
    default: i64,
    most: i64,
) -> Result<i64, String> {
    match field(fields, "limit") {
        None => Ok(default),
        Some(l) => l
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=most).contains(n))
            .ok_or_else(|| format!("limit `{l}`: a number from 1 to {most}")),
    }
}

/// A list's cursor `<ms>.<id>` in the field `name` (what the page before answered as
/// its next cursor), if given.
pub fn position(
    fields: &std::collections::BTreeMap<String, String>,
    name: &str,
) -> Result<Option<(i64, String)>, String> {
    field(fields, name)
        .map(|c| {
            c.split_once('.')
                .and_then(|(ms, id)| Some((ms.parse::<i64>().ok()?, id.to_string())))
                .filter(|(_, id)| !id.is_empty())
                .ok_or_else(|| {
                    format!("{name} `{c}`: pass the next cursor the page before answered")
                })
        })
        .transpose()
}

/// Refuses a query parameter a list does not take, naming those it takes.
pub fn only(
    fields: &std::collections::BTreeMap<String, String>,
    takes: &[&str],
) -> Result<(), String> {
    match fields.keys().find(|k| !takes.contains(&k.as_str())) {
        Some(unknown) => Err(format!(
            "unknown parameter `{unknown}`: {}",
            takes.join(", ")
        )),
        None => Ok(()),
    }
}
