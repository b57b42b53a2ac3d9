//! The OpenAPI importer, on a small YAML document made for the purpose
//! (`tests/fixtures/openapi/pets.yaml`, with a relative-file `$ref` to `common.json`):
//! what it generates, what it drops and why, skip rules, overrides, idempotence, and the
//! exact requests the generated tools send.

use std::path::{Path, PathBuf};

use serde_json::json;
use tool_broker::cli::{CatalogCommand, catalog};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker, root, scratch_root};

const SERVICE: &str = r#"
id = "pets"
title = "Pets"
description = "A test service imported from OpenAPI."
catalog_version = "pets-2026.11.21.1"
version_format = "service_dotted_date"
[credential]
header = "x-pets-api-key"
placement = "header"
name = "X-Api-Key"
"#;

const IMPORT: &str = r#"
service = "pets"
[arguments]
drop_headers = ["X-Api-Key"]
[defaults.write.arguments.properties.confirm]
type = "boolean"
[operations.createPet]
classes = ["spend"]
response = { data = "$.id" }
[text]
skip_paragraphs = ["Credits are charged"]
"#;

fn scratch(import: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = scratch_root();
    std::fs::create_dir_all(path.join("catalog/pets")).unwrap();
    std::fs::create_dir_all(path.join("import")).unwrap();
    std::fs::write(path.join("catalog/pets/service.toml"), SERVICE).unwrap();
    std::fs::write(path.join("import/pets.toml"), import).unwrap();
    (dir, path)
}

fn run(dir: &Path, check: bool) -> Result<String, String> {
    catalog(
        CatalogCommand::ImportOpenapi {
            service: "pets".into(),
            specs: vec![root().join("tests/fixtures/openapi/pets.yaml")],
            specs_dir: None,
            check,
        },
        dir,
    )
}

#[test]
fn operations_that_cannot_be_imported_are_named_and_fail_the_run() {
    let (_keep, dir) = scratch(IMPORT);
    let err = run(&dir, false).unwrap_err();
    assert!(
        err.contains("DROPPED  POST /v1/pets/{pet_id}/photo: request body [\"multipart/form-data\"] is not JSON or form-encoded"),
        "{err}"
    );
    assert!(err.contains("the import is not clean"), "{err}");
}

#[test]
fn a_skip_rule_makes_the_run_clean_and_the_result_compiles() {
    let import = format!(
        "{IMPORT}\n[skip]\n\"POST /v1/pets/{{pet_id}}/photo\" = \"multipart uploads are not supported\"\n"
    );
    let (_keep, dir) = scratch(&import);
    let out = run(&dir, false).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.contains("catalog/pets/openapi.toml: 7 tools generated"),
        "{out}"
    );
    assert!(
        out.contains("skipped  POST /v1/pets/{pet_id}/photo: multipart uploads are not supported"),
        "{out}"
    );
    let text = std::fs::read_to_string(dir.join("catalog/pets/openapi.toml")).unwrap();
    // Idempotent: a second run writes the same bytes, and --check agrees.
    run(&dir, false).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("catalog/pets/openapi.toml")).unwrap(),
        text
    );
    run(&dir, true).unwrap();
    let without_hash: String = text
        .lines()
        .filter(|l| !l.contains("sha256"))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("imported_pets", without_hash);
}

#[test]
fn an_override_s_risk_chooses_the_defaults() {
    // `updatePet` is a POST: a write, with the writes' `confirm`, unless its override
    // says it reads (an upstream's search sent as a POST).
    let import = format!(
        "{IMPORT}\n[skip]\n\"POST /v1/pets/{{pet_id}}/photo\" = \"x\"\n\
         [defaults.read.arguments.properties.fields]\ntype = \"string\"\n\
         [operations.updatePet]\nrisk = \"read\"\n"
    );
    let (_keep, dir) = scratch(&import);
    run(&dir, false).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(dir.join("catalog/pets/openapi.toml")).unwrap();
    let file: toml::Table = toml::from_str(&text).unwrap();
    let tools = file["tool"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    let arguments = |name: &str| {
        tool(name)["arguments"]["properties"]
            .as_table()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(tool("update_pet")["risk"].as_str(), Some("read"));
    assert!(arguments("update_pet").contains(&"fields".to_string()));
    assert!(!arguments("update_pet").contains(&"confirm".to_string()));
    // The other POST keeps the writes' defaults.
    assert!(arguments("create_pet").contains(&"confirm".to_string()));
    assert!(!arguments("create_pet").contains(&"fields".to_string()));
}

#[test]
fn an_override_for_no_operation_is_an_error() {
    let import = format!(
        "{IMPORT}\n[skip]\n\"POST /v1/pets/{{pet_id}}/photo\" = \"x\"\n[operations.nosuchOperation]\ntitle = \"x\"\n"
    );
    let (_keep, dir) = scratch(&import);
    let err = run(&dir, false).unwrap_err();
    assert!(
        err.contains("UNUSED   [operations.\"nosuchOperation\"] matches no operation"),
        "{err}"
    );
}

#[test]
fn check_mode_fails_when_the_generated_file_is_stale() {
    let import = format!("{IMPORT}\n[skip]\n\"POST /v1/pets/{{pet_id}}/photo\" = \"x\"\n");
    let (_keep, dir) = scratch(&import);
    run(&dir, false).unwrap();
    std::fs::write(
        dir.join("import/pets.toml"),
        format!("{import}\n[operations.getPet]\ntitle = \"Fetch a pet\"\n"),
    )
    .unwrap();
    let err = run(&dir, true).unwrap_err();
    assert!(err.contains("is not what the import generates"), "{err}");
}

#[tokio::test]
async fn imported_tools_send_exact_requests() {
    let import = format!("{IMPORT}\n[skip]\n\"POST /v1/pets/{{pet_id}}/photo\" = \"x\"\n");
    let (_keep, dir) = scratch(&import);
    run(&dir, false).unwrap();
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": "p1", "data": []})))
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.sources = Some(tool_broker::catalog::source::Sources::from_dir(&dir).unwrap());
    setup.upstreams.insert("pets".into(), server.uri());
    let b = TestBroker::start(setup).await;
    let key = [("x-pets-api-key", "pk_1234567")];

    // Query (with a non-identifier name) and a header parameter; no upstream default sent.
    let (status, envelope) = b
        .call(
            "pets.list_pets",
            json!({"created[gte]": 5, "X-Request-Id": "r-1"}),
            &key,
        )
        .await;
    assert_eq!(status, 200, "{envelope}");
    // JSON body from flat arguments; the override's spend class makes it dry-run first.
    let (status, envelope) = b
        .call("pets.create_pet", json!({"name": "Rex", "tag": null}), &key)
        .await;
    assert_eq!(
        (status, &envelope["data"]["dryRun"]),
        (200, &json!(true)),
        "{envelope}"
    );
    let (status, envelope) = b
        .call(
            "pets.create_pet",
            json!({"name": "Rex", "kind": "dog", "confirm": true}),
            &key,
        )
        .await;
    assert_eq!(
        (status, &envelope["data"]),
        (200, &json!("p1")),
        "{envelope}"
    );
    // Form body with nested keys; a path parameter.
    let (status, envelope) = b
        .call(
            "pets.update_pet",
            json!({"pet_id": "p 1", "name": "Rex", "metadata": {"color": "brown"}, "confirm": true}),
            &key,
        )
        .await;
    assert_eq!(status, 200, "{envelope}");
    // A hyphenated path parameter, by the operation id's alias.
    let (status, envelope) = b
        .call("pets.GetOwner", json!({"owner-id": "o1"}), &key)
        .await;
    assert_eq!(status, 200, "{envelope}");

    let received = server.received_requests().await.unwrap();
    let seen: Vec<String> = received
        .iter()
        .map(|r| {
            format!(
                "{} {}?{} key={} rid={} body={}",
                r.method,
                r.url.path(),
                r.url.query().unwrap_or(""),
                r.headers
                    .get("x-api-key")
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("-"),
                r.headers
                    .get("x-request-id")
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("-"),
                String::from_utf8_lossy(&r.body)
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            "GET /v1/pets?created%5Bgte%5D=5 key=pk_1234567 rid=r-1 body=".to_string(),
            r#"POST /v1/pets? key=pk_1234567 rid=- body={"kind":"dog","name":"Rex"}"#.to_string(),
            "POST /v1/pets/p%201? key=pk_1234567 rid=- body=metadata%5Bcolor%5D=brown&name=Rex"
                .to_string(),
            "GET /v1/owners/o1? key=pk_1234567 rid=- body=".to_string(),
        ]
    );
}
