//! An admin's actions in the console: end a user's sessions, delete a user's stored
//! key, decide an approval. Each is taken by [`act`], from a page's form (a button
//! made by [`button`], carrying a CSRF token sealed for the admin, the action and its
//! target) or from the API (an access token), and each is written to the audit with
//! the admin as `confirmation` (`console:<issuer>#<subject>`).

use serde_json::{Value, json};

use super::{Role, Viewer};
use crate::call::Broker;
use crate::html::escape;

fn percent(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// An admin's change, from a console form or the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Approve or decline a pending approval (needs the approver role too).
    Decide {
        /// The approval.
        id: String,
        /// Approve (else decline).
        approve: bool,
    },
    /// End every session of `user` (a user's `<issuer>#<subject>`, or an approver).
    EndSessions {
        /// Whose.
        user: String,
    },
    /// Delete `user`'s stored key for `service`.
    DeleteKey {
        /// Whose (`<issuer>#<subject>`).
        user: String,
        /// Which service's key.
        service: String,
    },
}

impl Action {
    /// The form's CSRF action: the change and its target, so a token opens one form.
    pub fn form_action(&self) -> String {
        match self {
            // One token for both buttons of an approval's form.
            Self::Decide { id, .. } => format!("console:decide:{id}"),
            Self::EndSessions { user } => format!("console:end-sessions:{user}"),
            Self::DeleteKey { user, service } => format!("console:delete-key:{user}:{service}"),
        }
    }
}

/// Why an action was not taken: status, classification, message.
pub type Refused = (u16, &'static str, String);

/// 503: the store did not answer; `what` did not happen (logged, never shown).
fn unchanged(what: &str, error: &dyn std::fmt::Display) -> Refused {
    tracing::error!(error = %error, "console: {what}");
    (
        503,
        "store_unavailable",
        "the store did not answer; nothing was changed; try again".into(),
    )
}

/// Takes `action` as `viewer` (an admin): ends the sessions or deletes the key, and
/// writes the audit record naming the admin (`confirmation` = `console:<admin>`).
/// Answers what happened for a person to read.
pub async fn act(broker: &Broker, viewer: &Viewer, action: &Action) -> Result<Value, Refused> {
    if viewer.role != Role::Admin {
        return Err((
            403,
            "forbidden",
            "an auditor's view is read only; an admin role may act".into(),
        ));
    }
    let by = format!("console:{}", viewer.caller);
    match action {
        Action::Decide { id, approve } => decide(broker, viewer, id, *approve, by).await,
        Action::EndSessions { user } => {
            if user.trim().is_empty() {
                return Err((
                    400,
                    "invalid_request",
                    "name the user whose sessions end".into(),
                ));
            }
            let ended = broker
                .parts
                .store
                .end_sessions_of(user)
                .await
                .map_err(|e| unchanged("sessions not ended", &e))?;
            let record = crate::store::audit::AuditRecord {
                seq: 0,
                at: broker.parts.now().to_string(),
                key_name: user.clone(),
                tool: "hub/sessions".into(),
                descriptor_hash: String::new(),
                catalog_version: String::new(),
                args_sha256: String::new(),
                outcome: crate::store::audit::Outcome::SessionsEnded,
                upstream_status: None,
                classification: "ok".into(),
                trace_id: String::new(),
                duration_ms: 0,
                confirmation: Some(by.clone()),
                guards: None,
                policies: None,
                cost: None,
            };
            tracing::info!(user = %user, ended, by = %by, "sessions ended in the console");
            if let Err(e) = broker.parts.store.append_audit(&record).await {
                tracing::error!(error = %e, "console: ended sessions not audited");
                return Err((
                    503,
                    "store_unavailable",
                    format!(
                        "{ended} session(s) ended, but the audit record was not written; the log holds it"
                    ),
                ));
            }
            Ok(json!({ "user": user, "ended": ended }))
        }
        Action::DeleteKey { user, service } => {
            let Some(hub) = &broker.hub else {
                return Err((
                    404,
                    "not_found",
                    "this broker keeps no users' keys (no vault_key_env)".into(),
                ));
            };
            let Some((issuer, subject)) = user.rsplit_once('#') else {
                return Err((
                    400,
                    "invalid_request",
                    "a user is `<issuer>#<subject>`".into(),
                ));
            };
            let who = crate::caller::User {
                issuer: issuer.into(),
                subject: subject.into(),
            };
            match hub.delete(&broker.parts, &who, service, &by).await {
                Ok(true) => Ok(json!({ "user": user, "service": service, "deleted": true })),
                Ok(false) => Err((
                    404,
                    "not_found",
                    format!("{user} holds no stored key for `{service}`"),
                )),
                Err(crate::hub::Refused::Store) => Err((
                    503,
                    "store_unavailable",
                    crate::hub::Refused::Store.message(),
                )),
                Err(e) => Err((400, "invalid_request", e.message())),
            }
        }
    }
}

/// A button form for `action` when the viewer may take it (an admin signed in with a
/// session, whose CSRF token it carries); empty otherwise.
pub fn button(
    broker: &Broker,
    viewer: &Viewer,
    action: &Action,
    label: &str,
    what: &str,
) -> String {
    let allowed = match action {
        Action::Decide { .. } => viewer.may_approve,
        _ => viewer.role == Role::Admin,
    };
    if !allowed {
        return String::new();
    }
    let Some(csrf) = viewer.form_token(broker, &action.form_action()) else {
        return String::new();
    };
    let (path, fields) = match action {
        Action::Decide { id, approve } => (
            format!("/admin/approvals/{}/decision", percent(id)),
            vec![("decision", if *approve { "approve" } else { "decline" })],
        ),
        Action::EndSessions { user } => (
            "/admin/users/end-sessions".into(),
            vec![("user", user.as_str())],
        ),
        Action::DeleteKey { user, service } => (
            "/admin/users/delete-key".into(),
            vec![("user", user.as_str()), ("service", service.as_str())],
        ),
    };
    let mut form = format!(
        "<form class=\"inline\" method=\"post\" action=\"{}\">",
        escape(&path)
    );
    for (name, value) in fields.into_iter().chain([("csrf", csrf.as_str())]) {
        form.push_str(&format!(
            "<input type=\"hidden\" name=\"{name}\" value=\"{}\">",
            escape(value)
        ));
    }
    form.push_str(&format!(
        "<button class=\"secondary small\" type=\"submit\" aria-label=\"{} {}\">{label}</button></form>",
        escape(label),
        escape(what)
    ));
    form
}

/// Decides approval `id` as `viewer`, who must hold the approver role as well.
async fn decide(
    broker: &Broker,
    viewer: &Viewer,
    id: &str,
    approve: bool,
    by: String,
) -> Result<Value, Refused> {
    if !viewer.may_approve {
        return Err((403, "forbidden", "deciding an approval takes the approver role ([oauth.sign_in] approver_role) as well as an admin role".into()));
    }
    let unavailable = |e: crate::store::StoreError| unchanged("approval not decided", &e);
    let Some(approval) = broker.parts.store.approval(id).await.map_err(unavailable)? else {
        return Err((404, "not_found", format!("no approval `{id}`")));
    };
    let now = broker.parts.now().as_millisecond();
    if !broker
        .parts
        .store
        .decide_approval(id, &viewer.caller, approve, now)
        .await
        .map_err(unavailable)?
    {
        return Err((
            409,
            "conflict",
            format!(
                "approval `{id}` is {}: only a pending approval is decided, once",
                crate::confirm::approval::state_at(&approval, now)
            ),
        ));
    }
    tracing::info!(approval = %id, approver = %viewer.caller, approved = approve, "approval decided in the console");
    crate::confirm::audit::decided(
        &broker.parts,
        crate::confirm::audit::Decided {
            key_name: &approval.key_name,
            tool: &approval.tool,
            descriptor_hash: &approval.descriptor_hash,
            args_sha256: &approval.args_sha256,
            approve,
            by,
            trace_id: format!("approval-{id}"),
        },
    )
    .await;
    Ok(json!({ "id": id, "state": if approve { "approved" } else { "declined" } }))
}
