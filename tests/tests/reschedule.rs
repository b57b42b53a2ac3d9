//! crm `tasks_push_overdue_to_next_business_day`: paging, the overdue filter, business
//! days in the location's zone, dry runs, scoping, and per-task outcomes.

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker};

const TOOL: &str = "crm.tasks_push_overdue_to_next_business_day";

/// Wednesday 2026-11-25 12:00 UTC.
fn wednesday_noon() -> jiff::Timestamp {
    "2026-11-25T12:00:00Z".parse().unwrap()
}

async fn upstream() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/locations/loc1/tasks/search"))
        .and(body_partial_json(
            json!({"completed": false, "skip": 0, "limit": 2}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"tasks": [
            {"id": "A", "contactId": "cA", "title": "Call back", "dueDate": "2026-11-20T09:00:00Z"},
            {"id": "B", "contactId": "cB", "title": "Later", "dueDate": "2026-12-20T09:00:00Z"}
        ]})))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/locations/loc1/tasks/search"))
        .and(body_partial_json(json!({"skip": 2})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"tasks": [
            {"id": "C", "contactId": "cC", "title": "Send quote", "dueDate": "2026-11-25T11:59:00Z"}
        ]})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/locations/loc1"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"location": {"id": "loc1", "timezone": "America/New_York"}})),
        )
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path("/contacts/cA/tasks/A"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"task": {"id": "A"}})))
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path("/contacts/cC/tasks/C"))
        .respond_with(ResponseTemplate::new(500).set_body_json(json!({"message": "busy"})))
        .mount(&server)
        .await;
    server
}

async fn broker(server: &MockServer) -> TestBroker {
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.clock = Some(wednesday_noon);
    TestBroker::start(setup).await
}

const HEADERS: [(&str, &str); 2] = [
    ("x-crm-api-key", "ck_1234567"),
    ("x-crm-location-id", "loc1"),
];

fn writes(requests: &[wiremock::Request]) -> Vec<String> {
    requests
        .iter()
        .filter(|r| r.method.as_str() == "PUT")
        .map(|r| format!("{} {}", r.url.path(), String::from_utf8_lossy(&r.body)))
        .collect()
}

#[tokio::test]
async fn a_dry_run_previews_moves_in_the_location_zone_and_writes_nothing() {
    let server = upstream().await;
    let b = broker(&server).await;
    let (status, envelope) = b
        .call(TOOL, json!({"dryRun": true, "limit": 2}), &HEADERS)
        .await;
    assert_eq!(status, 200, "{envelope:#}");
    let data = &envelope["data"];
    assert_eq!(data["timeZone"], "America/New_York");
    assert_eq!(data["timeZoneSource"], "location");
    // Wednesday noon UTC is Wednesday morning in New York: next business day Thursday 09:00.
    assert_eq!(data["movedTo"], "2026-11-26T14:00:00Z");
    assert_eq!(data["scanned"], 3);
    assert_eq!(
        data["planned"],
        json!([
            {"id": "A", "from": "2026-11-20T09:00:00Z", "to": "2026-11-26T14:00:00Z"},
            {"id": "C", "from": "2026-11-25T11:59:00Z", "to": "2026-11-26T14:00:00Z"}
        ])
    );
    assert_eq!(envelope["meta"]["dryRun"], true);
    assert!(writes(&server.received_requests().await.unwrap()).is_empty());
}

#[tokio::test]
async fn a_real_run_must_be_scoped() {
    let server = upstream().await;
    let b = broker(&server).await;
    let (status, envelope) = b.call(TOOL, json!({}), &HEADERS).await;
    assert_eq!(
        (status, envelope["error"]["classification"].as_str()),
        (422, Some("validation_error"))
    );
    assert!(
        server.received_requests().await.unwrap().is_empty(),
        "nothing is sent"
    );
}

#[tokio::test]
async fn a_real_run_moves_each_task_and_reports_every_outcome() {
    let server = upstream().await;
    let b = broker(&server).await;
    let (status, envelope) = b
        .call(
            TOOL,
            json!({"query": "call", "limit": 2, "hour": 8, "minute": 30, "timeZone": "Europe/Berlin"}),
            &HEADERS,
        )
        .await;
    assert_eq!(status, 200, "{envelope:#}");
    let data = &envelope["data"];
    assert_eq!(data["timeZoneSource"], "argument");
    // Thursday 08:30 in Berlin (UTC+1 in November).
    assert_eq!(data["movedTo"], "2026-11-26T07:30:00Z");
    assert_eq!(
        (data["moved"].as_i64(), data["failed"].as_i64()),
        (Some(1), Some(1))
    );
    let results = data["results"].as_array().unwrap();
    assert_eq!(results[0]["ok"], true);
    assert_eq!(results[1]["classification"], "upstream_http_error");
    let received = server.received_requests().await.unwrap();
    let searches: Vec<Value> = received
        .iter()
        .filter(|r| r.url.path().ends_with("/tasks/search"))
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(
        searches[0],
        json!({"completed": false, "limit": 2, "skip": 0, "query": "call"})
    );
    assert_eq!(
        writes(&received),
        vec![
            r#"/contacts/cA/tasks/A {"dueDate":"2026-11-26T07:30:00Z"}"#.to_string(),
            r#"/contacts/cC/tasks/C {"dueDate":"2026-11-26T07:30:00Z"}"#.to_string(),
        ]
    );
}

#[tokio::test]
async fn max_tasks_and_bad_zones_are_respected() {
    let server = upstream().await;
    let b = broker(&server).await;
    let (status, envelope) = b
        .call(
            TOOL,
            json!({"dryRun": true, "limit": 2, "maxTasks": 1, "timeZone": "UTC"}),
            &HEADERS,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(envelope["data"]["planned"].as_array().unwrap().len(), 1);
    assert_eq!(envelope["data"]["movedTo"], "2026-11-26T09:00:00Z");
    let (status, envelope) = b
        .call(
            TOOL,
            json!({"dryRun": true, "timeZone": "Mars/Olympus"}),
            &HEADERS,
        )
        .await;
    assert_eq!(status, 422, "{envelope}");
    assert_eq!(envelope["error"]["details"][0]["pointer"], "/timeZone");
    let (status, _) = b
        .call(TOOL, json!({"dryRun": true, "limit": 101}), &HEADERS)
        .await;
    assert_eq!(status, 422, "limit is at most 100");
}
