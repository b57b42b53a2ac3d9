//! What an access token's scopes let it do ([`Scopes`]), and the step-up challenge when
//! they fall short.
//!
//! The scopes form a hierarchy (the MCP authorization specification asks a server to
//! honour one): `tools:write` covers `tools:read`, and each covers the per-service
//! scope of the same kind; `<service>:write` covers `<service>:read`. A tool of risk
//! `read` needs a read scope of its service, any other a write scope. The token's
//! `scope` claim (space-separated) or `scp` (text or array) holds them; names the
//! deployment maps (`scope_aliases`) are read as the scope they stand for, and scopes
//! of no meaning here are ignored.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::catalog::Tool;
use crate::catalog::descriptor::Risk;
use crate::error::{CallError, Classification};

/// What every challenge of one deployment names: its metadata URL and the scopes it
/// lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenges {
    /// The Protected Resource Metadata URL (RFC 9728).
    pub metadata_url: String,
    /// `scopes_supported`.
    pub supported: Vec<String>,
}

impl Challenges {
    /// The 401 challenge: where the metadata is, the scopes to ask for and, when a
    /// token was refused, why (`error="invalid_token"`).
    pub fn unauthorized(&self, refused: Option<&str>) -> String {
        let mut out = format!(
            "Bearer resource_metadata=\"{}\", scope=\"{}\"",
            self.metadata_url,
            self.supported.join(" ")
        );
        if let Some(description) = refused {
            out.push_str(", error=\"invalid_token\", error_description=\"");
            out.push_str(&quoted(description));
            out.push('"');
        }
        out
    }

    /// The 403 step-up challenge for a scope the token lacks.
    pub fn insufficient(&self, needed: &str) -> String {
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"{needed}\", resource_metadata=\"{}\"",
            self.metadata_url
        )
    }

    /// The scope to ask for a tool: the per-service scope where the deployment lists
    /// it, else the broker-wide one.
    pub fn scope_for(&self, service: &str, write: bool) -> String {
        let kind = if write { "write" } else { "read" };
        let own = format!("{service}:{kind}");
        if self.supported.contains(&own) {
            own
        } else {
            format!("tools:{kind}")
        }
    }
}

/// A challenge parameter's text: quotes and backslashes dropped, control characters
/// made spaces (the texts are the broker's own, this only keeps the header valid).
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '"' | '\\'))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The broker scopes one access token holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scopes {
    read_all: bool,
    write_all: bool,
    read: BTreeSet<String>,
    write: BTreeSet<String>,
    challenges: Arc<Challenges>,
}

impl Scopes {
    /// The scopes of a token's claims: `scope` or `scp`, aliases applied, only the
    /// broker's (`tools:*` and `<service>:*` of a service `is_service` knows).
    pub fn from_claims(
        claims: &Map<String, Value>,
        aliases: &std::collections::BTreeMap<String, String>,
        is_service: &dyn Fn(&str) -> bool,
        challenges: Arc<Challenges>,
    ) -> Self {
        let mut scopes = Self {
            read_all: false,
            write_all: false,
            read: BTreeSet::new(),
            write: BTreeSet::new(),
            challenges,
        };
        let words: Vec<&str> = match (claims.get("scope"), claims.get("scp")) {
            (Some(Value::String(s)), _) | (None, Some(Value::String(s))) => {
                s.split_ascii_whitespace().collect()
            }
            (None, Some(Value::Array(items))) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for word in words {
            let word = aliases.get(word).map_or(word, String::as_str);
            let Some((owner, kind)) = word.rsplit_once(':') else {
                continue;
            };
            match (owner, kind) {
                ("tools", "read") => scopes.read_all = true,
                ("tools", "write") => scopes.write_all = true,
                (service, "read") if is_service(service) => {
                    scopes.read.insert(service.to_string());
                }
                (service, "write") if is_service(service) => {
                    scopes.write.insert(service.to_string());
                }
                _ => {}
            }
        }
        scopes
    }

    /// Whether the token holds no broker scope at all.
    pub fn is_empty(&self) -> bool {
        !self.read_all && !self.write_all && self.read.is_empty() && self.write.is_empty()
    }

    /// Whether the scopes allow reading (`write = false`) or writing a service.
    pub fn allows(&self, service: &str, write: bool) -> bool {
        let writes = self.write_all || self.write.contains(service);
        if write {
            writes
        } else {
            writes || self.read_all || self.read.contains(service)
        }
    }

    /// The scopes as the broker names them, for `check_connection`.
    pub fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.read_all {
            out.push("tools:read".to_string());
        }
        if self.write_all {
            out.push("tools:write".to_string());
        }
        out.extend(self.read.iter().map(|s| format!("{s}:read")));
        out.extend(self.write.iter().map(|s| format!("{s}:write")));
        out
    }

    /// Refuses a tool the scopes do not cover: `forbidden` with the step-up challenge
    /// and the scope in `details.requiredScope`.
    pub fn check(&self, tool: &Tool) -> Result<(), CallError> {
        let write = tool.risk != Risk::Read;
        if self.allows(&tool.service, write) {
            return Ok(());
        }
        let needed = self.challenges.scope_for(&tool.service, write);
        Err(self.refusal(
            &needed,
            format!(
                "this access token lacks the `{needed}` scope that `{}` needs; authorize again with it",
                tool.full_name
            ),
        ))
    }

    /// `forbidden` for a token without any broker scope.
    pub fn none_held(&self) -> CallError {
        let needed = self.challenges.supported.join(" ");
        self.refusal(
            &needed,
            format!(
                "this access token holds none of this broker's scopes; authorize again with `{needed}`"
            ),
        )
    }

    fn refusal(&self, needed: &str, message: String) -> CallError {
        let mut err = CallError::new(Classification::Forbidden, message)
            .with_details(json!({ "requiredScope": needed }));
        err.challenge = Some(self.challenges.insufficient(needed));
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(claims: Value) -> Scopes {
        let aliases = [("Tools.Read".to_string(), "tools:read".to_string())].into();
        Scopes::from_claims(
            claims.as_object().unwrap(),
            &aliases,
            &|s| ["payments", "crm"].contains(&s),
            Arc::new(Challenges {
                metadata_url: "https://b.example/.well-known/oauth-protected-resource/mcp".into(),
                supported: vec![
                    "tools:read".into(),
                    "tools:write".into(),
                    "crm:write".into(),
                ],
            }),
        )
    }

    #[test]
    fn the_hierarchy_holds() {
        let read = scopes(json!({ "scope": "openid tools:read" }));
        assert!(read.allows("payments", false) && !read.allows("payments", true));
        let write = scopes(json!({ "scope": "tools:write" }));
        assert!(write.allows("crm", false) && write.allows("crm", true));
        let crm = scopes(json!({ "scp": ["crm:write", "leads:read"] }));
        assert!(crm.allows("crm", false) && crm.allows("crm", true));
        assert!(!crm.allows("payments", false));
        assert_eq!(
            crm.names(),
            ["crm:write"],
            "an unknown service's scope means nothing"
        );
        assert!(scopes(json!({ "scp": "Tools.Read" })).allows("crm", false));
        assert!(scopes(json!({ "scope": "openid profile" })).is_empty());
        assert!(scopes(json!({ "scope": 7 })).is_empty());
    }

    #[test]
    fn challenges_name_the_scope_the_deployment_lists() {
        let c = &scopes(json!({})).challenges;
        assert_eq!(c.scope_for("crm", true), "crm:write");
        assert_eq!(c.scope_for("payments", true), "tools:write");
        assert_eq!(
            c.unauthorized(Some("the \"token\"\nexpired")),
            "Bearer resource_metadata=\"https://b.example/.well-known/oauth-protected-resource/mcp\", scope=\"tools:read tools:write crm:write\", error=\"invalid_token\", error_description=\"the token expired\""
        );
        assert_eq!(
            c.insufficient("tools:write"),
            "Bearer error=\"insufficient_scope\", scope=\"tools:write\", resource_metadata=\"https://b.example/.well-known/oauth-protected-resource/mcp\""
        );
    }
}
