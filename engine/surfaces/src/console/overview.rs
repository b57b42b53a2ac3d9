//! The overview and `/admin/api/overview`: the last hour of calls from the broker's own
//! counters (calls and errors per minute, errors by classification, p50/p99 latency),
//! each upstream's health from its calls' outcomes, and the state of the catalog and
//! the store. The chart is SVG drawn here: no script, no asset.

use serde_json::{Value, json};

use super::Viewer;
use crate::html::{escape, time};
use crate::reply::Reply;
use crate::served::Served;

/// How an upstream fared in the last hour.
fn health(calls: u64, failures: u64) -> &'static str {
    match (calls, failures) {
        (0, _) => "no calls",
        (_, 0) => "healthy",
        (c, f) if f * 2 >= c => "failing",
        _ => "degraded",
    }
}

async fn overview(served: &Served) -> Value {
    let broker = &served.broker;
    let now = jiff::Timestamp::now();
    let hour = broker.parts.metrics.last_hour(now.as_second());
    let services: Vec<Value> = broker
        .parts
        .catalog
        .services
        .values()
        .map(|s| {
            let seen = hour["services"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|x| x["service"] == s.id.as_str());
            let calls = seen.and_then(|x| x["calls"].as_u64()).unwrap_or(0);
            let failures = seen
                .and_then(|x| x["upstreamFailures"].as_u64())
                .unwrap_or(0);
            json!({
                "service": s.id,
                "title": s.title,
                "calls": calls,
                "upstreamFailures": failures,
                "health": health(calls, failures),
            })
        })
        .collect();
    let store_ready = broker.parts.store.ping().await;
    let listed = broker.mcp_listed();
    let drift: Vec<Value> = broker
        .mcp_drift()
        .into_iter()
        .map(
            |d| json!({ "service": d.service, "tool": d.tool, "pinned": d.pinned, "seen": d.seen }),
        )
        .collect();
    json!({
        "mcp": { "listed": listed, "drift": drift },
        "now": now.to_string(),
        "startedAt": served.endpoints.started.to_string(),
        "lastHour": hour,
        "upstreams": services,
        "catalog": { "snapshotId": broker.parts.catalog.snapshot_id, "tools": broker.parts.catalog.tools.len() },
        "store": { "kind": broker.parts.store.kind(), "ready": store_ready },
        "policies": broker.parts.policy_set().map(|p| p.sources().len()),
    })
}

/// `GET /admin/api/overview`.
pub async fn api(served: &Served) -> Reply {
    Reply::ok(&overview(served).await)
}

/// Calls (bars) and errors (red bars over them) per minute.
fn chart(per_minute: &[Value]) -> String {
    let (width, height, left, bottom) = (720.0_f64, 180.0_f64, 36.0_f64, 20.0_f64);
    let most = per_minute
        .iter()
        .filter_map(|m| m["calls"].as_u64())
        .max()
        .unwrap_or(0)
        .max(1);
    let total: u64 = per_minute.iter().filter_map(|m| m["calls"].as_u64()).sum();
    let errors: u64 = per_minute.iter().filter_map(|m| m["errors"].as_u64()).sum();
    let slot = (width - left) / per_minute.len().max(1) as f64;
    let scale = (height - bottom - 10.0) / most as f64;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-labelledby=\"chart-title\"><title id=\"chart-title\">Calls per minute over the last hour: {total} calls, {errors} errors, at most {most} in a minute</title>"
    );
    for (label, y) in [(most, 10.0), (0, height - bottom)] {
        svg.push_str(&format!(
            "<line class=\"grid\" x1=\"{left}\" x2=\"{width}\" y1=\"{y}\" y2=\"{y}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{label}</text>",
            left - 4.0,
            y + 4.0
        ));
    }
    for (i, m) in per_minute.iter().enumerate() {
        let calls = m["calls"].as_u64().unwrap_or(0) as f64;
        let failed = m["errors"].as_u64().unwrap_or(0) as f64;
        let x = left + i as f64 * slot + 1.0;
        let w = (slot - 2.0).max(1.0);
        if calls > 0.0 {
            let h = calls * scale;
            svg.push_str(&format!(
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" class=\"bar\"/>",
                height - bottom - h
            ));
        }
        if failed > 0.0 {
            let h = failed * scale;
            svg.push_str(&format!(
                "<rect class=\"err\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{h:.1}\"/>",
                height - bottom - h
            ));
        }
    }
    svg.push_str(&format!(
        "<text x=\"{left}\" y=\"{}\">60 min ago</text><text x=\"{width}\" y=\"{}\" text-anchor=\"end\">now</text></svg>",
        height - 4.0,
        height - 4.0
    ));
    svg
}

fn figure(label: &str, value: &str) -> String {
    format!(
        "<div class=\"card\"><div class=\"muted\">{}</div><div class=\"figure\">{}</div></div>",
        escape(label),
        escape(value)
    )
}

/// The MCP servers: each listed or not yet, and every tool a server now describes
/// otherwise than the catalog pinned (it answers `upstream_changed`). Empty without any.
fn mcp_section(mcp: &Value) -> String {
    let Some(listed) = mcp["listed"].as_object().filter(|l| !l.is_empty()) else {
        return String::new();
    };
    let mut out = String::from("<h2>MCP servers</h2>");
    let waiting: Vec<&str> = listed
        .iter()
        .filter(|(_, l)| **l != Value::Bool(true))
        .map(|(s, _)| s.as_str())
        .collect();
    if !waiting.is_empty() {
        out.push_str(&format!(
            "<p class=\"muted\">Not listed yet (on their first call): {}.</p>",
            escape(&waiting.join(", "))
        ));
    }
    match mcp["drift"].as_array().filter(|d| !d.is_empty()) {
        None => out.push_str("<p class=\"ok\">Every listed server describes its tools as the catalog pinned them.</p>"),
        Some(drift) => {
            out.push_str("<table><thead><tr><th>Tool</th><th>Pinned</th><th>The server now</th><th>Review with</th></tr></thead><tbody>");
            for d in drift {
                let short = |v: &Value| v.as_str().map_or_else(|| "no longer lists it".to_string(), |h| h.chars().take(12).collect());
                out.push_str(&format!(
                    "<tr class=\"warn\"><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td><code>tool-broker catalog diff-mcp {}</code></td></tr>",
                    escape(d["tool"].as_str().unwrap_or("")),
                    escape(&short(&d["pinned"])),
                    escape(&short(&d["seen"])),
                    escape(d["service"].as_str().unwrap_or("")),
                ));
            }
            out.push_str("</tbody></table><p class=\"muted\">These tools answer <code>upstream_changed</code> and nothing reaches their server until the change is reviewed, imported and deployed.</p>");
        }
    }
    out
}

/// `GET /admin`.
pub async fn page(served: &Served, viewer: &Viewer) -> crate::html::Page {
    let broker = &served.broker;
    let o = overview(served).await;
    let hour = &o["lastHour"];
    let ms = |v: &Value| {
        v.as_f64()
            .map_or_else(|| "no calls".to_string(), |n| format!("≤ {n:.0} ms"))
    };
    let errors: u64 = hour["errors"]
        .as_object()
        .map(|e| e.values().filter_map(Value::as_u64).sum())
        .unwrap_or(0);
    let mut body = format!(
        "<div class=\"grid\">{}{}{}{}</div>",
        figure("Calls, last hour", &hour["calls"].to_string()),
        figure("Errors, last hour", &errors.to_string()),
        figure("p50 latency", &ms(&hour["p50Ms"])),
        figure("p99 latency", &ms(&hour["p99Ms"])),
    );
    body.push_str(&chart(
        hour["perMinute"].as_array().map_or(&[][..], Vec::as_slice),
    ));
    body.push_str("<h2>Errors by classification</h2>");
    match hour["errors"].as_object().filter(|e| !e.is_empty()) {
        None => body.push_str("<p class=\"empty\">No call failed in the last hour.</p>"),
        Some(errors) => {
            body.push_str("<table class=\"sortable\"><thead><tr><th>Classification</th><th class=\"num\">Calls</th></tr></thead><tbody>");
            for (k, n) in errors {
                body.push_str(&format!(
                    "<tr><td><code>{}</code></td><td class=\"num\">{n}</td></tr>",
                    escape(k)
                ));
            }
            body.push_str("</tbody></table><p class=\"muted\">Reads and writes alike; the writes among them, refused or sent, are in <a href=\"/admin/audit?since=1h\">the audit of the last hour</a>.</p>");
        }
    }
    body.push_str("<h2>Upstreams</h2><table class=\"sortable\"><thead><tr><th>Service</th><th>Health</th><th class=\"num\">Calls, last hour</th><th class=\"num\">Upstream failures</th></tr></thead><tbody>");
    for s in o["upstreams"].as_array().into_iter().flatten() {
        let health = s["health"].as_str().unwrap_or("");
        let class = match health {
            "healthy" => "ok",
            "failing" | "degraded" => "warn",
            _ => "muted",
        };
        body.push_str(&format!(
            "<tr><td>{} <span class=\"muted\">({})</span></td><td class=\"{class}\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(s["title"].as_str().unwrap_or("")),
            escape(s["service"].as_str().unwrap_or("")),
            escape(health),
            s["calls"],
            s["upstreamFailures"],
        ));
    }
    body.push_str("</tbody></table>");
    body.push_str(&mcp_section(&o["mcp"]));
    body.push_str(&format!(
        "<h2>This broker</h2><dl><dt>Running since</dt><dd>{}</dd><dt>Catalog</dt><dd>{} tools, snapshot <code>{}</code></dd><dt>Store</dt><dd>{} ({})</dd>{}</dl>",
        time(o["startedAt"].as_str().unwrap_or("")),
        o["catalog"]["tools"],
        escape(o["catalog"]["snapshotId"].as_str().unwrap_or("")),
        escape(o["store"]["kind"].as_str().unwrap_or("")),
        if o["store"]["ready"] == true { "answering" } else { "not answering" },
        match o["policies"].as_u64() {
            Some(n) => format!("<dt>Policies</dt><dd>{n}</dd>"),
            None => String::new(),
        },
    ));
    super::shell::page(broker, viewer, "/admin", 200, "Overview", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_reads_the_share_of_upstream_failures() {
        assert_eq!(health(0, 0), "no calls");
        assert_eq!(health(10, 0), "healthy");
        assert_eq!(health(10, 2), "degraded");
        assert_eq!(health(10, 5), "failing");
    }

    #[test]
    fn the_chart_has_a_bar_per_busy_minute_and_says_what_it_shows() {
        let minutes: Vec<Value> = (0..60)
            .map(|i| json!({ "minute": i * 60, "calls": if i % 2 == 0 { 4 } else { 0 }, "errors": u64::from(i == 58) }))
            .collect();
        let svg = chart(&minutes);
        assert_eq!(svg.matches("class=\"bar\"").count(), 30);
        assert_eq!(svg.matches("class=\"err\"").count(), 1);
        assert!(svg.contains("<title id=\"chart-title\">Calls per minute over the last hour: 120 calls, 1 errors, at most 4 in a minute</title>"));
    }
}
