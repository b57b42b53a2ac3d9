//! The configuration page and `/admin/api/config`: the config in effect with every
//! secret shown only as set or not set ([`crate::config::view`]), the policy set's
//! state (its folder, how many policies, what validation warned of, when it was loaded
//! and the last reload), and the catalog's snapshot.

use serde_json::{Value, json};

use super::Viewer;
use crate::html::{escape, folded_json, time};
use crate::reply::Reply;
use crate::served::Served;

fn settings(served: &Served) -> Value {
    let broker = &served.broker;
    let policies = broker.parts.policies.as_ref().map(|state| {
        let current = state.current();
        let (loaded_at, last) = state.history();
        json!({
            "dir": state.dir().display().to_string(),
            "policies": current.sources().len(),
            "warnings": current.warnings(),
            "valid": true,
            "loadedAt": loaded_at.to_string(),
            "lastReload": last.map(|r| match r.result {
                Ok(count) => json!({ "at": r.at.to_string(), "accepted": true, "policies": count }),
                Err(problems) => json!({ "at": r.at.to_string(), "accepted": false, "problems": problems }),
            }),
        })
    });
    json!({
        "config": served.endpoints.config_view,
        "policy": policies,
        "catalog": {
            "snapshotId": broker.parts.catalog.snapshot_id,
            "tools": broker.parts.catalog.tools.len(),
            "origin": broker.parts.catalog.origin,
            "services": broker.parts.catalog.services.values().map(|s| json!({ "service": s.id, "catalogVersion": s.catalog_version })).collect::<Vec<_>>(),
        },
        "store": { "kind": broker.parts.store.kind() },
        "guards": guards(served),
    })
}

/// The guard rules in effect (shipped and the deployment's), each with its hits in the
/// last hour.
fn guards(served: &Served) -> Value {
    let parts = &served.broker.parts;
    let hits = parts.metrics.guard_hits_last_hour();
    let rules: Vec<Value> = parts
        .guards
        .guards
        .rules
        .iter()
        .map(|r| {
            let s = &r.selectors;
            json!({
                "id": r.id,
                "kind": format!("{:?}", r.kind).to_ascii_lowercase(),
                "on": r.on,
                "looksAt": format!("{:?}", r.looks_at).to_ascii_lowercase(),
                "action": r.action.as_str(),
                "family": r.family,
                "tool": s.tool,
                "service": s.service,
                "risk": s.risk.map(|r| r.as_str()),
                "classes": s.classes,
                "description": r.description,
                "hitsLastHour": hits.get(&r.id).copied().unwrap_or(0),
            })
        })
        .collect();
    Value::Array(rules)
}

/// `GET /admin/api/config`.
pub fn api(served: &Served) -> Reply {
    Reply::ok(&settings(served))
}

/// `GET /admin/config`.
pub fn page(served: &Served, viewer: &Viewer) -> crate::html::Page {
    let broker = &served.broker;
    let s = settings(served);
    let text = |v: &Value| escape(v.as_str().unwrap_or(""));
    let mut body = String::from("<h2>In effect</h2><dl>");
    for (k, v) in s["config"]["inEffect"].as_object().into_iter().flatten() {
        let shown = match v {
            Value::Null => "<span class=\"muted\">not set</span>".to_string(),
            Value::String(t) => escape(t),
            other => escape(&other.to_string()),
        };
        body.push_str(&format!("<dt>{}</dt><dd>{shown}</dd>", escape(k)));
    }
    body.push_str("</dl><h2>Secrets</h2>");
    let mut secrets = Vec::new();
    collect_variables("", &s["config"]["written"], &mut secrets);
    if secrets.is_empty() {
        body.push_str("<p class=\"empty\">The config names no environment variable.</p>");
    } else {
        body.push_str("<table class=\"sortable\"><thead><tr><th>Where</th><th>Variable</th><th>State</th></tr></thead><tbody>");
        for (at, name, set) in &secrets {
            body.push_str(&format!(
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td class=\"{}\">{}</td></tr>",
                escape(at),
                escape(name),
                if *set { "ok" } else { "warn" },
                if *set { "set" } else { "not set" }
            ));
        }
        body.push_str("</tbody></table>");
    }
    body.push_str(&format!(
        "<h2>The file as written</h2><p class=\"muted\">{}; secrets only as set or not set.</p>{}",
        s["config"]["file"].as_str().map_or_else(
            || "No config file: every setting is its default".to_string(),
            |f| format!("Read from <code>{}</code>", escape(f))
        ),
        folded_json(&s["config"]["written"], "The whole file")
    ));
    body.push_str("<h2>Policies</h2>");
    match s["policy"].as_object() {
        None => body.push_str("<p class=\"muted\">No <code>[policy]</code>: keys, roles and scopes alone decide what each caller may do.</p>"),
        Some(p) => {
            body.push_str(&format!(
                "<dl><dt>Folder</dt><dd><code>{}</code></dd><dt>Policies</dt><dd>{}, valid in strict mode</dd><dt>Loaded</dt><dd>{}</dd><dt>Last reload</dt><dd>{}</dd></dl>",
                text(&p["dir"]),
                p["policies"],
                time(p["loadedAt"].as_str().unwrap_or("")),
                match p["lastReload"].as_object() {
                    None => "none since start (send SIGHUP to reload)".to_string(),
                    Some(r) if r["accepted"] == true => format!("{}: accepted, {} policies", time(r["at"].as_str().unwrap_or("")), r["policies"]),
                    Some(r) => format!(
                        "{}: <span class=\"warn\">rejected, the set before kept</span><pre>{}</pre>",
                        time(r["at"].as_str().unwrap_or("")),
                        escape(&r["problems"].as_array().into_iter().flatten().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"))
                    ),
                },
            ));
            if let Some(warnings) = p["warnings"].as_array().filter(|w| !w.is_empty()) {
                body.push_str(&format!("<p>Validation warned:</p>{}", folded_json(&Value::Array(warnings.clone()), "Warnings")));
            }
        }
    }
    body.push_str(&guards_table(&s["guards"]));
    body.push_str(&format!(
        "<h2>Catalog</h2><dl><dt>Snapshot</dt><dd><code>{}</code></dd><dt>Tools</dt><dd>{}</dd><dt>Read from</dt><dd>{}</dd></dl>",
        text(&s["catalog"]["snapshotId"]),
        s["catalog"]["tools"],
        text(&s["catalog"]["origin"]),
    ));
    super::shell::page(broker, viewer, "/admin/config", 200, "Configuration", &body)
}

/// Every `{"variable", "set"}` of the masked config, with where it is.
fn collect_variables(at: &str, value: &Value, out: &mut Vec<(String, String, bool)>) {
    match value {
        Value::Object(map) => {
            if let (Some(Value::String(name)), Some(Value::Bool(set))) =
                (map.get("variable"), map.get("set"))
            {
                out.push((at.to_string(), name.clone(), *set));
                return;
            }
            for (k, v) in map {
                let here = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                collect_variables(&here, v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_variables(&format!("{at}[{i}]"), v, out);
            }
        }
        _ => {}
    }
}

/// The guard rules as a table: what each finds, where, what it does, and its hits in
/// the last hour.
fn guards_table(rules: &Value) -> String {
    let text = |v: &Value| escape(v.as_str().unwrap_or(""));
    let mut out = String::from(
        "<h2>Guards</h2><p class=\"muted\">Rules on arguments and answers (<code>rules/guards.toml</code> and the config's <code>[[guards.rule]]</code>); hits count calls a rule acted on.</p>\
<table class=\"sortable\"><thead><tr><th>Rule</th><th>Kind</th><th>State</th><th>Looks at</th><th>Action</th><th>Applies to</th><th class=\"num\">Hits, last hour</th></tr></thead><tbody>",
    );
    for r in rules.as_array().into_iter().flatten() {
        let scope: Vec<String> = ["tool", "service", "risk"]
            .into_iter()
            .filter_map(|k| r[k].as_str().map(|v| format!("{k} {}", escape(v))))
            .chain(
                r["classes"]
                    .as_array()
                    .filter(|c| !c.is_empty())
                    .map(|c| format!("classes {}", escape(&Value::Array(c.clone()).to_string()))),
            )
            .collect();
        out.push_str(&format!(
            "<tr><td><code title=\"{}\">{}</code>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
            text(&r["description"]),
            text(&r["id"]),
            r["family"]
                .as_str()
                .filter(|f| Some(*f) != r["id"].as_str())
                .map(|f| format!(" <span class=\"muted\">of {}</span>", escape(f)))
                .unwrap_or_default(),
            text(&r["kind"]),
            if r["on"] == true { "ok" } else { "muted" },
            if r["on"] == true { "on" } else { "off" },
            text(&r["looksAt"]),
            text(&r["action"]),
            if scope.is_empty() { "every tool".to_string() } else { scope.join(", ") },
            r["hitsLastHour"],
        ));
    }
    out.push_str("</tbody></table>");
    out
}
