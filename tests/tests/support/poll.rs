//! An imagegen upstream whose generations are submitted and polled.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub const IMAGEGEN_KEY: (&str, &str) = ("x-imagegen-api-key", "ik_poll_key");

pub fn generation(status: &str) -> Value {
    json!({ "generations_by_pk": { "id": "0b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e", "status": status, "generated_images": [
        { "id": "i1", "url": "https://cdn.example.invalid/i1.png" },
        { "id": "i2", "url": "https://cdn.example.invalid/i2.png" }
    ] } })
}

pub async fn mount_submit(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path("/generations"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "sdGenerationJob": { "generationId": "0b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e", "cost": { "amount": "0.01", "unit": "DOLLARS" } }
        })))
        .expect(1)
        .mount(server)
        .await;
}

pub const GENERATION_ID: &str = "0b8a5c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e";

/// Every status read of the generation answers `status` (with `code`).
pub async fn mount_status(server: &MockServer, code: u16, body: Value) {
    Mock::given(method("GET"))
        .and(path(format!("/generations/{GENERATION_ID}")))
        .respond_with(ResponseTemplate::new(code).set_body_json(body))
        .mount(server)
        .await;
}
