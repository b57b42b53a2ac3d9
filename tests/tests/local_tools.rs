//! Local planning and guide tools (`table_lookup`): answers from the service's tables,
//! never an upstream request.

use serde_json::{Value, json};
use wiremock::MockServer;

use crate::support::{Setup, TestBroker};

async fn call(name: &str, args: Value) -> Value {
    let server = MockServer::start().await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let (status, body) = broker.call(name, args, &[]).await;
    assert_eq!(status, 200, "{name}: {body}");
    assert!(
        server.received_requests().await.unwrap().is_empty(),
        "{name} contacted the upstream"
    );
    body["data"].clone()
}

#[tokio::test]
async fn recommend_model_follows_the_goal() {
    for (goal, kind, expected) in [
        ("fast drafts to iterate on", "image", "flux_schnell"),
        ("a poster with legible text", "image", "phoenix"),
        (
            "keep the same character from a reference",
            "image",
            "flux_kontext",
        ),
        ("a cinematic clip for a commercial", "video", "VEO3"),
    ] {
        let data = call(
            "imagegen.recommend_model",
            json!({ "goal": goal, "kind": kind }),
        )
        .await;
        assert_eq!(data["recommended"]["key"], expected, "{goal}: {data}");
        assert!(data["alternatives"].as_array().unwrap().len() <= 3);
    }
}

#[tokio::test]
async fn plan_image_generation_fits_sizes_to_the_model_and_prices_it() {
    let data = call(
        "imagegen.plan_image_generation",
        json!({ "prompt": "a product photo of a watch", "style": "photoreal", "width": 1003, "height": 2000, "num_images": 2 }),
    )
    .await;
    assert_eq!(data["model"]["family"], "phoenix", "{data}");
    assert_eq!(
        data["generateArguments"],
        json!({ "prompt": "a product photo of a watch", "width": 1000, "height": 1536, "num_images": 2 })
    );
    assert_eq!(data["adjusted"], true);
    assert_eq!(
        data["priceArguments"],
        json!({ "service": "IMAGE_GENERATION", "serviceParams": { "IMAGE_GENERATION": {
            "imageWidth": 1000, "imageHeight": 1536, "numImages": 2, "isPhoenix": true
        } } })
    );
    assert!(
        data["modelIdHint"]
            .as_str()
            .unwrap()
            .contains("List Platform Models")
    );
    assert_eq!(data["generateTool"], "imagegen.generate_image_and_wait");
}

#[tokio::test]
async fn plan_video_generation_checks_features_and_durations() {
    // An end frame needs Kling 2.1, and image-to-video keeps the image.
    let data = call(
        "imagegen.plan_video_generation",
        json!({ "prompt": "morph into night", "style": "end frame transition", "imageId": "img1" }),
    )
    .await;
    assert_eq!(data["model"]["key"], "KLING2_1", "{data}");
    assert_eq!(
        data["generateArguments"],
        json!({ "prompt": "morph into night", "model": "KLING2_1", "imageId": "img1", "imageType": "GENERATED" })
    );
    // Veo 3 takes 4, 6 or 8 seconds: 7 is planned as 8, and the plan says why.
    let data = call(
        "imagegen.plan_video_generation",
        json!({ "prompt": "a cinematic aerial shot", "style": "cinematic film", "duration": 7 }),
    )
    .await;
    assert_eq!(data["model"]["key"], "VEO3", "{data}");
    assert_eq!(data["generateArguments"]["duration"], 8);
    assert!(
        data["durationNote"]
            .as_str()
            .unwrap()
            .contains("not allowed"),
        "{data}"
    );
}

#[tokio::test]
async fn guides_are_served_locally_without_secrets() {
    let guide = call("imagegen.get_media_generation_guide", json!({})).await;
    assert!(guide["steps"].as_array().unwrap().len() >= 4);
    let callback = call("imagegen.get_callback_setup", json!({})).await;
    assert!(callback["summary"].as_str().unwrap().contains("polling"));
    let text = callback.to_string().to_lowercase();
    assert!(
        !text.contains("sk_") && !text.contains("secret\":"),
        "{text}"
    );
}

#[tokio::test]
async fn leads_builds_an_oauth_url_from_the_callers_own_values() {
    let data = call(
        "leads.build_oauth_authorization_url",
        json!({
            "client_id": "cid 1",
            "redirect_uri": "https://app.example.invalid/cb?x=1",
            "scopes": ["read_user_profile", "contacts_search"],
            "state": "st-0123456789abcdef"
        }),
    )
    .await;
    let url = data["authorizationUrl"].as_str().unwrap();
    assert_eq!(
        url,
        "https://app.apollo.io/#/oauth/authorize?client_id=cid%201&redirect_uri=https%3A//app.example.invalid/cb%3Fx%3D1&response_type=code&scope=read_user_profile%20contacts_search&state=st-0123456789abcdef"
    );
    assert_eq!(data["state"], "st-0123456789abcdef");
    // A short state, or a plain-http redirect off localhost, is refused by the schema.
    let server = MockServer::start().await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    for bad in [
        json!({ "client_id": "c", "redirect_uri": "https://a.invalid/cb", "state": "short" }),
        json!({ "client_id": "c", "redirect_uri": "http://evil.invalid/cb", "state": "st-0123456789abcdef" }),
    ] {
        let (status, body) = broker
            .call("leads.build_oauth_authorization_url", bad, &[])
            .await;
        assert_eq!(status, 422, "{body}");
    }
}

#[tokio::test]
async fn check_configuration_names_each_services_own_readiness() {
    let imagegen = call("imagegen.check_configuration", json!({})).await;
    assert_eq!(imagegen["jobStore"], "sqlite", "{imagegen}");
    assert_eq!(
        imagegen["store"],
        json!({ "kind": "sqlite", "ready": true })
    );
    assert_eq!(imagegen["webhookReceiver"], false);
    assert_eq!(imagegen["granted"], true);
    assert_eq!(imagegen["credentialPresent"], false);
    let crm = call("crm.crm_check_configuration", json!({})).await;
    assert_eq!(crm["tenantsConfigured"], 0, "{crm}");
    assert_eq!(crm["runtimeMode"], "private");
    assert_eq!(crm["runtimeLocationPresent"], false);
    let payments = call("payments.check_configuration", json!({})).await;
    assert_eq!(payments["routingProfiles"], 0, "{payments}");
    assert_eq!(payments["keyMode"], "byok");
}

/// Each service's readiness is partly built once per broker; what depends on the
/// request (the caller's key header, its location header) must still follow each call.
#[tokio::test]
async fn readiness_follows_each_requests_headers_on_one_broker() {
    let server = MockServer::start().await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let crm_of = |body: &Value| {
        body["data"]["services"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["serviceId"] == "crm").cloned())
            .unwrap_or_else(|| panic!("no crm in {body}"))
    };
    let (status, bare) = broker.call("portal.check_connection", json!({}), &[]).await;
    assert_eq!(status, 200, "{bare}");
    let headers = [("x-crm-api-key", "crm-key"), ("x-crm-location-id", "loc-1")];
    let (status, with) = broker
        .call("portal.check_connection", json!({}), &headers)
        .await;
    assert_eq!(status, 200, "{with}");
    let (bare, with) = (crm_of(&bare), crm_of(&with));
    assert_eq!(bare["credentialPresent"], false, "{bare}");
    assert_eq!(bare["runtimeLocationPresent"], false, "{bare}");
    assert_eq!(with["credentialPresent"], true, "{with}");
    assert_eq!(with["runtimeLocationPresent"], true, "{with}");
    // The fixed part is the same on both calls.
    for key in [
        "toolCount",
        "catalogVersion",
        "keyMode",
        "endpointConfigured",
    ] {
        assert_eq!(bare[key], with[key], "{key}");
    }
    // And a second bare call after the one with headers forgets them.
    let (_, again) = broker.call("portal.check_connection", json!({}), &[]).await;
    assert_eq!(crm_of(&again)["credentialPresent"], false);
}

/// `check_connection` keeps its answers by what they depend on; a kept answer still
/// follows who calls and what it asks: a key limited to some services, a `serviceId`,
/// and back to the whole list.
#[tokio::test]
async fn kept_connection_answers_follow_the_caller_and_the_service_asked() {
    let server = MockServer::start().await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!(
        "[[keys]]\nname = \"crm-only\"\nsha256 = \"{}\"\nservices = [\"crm\", \"portal\"]\n",
        tool_broker::catalog::identity::sha256_hex(b"tb_crm_only_key_1")
    ));
    let broker = TestBroker::start(setup).await;
    let ids = |body: &Value| -> Vec<String> {
        body["data"]["services"]
            .as_array()
            .unwrap_or_else(|| panic!("no services in {body}"))
            .iter()
            .map(|s| s["serviceId"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let (status, all) = broker.call("portal.check_connection", json!({}), &[]).await;
    assert_eq!(status, 200, "{all}");
    let everyone = ids(&all);
    assert!(everyone.len() > 2, "{all}");
    assert!(
        all["summary"]
            .as_str()
            .is_some_and(|s| s.ends_with(&format!("ready with {} services", everyone.len()))),
        "{all}"
    );
    let (status, limited) = broker
        .call_as(
            "tb_crm_only_key_1",
            "portal.check_connection",
            json!({}),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{limited}");
    let theirs = ids(&limited);
    assert!(theirs.contains(&"crm".to_string()), "{limited}");
    assert!(
        theirs.iter().all(|id| id == "crm" || id == "portal"),
        "{limited}"
    );
    let (status, one) = broker
        .call(
            "portal.check_connection",
            json!({"serviceId": "hosting"}),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(ids(&one), ["hosting"]);
    assert!(
        one["summary"]
            .as_str()
            .is_some_and(|s| s.ends_with("ready with 1 service")),
        "{one}"
    );
    // The whole list again, answered from what was kept: the same data as the first.
    let (_, again) = broker.call("portal.check_connection", json!({}), &[]).await;
    assert_eq!(again["data"], all["data"]);
    assert_ne!(again["traceId"], all["traceId"]);
    assert!(again.get("meta").is_none(), "{again}");
}
