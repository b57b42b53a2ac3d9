//! The `[admin]` table: who may open the operator's console at `/admin`
//! (docs/console.md).
//!
//! ```toml
//! [admin]
//! roles = ["admin"]            # see everything and act (approve, revoke, delete a key)
//! auditor_roles = ["auditor"]  # see everything, change nothing
//! ```
//!
//! Roles are names of the `[oauth]` provider's roles claim, in a signed-in session
//! (`[oauth.sign_in]`) or an access token; a static API key never opens the console.

use serde::Deserialize;

/// `[admin]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// Roles that see every page and may act (default `["admin"]`).
    #[serde(default = "default_roles")]
    pub roles: Vec<String>,
    /// Roles that see every page and change nothing (default `["auditor"]`).
    #[serde(default = "default_auditor_roles")]
    pub auditor_roles: Vec<String>,
}

fn default_roles() -> Vec<String> {
    vec!["admin".into()]
}

fn default_auditor_roles() -> Vec<String> {
    vec!["auditor".into()]
}

impl AdminConfig {
    /// Refuses a table the console could not honour: no role, an empty name, a role in
    /// both lists, a role every user has (`[oauth] default_role`), or no `[oauth]` to
    /// say who anyone is.
    pub fn check(&self, oauth: Option<&super::oauth::OAuthConfig>) -> Result<(), String> {
        let Some(oauth) = oauth else {
            return Err("[admin] needs an [oauth] table: the console is opened by the roles of people signed in at the identity provider (docs/console.md)".into());
        };
        if self.roles.is_empty() {
            return Err("[admin] roles is empty: name the role that may run the console (e.g. roles = [\"admin\"])".into());
        }
        for role in self.roles.iter().chain(&self.auditor_roles) {
            if role.trim().is_empty() {
                return Err("[admin] names an empty role".into());
            }
            if oauth.default_role.as_deref() == Some(role.as_str()) {
                return Err(format!(
                    "[admin] names `{role}`, the [oauth] default_role every user without a role gets: give the console a role the provider grants on purpose"
                ));
            }
        }
        if let Some(both) = self.roles.iter().find(|r| self.auditor_roles.contains(r)) {
            return Err(format!(
                "[admin] names `{both}` in both roles and auditor_roles: a role either acts or only reads"
            ));
        }
        Ok(())
    }
}
