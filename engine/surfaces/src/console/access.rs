//! Who is looking at the console: a person signed in through the hub's sign-in
//! (`[oauth.sign_in]`, the session cookie) or an access token of the `[oauth]`
//! provider (`Authorization: Bearer`, checked as for a call), whose roles hold one of
//! `[admin] roles` (admin) or `auditor_roles` (auditor). A static API key never opens
//! the console, whatever its `roles`: keys belong to agents, the console to people.

use super::{Role, Viewer};
use crate::call::Broker;
use crate::config::admin::AdminConfig;
use crate::served::Served;

/// Why the console is not shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 401 (no credential), 403 (a credential without a console role), 404 (no
    /// `[admin]`), 503 (the store does not answer).
    pub status: u16,
    /// The error classification of the JSON answer.
    pub classification: &'static str,
    /// What a person reads: what is wrong and what to do.
    pub message: String,
}

impl Refusal {
    fn new(status: u16, classification: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            classification,
            message: message.into(),
        }
    }
}

/// The console role `roles` give under `admin`: admin before auditor.
pub fn role_of(admin: &AdminConfig, roles: &[String]) -> Option<Role> {
    if roles.iter().any(|r| admin.roles.contains(r)) {
        Some(Role::Admin)
    } else if roles.iter().any(|r| admin.auditor_roles.contains(r)) {
        Some(Role::Auditor)
    } else {
        None
    }
}

fn no_role(admin: &AdminConfig) -> Refusal {
    let mut roles: Vec<&str> = admin
        .roles
        .iter()
        .chain(&admin.auditor_roles)
        .map(String::as_str)
        .collect();
    roles.dedup();
    Refusal::new(
        403,
        "forbidden",
        format!(
            "your account has none of the console's roles ({}); ask an administrator to grant one at the identity provider",
            roles.join(", ")
        ),
    )
}

/// Whether an admin with `roles` may decide approvals: they also hold
/// `[oauth.sign_in] approver_role`, as the approval page asks.
fn may_approve(broker: &Broker, role: Role, roles: &[String]) -> bool {
    role == Role::Admin
        && broker
            .hub
            .as_ref()
            .and_then(|hub| hub.sign_in.as_ref())
            .and_then(|sign_in| sign_in.approver_role.as_ref())
            .is_some_and(|approver| roles.contains(approver))
}

/// The viewer of a request, or why there is none.
pub async fn viewer(served: &Served, headers: &hyper::HeaderMap) -> Result<Viewer, Refusal> {
    let broker = &served.broker;
    let Some(admin) = &served.endpoints.admin else {
        return Err(Refusal::new(
            404,
            "not_found",
            "this broker has no console: its config has no [admin] table (docs/console.md)",
        ));
    };
    if let Some(authorization) = headers.get(hyper::header::AUTHORIZATION) {
        let caller = broker
            .callers
            .authenticate(authorization.to_str().ok(), broker.parts.now())
            .await
            .map_err(|e| Refusal::new(401, "unauthorized", e.message))?;
        let Some(user) = &caller.user else {
            return Err(Refusal::new(
                403,
                "forbidden",
                "an API key does not open the console: sign in, or send the access token of a person with an admin or auditor role",
            ));
        };
        let role = role_of(admin, &caller.roles).ok_or_else(|| no_role(admin))?;
        let caller_name = crate::hub::caller_name(user);
        return Ok(Viewer {
            name: user.subject.clone(),
            caller: caller_name,
            role,
            may_approve: may_approve(broker, role, &caller.roles),
            session: None,
        });
    }
    let (Some(hub), Some(oauth)) = (&broker.hub, &broker.callers.oauth) else {
        return Err(Refusal::new(
            401,
            "unauthorized",
            "send an access token (Authorization: Bearer) of a person with an admin or auditor role; this broker has no sign-in for pages (docs/console.md)",
        ));
    };
    let now = broker.parts.now().as_millisecond();
    let session =
        crate::hub::signin::session(&broker.parts.store, hub.site, hub.times, headers, now)
            .await
            .filter(|s| s.issuer == oauth.issuer())
            .ok_or_else(|| Refusal::new(401, "unauthorized", "sign in to open the console"))?;
    let role = role_of(admin, &session.roles).ok_or_else(|| no_role(admin))?;
    Ok(Viewer {
        caller: crate::hub::caller_name(&session.user()),
        name: session.name.clone(),
        role,
        may_approve: may_approve(broker, role, &session.roles),
        session: Some(session),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_wins_over_auditor_and_other_roles_see_nothing() {
        let admin: AdminConfig = toml::from_str("").unwrap();
        let roles = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            role_of(&admin, &roles(&["auditor", "admin"])),
            Some(Role::Admin)
        );
        assert_eq!(role_of(&admin, &roles(&["auditor"])), Some(Role::Auditor));
        assert_eq!(role_of(&admin, &roles(&["support"])), None);
        assert_eq!(role_of(&admin, &[]), None);
    }
}
