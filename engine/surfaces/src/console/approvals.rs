//! The approvals page and `/admin/api/approvals`: writes waiting for a person (mode
//! `human`) and those decided, newest first; an approval's page shows exactly what the
//! approval page shows its approver ([`crate::confirm::approval::page::summary`]) and,
//! to an admin who also holds the approver role, the buttons to approve or decline
//! ([`super::actions`]).

use serde_json::{Value, json};

use super::Viewer;
use super::actions::{Action, button};
use crate::confirm::approval::{preview, state_at};
use crate::html::{escape, time};
use crate::reply::Reply;
use crate::run::budgets::rfc3339;
use crate::served::Served;
use crate::store::approvals::{Approval, Shown};

/// The most a page holds.
const MAX_LIMIT: i64 = 200;
/// A page's size when none is asked.
const DEFAULT_LIMIT: i64 = 50;

/// What a list asks for.
#[derive(Debug, PartialEq, Eq)]
struct Selection {
    shown: Shown,
    /// The cursor: `(created_ms, id)` of the last one of the page before.
    before: Option<(i64, String)>,
    limit: i64,
}

fn shown_word(shown: Shown) -> &'static str {
    match shown {
        Shown::All => "all",
        Shown::Pending => "pending",
        Shown::Expired => "expired",
        Shown::Decided => "decided",
    }
}

/// Reads `state`, `cursor` and `limit`; an unknown parameter or value is an error
/// naming it.
fn selection(query: &str) -> Result<Selection, String> {
    let fields = super::query(query);
    super::only(&fields, &["state", "cursor", "limit"])?;
    let shown = match super::field(&fields, "state").as_deref() {
        None | Some("all") => Shown::All,
        Some("pending") => Shown::Pending,
        Some("expired") => Shown::Expired,
        Some("decided") => Shown::Decided,
        Some(other) => {
            return Err(format!(
                "state `{other}`: one of all, pending, expired, decided"
            ));
        }
    };
    let before = super::position(&fields, "cursor")?;
    let limit = super::limit(&fields, DEFAULT_LIMIT, MAX_LIMIT)?;
    Ok(Selection {
        shown,
        before,
        limit,
    })
}

fn entry(a: &Approval, now_ms: i64) -> Value {
    json!({
        "id": a.id,
        "tool": a.tool,
        "askedBy": a.key_name,
        "state": state_at(a, now_ms),
        "approver": a.approver,
        "createdAt": rfc3339(a.created_ms),
        "expiresAt": rfc3339(a.expires_ms),
    })
}

/// A page of approvals and the cursor of the next, or why there is none.
async fn list(
    served: &Served,
    query: &str,
) -> Result<(Selection, Vec<Approval>, Option<String>), Reply> {
    let broker = &served.broker;
    let s = selection(query).map_err(|m| Reply::error(400, "invalid_request", &m))?;
    let now = broker.parts.now().as_millisecond();
    let mut rows = super::store(served)
        .list_approvals(
            s.shown,
            now,
            s.before.as_ref().map(|(ms, id)| (*ms, id.as_str())),
            s.limit + 1,
        )
        .await
        .map_err(|e| super::store_down("approvals", &e))?;
    let more = rows.len() > usize::try_from(s.limit).unwrap_or(usize::MAX);
    rows.truncate(usize::try_from(s.limit).unwrap_or(usize::MAX));
    let next = more
        .then(|| rows.last().map(|a| format!("{}.{}", a.created_ms, a.id)))
        .flatten();
    Ok((s, rows, next))
}

/// `GET /admin/api/approvals?state=&cursor=&limit=`.
pub async fn api_list(served: &Served, query: &str) -> Reply {
    let broker = &served.broker;
    let now = broker.parts.now().as_millisecond();
    match list(served, query).await {
        Ok((_, rows, next)) => Reply::ok(&json!({
            "approvals": rows.iter().map(|a| entry(a, now)).collect::<Vec<_>>(),
            "nextCursor": next,
        })),
        Err(a) => a,
    }
}

async fn one(served: &Served, id: &str) -> Result<Approval, Reply> {
    match super::store(served).approval(id).await {
        Ok(Some(a)) => Ok(a),
        Ok(None) => Err(Reply::error(
            404,
            "not_found",
            &format!("no approval `{id}`"),
        )),
        Err(e) => Err(super::store_down("an approval", &e)),
    }
}

/// `GET /admin/api/approvals/<id>`: the entry and what its approver is shown.
pub async fn api_one(served: &Served, id: &str) -> Reply {
    let broker = &served.broker;
    match one(served, id).await {
        Ok(a) => {
            let mut shown = entry(&a, broker.parts.now().as_millisecond());
            shown["preview"] = preview(&broker.confirmations, &a);
            Reply::ok(&shown)
        }
        Err(answer) => answer,
    }
}

fn state_tag(state: &str) -> String {
    let class = match state {
        "pending" => "warn",
        "approved" | "used" => "ok",
        _ => "muted",
    };
    format!("<span class=\"tag {class}\">{}</span>", escape(state))
}

/// `GET /admin/approvals`.
pub async fn page(served: &Served, viewer: &Viewer, query: &str) -> crate::html::Page {
    let broker = &served.broker;
    let (s, rows, next) = match list(served, query).await {
        Ok(listed) => listed,
        Err(answer) => {
            return super::shell::failed(
                broker,
                viewer,
                "/admin/approvals",
                "Approvals",
                &answer,
                "",
            );
        }
    };
    let now = broker.parts.now().as_millisecond();
    let mut body = super::shell::filter_links(
        "Which approvals",
        &["all", "pending", "decided", "expired"],
        shown_word(s.shown),
        |word| format!("/admin/approvals?state={word}"),
    );
    if !viewer.may_approve {
        body.push_str("<p class=\"muted\">Deciding an approval here takes an admin role and the approver role ([oauth.sign_in] approver_role); you may look.</p>");
    }
    if rows.is_empty() {
        body.push_str("<p class=\"empty\">No approval here.</p>");
    } else {
        body.push_str("<table class=\"sortable\"><thead><tr><th>Asked</th><th>Tool</th><th>Asked by</th><th>State</th><th>Decided by</th><th>Expires</th></tr></thead><tbody>");
        for a in &rows {
            let id =
                percent_encoding::utf8_percent_encode(&a.id, percent_encoding::NON_ALPHANUMERIC);
            body.push_str(&format!(
                "<tr><td data-sort=\"{}\"><a href=\"/admin/approvals/{id}\">{}</a></td><td><a href=\"/admin/tools/{}\"><code>{}</code></a></td><td>{}</td><td>{}</td><td>{}</td><td data-sort=\"{}\">{}</td></tr>",
                a.created_ms,
                time(&rfc3339(a.created_ms)),
                escape(&a.tool),
                escape(&a.tool),
                escape(&crate::confirm::approval::page::asked_by(&a.key_name)),
                state_tag(state_at(a, now)),
                a.approver.as_deref().map_or_else(|| "<span class=\"muted\">nobody yet</span>".to_string(), escape),
                a.expires_ms,
                time(&rfc3339(a.expires_ms)),
            ));
        }
        body.push_str("</tbody></table>");
    }
    if let Some(next) = next {
        body.push_str(&format!(
            "<p class=\"pager\"><a href=\"/admin/approvals?state={}&amp;cursor={}&amp;limit={}\">Older</a></p>",
            shown_word(s.shown),
            escape(&next),
            s.limit
        ));
    }
    super::shell::page(broker, viewer, "/admin/approvals", 200, "Approvals", &body)
}

/// `GET /admin/approvals/<id>`: what its approver is shown, and the decision buttons
/// for an admin who may approve.
pub async fn page_one(
    served: &Served,
    viewer: &Viewer,
    id: &str,
    query: &str,
) -> crate::html::Page {
    let broker = &served.broker;
    let a = match one(served, id).await {
        Ok(a) => a,
        Err(answer) => {
            return super::shell::failed(
                broker,
                viewer,
                "/admin/approvals",
                "Approval",
                &answer,
                ". <a href=\"/admin/approvals\">All approvals</a>.",
            );
        }
    };
    let now = broker.parts.now().as_millisecond();
    let state = state_at(&a, now);
    let mut body = String::new();
    if super::field(&super::query(query), "done").as_deref() == Some("decided") {
        body.push_str(
            "<p class=\"note\" role=\"status\">Decided; the audit records who decided.</p>",
        );
    }
    body.push_str(&crate::confirm::approval::page::summary(
        &preview(&broker.confirmations, &a),
        &a,
        state,
    ));
    if let Some(approver) = &a.approver {
        body.push_str(&format!(
            "<p>Decided by <code>{}</code>.</p>",
            escape(approver)
        ));
    }
    if state == "pending" {
        let approve = button(
            broker,
            viewer,
            &Action::Decide {
                id: a.id.clone(),
                approve: true,
            },
            "Approve",
            &a.tool,
        );
        if approve.is_empty() {
            body.push_str("<p class=\"muted\">Deciding takes an admin role and the approver role; the approver may also decide on the approval page.</p>");
        } else {
            body.push_str(
                "<p class=\"warn\">Approve only if the user asked for exactly this change.</p><p>",
            );
            body.push_str(&approve);
            body.push(' ');
            body.push_str(&button(
                broker,
                viewer,
                &Action::Decide {
                    id: a.id.clone(),
                    approve: false,
                },
                "Decline",
                &a.tool,
            ));
            body.push_str("</p>");
        }
    }
    body.push_str("<p><a href=\"/admin/approvals\">All approvals</a></p>");
    super::shell::page(broker, viewer, "/admin/approvals", 200, "Approval", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_reads_its_three_parameters_and_names_a_bad_one() {
        assert_eq!(
            selection("").unwrap(),
            Selection {
                shown: Shown::All,
                before: None,
                limit: DEFAULT_LIMIT
            }
        );
        assert_eq!(
            selection("state=pending&cursor=1700.ab&limit=5").unwrap(),
            Selection {
                shown: Shown::Pending,
                before: Some((1700, "ab".into())),
                limit: 5
            }
        );
        for (query, says) in [
            ("state=won", "state `won`"),
            ("cursor=ab", "cursor `ab`"),
            ("cursor=12.", "cursor `12.`"),
            ("limit=0", "limit `0`"),
            ("limit=201", "limit `201`"),
            ("colour=red", "unknown parameter `colour`"),
        ] {
            let err = selection(query).unwrap_err();
            assert!(err.contains(says), "{query}: {err}");
        }
    }
}
