//! The config as an operator may see it (the console's configuration page): the file
//! as written, with every secret shown only as set or not set, and the settings in
//! effect where the file leaves the default.
//!
//! The file never holds a secret itself: it names environment variables (`env`,
//! `*_env`, `*_envs`) and sha256 digests of credentials. A variable is shown by name
//! with whether it is set (never its value); a digest is shown as `"set"`; a URL
//! loses any user and password it carries.

use serde_json::{Map, Value, json};

use super::ConfigFile;

/// The view of `config`; `env` tells whether a named variable is set (its value is
/// read only to learn that).
pub fn effective(config: &ConfigFile, env: &dyn Fn(&str) -> Option<String>) -> Value {
    let written = match &config.file {
        Some((_, text)) => match toml::from_str::<toml::Table>(text) {
            Ok(table) => mask_table(&table, env),
            Err(_) => Value::Null,
        },
        None => json!({}),
    };
    json!({
        "file": config.file.as_ref().map(|(path, _)| path.clone()),
        "written": written,
        "inEffect": {
            "listen": config.listen.clone().unwrap_or_else(|| "127.0.0.1:8080".into()),
            "toolset": match config.toolset.clone().unwrap_or_default() {
                super::Toolset::Named(super::ToolsetName::All) => json!("all"),
                super::Toolset::Named(super::ToolsetName::Discovery) => json!("discovery"),
                super::Toolset::Services(services) => json!(services),
            },
            "confirmation": format!("{:?}", config.confirmation.unwrap_or_default()).to_lowercase(),
            "confirmationTtlSeconds": config.confirmation_ttl_seconds.unwrap_or(300),
            "approvalTtlSeconds": config.approval_ttl_seconds.unwrap_or(900),
            "approvalWaitSeconds": config.approval_wait_seconds.unwrap_or(20),
            "sessionIdleMinutes": config.session_idle_minutes.unwrap_or(30),
            "auditRetentionDays": config.audit_retention_days.unwrap_or(super::DEFAULT_AUDIT_RETENTION_DAYS),
            "publicUrl": config.public_url.as_deref().map(without_userinfo),
            "keys": config.keys.len(),
            "approvers": config.approvers.len(),
            "hub": config.vault_key_env.is_some(),
            "oauth": config.oauth.as_ref().map(|o| o.issuer.clone()),
            "signIn": config.oauth.as_ref().and_then(|o| o.sign_in.as_ref()).map(|s| s.client_id.clone()),
            "policyDir": config.policy.as_ref().map(|p| p.dir.display().to_string()),
            "budgets": config.budgets.len(),
            "tls": config.tls.is_some(),
            "console": config.admin.as_ref().map(|a| json!({ "roles": a.roles, "auditorRoles": a.auditor_roles })),
        },
    })
}

/// Whether `key` names environment variables.
fn names_variables(key: &str) -> bool {
    key == "env" || key.ends_with("_env") || key.ends_with("_envs")
}

fn mask_table(table: &toml::Table, env: &dyn Fn(&str) -> Option<String>) -> Value {
    let mut out = Map::new();
    for (key, value) in table {
        let shown = if names_variables(key) {
            match value {
                toml::Value::String(name) => variable(name, env),
                toml::Value::Array(names) => names
                    .iter()
                    .map(|n| match n {
                        toml::Value::String(name) => variable(name, env),
                        _ => json!("(not a variable name)"),
                    })
                    .collect(),
                _ => json!("(not a variable name)"),
            }
        } else if key == "sha256" || key.ends_with("_sha256") {
            json!("set")
        } else {
            mask_value(value, env)
        };
        out.insert(key.clone(), shown);
    }
    Value::Object(out)
}

fn mask_value(value: &toml::Value, env: &dyn Fn(&str) -> Option<String>) -> Value {
    match value {
        toml::Value::Table(t) => mask_table(t, env),
        toml::Value::Array(items) => items.iter().map(|v| mask_value(v, env)).collect(),
        toml::Value::String(s) => json!(without_userinfo(s)),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        toml::Value::Datetime(d) => json!(d.to_string()),
    }
}

fn variable(name: &str, env: &dyn Fn(&str) -> Option<String>) -> Value {
    let set = env(name).is_some_and(|v| !v.is_empty());
    json!({ "variable": name, "set": set })
}

/// A URL without the user and password it may carry (`postgres://u:p@h/db` ->
/// `postgres://***@h/db`); any other text as it is.
fn without_userinfo(text: &str) -> String {
    if let Some((scheme, rest)) = text.split_once("://") {
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..authority_end].rfind('@') {
            return format!("{scheme}://***{}", &rest[at..]);
        }
    }
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_shown_as_set_or_not_and_never_their_values() {
        let text = r#"
vault_key_env = "VAULT"
approval_previous_key_envs = ["OLD", "GONE"]
public_url = "https://broker.example.com"
[upstreams]
crm = "https://user:hunter2@crm.example.com/v1"
[[keys]]
name = "agent"
sha256 = "aa11"
[server_keys.payments]
env = "PAYMENTS_KEY"
"#;
        let mut config: ConfigFile = toml::from_str(text).unwrap();
        config.file = Some(("broker.toml".into(), text.into()));
        let env = |name: &str| match name {
            "VAULT" => Some("vault-secret-value".to_string()),
            "OLD" => Some("old-secret-value".to_string()),
            "PAYMENTS_KEY" => Some(String::new()),
            _ => None,
        };
        let view = effective(&config, &env);
        let written = &view["written"];
        assert_eq!(
            written["vault_key_env"],
            json!({ "variable": "VAULT", "set": true })
        );
        assert_eq!(
            written["approval_previous_key_envs"],
            json!([{ "variable": "OLD", "set": true }, { "variable": "GONE", "set": false }])
        );
        assert_eq!(written["server_keys"]["payments"]["env"]["set"], false);
        assert_eq!(written["keys"][0]["sha256"], "set");
        assert_eq!(
            written["upstreams"]["crm"],
            "https://***@crm.example.com/v1"
        );
        let text = view.to_string();
        for secret in ["vault-secret-value", "old-secret-value", "hunter2", "aa11"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(view["inEffect"]["auditRetentionDays"], 90);
    }
}
