//! The one gate (decision 017): every request a tool that runs others sends is decided,
//! priced, confirmed and audited as the tool it belongs to. Under `bound` and `human`
//! the preview of such a tool lists the writes it would send and sends none; a token or
//! an approval covers exactly that plan; a plan that changed is refused with nothing
//! sent; each approved write leaves once. The allowlisted endpoint is charged and
//! decided as the catalog tool it matches.

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker, classification};

const CRM: [(&str, &str); 2] = [
    ("x-crm-api-key", "ck_gate_canary_7"),
    ("x-crm-location-id", "loc1"),
];
const WRAPPER: &str = "crm.crm_media_storage_write";
const RESCHEDULE: &str = "crm.tasks_push_overdue_to_next_business_day";
const ENDPOINT: &str = "leads.call_allowlisted_endpoint";
const LEADS: (&str, &str) = ("x-leads-api-key", "lk_gate_canary_8");

/// What a model sends to the wrapper: every flag it could set beside `toolName` (the
/// raw tool declares none, so none may be nested).
fn folder(name: &str) -> Value {
    json!({
        "toolName": "medias_create_media_folder",
        "confirm": true,
        "confirmApply": "CONFIRM APPLY",
        "arguments": { "body": { "name": name } },
    })
}

/// Requests the upstream received that change state (anything but GET), as
/// `METHOD path`.
async fn writes(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.method.as_str() != "GET" && !r.url.path().ends_with("/search"))
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect()
}

async fn crm_upstream() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/medias/folder"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({ "id": "f1" })))
        .mount(&server)
        .await;
    server
}

async fn broker(server: &MockServer, config: &str) -> TestBroker {
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(config.into());
    TestBroker::start(setup).await
}

/// The plan a preview lists, as `METHOD path (tool)`.
fn plan_of(data: &Value) -> Vec<String> {
    data["plan"]
        .as_array()
        .unwrap_or_else(|| panic!("no plan: {data}"))
        .iter()
        .map(|w| {
            format!(
                "{} {} ({})",
                w["method"].as_str().unwrap_or(""),
                w["path"].as_str().unwrap_or(""),
                w["tool"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[tokio::test]
async fn under_bound_a_dispatched_write_is_planned_then_sent_once_with_its_token() {
    let server = crm_upstream().await;
    let broker = broker(&server, "confirmation = \"bound\"\n").await;
    let (status, body) = broker.call(WRAPPER, folder("Gate"), &CRM).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meta"]["dryRun"], true, "{body}");
    assert_eq!(
        plan_of(&body["data"]),
        ["POST /medias/folder (crm.medias_create_media_folder)"]
    );
    assert_eq!(body["data"]["plan"][0]["body"]["name"], "Gate");
    assert!(writes(&server).await.is_empty(), "the preview sent a write");
    let token = body["data"]["confirmationToken"]
        .as_str()
        .unwrap()
        .to_string();

    // Another body is another plan: refused, nothing sent, the token kept.
    let mut other = folder("Other");
    other["confirmationToken"] = json!(token);
    let (status, body) = broker.call(WRAPPER, other, &CRM).await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(body["error"]["details"]["reason"], "other_arguments");
    assert!(writes(&server).await.is_empty());

    let mut confirmed = folder("Gate");
    confirmed["confirmationToken"] = json!(token);
    let body = runs_once(&broker, &server, confirmed).await;
    assert_eq!(
        body["meta"]["dispatchedTo"],
        "crm.medias_create_media_folder"
    );

    // The audit: the wrapper's call, and the write it sent under the same trace.
    let records = crate::support::audit(&broker).await;
    let inner: Vec<_> = records
        .iter()
        .filter(|r| r.tool == "crm.medias_create_media_folder")
        .collect();
    assert_eq!(inner.len(), 1, "{records:?}");
    assert_eq!(inner[0].outcome.as_str(), "executed");
    assert!(records.iter().any(|r| r.tool == WRAPPER
        && r.outcome.as_str() == "executed"
        && r.trace_id == inner[0].trace_id));
}

#[tokio::test]
async fn under_human_nothing_leaves_before_approval_and_each_approved_write_once() {
    let server = crm_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = crate::support::approval::human_broker(&server, dir.path()).await;
    let (status, body) = broker.call(WRAPPER, folder("Gate"), &CRM).await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(body["error"]["details"]["reason"], "approval_pending");
    assert!(
        writes(&server).await.is_empty(),
        "asked before approval, and sent"
    );
    let id = body["error"]["details"]["approvalId"]
        .as_str()
        .unwrap()
        .to_string();
    let url = body["error"]["details"]["approvalUrl"].as_str().unwrap();
    let page = url[url.find("/approvals/").unwrap()..].to_string();

    // The approver sees the plan: the write, its tool and its body.
    let session = crate::support::approval::sign_in(&broker, &page).await;
    let (_, html) = crate::support::approval::get(&broker, &page, Some(&session)).await;
    for shown in [
        "1 write",
        "POST /medias/folder",
        "crm.medias_create_media_folder",
        "Gate",
    ] {
        assert!(html.contains(shown), "`{shown}` not on the page: {html}");
    }
    assert!(!html.contains(CRM[0].1));

    let now = jiff::Timestamp::now().as_millisecond();
    assert!(
        broker
            .broker
            .parts
            .store
            .decide_approval(&id, "alice", true, now)
            .await
            .unwrap()
    );
    let mut approved = folder("Gate");
    approved["approvalId"] = json!(id);
    runs_once(&broker, &server, approved).await;
}

/// The wrapper called twice with the same confirmation: the first call sends the plan's
/// one write; the repeat is refused as `used` and sends nothing again. The first answer.
async fn runs_once(broker: &TestBroker, server: &MockServer, confirmed: Value) -> Value {
    let (status, first) = broker.call(WRAPPER, confirmed.clone(), &CRM).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(writes(server).await, ["POST /medias/folder"]);
    let (status, body) = broker.call(WRAPPER, confirmed, &CRM).await;
    assert_eq!(
        (status, body["error"]["details"]["reason"].as_str()),
        (428, Some("used"))
    );
    assert_eq!(writes(server).await.len(), 1, "a confirmation ran twice");
    first
}

/// Wednesday 2026-11-25 12:00 UTC.
fn wednesday_noon() -> jiff::Timestamp {
    "2026-11-25T12:00:00Z".parse().unwrap()
}

/// Tasks `ids` (each overdue) answered by the search.
async fn overdue_tasks(server: &MockServer, ids: &[&str]) {
    server.reset().await;
    let tasks: Vec<Value> = ids
        .iter()
        .map(|id| json!({ "id": id, "contactId": format!("c{id}"), "dueDate": "2026-11-20T09:00:00Z" }))
        .collect();
    Mock::given(method("POST"))
        .and(path("/locations/loc1/tasks/search"))
        .and(body_partial_json(json!({ "skip": 0 })))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "tasks": tasks })))
        .mount(server)
        .await;
    Mock::given(method("PUT"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "task": {} })))
        .mount(server)
        .await;
}

/// An upstream with tasks `ids` overdue, and a `bound` broker on Wednesday noon.
async fn rescheduler(ids: &[&str]) -> (MockServer, TestBroker) {
    let server = MockServer::start().await;
    overdue_tasks(&server, ids).await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some("confirmation = \"bound\"\n".into());
    setup.clock = Some(wednesday_noon);
    let broker = TestBroker::start(setup).await;
    (server, broker)
}

#[tokio::test]
async fn the_reschedulers_plan_is_read_from_its_search_and_a_changed_plan_is_refused() {
    let (server, broker) = rescheduler(&["A", "B"]).await;
    let args = json!({ "query": "x", "dryRun": false, "timeZone": "UTC", "limit": 10 });
    let (status, body) = broker.call(RESCHEDULE, args.clone(), &CRM).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        plan_of(&body["data"]),
        [
            "PUT /contacts/cA/tasks/A (crm.update_task)",
            "PUT /contacts/cB/tasks/B (crm.update_task)"
        ]
    );
    assert!(writes(&server).await.is_empty(), "the preview moved tasks");
    let token = body["data"]["confirmationToken"]
        .as_str()
        .unwrap()
        .to_string();

    // Another task became overdue since: the plan changed, nothing is sent.
    overdue_tasks(&server, &["A", "B", "C"]).await;
    let mut confirmed = args.clone();
    confirmed["confirmationToken"] = json!(token);
    let (status, body) = broker.call(RESCHEDULE, confirmed.clone(), &CRM).await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(body["error"]["details"]["reason"], "plan_changed", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the plan changed since the preview"),
        "{body}"
    );
    assert!(writes(&server).await.is_empty());

    // Back as previewed: the two moves, once each.
    overdue_tasks(&server, &["A", "B"]).await;
    let (status, body) = broker.call(RESCHEDULE, confirmed, &CRM).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["moved"], 2, "{body}");
    assert_eq!(
        writes(&server).await,
        ["PUT /contacts/cA/tasks/A", "PUT /contacts/cB/tasks/B"]
    );
}

#[tokio::test]
async fn a_plan_without_writes_needs_no_confirmation() {
    let (_server, broker) = rescheduler(&[]).await;
    let (status, body) = broker
        .call(RESCHEDULE, json!({ "query": "x", "timeZone": "UTC" }), &CRM)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meta"]["dryRun"], false, "{body}");
    assert_eq!(body["data"]["overdue"], 0);
    assert!(body["data"].get("confirmationToken").is_none());
}

/// An upstream answering the people match (1 credit a call).
async fn leads_upstream() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/people/match"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "person": { "id": "p1" } })))
        .mount(&server)
        .await;
    server
}

fn match_person() -> Value {
    json!({ "method": "POST", "path": "/people/match", "body": { "email": "a@example.com" }, "confirm": true })
}

#[tokio::test]
async fn the_allowlisted_endpoint_is_charged_as_the_tool_it_matches() {
    let server = leads_upstream().await;
    let broker = broker(
        &server,
        "[[budgets]]\nname = \"daily\"\nunit = \"credits\"\nlimit = 2\nwindow = \"1d\"\napplies_to = \"each-key\"\n",
    )
    .await;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let (status, body) = broker.call(ENDPOINT, match_person(), &[LEADS]).await;
        statuses.push((status, classification(&body).to_string()));
    }
    assert_eq!(
        statuses,
        [
            (200, String::new()),
            (200, String::new()),
            (402, "budget_exceeded".to_string()),
            (402, "budget_exceeded".to_string())
        ]
    );
    assert_eq!(
        writes(&server).await.len(),
        2,
        "a refused call reached the upstream"
    );
    let (_, budget) = broker.call("portal.get_budget", json!({}), &[]).await;
    assert_eq!(budget["data"]["budgets"][0]["used"], 2, "{budget}");
}

#[tokio::test]
async fn a_forbid_on_a_tool_holds_through_the_allowlisted_endpoint() {
    let server = leads_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rules.cedar"),
        "@id(\"all\")\npermit(principal, action, resource);\n\
         @id(\"no-enrichment\")\nforbid(principal, action == Action::\"leads.leads_post_people_match\", resource);\n",
    )
    .unwrap();
    let broker = broker(
        &server,
        &format!("[policy]\ndir = \"{}\"\n", dir.path().display()),
    )
    .await;
    let (status, body) = broker
        .call(
            "leads.leads_post_people_match",
            json!({ "body": {}, "confirm": true }),
            &[LEADS],
        )
        .await;
    assert_eq!(
        (status, classification(&body)),
        (403, "forbidden"),
        "{body}"
    );
    let (status, body) = broker.call(ENDPOINT, match_person(), &[LEADS]).await;
    assert_eq!(
        (status, classification(&body)),
        (403, "forbidden"),
        "{body}"
    );
    assert_eq!(
        body["error"]["details"]["policies"],
        json!(["no-enrichment"])
    );
    assert!(writes(&server).await.is_empty());
    // A tool the policies hide from every list is hidden from coverage and descriptors.
    let listed = |body: &Value| body.to_string().contains("\"leads_post_people_match\"");
    let (_, coverage) = broker
        .call("leads.get_endpoint_coverage", json!({ "limit": 500 }), &[])
        .await;
    assert!(
        coverage["data"]["total"].as_u64().unwrap() > 0,
        "{coverage}"
    );
    assert!(!listed(&coverage), "the hidden tool is in the coverage");
    let mut cursor = Value::Null;
    loop {
        let mut args = json!({ "include_descriptors": true, "limit": 100 });
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let (status, page) = broker.call("leads.list_capabilities", args, &[]).await;
        assert_eq!(status, 200, "{page}");
        assert!(!listed(&page), "the hidden tool is in the descriptors");
        cursor = page["data"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
}

#[tokio::test]
async fn under_bound_the_allowlisted_write_needs_its_token_whatever_the_flags() {
    let server = leads_upstream().await;
    let broker = broker(&server, "confirmation = \"bound\"\n").await;
    let (status, body) = broker.call(ENDPOINT, match_person(), &[LEADS]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        plan_of(&body["data"]),
        ["POST /people/match (leads.leads_post_people_match)"]
    );
    assert!(writes(&server).await.is_empty());
    let mut confirmed = match_person();
    confirmed["confirmationToken"] = body["data"]["confirmationToken"].clone();
    let (status, body) = broker.call(ENDPOINT, confirmed, &[LEADS]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(writes(&server).await, ["POST /people/match"]);
}

#[tokio::test]
async fn whole_number_floats_are_sent_as_integers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({})))
        .mount(&server)
        .await;
    let broker = broker(&server, "").await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"leads.leads_post_people_match","arguments":{"confirm":true,"body":{"a":4000.0,"b":1e3,"c":-0,"d":2.5,"e":[3.0]}}}}"#;
    let (status, answer) = broker.post_raw(body.as_bytes().to_vec(), &[LEADS]).await;
    assert_eq!(status, 200, "{answer}");
    let sent = server.received_requests().await.unwrap().remove(0);
    assert_eq!(
        String::from_utf8_lossy(&sent.body),
        r#"{"a":4000,"b":1000,"c":0,"d":2.5,"e":[3]}"#
    );
}

#[tokio::test]
async fn in_the_mcp_client_a_person_approves_the_plan_and_its_write_runs_once() {
    let server = crm_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = crate::support::approval::human_broker(&server, dir.path()).await;
    let elicit = json!({ "elicitation": { "form": {} } });
    let call = |round: Option<(Value, String)>| {
        let mut params = json!({ "name": WRAPPER, "arguments": folder("Gate") });
        if let Some((responses, state)) = round {
            params["inputResponses"] = responses;
            params["requestState"] = json!(state);
        }
        crate::support::mcp_modern(&broker, "tools/call", params, elicit.clone(), WRAPPER, &CRM)
    };
    let (status, reply) = call(None).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    let message = reply["result"]["inputRequests"]["approval"]["params"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    for shown in [
        "1 write, in this order",
        "POST /medias/folder (crm.medias_create_media_folder)",
        "Gate",
    ] {
        assert!(message.contains(shown), "`{shown}` not in: {message}");
    }
    assert!(writes(&server).await.is_empty(), "asking sent the write");
    let state = reply["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_string();
    let accept = json!({ "approval": { "action": "accept", "content": { "approve": true } } });
    let (status, reply) = call(Some((accept.clone(), state.clone()))).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(writes(&server).await, ["POST /medias/folder"]);
    let (_, reply) = call(Some((accept, state))).await;
    assert_eq!(reply["error"]["data"]["reason"], "used", "{reply}");
    assert_eq!(
        writes(&server).await.len(),
        1,
        "a replayed answer sent it again"
    );
}

#[tokio::test]
async fn an_idempotent_repeat_of_a_confirmed_plan_sends_nothing_again() {
    let (server, broker) = rescheduler(&["A", "B"]).await;
    let args = json!({ "query": "x", "dryRun": false, "timeZone": "UTC", "limit": 10 });
    let (_, body) = broker.call(RESCHEDULE, args.clone(), &CRM).await;
    let mut confirmed = args;
    confirmed["confirmationToken"] = body["data"]["confirmationToken"].clone();
    let headers = [CRM[0], CRM[1], ("idempotency-key", "move-overdue-1")];
    let (status, first) = broker.call(RESCHEDULE, confirmed.clone(), &headers).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(writes(&server).await.len(), 2);
    let (status, again) = broker.call(RESCHEDULE, confirmed, &headers).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["data"], first["data"], "the kept answer");
    assert_eq!(
        writes(&server).await.len(),
        2,
        "the repeat moved tasks again"
    );
}
