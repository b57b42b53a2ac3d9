//! The console's approvals and tasks (docs/console.md): what a person approves and an
//! approver admin deciding it; tasks and jobs across callers without their results.

use serde_json::{Value, json};

use crate::support::TestBroker;
use crate::support::console::{console_setup, decide, form_csrf, get, page, token};
use crate::support::hub::{request, sign_in, upstream};
use crate::support::idp::Idp;

/// A console broker whose writes wait for a person (mode `human`, approvers by role).
async fn human_console(idp: &Idp, upstream: &wiremock::MockServer) -> TestBroker {
    let mut setup = console_setup(
        idp,
        upstream,
        "confirmation = \"human\"\napproval_key_env = \"APPROVAL_KEY\"",
        "",
    );
    setup.env.insert(
        "APPROVAL_KEY".into(),
        "approval-key-of-at-least-32-characters!!".into(),
    );
    TestBroker::start(setup).await
}

const UPSTREAM_KEY: (&str, &str) = ("x-payments-api-key", "sk_console_canary_77");

/// A write that waits for a person: its approval id.
async fn pending(broker: &TestBroker, email: &str) -> String {
    let (status, body) = broker
        .call(
            "payments.post_customers",
            json!({ "email": email, "confirm": true }),
            &[UPSTREAM_KEY],
        )
        .await;
    assert_eq!(status, 428, "{body}");
    body["error"]["details"]["approvalId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one story: two writes wait; the console lists them, shows what each would send, refuses the wrong hands and decides both ways, audited"
)]
async fn the_approvals_page_shows_what_a_person_approves_and_an_approver_admin_decides() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = human_console(&idp, &upstream).await;
    let first = pending(&broker, "first@example.com").await;
    // Asked in another millisecond: the list's order is by when each was asked (two in
    // one millisecond are ordered by their random ids).
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let second = pending(&broker, "second@example.com").await;

    // Listed newest first, paged; one approval shows what its approver is shown.
    let auditor = token(&idp, "audrey", &["auditor"]);
    let (status, body) = get(
        &broker,
        "/admin/api/approvals?state=pending",
        Some(&auditor),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let ids: Vec<&str> = body["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![second.as_str(), first.as_str()]);
    assert_eq!(body["approvals"][0]["tool"], "payments.post_customers");
    assert_eq!(body["approvals"][0]["askedBy"], "env:TOOL_BROKER_API_KEY");
    let (_, page1) = get(&broker, "/admin/api/approvals?limit=1", Some(&auditor)).await;
    let (_, page2) = get(
        &broker,
        &format!(
            "/admin/api/approvals?limit=1&cursor={}",
            page1["nextCursor"].as_str().unwrap()
        ),
        Some(&auditor),
    )
    .await;
    assert_eq!(
        (
            page1["approvals"][0]["id"].as_str(),
            page2["approvals"][0]["id"].as_str()
        ),
        (Some(second.as_str()), Some(first.as_str()))
    );
    assert!(page2["nextCursor"].is_null());
    let (_, none) = get(
        &broker,
        "/admin/api/approvals?state=decided",
        Some(&auditor),
    )
    .await;
    assert!(none["approvals"].as_array().unwrap().is_empty());
    let (status, body) = get(
        &broker,
        "/admin/api/approvals?state=waiting",
        Some(&auditor),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, one) = get(
        &broker,
        &format!("/admin/api/approvals/{first}"),
        Some(&auditor),
    )
    .await;
    assert_eq!(status, 200, "{one}");
    assert!(
        one["preview"].to_string().contains("first@example.com"),
        "{one}"
    );
    assert!(!one.to_string().contains(UPSTREAM_KEY.1));
    let (status, _) = get(&broker, "/admin/api/approvals/nope", Some(&auditor)).await;
    assert_eq!(status, 404);

    // The wrong hands: an auditor, an admin without the approver role, a cookie alone.
    let approve = Some(json!({ "decision": "approve" }));
    for (bearer, says) in [
        (auditor.clone(), "read only"),
        (token(&idp, "olive", &["admin"]), "approver role"),
    ] {
        let (status, text) = decide(&broker, &first, Some(&bearer), approve.clone()).await;
        assert_eq!(status, 403, "{text}");
        assert!(text.contains(says), "{text}");
    }
    let approver_admin = token(&idp, "olive", &["admin", "approver"]);
    let (status, text) = decide(
        &broker,
        &first,
        Some(&approver_admin),
        Some(json!({ "decision": "maybe" })),
    )
    .await;
    assert_eq!(status, 400, "{text}");

    // Through the API: approved once; a second decision is a conflict. The write runs.
    let (status, text) = decide(&broker, &first, Some(&approver_admin), approve.clone()).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({ "id": first, "state": "approved" })
    );
    let (status, text) = decide(&broker, &first, Some(&approver_admin), approve.clone()).await;
    assert_eq!(status, 409, "{text}");
    let (status, body) = broker
        .call(
            "payments.post_customers",
            json!({ "email": "first@example.com", "confirm": true, "approvalId": first }),
            &[UPSTREAM_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // On the page: what would be sent, and the buttons for an approver admin only.
    let olive = sign_in(&broker, &idp, "olive", &["admin", "approver"]).await;
    let (status, _, html) =
        page(&broker, &format!("/admin/approvals/{second}"), Some(&olive)).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("What would be sent") && html.contains("second@example.com"),
        "{html}"
    );
    assert!(!html.contains(UPSTREAM_KEY.1));
    let action = format!("/admin/approvals/{second}/decision");
    assert!(html.contains(&format!("action=\"{action}\"")), "{html}");
    let (_, _, plain_admin) = page(
        &broker,
        &format!("/admin/approvals/{second}"),
        Some(&sign_in(&broker, &idp, "adam", &["admin"]).await),
    )
    .await;
    assert!(
        !plain_admin.contains(&format!("action=\"{action}\""))
            && plain_admin.contains("approver role")
    );
    let csrf = form_csrf(&html, &action, "");
    let form = |csrf: &str, decision: &str| {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("csrf", csrf)
            .append_pair("decision", decision)
            .finish()
    };
    let post = |body: String| {
        let broker = &broker;
        let cookie = olive.clone();
        let action = action.clone();
        async move {
            request(
                broker,
                reqwest::Method::POST,
                &action,
                &[
                    ("cookie", &cookie),
                    ("content-type", "application/x-www-form-urlencoded"),
                ],
                Some(body),
            )
            .await
        }
    };
    let (status, _, text) = post(form("stale", "decline")).await;
    assert_eq!(status, 403, "{text}");
    let (status, headers, _) = post(form(&csrf, "decline")).await;
    assert_eq!(status, 303);
    let back = headers["location"].to_str().unwrap().to_string();
    assert_eq!(back, format!("/admin/approvals/{second}?done=decided"));
    let (_, _, html) = page(&broker, &back, Some(&olive)).await;
    assert!(
        html.contains("Decided; the audit records who decided") && html.contains("declined"),
        "{html}"
    );
    assert!(!html.contains(&format!("action=\"{action}\"")));
    let (_, list) = get(&broker, "/admin/api/approvals", Some(&auditor)).await;
    let states: Vec<&str> = list["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, vec!["declined", "used"]);
    let (_, _, list_page) = page(&broker, "/admin/approvals", Some(&olive)).await;
    assert!(
        list_page.contains(&format!("/admin/approvals/{first}"))
            && list_page.contains("aria-current=\"page\">Approvals")
    );

    // The audit names the console and the admin on both decisions.
    let (_, audit) = get(
        &broker,
        "/admin/api/audit?tool=payments.post_customers",
        Some(&auditor),
    )
    .await;
    let by_olive = format!("console:{}#olive", idp.issuer);
    let decisions: Vec<(&str, &str)> = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["confirmation"] == by_olive.as_str())
        .map(|r| {
            (
                r["outcome"].as_str().unwrap(),
                r["traceId"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        vec![
            ("declined", format!("approval-{second}").as_str()),
            ("approved", format!("approval-{first}").as_str())
        ]
    );
}

#[tokio::test]
async fn the_tasks_page_lists_tasks_and_jobs_across_callers_without_their_results() {
    use tool_broker::store::tasks::StoredTask;
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(console_setup(&idp, &upstream, "", "")).await;
    let store = &broker.broker.parts.store;
    let now = jiff::Timestamp::now().as_millisecond();
    let task = |id: &str, owner: &str, at: i64| StoredTask {
        id: id.into(),
        owner: owner.into(),
        tool: "media.slow_job".into(),
        status: "working".into(),
        result: None,
        created_ms: at,
        updated_ms: at,
        heartbeat_ms: at,
        expires_ms: now + 3_600_000,
    };
    store
        .create_task(&task("t-old", "agent-a:0123456789abcdef", now - 120_000))
        .await
        .unwrap();
    store
        .create_task(&task("t-new", "https://idp#ana:fedcba9876543210", now))
        .await
        .unwrap();
    store
        .settle_task(
            "t-old",
            "failed",
            Some(r#"{"code":-32603,"message":"upstream said no"}"#),
            now,
        )
        .await
        .unwrap();
    store
        .settle_task(
            "t-new",
            "completed",
            Some(r#"{"content":[{"type":"text","text":"result-canary-31"}]}"#),
            now,
        )
        .await
        .unwrap();
    store
        .create_task(&task("t-stalled", "agent-b", now - 60_000))
        .await
        .unwrap();
    store
        .record_job(
            "imagegen",
            "agent-a:0123456789abcdef",
            "job-1",
            "imagegen.generate",
            jiff::Timestamp::now(),
        )
        .await
        .unwrap();

    let auditor = token(&idp, "audrey", &["auditor"]);
    let (status, body) = get(&broker, "/admin/api/tasks", Some(&auditor)).await;
    assert_eq!(status, 200, "{body}");
    let tasks: Vec<(&str, &str, &str)> = body["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap(),
                t["owner"].as_str().unwrap(),
                t["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tasks,
        vec![
            ("t-new", "https://idp#ana", "completed"),
            ("t-stalled", "agent-b", "stalled"),
            ("t-old", "agent-a", "failed"),
        ]
    );
    assert_eq!(body["tasks"][2]["error"], "upstream said no");
    assert_eq!(
        (
            &body["jobs"][0]["id"],
            &body["jobs"][0]["owner"],
            &body["jobs"][0]["service"]
        ),
        (&json!("job-1"), &json!("agent-a"), &json!("imagegen"))
    );
    let text = body.to_string();
    assert!(
        !text.contains("result-canary-31") && !text.contains("0123456789abcdef"),
        "{text}"
    );
    let (_, failed) = get(&broker, "/admin/api/tasks?status=failed", Some(&auditor)).await;
    assert_eq!(failed["tasks"].as_array().unwrap().len(), 1);
    assert!(failed["jobs"].as_array().unwrap().is_empty());
    let (_, first) = get(&broker, "/admin/api/tasks?limit=2", Some(&auditor)).await;
    let (_, rest) = get(
        &broker,
        &format!(
            "/admin/api/tasks?limit=2&taskCursor={}",
            first["nextTaskCursor"].as_str().unwrap()
        ),
        Some(&auditor),
    )
    .await;
    assert_eq!(rest["tasks"][0]["id"], "t-old");
    assert!(rest["nextTaskCursor"].is_null());
    let (status, body) = get(&broker, "/admin/api/tasks?status=done", Some(&auditor)).await;
    assert_eq!(status, 400, "{body}");

    let cookie = sign_in(&broker, &idp, "audrey", &["auditor"]).await;
    let (status, _, html) = page(&broker, "/admin/tasks", Some(&cookie)).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("t-new") || html.contains("media.slow_job"));
    assert!(
        html.contains("job-1") && html.contains("stalled") && html.contains("upstream said no")
    );
    assert!(!html.contains("result-canary-31"));
}
