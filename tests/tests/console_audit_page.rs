//! The console's audit page and API (docs/console.md): filters, the cursor, exports
//! as JSON Lines and CSV.

use serde_json::Value;
use tool_broker::store::audit::{AuditRecord, Outcome};

use crate::support::TestBroker;
use crate::support::console::{console_setup, get, page, token};
use crate::support::hub::{request, sign_in, upstream};
use crate::support::idp::Idp;

fn record(i: i64, now_ms: i64) -> AuditRecord {
    AuditRecord {
        seq: 0,
        at: jiff::Timestamp::from_millisecond(now_ms - 600_000 + i * 1_000)
            .unwrap()
            .to_string(),
        key_name: if i % 2 == 0 {
            "agent-a"
        } else {
            "=cmd|' /C calc'!A0"
        }
        .into(),
        tool: if i % 3 == 0 {
            "payments.get_refunds"
        } else {
            "crm.contacts_create_contact"
        }
        .into(),
        descriptor_hash: "ab".repeat(32),
        catalog_version: "2026-11-22.1".into(),
        args_sha256: format!("{i:064x}"),
        outcome: if i % 4 == 0 {
            Outcome::Refused
        } else {
            Outcome::Executed
        },
        upstream_status: (i % 4 != 0).then_some(201),
        classification: if i % 4 == 0 {
            "confirmation_required"
        } else {
            "ok"
        }
        .into(),
        trace_id: format!("trace-{i}"),
        duration_ms: 7,
        confirmation: Some("flag".into()),
        guards: None,
        policies: (i % 5 == 0).then(|| vec!["support-refunds".into()]),
        cost: None,
    }
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one audit, read every way the console offers: API pages, filters, refusals, exports, the page"
)]
async fn the_audit_filters_pages_and_exports() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(console_setup(
        &idp,
        &upstream,
        "audit_retention_days = 30",
        "",
    ))
    .await;
    let now = jiff::Timestamp::now().as_millisecond();
    for i in 0..40 {
        broker
            .broker
            .parts
            .store
            .append_audit(&record(i, now))
            .await
            .unwrap();
    }
    let auditor = token(&idp, "audrey", &["auditor"]);

    // Filtered, newest first, paged by cursor.
    let (status, body) = get(
        &broker,
        "/admin/api/audit?principal=agent-a&limit=8",
        Some(&auditor),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let first = body["records"].as_array().unwrap();
    assert_eq!(first.len(), 8);
    assert!(first.iter().all(|r| r["keyName"] == "agent-a"));
    assert!(
        first
            .windows(2)
            .all(|w| w[0]["seq"].as_i64() > w[1]["seq"].as_i64())
    );
    assert_eq!(body["retention"]["days"], 30);
    assert!(body["retention"]["oldest"].is_string());
    let cursor = body["nextCursor"].as_str().unwrap().to_string();
    let (_, body) = get(
        &broker,
        &format!("/admin/api/audit?principal=agent-a&limit=8&cursor={cursor}"),
        Some(&auditor),
    )
    .await;
    let second = body["records"].as_array().unwrap();
    assert_eq!(second.len(), 8);
    assert!(second[0]["seq"].as_i64() < first[7]["seq"].as_i64());
    let (_, body) = get(
        &broker,
        &format!(
            "/admin/api/audit?principal=agent-a&limit=8&cursor={}",
            body["nextCursor"].as_str().unwrap()
        ),
        Some(&auditor),
    )
    .await;
    assert_eq!(body["records"].as_array().unwrap().len(), 4);
    assert!(body["nextCursor"].is_null());
    for (query, expected) in [
        ("service=payments", 14),
        ("tool=crm.contacts_create_contact&outcome=refused", 6),
        ("policy=support-refunds", 8),
        ("outcome=executed&service=crm", 20),
    ] {
        let (status, body) = get(
            &broker,
            &format!("/admin/api/audit?{query}&limit=500"),
            Some(&auditor),
        )
        .await;
        assert_eq!(
            (status, body["records"].as_array().unwrap().len()),
            (200, expected),
            "{query}"
        );
    }
    for (query, says) in [
        ("outcome=won", "outcome `won`"),
        ("limit=0", "limit `0`"),
        ("since=yesterday", "since:"),
        ("cursor=-4", "cursor `-4`"),
        ("colour=red", "unknown parameter `colour`"),
        ("format=xml", "format `xml`"),
    ] {
        let (status, body) = get(
            &broker,
            &format!("/admin/api/audit?{query}"),
            Some(&auditor),
        )
        .await;
        assert_eq!(status, 400, "{query}");
        assert!(
            body["error"]["message"].as_str().unwrap().starts_with(says),
            "{query}: {body}"
        );
    }

    // Exports: CSV with a header row and no formula a spreadsheet would run; JSON Lines
    // a record per line; a Link to the rest when the limit cut it.
    let auth = format!("Bearer {auditor}");
    let (status, headers, csv) = request(
        &broker,
        reqwest::Method::GET,
        "/admin/api/audit?format=csv",
        &[("authorization", &auth)],
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    assert!(
        headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment; filename=\"audit-")
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 41);
    assert!(lines[0].starts_with("seq,at,principal,tool,outcome"));
    assert!(lines.iter().skip(1).all(|l| !l.contains(",=cmd")), "{csv}");
    assert!(csv.contains(",'=cmd|' /C calc'!A0,"), "{csv}");
    let (status, headers, jsonl) = request(
        &broker,
        reqwest::Method::GET,
        "/admin/api/audit?format=jsonl&service=crm&limit=5",
        &[("authorization", &auth)],
        None,
    )
    .await;
    assert_eq!(status, 200);
    let rows: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 5);
    let link = headers["link"].to_str().unwrap();
    assert!(
        link.starts_with("</admin/api/audit?")
            && link.contains("cursor=")
            && link.contains("format=jsonl")
            && link.ends_with("; rel=\"next\""),
        "{link}"
    );

    // The page: the filter kept in the form, the rows, export links, the pager.
    let cookie = sign_in(&broker, &idp, "audrey", &["auditor"]).await;
    let (status, _, html) = page(
        &broker,
        "/admin/audit?outcome=refused&limit=3",
        Some(&cookie),
    )
    .await;
    assert_eq!(status, 200, "{html}");
    assert_eq!(
        html.matches("<span class=\"tag\">refused</span>").count(),
        3,
        "{html}"
    );
    assert!(html.contains("<option selected>refused</option>"));
    assert!(html.contains("Records are kept 30 days"));
    assert!(html.contains("format=csv") && html.contains("Older records"));
    // Who links to their records; a catalog tool to its page.
    assert!(
        html.contains("href=\"/admin/audit?principal=agent-a\""),
        "{html}"
    );
    assert!(
        html.contains("href=\"/admin/tools/crm.contacts_create_contact\""),
        "{html}"
    );
    let (status, _, html) = page(&broker, "/admin/audit?principal=nobody", Some(&cookie)).await;
    assert_eq!(status, 200);
    assert!(html.contains("No record matches this filter."));
    let (status, _, html) = page(&broker, "/admin/audit?since=soon", Some(&cookie)).await;
    assert_eq!(status, 400);
    assert!(
        html.contains("role=\"alert\"") && html.contains("since: `soon`"),
        "{html}"
    );
}
