//! The audit page and `/admin/api/audit`: every write the broker executed, refused,
//! saw declined or approved, and every key a user stored or deleted, filtered by time,
//! who, tool, service, outcome and policy, newest first, paged by cursor, exported as
//! JSON Lines or CSV. Records never hold an argument value or a key (the store keeps a
//! sha256 of the canonical arguments), so neither does anything here.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use super::Viewer;
use crate::call::Broker;
use crate::html::{escape, time};
use crate::reply::Reply;
use crate::served::Served;
use crate::store::audit::AuditRecord;
use crate::store::audit_query::AuditFilter;

/// Records a page shows by default, and at most.
pub const PAGE_ROWS: (i64, i64) = (50, 500);
/// Records one export holds at most; the rest follow its `Link: rel="next"`.
pub const EXPORT_ROWS: i64 = 100_000;

/// The outcome words a filter may name, in the audit's order.
pub const OUTCOMES: [&str; crate::store::audit::Outcome::ALL.len()] = {
    let all = crate::store::audit::Outcome::ALL;
    let mut words = [""; crate::store::audit::Outcome::ALL.len()];
    let mut i = 0;
    while i < all.len() {
        words[i] = all[i].as_str();
        i += 1;
    }
    words
};

/// A time given as RFC 3339, or as an age before `now` (`24h`, `7d`, `30m`).
pub fn parse_time(text: &str, now: jiff::Timestamp) -> Result<jiff::Timestamp, String> {
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    let age: jiff::Span = text.parse().map_err(|_| {
        format!(
            "`{text}` is neither an RFC 3339 time (2026-11-23T00:00:00Z) nor an age (24h, 7d, 30m)"
        )
    })?;
    now.to_zoned(jiff::tz::TimeZone::UTC)
        .checked_sub(age)
        .map(|z| z.timestamp())
        .map_err(|e| format!("`{text}`: {e}"))
}

/// How the records are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON document (the API's default) or the page.
    Json,
    /// JSON Lines: a record per line.
    Jsonl,
    /// CSV with a header row.
    Csv,
}

/// A request's filter and format, or the 400 message naming the parameter at fault.
pub fn filter_of(
    fields: &BTreeMap<String, String>,
    now: jiff::Timestamp,
) -> Result<(AuditFilter, Format), String> {
    let text = |name: &str| super::field(fields, name);
    for name in fields.keys() {
        if ![
            "since",
            "until",
            "principal",
            "tool",
            "service",
            "outcome",
            "policy",
            "cursor",
            "limit",
            "format",
        ]
        .contains(&name.as_str())
        {
            return Err(format!(
                "unknown parameter `{name}`: the audit takes since, until, principal, tool, service, outcome, policy, cursor, limit and format"
            ));
        }
    }
    let time_of = |name: &str| {
        text(name)
            .map(|t| {
                parse_time(&t, now)
                    .map(|t| t.as_millisecond())
                    .map_err(|e| format!("{name}: {e}"))
            })
            .transpose()
    };
    let format = match text("format").as_deref() {
        None | Some("json") => Format::Json,
        Some("jsonl") => Format::Jsonl,
        Some("csv") => Format::Csv,
        Some(other) => {
            return Err(format!("format `{other}`: write json, jsonl or csv"));
        }
    };
    let outcome = text("outcome");
    if let Some(o) = &outcome
        && !OUTCOMES.contains(&o.as_str())
    {
        return Err(format!("outcome `{o}`: one of {}", OUTCOMES.join(", ")));
    }
    let before_seq = text("cursor")
        .map(|c| {
            c.parse::<i64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("cursor `{c}` is not one this API gave"))
        })
        .transpose()?;
    let (default, most) = if format == Format::Json {
        PAGE_ROWS
    } else {
        (EXPORT_ROWS, EXPORT_ROWS)
    };
    let limit = text("limit")
        .map(|l| {
            l.parse::<i64>()
                .ok()
                .filter(|n| (1..=most).contains(n))
                .ok_or_else(|| format!("limit `{l}`: a whole number from 1 to {most}"))
        })
        .transpose()?
        .unwrap_or(default);
    let filter = AuditFilter {
        since_ms: time_of("since")?,
        until_ms: time_of("until")?,
        caller: text("principal"),
        tool: text("tool"),
        service: text("service"),
        outcome,
        policy: text("policy"),
        before_seq,
        limit,
    };
    if let (Some(since), Some(until)) = (filter.since_ms, filter.until_ms)
        && since >= until
    {
        return Err("since must be before until".into());
    }
    Ok((filter, format))
}

/// The query string of `fields` with `cursor` set to `next` (other fields kept).
fn with_cursor(fields: &BTreeMap<String, String>, next: i64) -> String {
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in fields {
        if k != "cursor" && !v.is_empty() {
            out.append_pair(k, v);
        }
    }
    out.append_pair("cursor", &next.to_string());
    out.finish()
}

/// A field for CSV: quoted when it holds a separator, a quote or a line break, and
/// led by `'` when a spreadsheet would read it as a formula.
fn csv_field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// The CSV header.
const CSV_HEADER: &str = "seq,at,principal,tool,outcome,classification,upstream_status,duration_ms,confirmation,policies,cost,descriptor_hash,catalog_version,args_sha256,trace_id\n";

fn csv_row(out: &mut String, r: &AuditRecord) {
    let fields = [
        r.seq.to_string(),
        r.at.clone(),
        r.key_name.clone(),
        r.tool.clone(),
        r.outcome.as_str().to_string(),
        r.classification.clone(),
        r.upstream_status.map(|s| s.to_string()).unwrap_or_default(),
        r.duration_ms.to_string(),
        r.confirmation.clone().unwrap_or_default(),
        r.policies.as_ref().map(|p| p.join(" ")).unwrap_or_default(),
        r.cost
            .iter()
            .flatten()
            .map(|(unit, n)| format!("{n} {unit}"))
            .collect::<Vec<_>>()
            .join(" "),
        r.descriptor_hash.clone(),
        r.catalog_version.clone(),
        r.args_sha256.clone(),
        r.trace_id.clone(),
    ];
    let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
    let _ = writeln!(out, "{}", line.join(","));
}

/// How far back the audit reaches: the retention and the oldest record kept.
async fn reach(served: &Served) -> Value {
    let oldest = super::store(served).oldest_audit().await.ok().flatten();
    json!({ "days": served.endpoints.audit_retention_days, "oldest": oldest })
}

/// `GET /admin/api/audit`: the page as JSON, or an export.
pub async fn api(served: &Served, query: &str) -> Reply {
    let broker = &served.broker;
    let fields = super::query(query);
    let (filter, format) = match filter_of(&fields, broker.parts.now()) {
        Ok(f) => f,
        Err(message) => return Reply::error(400, "invalid_request", &message),
    };
    let (records, more) = match super::store(served).audit_page(&filter).await {
        Ok(page) => page,
        Err(e) => return super::store_down("the audit", &e),
    };
    let next = more.then(|| records.last().map(|r| r.seq)).flatten();
    let mut headers = Vec::new();
    if let Some(next) = next {
        headers.push((
            "link",
            format!(
                "</admin/api/audit?{}>; rel=\"next\"",
                with_cursor(&fields, next)
            ),
        ));
    }
    let stamp = broker.parts.now().strftime("%Y%m%dT%H%M%SZ").to_string();
    match format {
        Format::Json => Reply {
            headers,
            ..Reply::ok(&json!({
                "records": records,
                "nextCursor": next.map(|n| n.to_string()),
                "retention": reach(served).await,
            }))
        },
        Format::Jsonl => {
            let mut out = String::new();
            for r in &records {
                let _ = writeln!(out, "{}", serde_json::to_string(r).unwrap_or_default());
            }
            headers.push((
                "content-disposition",
                format!("attachment; filename=\"audit-{stamp}.jsonl\""),
            ));
            Reply {
                headers,
                ..Reply::typed(200, "application/jsonl; charset=utf-8", out)
            }
        }
        Format::Csv => {
            let mut out = String::from(CSV_HEADER);
            for r in &records {
                csv_row(&mut out, r);
            }
            headers.push((
                "content-disposition",
                format!("attachment; filename=\"audit-{stamp}.csv\""),
            ));
            Reply {
                headers,
                ..Reply::typed(200, "text/csv; charset=utf-8", out)
            }
        }
    }
}

/// `GET /admin/audit`.
pub async fn page(served: &Served, viewer: &Viewer, query: &str) -> crate::html::Page {
    let broker = &served.broker;
    let fields = super::query(query);
    let value = |name: &str| fields.get(name).map(String::as_str).unwrap_or("");
    let services = broker.parts.catalog.service_ids();
    let mut body = format!(
        "<form class=\"filters\" method=\"get\" action=\"/admin/audit\" role=\"search\" aria-label=\"Filter the audit\">\
<label>Since<input name=\"since\" value=\"{}\" placeholder=\"24h or 2026-11-01T00:00:00Z\"></label>\
<label>Until<input name=\"until\" value=\"{}\" placeholder=\"RFC 3339 or age\"></label>\
<label>Who<input name=\"principal\" value=\"{}\" placeholder=\"key name or issuer#subject\"></label>\
<label>Tool<input name=\"tool\" value=\"{}\" placeholder=\"crm.contacts_create_contact\"></label>\
{}{}<label>Policy<input name=\"policy\" value=\"{}\" placeholder=\"policy id\"></label>\
<button type=\"submit\">Filter</button> <a href=\"/admin/audit\">Clear</a></form>",
        escape(value("since")),
        escape(value("until")),
        escape(value("principal")),
        escape(value("tool")),
        crate::html::select(
            "service",
            "Service",
            &services,
            fields.get("service").map(String::as_str)
        ),
        crate::html::select(
            "outcome",
            "Outcome",
            &OUTCOMES,
            fields.get("outcome").map(String::as_str)
        ),
        escape(value("policy")),
    );
    let (filter, _) = match filter_of(&fields, broker.parts.now()) {
        Ok(f) => f,
        Err(message) => {
            body.push_str(&format!(
                "<p class=\"warn\" role=\"alert\">{}</p>",
                escape(&message)
            ));
            return super::shell::page(broker, viewer, "/admin/audit", 400, "Audit", &body);
        }
    };
    let (records, more) = match super::store(served).audit_page(&filter).await {
        Ok(page) => page,
        Err(e) => {
            tracing::error!(error = %e, "console: the audit could not be read");
            body.push_str("<p class=\"warn\" role=\"alert\">The store does not answer; try again shortly.</p>");
            return super::shell::page(broker, viewer, "/admin/audit", 503, "Audit", &body);
        }
    };
    let reach = reach(served).await;
    let kept = match served.endpoints.audit_retention_days {
        0 => "Records are kept forever".to_string(),
        days => format!("Records are kept {days} days"),
    };
    let oldest = reach["oldest"]
        .as_str()
        .map(|o| format!("; the oldest kept is from {}", time(o)))
        .unwrap_or_default();
    let mut export = fields.clone();
    export.remove("cursor");
    export.remove("limit");
    let export_link = |format: &str| {
        let mut e = export.clone();
        e.insert("format".into(), format.into());
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in &e {
            if !v.is_empty() {
                q.append_pair(k, v);
            }
        }
        escape(&format!("/admin/api/audit?{}", q.finish()))
    };
    body.push_str(&format!(
        "<p class=\"muted\">{kept}{oldest}. Export what this filter selects: <a href=\"{}\" download>JSON Lines</a> · <a href=\"{}\" download>CSV</a></p>",
        export_link("jsonl"),
        export_link("csv"),
    ));
    if records.is_empty() {
        body.push_str("<p class=\"empty\">No record matches this filter.</p>");
    } else {
        body.push_str("<div class=\"scroll\"><table class=\"sortable\"><caption class=\"muted\">Newest first</caption><thead><tr><th>When</th><th>Who</th><th>Tool</th><th>Outcome</th><th>Status</th><th class=\"num\">ms</th><th>Confirmed by</th><th>Policies</th><th data-nosort>Arguments (sha256)</th></tr></thead><tbody>");
        for r in &records {
            body.push_str(&row(broker, r));
        }
        body.push_str("</tbody></table></div>");
    }
    if more && let Some(last) = records.last() {
        body.push_str(&format!(
            "<nav class=\"pager\" aria-label=\"Pages\"><a href=\"/admin/audit?{}\">Older records</a></nav>",
            escape(&with_cursor(&fields, last.seq))
        ));
    }
    super::shell::page(broker, viewer, "/admin/audit", 200, "Audit", &body)
}

/// One audit record as a table row: who (a link to their records), the tool (a link to
/// its page when the catalog has it), how it ended, and the arguments' hash.
fn row(broker: &Broker, r: &AuditRecord) -> String {
    let at_ms =
        r.at.parse::<jiff::Timestamp>()
            .map(|t| t.as_millisecond())
            .unwrap_or(0);
    let encode = |t: &str| url::form_urlencoded::byte_serialize(t.as_bytes()).collect::<String>();
    // A catalog tool links to its page; a hub key change is no tool.
    let tool = if broker.parts.catalog.resolve(&r.tool).is_some() {
        format!(
            "<a href=\"/admin/tools/{}\"><code>{}</code></a>",
            escape(&encode(&r.tool)),
            escape(&r.tool)
        )
    } else {
        format!("<code>{}</code>", escape(&r.tool))
    };
    format!(
        "<tr><td data-sort=\"{at_ms}\">{}</td><td><a href=\"/admin/audit?principal={}\" title=\"Only this caller's records\">{}</a></td><td>{tool}</td><td><span class=\"tag\">{}</span></td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td><code title=\"{}\">{}</code></td></tr>",
        time(&r.at),
        escape(&encode(&r.key_name)),
        escape(&r.key_name),
        escape(r.outcome.as_str()),
        escape(&match r.upstream_status {
            Some(s) => format!("{} · {s}", r.classification),
            None => r.classification.clone(),
        }),
        r.duration_ms,
        escape(r.confirmation.as_deref().unwrap_or("")),
        escape(
            &r.policies
                .as_ref()
                .map(|p| p.join(", "))
                .unwrap_or_default()
        ),
        escape(&r.args_sha256),
        escape(r.args_sha256.get(..12).unwrap_or("")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_filter_is_read_or_refused_naming_the_parameter() {
        let now: jiff::Timestamp = "2026-11-28T12:00:00Z".parse().unwrap();
        let (f, format) = filter_of(
            &fields(&[
                ("since", "24h"),
                ("outcome", "refused"),
                ("cursor", "90"),
                ("format", "csv"),
            ]),
            now,
        )
        .unwrap();
        assert_eq!(f.since_ms, Some(now.as_millisecond() - 24 * 3600 * 1000));
        assert_eq!(
            (f.before_seq, f.limit, format),
            (Some(90), EXPORT_ROWS, Format::Csv)
        );
        for (bad, says) in [
            (("outcome", "won"), "outcome `won`"),
            (("cursor", "x"), "cursor `x`"),
            (("limit", "501"), "limit `501`"),
            (("since", "yesterday"), "since: `yesterday`"),
            (("format", "xml"), "format `xml`"),
            (("sort", "at"), "unknown parameter `sort`"),
        ] {
            let e = filter_of(&fields(&[bad]), now).unwrap_err();
            assert!(e.starts_with(says), "{e}");
        }
        let e = filter_of(&fields(&[("since", "1h"), ("until", "2h")]), now).unwrap_err();
        assert_eq!(e, "since must be before until");
    }

    #[test]
    fn csv_fields_are_quoted_and_never_formulas() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(csv_field("-1+1,x"), "\"'-1+1,x\"");
    }
}
