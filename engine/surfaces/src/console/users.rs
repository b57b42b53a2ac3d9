//! The users-and-keys page and `/admin/api/users`, `/admin/api/keys`: who has used
//! the broker and what they hold, gathered from the store every replica shares.
//!
//! - A user is anyone the audit names as `<issuer>#<subject>`, who stored a key in the
//!   hub, holds a live session, or was charged by a budget. Reads are not recorded per
//!   user (the call path writes nothing for a read), so "last seen" is the latest of
//!   their last audited write, last budget charge and last session use.
//! - A static key is listed by its name from the config, with what it may call; its
//!   hash never leaves the config.
//! - Stored keys show only which service holds one and since when, never a value.
//! - Budget use is each budget's current window, per user, key or shared role.
//!
//! The buttons of an admin's actions on a user are [`super::actions`]'s.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Viewer;
use super::actions::{Action, button};
use crate::call::Broker;
use crate::html::{escape, time};
use crate::reply::Reply;
use crate::run::budgets::rfc3339;
use crate::served::Served;
use crate::store::Store;
use crate::store::budgets::Spending;

/// Rows each source gives at most (the audit's callers, stored keys, sessions).
const MOST: i64 = 2_000;

/// A user as the console lists them.
#[derive(Debug, Default)]
struct Person {
    name: Option<String>,
    roles: Vec<String>,
    last_write_ms: Option<i64>,
    writes: u64,
    sessions: Vec<Value>,
    last_session_ms: Option<i64>,
    stored: Vec<Value>,
    /// Accounts connected by OAuth (never a token).
    connections: Vec<Value>,
    budgets: Vec<Value>,
    last_charge_ms: Option<i64>,
}

impl Person {
    fn last_seen_ms(&self) -> Option<i64> {
        [
            self.last_write_ms,
            self.last_session_ms,
            self.last_charge_ms,
        ]
        .into_iter()
        .flatten()
        .max()
    }

    fn json(&self, caller: &str) -> Value {
        json!({
            "user": caller,
            "name": self.name,
            "roles": self.roles,
            "lastSeen": self.last_seen_ms().map(rfc3339),
            "lastWrite": self.last_write_ms.map(rfc3339),
            "writes": self.writes,
            "sessions": self.sessions,
            "storedKeys": self.stored,
            "connections": self.connections,
            "budgets": self.budgets,
        })
    }
}

/// What the store holds about people and keys, read once per page.
struct Gathered {
    people: BTreeMap<String, Person>,
    /// Approver credentials' sessions (callers without `#`), by name.
    approvers: BTreeMap<String, Vec<Value>>,
    /// Audit records per static key name: (last, count).
    key_writes: BTreeMap<String, (i64, u64)>,
    /// Budget use per `key:<name>` and `role:<role>` scope.
    scoped: BTreeMap<String, Vec<Value>>,
}

/// Each budget's use in its current window, by scope.
async fn current_spending(
    broker: &Broker,
    store: &Store,
    now_ms: i64,
) -> Result<Vec<(Spending, Value)>, String> {
    let budgets = &broker.parts.budgets;
    let Some(since) = budgets.iter().map(|b| b.window.around(now_ms).0).min() else {
        return Ok(Vec::new());
    };
    let rows = store
        .budget_spending(since)
        .await
        .map_err(|e| e.to_string())?;
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let budget = budgets.iter().find(|b| b.name == row.budget)?;
            let (start, resets) = budget.window.around(now_ms);
            (row.window_ms == start).then(|| {
                let shown = json!({
                    "budget": budget.name,
                    "unit": budget.unit,
                    "limit": budget.limit,
                    "used": row.units,
                    "remaining": budget.limit.saturating_sub(row.units),
                    "calls": row.calls,
                    "lastCharge": rfc3339(row.last_ms),
                    "resetsAt": rfc3339(resets),
                });
                (row, shown)
            })
        })
        .collect())
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

async fn gather(served: &Served) -> Result<Gathered, String> {
    let broker = &served.broker;
    let store = super::store(served);
    let now_ms = broker.parts.now().as_millisecond();
    let mut g = Gathered {
        people: BTreeMap::new(),
        approvers: BTreeMap::new(),
        key_writes: BTreeMap::new(),
        scoped: BTreeMap::new(),
    };
    for p in store.audit_callers(MOST).await.map_err(|e| e.to_string())? {
        if p.name.contains('#') {
            let person = g.people.entry(p.name).or_default();
            person.last_write_ms = Some(p.last_ms);
            person.writes = p.records;
        } else {
            g.key_writes.insert(p.name, (p.last_ms, p.records));
        }
    }
    for (issuer, subject, service, set_ms) in store
        .hub_key_holders(MOST)
        .await
        .map_err(|e| e.to_string())?
    {
        g.people
            .entry(format!("{issuer}#{subject}"))
            .or_default()
            .stored
            .push(json!({ "service": service, "setAt": rfc3339(set_ms) }));
    }
    for c in store
        .all_connections(MOST)
        .await
        .map_err(|e| e.to_string())?
    {
        g.people
            .entry(format!("{}#{}", c.issuer, c.subject))
            .or_default()
            .connections
            .push(json!({
                "service": c.service,
                "account": c.account,
                "scopes": c.scopes,
                "since": rfc3339(c.set_ms),
                "expiresAt": c.expires_ms.map(rfc3339),
                "state": c.state,
            }));
    }
    let sessions = store
        .list_sessions(now_ms, u32::try_from(MOST).unwrap_or(u32::MAX))
        .await
        .map_err(|e| e.to_string())?;
    for s in sessions {
        let shown = json!({
            "kind": s.kind,
            "started": rfc3339(s.created_ms),
            "lastUsed": rfc3339(s.seen_ms),
            "expires": rfc3339(s.expires_ms),
        });
        if !s.caller.contains('#') {
            g.approvers.entry(s.caller).or_default().push(shown);
            continue;
        }
        let person = g.people.entry(s.caller).or_default();
        // Sessions come newest first: the newest one's claims name the person.
        if person.sessions.is_empty() {
            let claims: Value = serde_json::from_str(&s.claims).unwrap_or(Value::Null);
            person.name = claims.get("name").and_then(Value::as_str).map(String::from);
            person.roles = strings(claims.get("roles"));
        }
        person.last_session_ms = person.last_session_ms.max(Some(s.seen_ms));
        person.sessions.push(shown);
    }
    for (row, shown) in current_spending(broker, store, now_ms).await? {
        if let Some(user) = row.scope.strip_prefix("user:") {
            let person = g.people.entry(user.to_string()).or_default();
            person.last_charge_ms = person.last_charge_ms.max(Some(row.last_ms));
            person.budgets.push(shown);
        } else {
            g.scoped.entry(row.scope).or_default().push(shown);
        }
    }
    Ok(g)
}

/// The users matching `q` (in the caller or the name, any case), last seen first.
fn users_json(g: &Gathered, q: Option<&str>) -> Vec<Value> {
    let q = q.map(str::to_lowercase);
    let mut people: Vec<(&String, &Person)> = g
        .people
        .iter()
        .filter(|(caller, p)| {
            q.as_deref().is_none_or(|q| {
                caller.to_lowercase().contains(q)
                    || p.name
                        .as_deref()
                        .is_some_and(|n| n.to_lowercase().contains(q))
            })
        })
        .collect();
    people.sort_by_key(|(_, p)| std::cmp::Reverse(p.last_seen_ms()));
    people
        .into_iter()
        .map(|(caller, p)| p.json(caller))
        .collect()
}

fn keys_json(broker: &Broker, g: &Gathered) -> Vec<Value> {
    broker
        .callers
        .keys
        .callers()
        .map(|k| {
            let (last, writes) = g
                .key_writes
                .get(&k.name)
                .copied()
                .map_or((None, 0), |(l, n)| (Some(l), n));
            json!({
                "name": k.name,
                "services": k.services,
                "tiers": k.tiers,
                "risks": k.risks,
                "roles": k.roles,
                "toolset": k.toolset,
                "confirmation": k.confirmation.as_str(),
                "lastWrite": last.map(rfc3339),
                "writes": writes,
                "budgets": g.scoped.get(&format!("key:{}", k.name)).cloned().unwrap_or_default(),
            })
        })
        .collect()
}

/// `GET /admin/api/users` (`?q=` filters by user or name).
pub async fn api_users(served: &Served, query: &str) -> Reply {
    let fields = super::query(query);
    if let Err(message) = super::only(&fields, &["q"]) {
        return Reply::error(400, "invalid_request", &message);
    }
    match gather(served).await {
        Ok(g) => Reply::ok(&json!({
            "users": users_json(&g, super::field(&fields, "q").as_deref()),
            "approvers": g.approvers.iter().map(|(name, sessions)| json!({ "name": name, "sessions": sessions })).collect::<Vec<_>>(),
            "sharedBudgets": g.scoped.iter().filter_map(|(scope, b)| scope.strip_prefix("role:").map(|role| json!({ "role": role, "budgets": b }))).collect::<Vec<_>>(),
        })),
        Err(e) => super::store_down("users and keys", &e),
    }
}

/// `GET /admin/api/keys`: the static keys, and which stored-key services the hub holds.
pub async fn api_keys(served: &Served) -> Reply {
    let broker = &served.broker;
    match gather(served).await {
        Ok(g) => Reply::ok(&json!({
            "keys": keys_json(broker, &g),
            "hub": broker.hub.as_ref().map(|h| json!({ "services": h.services() })),
            "storedKeys": g.people.iter().flat_map(|(user, p)| p.stored.iter().map(move |s| json!({ "user": user, "service": s["service"], "setAt": s["setAt"] }))).collect::<Vec<_>>(),
        })),
        Err(e) => super::store_down("users and keys", &e),
    }
}

fn budgets_cell(budgets: &[Value]) -> String {
    if budgets.is_empty() {
        return "<span class=\"muted\">none</span>".into();
    }
    budgets
        .iter()
        .map(|b| {
            format!(
                "<div>{}: {} / {} {} <span class=\"muted\">resets {}</span></div>",
                escape(b["budget"].as_str().unwrap_or("")),
                b["used"],
                b["limit"],
                escape(b["unit"].as_str().unwrap_or("")),
                time(b["resetsAt"].as_str().unwrap_or(""))
            )
        })
        .collect()
}

fn optional_time(v: &Value) -> String {
    v.as_str()
        .map_or_else(|| "<span class=\"muted\">never</span>".to_string(), time)
}

fn tags(v: &Value, none: &str) -> String {
    match v.as_array() {
        Some(items) if !items.is_empty() => items
            .iter()
            .map(|i| {
                format!(
                    "<span class=\"tag\">{}</span> ",
                    escape(i.as_str().unwrap_or(""))
                )
            })
            .collect(),
        _ => format!("<span class=\"muted\">{none}</span>"),
    }
}

fn audit_link(who: &str, count: &Value) -> String {
    let q = url::form_urlencoded::byte_serialize(who.as_bytes()).collect::<String>();
    format!("<a href=\"/admin/audit?principal={q}\">{count}</a>")
}

fn users_table(broker: &Broker, viewer: &Viewer, users: &[Value]) -> String {
    let mut out = String::from(
        "<table class=\"sortable\"><thead><tr><th>User</th><th>Roles</th><th>Last seen</th><th>Last write</th><th>Writes</th><th>Sessions</th><th>Stored keys</th><th>Budgets</th></tr></thead><tbody>",
    );
    for u in users {
        let user = u["user"].as_str().unwrap_or("");
        let name = u["name"]
            .as_str()
            .map(|n| format!("{}<br>", escape(n)))
            .unwrap_or_default();
        let sessions = u["sessions"].as_array().map_or(0, Vec::len);
        let end = if sessions > 0 {
            button(
                broker,
                viewer,
                &Action::EndSessions { user: user.into() },
                "End sessions",
                user,
            )
        } else {
            String::new()
        };
        let mut stored = String::new();
        for s in u["storedKeys"].as_array().into_iter().flatten() {
            let service = s["service"].as_str().unwrap_or("");
            stored.push_str(&format!(
                "<div><span class=\"tag\">{}</span> <span class=\"muted\">since {}</span> {}</div>",
                escape(service),
                time(s["setAt"].as_str().unwrap_or("")),
                button(
                    broker,
                    viewer,
                    &Action::DeleteKey {
                        user: user.into(),
                        service: service.into()
                    },
                    "Delete",
                    &format!("{service} key of {user}")
                )
            ));
        }
        for c in u["connections"].as_array().into_iter().flatten() {
            let service = c["service"].as_str().unwrap_or("");
            let account = c["account"]
                .as_str()
                .map(|a| format!(" as {}", escape(a)))
                .unwrap_or_default();
            let state = if c["state"] == "reconnect" {
                "<span class=\"tag\">needs reconnect</span> "
            } else {
                ""
            };
            stored.push_str(&format!(
                "<div><span class=\"tag\">{}</span> {state}<span class=\"muted\">connected{account} since {}; scopes {}; expires {}</span> {}</div>",
                escape(service),
                time(c["since"].as_str().unwrap_or("")),
                escape(c["scopes"].as_str().unwrap_or("")),
                c["expiresAt"].as_str().map_or_else(|| "never said".to_string(), time),
                button(
                    broker,
                    viewer,
                    &Action::DeleteKey {
                        user: user.into(),
                        service: service.into()
                    },
                    "Disconnect",
                    &format!("{service} account of {user}")
                )
            ));
        }
        if stored.is_empty() {
            stored.push_str("<span class=\"muted\">none</span>");
        }
        out.push_str(&format!(
            "<tr><td>{name}<code>{}</code></td><td>{}</td><td data-sort=\"{}\">{}</td><td data-sort=\"{}\">{}</td><td>{}</td><td data-sort=\"{sessions}\">{sessions} {end}</td><td>{stored}</td><td>{}</td></tr>",
            escape(user),
            tags(&u["roles"], "unknown"),
            escape(u["lastSeen"].as_str().unwrap_or("")),
            optional_time(&u["lastSeen"]),
            escape(u["lastWrite"].as_str().unwrap_or("")),
            optional_time(&u["lastWrite"]),
            audit_link(user, &u["writes"]),
            budgets_cell(u["budgets"].as_array().map_or(&[], Vec::as_slice)),
        ));
    }
    out.push_str("</tbody></table>");
    out
}

fn keys_table(keys: &[Value]) -> String {
    let mut out = String::from(
        "<table class=\"sortable\"><thead><tr><th>Key</th><th>Services</th><th>Tiers</th><th>Risks</th><th>Roles</th><th>Confirmation</th><th>Last write</th><th>Writes</th><th>Budgets</th></tr></thead><tbody>",
    );
    for k in keys {
        let name = k["name"].as_str().unwrap_or("");
        out.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td data-sort=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(name),
            tags(&k["services"], "all"),
            tags(&k["tiers"], "all"),
            tags(&k["risks"], "all"),
            tags(&k["roles"], "none"),
            escape(k["confirmation"].as_str().unwrap_or("")),
            escape(k["lastWrite"].as_str().unwrap_or("")),
            optional_time(&k["lastWrite"]),
            audit_link(name, &k["writes"]),
            budgets_cell(k["budgets"].as_array().map_or(&[], Vec::as_slice)),
        ));
    }
    out.push_str("</tbody></table>");
    out
}

/// What a finished form says (`?done=`): fixed sentences only.
fn done_note(done: Option<&str>) -> &'static str {
    match done {
        Some("sessions") => {
            "<p class=\"note\" role=\"status\">The sessions ended on every replica; the audit records who ended them.</p>"
        }
        Some("key") => {
            "<p class=\"note\" role=\"status\">The stored key (and any connected account, revoked at its provider) was deleted; the audit records who deleted it.</p>"
        }
        _ => "",
    }
}

/// `GET /admin/users` (`?q=` filters the users).
pub async fn page(served: &Served, viewer: &Viewer, query: &str) -> crate::html::Page {
    let broker = &served.broker;
    let fields = super::query(query);
    let q = super::field(&fields, "q");
    let g = match gather(served).await {
        Ok(g) => g,
        Err(e) => {
            tracing::error!(error = %e, "console: users not read");
            return super::shell::page(
                broker,
                viewer,
                "/admin/users",
                503,
                "Users and keys",
                "<p class=\"empty\">The store did not answer; reload in a moment.</p>",
            );
        }
    };
    let users = users_json(&g, q.as_deref());
    let mut body = String::from(done_note(super::field(&fields, "done").as_deref()));
    body.push_str(&format!(
        "<form class=\"filters\" method=\"get\" action=\"/admin/users\" role=\"search\"><label>User or name <input type=\"search\" name=\"q\" value=\"{}\"></label><button type=\"submit\">Find</button></form>",
        escape(q.as_deref().unwrap_or(""))
    ));
    body.push_str(&format!(
        "<h2>Users <span class=\"muted\">({})</span></h2>",
        users.len()
    ));
    if users.is_empty() {
        body.push_str(if q.is_some() {
            "<p class=\"empty\">No user matches.</p>"
        } else {
            "<p class=\"empty\">No user has signed in, stored a key or made a write yet.</p>"
        });
    } else {
        body.push_str("<p class=\"muted\">Last seen is the latest write, budget charge or session use: reads are not recorded per user.</p>");
        body.push_str(&users_table(broker, viewer, &users));
    }
    let keys = keys_json(broker, &g);
    body.push_str(&format!(
        "<h2>Static keys <span class=\"muted\">({})</span></h2>",
        keys.len()
    ));
    if keys.is_empty() {
        body.push_str(
            "<p class=\"empty\">The config names no key: only users' access tokens call.</p>",
        );
    } else {
        body.push_str("<p class=\"muted\">By name; a key's hash stays in the config.</p>");
        body.push_str(&keys_table(&keys));
    }
    if !g.approvers.is_empty() {
        body.push_str("<h2>Approvers signed in</h2><table><thead><tr><th>Approver</th><th>Sessions</th></tr></thead><tbody>");
        for (name, sessions) in &g.approvers {
            body.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{} {}</td></tr>",
                escape(name),
                sessions.len(),
                button(
                    broker,
                    viewer,
                    &Action::EndSessions { user: name.clone() },
                    "End sessions",
                    name
                )
            ));
        }
        body.push_str("</tbody></table>");
    }
    let shared: Vec<_> = g
        .scoped
        .iter()
        .filter_map(|(scope, b)| scope.strip_prefix("role:").map(|r| (r, b)))
        .collect();
    if !shared.is_empty() {
        body.push_str("<h2>Budgets shared by a role</h2><table><thead><tr><th>Role</th><th>Budgets</th></tr></thead><tbody>");
        for (role, budgets) in shared {
            body.push_str(&format!(
                "<tr><td><span class=\"tag\">{}</span></td><td>{}</td></tr>",
                escape(role),
                budgets_cell(budgets)
            ));
        }
        body.push_str("</tbody></table>");
    }
    super::shell::page(broker, viewer, "/admin/users", 200, "Users and keys", &body)
}
