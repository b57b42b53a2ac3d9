//! `submit_and_poll`: workflow tools that submit once and watch the job (imagegen), and
//! read-only watchers (agent). Previews send nothing; the submit is never repeated; the
//! job id survives every way a watch can end.

use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::poll::{GENERATION_ID, IMAGEGEN_KEY, generation, mount_status, mount_submit};
use crate::support::{Setup, TestBroker, classification, posts};

const AGENT_KEY: (&str, &str) = ("x-agent-api-key", "ak_poll_key");

async fn broker(server: &MockServer) -> TestBroker {
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(
        "[settings.imagegen]\npoll_interval_ms = 5\n[settings.agent]\npoll_interval_ms = 5\n"
            .into(),
    );
    TestBroker::start(setup).await
}

/// Submits one confirmed image generation with extra arguments.
async fn generate(broker: &TestBroker, extra: Value) -> (u16, Value) {
    let mut args = json!({ "prompt": "a lighthouse", "confirm": true });
    if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    broker
        .call("imagegen.generate_image_and_wait", args, &[IMAGEGEN_KEY])
        .await
}

#[tokio::test]
async fn without_confirm_the_submit_is_previewed_and_nothing_is_sent() {
    let server = MockServer::start().await;
    let broker = broker(&server).await;
    let (status, body) = broker
        .call(
            "imagegen.generate_image_and_wait",
            json!({ "prompt": "a lighthouse", "num_images": 2 }),
            &[IMAGEGEN_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["dryRun"], true);
    assert_eq!(body["data"]["request"]["path"], "/generations");
    assert_eq!(
        body["data"]["request"]["body"],
        json!({ "prompt": "a lighthouse", "num_images": 2 })
    );
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_confirmed_generation_is_submitted_once_and_watched_until_complete() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    Mock::given(method("GET"))
        .and(path(format!("/generations/{GENERATION_ID}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(generation("PENDING")))
        .up_to_n_times(2)
        .mount(&server)
        .await;
    mount_status(&server, 200, generation("COMPLETE")).await;
    let broker = broker(&server).await;
    let (status, body) = generate(&broker, json!({ "wait_seconds": 10 })).await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    assert_eq!(data["outcome"], "done", "{body}");
    assert_eq!(data["id"], "0b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e");
    assert_eq!(data["status"], "COMPLETE");
    assert_eq!(data["statusReads"], 3);
    assert_eq!(
        data["images"],
        json!([
            "https://cdn.example.invalid/i1.png",
            "https://cdn.example.invalid/i2.png"
        ])
    );
    assert_eq!(data["cost"]["unit"], "DOLLARS");
    assert_eq!(posts(&server).await, 1);
    // The submit carried the caller's own key and exactly the generation's arguments.
    let submit = server.received_requests().await.unwrap().remove(0);
    assert_eq!(submit.headers["authorization"], "Bearer ik_poll_key");
    let sent: Value = serde_json::from_slice(&submit.body).unwrap();
    assert_eq!(sent, json!({ "prompt": "a lighthouse" }));
}

#[tokio::test]
async fn a_wait_that_runs_out_answers_the_id_and_how_to_check_later() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    mount_status(&server, 200, generation("PENDING")).await;
    let broker = broker(&server).await;
    let (status, body) = generate(&broker, json!({ "wait_seconds": 0 })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["outcome"], "pending");
    assert_eq!(body["data"]["id"], "0b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e");
    assert_eq!(body["data"]["statusReads"], 1);
    let next = body["data"]["nextAction"]
        .as_str()
        .unwrap_or_else(|| panic!("no next action: {body}"));
    assert!(
        next.contains("imagegen.get_generation_by_id") && next.contains("do not submit again"),
        "{next}"
    );
    assert_eq!(posts(&server).await, 1);
}

#[tokio::test]
async fn a_failed_status_read_after_the_submit_keeps_the_id() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    mount_status(&server, 503, json!({ "error": "busy" })).await;
    let broker = broker(&server).await;
    let (status, body) = generate(&broker, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["outcome"], "pending");
    assert_eq!(body["data"]["id"], "0b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e");
    assert!(
        body["data"]["pollError"]["classification"].is_string(),
        "{body}"
    );
    assert_eq!(posts(&server).await, 1);
}

#[tokio::test]
async fn a_failed_job_is_reported_not_retried() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    mount_status(&server, 200, generation("FAILED")).await;
    let broker = broker(&server).await;
    let (_, body) = generate(&broker, json!({})).await;
    assert_eq!(body["data"]["outcome"], "failed", "{body}");
    assert_eq!(posts(&server).await, 1);
}

#[tokio::test]
async fn video_submits_image_to_video_only_when_an_image_is_given() {
    let server = MockServer::start().await;
    for (route, id) in [
        (
            "/generations-image-to-video",
            "1b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e",
        ),
        (
            "/generations-text-to-video",
            "2b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e",
        ),
    ] {
        Mock::given(method("POST"))
            .and(path(route))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({ "motionVideoGenerationJob": { "generationId": id } })),
            )
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path(format!("/generations/{id}")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "generations_by_pk": { "status": "COMPLETE", "generated_images": [
                    { "motionMP4URL": format!("https://cdn.example.invalid/{id}.mp4") }
                ] }
            })))
            .mount(&server)
            .await;
    }
    let broker = broker(&server).await;
    let (_, from_image) = broker
        .call(
            "imagegen.generate_video_and_wait",
            json!({ "prompt": "waves", "imageId": "img1", "imageType": "GENERATED", "confirm": true }),
            &[IMAGEGEN_KEY],
        )
        .await;
    assert_eq!(
        from_image["data"]["id"], "1b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e",
        "{from_image}"
    );
    assert_eq!(
        from_image["data"]["videos"],
        json!(["https://cdn.example.invalid/1b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e.mp4"])
    );
    let (_, from_text) = broker
        .call(
            "imagegen.generate_video_and_wait",
            json!({ "prompt": "waves", "confirm": true }),
            &[IMAGEGEN_KEY],
        )
        .await;
    assert_eq!(
        from_text["data"]["id"], "2b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e",
        "{from_text}"
    );
}

#[tokio::test]
async fn an_argument_the_submit_tool_does_not_take_is_refused_before_sending() {
    let server = MockServer::start().await;
    let broker = broker(&server).await;
    let (status, body) = broker
        .call(
            "imagegen.generate_image_and_wait",
            json!({ "prompt": "a lighthouse", "confirm": true, "colour": "blue" }),
            &[IMAGEGEN_KEY],
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(classification(&body), "validation_error");
    assert!(body.to_string().contains("colour"), "{body}");
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn agent_watchers_stop_when_the_task_needs_the_user() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/task.detail"))
        .and(query_param("task_id", "t1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "ok": true, "task": { "id": "t1", "status": "running", "title": "Report" } }),
        ))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/task.detail"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "ok": true, "task": { "id": "t1", "status": "waiting", "title": "Report" } }),
        ))
        .mount(&server)
        .await;
    let broker = broker(&server).await;
    let (status, once) = broker
        .call(
            "agent.check_task_progress",
            json!({ "task_id": "t1" }),
            &[AGENT_KEY],
        )
        .await;
    assert_eq!(status, 200, "{once}");
    assert_eq!(once["data"]["outcome"], "pending");
    assert_eq!(once["data"]["recommendedCheckBackSeconds"], 30, "{once}");
    assert_eq!(once["data"]["statusReads"], 1);
    let (_, waited) = broker
        .call(
            "agent.wait_briefly_for_task",
            json!({ "task_id": "t1", "wait_seconds": 5 }),
            &[AGENT_KEY],
        )
        .await;
    assert_eq!(waited["data"]["outcome"], "waiting", "{waited}");
    assert_eq!(waited["data"]["title"], "Report");
    assert_eq!(posts(&server).await, 0, "watchers never write");
    // A task the upstream does not know: the read's own error.
    let missing = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({ "ok": false })))
        .mount(&missing)
        .await;
    let broker = self::broker(&missing).await;
    let (status, body) = broker
        .call(
            "agent.check_task_progress",
            json!({ "task_id": "nope" }),
            &[AGENT_KEY],
        )
        .await;
    assert_ne!(status, 200, "{body}");
    assert_eq!(body["ok"], false);
}

#[tokio::test]
async fn submitted_jobs_are_listed_for_their_owner_only() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    mount_status(&server, 200, generation("COMPLETE")).await;
    let broker = broker(&server).await;
    let (_, empty) = broker
        .call("imagegen.list_generation_jobs", json!({}), &[IMAGEGEN_KEY])
        .await;
    assert_eq!(empty["data"]["total"], 0, "{empty}");
    broker
        .call(
            "imagegen.generate_image_and_wait",
            json!({ "prompt": "a lighthouse", "confirm": true }),
            &[IMAGEGEN_KEY],
        )
        .await;
    let (status, mine) = broker
        .call("imagegen.list_generation_jobs", json!({}), &[IMAGEGEN_KEY])
        .await;
    assert_eq!(status, 200, "{mine}");
    let job = &mine["data"]["jobs"][0];
    assert_eq!(job["id"], "0b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e", "{mine}");
    assert_eq!(job["tool"], "create_generation");
    assert_eq!(job["status"], "COMPLETE");
    assert!(!mine.to_string().contains("ik_poll_key"));
    let (_, filtered) = broker
        .call(
            "imagegen.list_generation_jobs",
            json!({ "status": "FAILED" }),
            &[IMAGEGEN_KEY],
        )
        .await;
    assert_eq!(filtered["data"]["total"], 0);
    // Another upstream key behind the same broker key sees nothing.
    let (_, other) = broker
        .call(
            "imagegen.list_generation_jobs",
            json!({}),
            &[("x-imagegen-api-key", "ik_someone_else")],
        )
        .await;
    assert_eq!(other["data"]["total"], 0, "{other}");
    assert_eq!(posts(&server).await, 1);
}

#[tokio::test]
async fn under_bound_a_workflow_submits_only_with_its_token() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    mount_status(&server, 200, generation("COMPLETE")).await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config =
        Some("confirmation = \"bound\"\n[settings.imagegen]\npoll_interval_ms = 5\n".into());
    let broker = TestBroker::start(setup).await;
    // The flag alone: the submit tool's preview and a token; nothing sent.
    let (status, body) = generate(&broker, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meta"]["dryRun"], true, "{body}");
    let token = body["data"]["confirmationToken"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(server.received_requests().await.unwrap().is_empty());
    // Another prompt with that token: refused, nothing sent.
    let (status, body) = broker
        .call(
            "imagegen.generate_image_and_wait",
            json!({ "prompt": "a harbour", "confirm": true, "confirmationToken": token }),
            &[IMAGEGEN_KEY],
        )
        .await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(body["error"]["details"]["reason"], "other_arguments");
    assert!(server.received_requests().await.unwrap().is_empty());
    // The token: submitted once (the mock expects one POST) and watched to the end.
    let (status, body) = generate(&broker, json!({ "confirmationToken": token })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meta"]["dryRun"], false, "{body}");
    let (status, body) = generate(&broker, json!({ "confirmationToken": token })).await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(classification(&body), "confirmation_required");
}
