//! Long-running tools as MCP tasks (engine/surfaces/src/mcp/tasks.rs): a 2026-07-28 client that
//! opts into the tasks extension gets a task at once for a tool that waits; `tasks/get`
//! and `tasks/cancel` work from any replica through the store, for the task's owner
//! only; a client that does not opt in gets today's bounded wait.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::poll::{GENERATION_ID, IMAGEGEN_KEY, generation, mount_status, mount_submit};
use crate::support::{API_KEY, Setup, TestBroker, posts};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";
const TOOL: &str = "imagegen.generate_image_and_wait";

async fn broker(server: &MockServer, dir: &std::path::Path) -> TestBroker {
    broker_over(server, dir, None).await
}

/// [`broker`] over other catalog sources.
async fn broker_over(
    server: &MockServer,
    dir: &std::path::Path,
    sources: Option<tool_broker::catalog::source::Sources>,
) -> TestBroker {
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.sources = sources;
    setup.config = Some(
        "[settings.imagegen]\npoll_interval_ms = 20\n[settings.media]\npoll_interval_ms = 20\n"
            .into(),
    );
    setup.store = Some(crate::support::sqlite_store(dir).await);
    TestBroker::start(setup).await
}

/// A 2026-07-28 request; `tasks` declares the extension; `name` goes in `Mcp-Name`.
async fn rpc(
    broker: &TestBroker,
    method: &str,
    params: Value,
    tasks: bool,
    name: &str,
    key: (&str, &str),
) -> (u16, Value) {
    let capabilities = if tasks {
        json!({ "extensions": { EXTENSION: {} } })
    } else {
        json!({})
    };
    crate::support::mcp_modern(broker, method, params, capabilities, name, &[key]).await
}

fn generate_args() -> Value {
    json!({ "name": TOOL, "arguments": { "prompt": "a lighthouse", "confirm": true } })
}

/// Starts a generation as a task: its id.
async fn start(broker: &TestBroker) -> String {
    let (status, reply) = rpc(
        broker,
        "tools/call",
        generate_args(),
        true,
        TOOL,
        IMAGEGEN_KEY,
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let created = &reply["result"];
    assert_eq!(created["resultType"], "task", "{reply}");
    assert_eq!(created["status"], "working");
    assert!(created.get("task").is_none() && created.get("result").is_none());
    assert!(created["createdAt"].as_str().unwrap().starts_with("20"));
    assert!(created["ttlMs"].as_i64().unwrap() > 0);
    assert!(created["pollIntervalMs"].as_i64().unwrap() > 0);
    created["taskId"].as_str().unwrap().to_string()
}

async fn get(broker: &TestBroker, task: &str, key: (&str, &str)) -> (u16, Value) {
    rpc(
        broker,
        "tasks/get",
        json!({ "taskId": task }),
        true,
        task,
        key,
    )
    .await
}

/// Reads a task until it leaves `working` (bounded by count, not time).
async fn settled(broker: &TestBroker, task: &str) -> Value {
    settled_as(broker, task, IMAGEGEN_KEY).await
}

async fn settled_as(broker: &TestBroker, task: &str, key: (&str, &str)) -> Value {
    for _ in 0..200 {
        let (status, reply) = get(broker, task, key).await;
        assert_eq!(status, 200, "{reply}");
        if reply["result"]["status"] != "working" {
            return reply["result"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("task {task} never settled: {}", crate::support::logs());
}

#[tokio::test]
async fn a_waiting_tool_answers_a_task_that_completes_and_is_read_on_another_replica() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    Mock::given(method("GET"))
        .and(path(format!("/generations/{GENERATION_ID}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(generation("PENDING")))
        .up_to_n_times(5)
        .mount(&server)
        .await;
    mount_status(&server, 200, generation("COMPLETE")).await;
    let dir = tempfile::tempdir().unwrap();
    let one = broker(&server, dir.path()).await;
    let two = broker(&server, dir.path()).await;
    let (_, discovered) = rpc(&one, "server/discover", json!({}), false, "", IMAGEGEN_KEY).await;
    assert!(discovered["result"]["capabilities"]["extensions"][EXTENSION].is_object());

    let task = start(&one).await;
    // Durable at once: the other replica resolves it.
    let (status, reply) = get(&two, &task, IMAGEGEN_KEY).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["taskId"], task.as_str());
    assert_eq!(reply["result"]["resultType"], "complete");
    let done = settled(&two, &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    let result = &done["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(
        result["structuredContent"]["data"]["outcome"], "done",
        "{done}"
    );
    assert_eq!(result["structuredContent"]["data"]["status"], "COMPLETE");
    assert!(result["content"][0]["text"].is_string());
    assert!(result.get("_meta").is_none() && done.get("requestState").is_none());
    assert_eq!(posts(&server).await, 1, "submitted once");
    // Another caller (another upstream key) never sees it.
    let (status, reply) = get(&two, &task, ("x-imagegen-api-key", "ik_someone_else")).await;
    assert_eq!((status, &reply["error"]["code"]), (400, &json!(-32602)));
    // A cancel of a finished task is the same empty ack and changes nothing.
    let (_, reply) = rpc(
        &one,
        "tasks/cancel",
        json!({ "taskId": task }),
        true,
        &task,
        IMAGEGEN_KEY,
    )
    .await;
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    assert!(reply["result"].get("taskId").is_none() && reply["result"].get("status").is_none());
    assert_eq!(settled(&one, &task).await["status"], "completed");
    // No key in the stored task.
    drop((one, two));
    let text = crate::support::folder_text(dir.path());
    assert!(!text.contains(IMAGEGEN_KEY.1) && !text.contains(API_KEY));
}

#[tokio::test]
async fn a_failed_job_completes_its_task_with_the_tools_answer() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    mount_status(&server, 200, generation("FAILED")).await;
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(&server, dir.path()).await;
    let task = start(&broker).await;
    let done = settled(&broker, &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["data"]["outcome"],
        "failed"
    );
    assert_eq!(posts(&server).await, 1);
}

#[tokio::test]
async fn a_cancel_stops_the_watch_and_says_the_job_may_finish() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    mount_status(&server, 200, generation("PENDING")).await;
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(&server, dir.path()).await;
    let task = start(&broker).await;
    let (status, reply) = rpc(
        &broker,
        "tasks/cancel",
        json!({ "taskId": task }),
        true,
        &task,
        IMAGEGEN_KEY,
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"],
        json!({ "resultType": "complete", "_meta": reply["result"]["_meta"] })
    );
    let cancelled = settled(&broker, &task).await;
    assert_eq!(cancelled["status"], "cancelled");
    let message = cancelled["statusMessage"].as_str().unwrap();
    assert!(
        message.contains("may still finish") && message.contains("imagegen.get_generation_by_id"),
        "{message}"
    );
    assert!(cancelled.get("result").is_none());
    // The broker's watch ends (at its next read after the heartbeat sees the cancel).
    let ended = format!("task cancelled; its watch ended task={task}");
    let mut seen = false;
    for _ in 0..200 {
        if crate::support::logs().contains(&ended) {
            seen = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(seen, "the watch of {task} did not end");
    let reads = server.received_requests().await.unwrap().len();
    // Ten poll intervals later: still no new read (an ended watch reads nothing).
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        reads,
        "no read after the watch ended"
    );
    assert_eq!(posts(&server).await, 1, "never resubmitted");
}

#[tokio::test]
async fn without_the_extension_calls_wait_and_task_methods_are_refused() {
    let server = MockServer::start().await;
    // Two generations here: one waited on, one as a task.
    Mock::given(method("POST"))
        .and(path("/generations"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "sdGenerationJob": { "generationId": GENERATION_ID }
        })))
        .expect(2)
        .mount(&server)
        .await;
    mount_status(&server, 200, generation("COMPLETE")).await;
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(&server, dir.path()).await;
    // Not opted in: today's bounded wait, a complete result.
    let (status, reply) = rpc(
        &broker,
        "tools/call",
        generate_args(),
        false,
        TOOL,
        IMAGEGEN_KEY,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"]["data"]["outcome"],
        "done"
    );
    // Opted in, a tool that does not wait: a complete result, no task.
    let (_, reply) = rpc(
        &broker,
        "tools/call",
        json!({ "name": "imagegen.find_tools", "arguments": { "query": "image" } }),
        true,
        "imagegen.find_tools",
        IMAGEGEN_KEY,
    )
    .await;
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    let task = start(&broker).await;
    // Task methods without the extension declared: -32021 with what is missing.
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let (status, reply) = rpc(
            &broker,
            method,
            json!({ "taskId": task }),
            false,
            &task,
            IMAGEGEN_KEY,
        )
        .await;
        assert_eq!(
            (status, &reply["error"]["code"]),
            (400, &json!(-32021)),
            "{method}"
        );
        assert!(
            reply["error"]["data"]["requiredCapabilities"]["extensions"][EXTENSION].is_object()
        );
    }
    // Unknown ids, a mismatched Mcp-Name, removed methods.
    let (status, reply) = get(&broker, "no-such-task", IMAGEGEN_KEY).await;
    assert_eq!((status, &reply["error"]["code"]), (400, &json!(-32602)));
    let (status, reply) = rpc(
        &broker,
        "tasks/get",
        json!({ "taskId": task }),
        true,
        "other",
        IMAGEGEN_KEY,
    )
    .await;
    assert_eq!((status, &reply["error"]["code"]), (400, &json!(-32020)));
    for removed in ["tasks/result", "tasks/list"] {
        let (status, reply) = rpc(
            &broker,
            removed,
            json!({ "taskId": task }),
            true,
            &task,
            IMAGEGEN_KEY,
        )
        .await;
        assert_eq!(
            (status, &reply["error"]["code"]),
            (404, &json!(-32601)),
            "{removed}"
        );
    }
    assert_eq!(settled(&broker, &task).await["status"], "completed");
}

#[tokio::test]
async fn a_task_whose_replica_stopped_is_reported_failed() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(&server, dir.path()).await;
    // A working task whose replica last renewed its heartbeat a minute ago.
    let now = jiff::Timestamp::now().as_millisecond();
    let owner = tool_broker::store::jobs::owner("env:TOOL_BROKER_API_KEY", Some(IMAGEGEN_KEY.1));
    broker
        .broker
        .parts
        .store
        .create_task(&tool_broker::store::tasks::StoredTask {
            id: "stale-task".into(),
            owner,
            tool: TOOL.into(),
            status: "working".into(),
            result: None,
            created_ms: now - 60_000,
            updated_ms: now - 60_000,
            heartbeat_ms: now - 60_000,
            expires_ms: now + 60_000,
        })
        .await
        .unwrap();
    let failed = settled(&broker, "stale-task").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("stopped") && message.contains("imagegen.get_generation_by_id"),
        "{message}"
    );
    assert!(failed.get("result").is_none());
    assert_eq!(failed["error"]["code"], -32603);
}

const MEDIA_KEY: (&str, &str) = ("x-media-api-key", "mk_task_test_key");
const JOB: &str = "job-duck-1";

/// The media queue: a submit answering `JOB` at once, then `pending` reads of `running`
/// before `last`.
async fn mount_media(server: &MockServer, pending: u64, last: Value) {
    Mock::given(method("POST"))
        .and(path("/v1/jobs/audio-duck"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({ "job_id": JOB, "cache_hit": false })),
        )
        .mount(server)
        .await;
    if pending > 0 {
        Mock::given(method("GET"))
            .and(path(format!("/v1/jobs/{JOB}")))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({ "job_id": JOB, "state": "running" })),
            )
            .up_to_n_times(pending)
            .mount(server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path(format!("/v1/jobs/{JOB}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(last))
        .mount(server)
        .await;
}

fn duck() -> Value {
    json!({ "name": "media.audio_duck", "arguments": { "voice_asset_id": "v1", "music_asset_id": "m1" } })
}

/// Starts Audio Duck as a task: its id.
async fn start_duck(broker: &TestBroker) -> String {
    let (status, reply) = rpc(
        broker,
        "tools/call",
        duck(),
        true,
        "media.audio_duck",
        MEDIA_KEY,
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["resultType"], "task", "{reply}");
    reply["result"]["taskId"].as_str().unwrap().to_string()
}

async fn job_reads(server: &MockServer) -> usize {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| {
            r.method == wiremock::http::Method::GET && r.url.path().starts_with("/v1/jobs/")
        })
        .count()
}

#[tokio::test]
async fn a_media_queue_tool_as_a_task_watches_its_job_until_it_ends() {
    let server = MockServer::start().await;
    mount_media(
        &server,
        3,
        json!({ "job_id": JOB, "state": "succeeded", "output_asset_ids": ["a-out-1"] }),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let one = broker(&server, dir.path()).await;
    let two = broker(&server, dir.path()).await;
    let task = start_duck(&one).await;
    let done = settled_as(&two, &task, MEDIA_KEY).await;
    assert_eq!(done["status"], "completed", "{done}");
    let result = &done["result"];
    assert_eq!(result["isError"], false, "{done}");
    let data = &result["structuredContent"]["data"];
    // The tool's own answer, plus the job as the watch last saw it.
    assert_eq!(data["job_id"], JOB, "{done}");
    assert_eq!(data["cache_hit"], false);
    assert_eq!(data["job"]["outcome"], "done", "{done}");
    assert_eq!(data["job"]["status"], "succeeded");
    assert_eq!(data["job"]["outputAssetIds"], json!(["a-out-1"]));
    assert_eq!(data["job"]["statusReads"], 4);
    assert_eq!(posts(&server).await, 1, "submitted once");
    assert_eq!(job_reads(&server).await, 4);

    // Without the extension: the queue tool's immediate answer, nothing watched.
    let (status, reply) = rpc(
        &one,
        "tools/call",
        duck(),
        false,
        "media.audio_duck",
        MEDIA_KEY,
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let data = &reply["result"]["structuredContent"]["data"];
    assert_eq!(data["job_id"], JOB, "{reply}");
    assert!(data.get("job").is_none(), "{reply}");
    assert_eq!(job_reads(&server).await, 4, "no read without a task");
}

#[tokio::test]
async fn a_task_tool_whose_answer_takes_one_pass_still_watches_its_job() {
    // Audio Duck without its `[tool.response] job_id`: its answer is written in one pass
    // (crate::scan) and kept as text; the watch must still read the job id out of it.
    let jobs = tool_broker::catalog::source::Sources::embedded()
        .files
        .remove("catalog/media/jobs.toml")
        .unwrap();
    let plain = jobs.replacen("[tool.response]\njob_id = \"$.job_id\"\n", "", 1);
    assert_ne!(plain, jobs, "audio_duck's response plan was not found");
    let server = MockServer::start().await;
    mount_media(
        &server,
        1,
        json!({ "job_id": JOB, "state": "succeeded", "output_asset_ids": ["a-out-1"] }),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let sources = crate::support::sources_with(&[("catalog/media/jobs.toml", &plain)]);
    let broker = broker_over(&server, dir.path(), Some(sources)).await;
    let task = start_duck(&broker).await;
    let done = settled_as(&broker, &task, MEDIA_KEY).await;
    assert_eq!(done["status"], "completed", "{done}");
    let data = &done["result"]["structuredContent"]["data"];
    assert_eq!(data["job_id"], JOB, "{done}");
    assert_eq!(data["job"]["status"], "succeeded", "{done}");
    assert_eq!(data["job"]["outputAssetIds"], json!(["a-out-1"]));
    assert_eq!(job_reads(&server).await, 2);
}

#[tokio::test]
async fn a_media_job_that_fails_or_waits_for_input_settles_its_task_with_what_to_do() {
    for (state, outcome, words) in [
        ("failed", "failed", "Ask the user before submitting again"),
        ("expired", "failed", "it was not retried"),
        ("needs_input", "waiting", "waits for input"),
    ] {
        let server = MockServer::start().await;
        mount_media(&server, 1, json!({ "job_id": JOB, "state": state })).await;
        let dir = tempfile::tempdir().unwrap();
        let broker = broker(&server, dir.path()).await;
        let task = start_duck(&broker).await;
        let done = settled_as(&broker, &task, MEDIA_KEY).await;
        assert_eq!(done["status"], "completed", "{state}: {done}");
        let data = &done["result"]["structuredContent"]["data"];
        assert_eq!(data["job"]["outcome"], outcome, "{state}: {done}");
        let next = done["result"]["structuredContent"]["meta"]["next_action"].to_string()
            + &data["job"]["nextAction"].to_string();
        assert!(
            next.contains(words) && next.contains(JOB),
            "{state}: {done}"
        );
        assert_eq!(posts(&server).await, 1);
    }
}

/// The media submit answers `JOB`; every read of it answers `status`.
async fn mount_unreadable(server: &MockServer, status: u16) {
    Mock::given(method("POST"))
        .and(path("/v1/jobs/audio-duck"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({ "job_id": JOB, "cache_hit": true })),
        )
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/jobs/{JOB}")))
        .respond_with(ResponseTemplate::new(status))
        .mount(server)
        .await;
}

#[tokio::test]
async fn a_media_task_reads_through_an_unavailable_upstream_until_it_is_cancelled() {
    let server = MockServer::start().await;
    mount_unreadable(&server, 503).await;
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(&server, dir.path()).await;
    let task = start_duck(&broker).await;
    // Several failed reads, and the task still works (bounded by count, not time).
    for _ in 0..400 {
        if job_reads(&server).await >= 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(job_reads(&server).await >= 3, "{}", crate::support::logs());
    let (_, working) = get(&broker, &task, MEDIA_KEY).await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    let (status, _) = rpc(
        &broker,
        "tasks/cancel",
        json!({ "taskId": task }),
        true,
        &task,
        MEDIA_KEY,
    )
    .await;
    assert_eq!(status, 200);
    let cancelled = settled_as(&broker, &task, MEDIA_KEY).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let message = cancelled["statusMessage"].as_str().unwrap();
    assert!(message.contains("media.get_job"), "{message}");
    assert_eq!(posts(&server).await, 1, "never resubmitted");
}

#[tokio::test]
async fn a_media_task_whose_job_is_unknown_keeps_the_tools_answer_and_says_so() {
    let server = MockServer::start().await;
    mount_unreadable(&server, 404).await;
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(&server, dir.path()).await;
    let task = start_duck(&broker).await;
    let done = settled_as(&broker, &task, MEDIA_KEY).await;
    assert_eq!(done["status"], "completed", "{done}");
    let data = &done["result"]["structuredContent"]["data"];
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(
        data["job_id"], JOB,
        "the submitted job's id is kept: {done}"
    );
    assert_eq!(data["job"]["outcome"], "unknown", "{done}");
    assert!(data["job"]["watchError"]["classification"].is_string());
    let next = data["job"]["nextAction"].as_str().unwrap();
    assert!(
        next.contains("media.wait_for_job") && next.contains("Do not submit again"),
        "{next}"
    );
    assert_eq!((posts(&server).await, job_reads(&server).await), (1, 1));
}

#[tokio::test]
async fn policies_decide_a_task_as_they_decide_the_call() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    mount_status(&server, 200, generation("COMPLETE")).await;
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).unwrap();
    std::fs::write(
        policies.join("images.cedar"),
        "@id(\"everyone\")\npermit(principal, action, resource);\n\
         @id(\"one-image\")\nforbid(principal, action == Action::\"imagegen.generate_image_and_wait\", resource)\n\
         when { context.arguments has num_images && context.arguments.num_images > 1 };\n",
    )
    .unwrap();
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!(
        "[settings.imagegen]\npoll_interval_ms = 20\n[policy]\ndir = \"{}\"\n",
        policies.display()
    ));
    setup.store = Some(crate::support::sqlite_store(dir.path()).await);
    let broker = TestBroker::start(setup).await;
    // Refused as a task exactly as without one: the same error, nothing submitted.
    let two = json!({ "name": TOOL, "arguments": { "prompt": "a lighthouse", "num_images": 2, "confirm": true } });
    let (status, reply) = rpc(&broker, "tools/call", two, true, TOOL, IMAGEGEN_KEY).await;
    assert_eq!(status, 200, "{reply}");
    let result = if reply["result"]["resultType"] == "task" {
        let task = reply["result"]["taskId"].as_str().unwrap().to_string();
        settled(&broker, &task).await["result"].clone()
    } else {
        reply["result"].clone()
    };
    assert_eq!(result["isError"], true, "{result}");
    let error = &result["structuredContent"]["error"];
    assert_eq!(error["classification"], "forbidden", "{result}");
    assert_eq!(
        error["details"],
        json!({ "reason": "policy", "policies": ["one-image"] })
    );
    assert_eq!(posts(&server).await, 0, "nothing submitted");
    // Permitted: the task runs and completes.
    let task = start(&broker).await;
    let done = settled(&broker, &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(posts(&server).await, 1);
}

#[tokio::test]
async fn a_call_the_policies_refuse_is_answered_at_once_and_never_stored_as_a_task() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let policies = tempfile::tempdir().unwrap();
    std::fs::write(
        policies.path().join("rules.cedar"),
        format!(
            "@id(\"all\")\npermit(principal, action, resource);\n\
             @id(\"no-waiting\")\nforbid(principal, action == Action::\"{TOOL}\", resource);\n"
        ),
    )
    .unwrap();
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!(
        "[policy]\ndir = \"{}\"\n[settings.imagegen]\npoll_interval_ms = 20\n",
        policies.path().display()
    ));
    setup.store = Some(crate::support::sqlite_store(dir.path()).await);
    let broker = TestBroker::start(setup).await;
    let (status, reply) = rpc(
        &broker,
        "tools/call",
        generate_args(),
        true,
        TOOL,
        IMAGEGEN_KEY,
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_ne!(reply["result"]["resultType"], "task", "{reply}");
    assert!(reply.to_string().contains("no-waiting"), "{reply}");
    let now = jiff::Timestamp::now().as_millisecond();
    let stored = broker
        .broker
        .parts
        .store
        .list_tasks(None, now, None, 10)
        .await
        .unwrap();
    assert!(stored.is_empty(), "a refused call was stored: {stored:?}");
    assert_eq!(posts(&server).await, 0);
}

#[tokio::test]
async fn a_task_s_arguments_are_guarded_before_they_are_sent_and_its_result_names_the_rules() {
    let server = MockServer::start().await;
    mount_submit(&server).await;
    mount_status(&server, 200, generation("COMPLETE")).await;
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(&server, dir.path()).await;
    let (status, reply) = rpc(
        &broker,
        "tools/call",
        json!({ "name": TOOL, "arguments": { "prompt": "a receipt for 4539 1488 0343 6467", "confirm": true } }),
        true,
        TOOL,
        IMAGEGEN_KEY,
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let task = reply["result"]["taskId"].as_str().unwrap().to_string();
    let done = settled(&broker, &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["meta"]["guards"],
        json!(["card"]),
        "{done}"
    );
    let sent = server.received_requests().await.unwrap_or_default();
    let submitted: Value = sent
        .iter()
        .find(|r| r.method.as_str() == "POST")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .unwrap_or_default();
    assert_eq!(
        submitted["prompt"], "a receipt for [REDACTED:card]",
        "{submitted}"
    );
    let text = crate::support::folder_text(dir.path());
    assert!(
        !text.contains("4539 1488"),
        "the stored task holds no card number"
    );
}
