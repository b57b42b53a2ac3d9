//! Snapshots of compiled forms: the normalized definitions that descriptor hashes cover,
//! and the exact upstream requests some tools render. A change to either shows up in
//! review (`cargo insta review`) next to the catalog change that caused it.

use serde_json::{Value, json};
use tool_broker::catalog::Action;
use tool_broker::catalog::source::Sources;
use tool_broker::catalog::template::Scope;
use tool_broker::upstream::render::render;

use crate::support::compiled;

#[test]
fn normalized_definitions_of_one_tool_per_kind() {
    let options = tool_broker::catalog::compile::Options {
        keep_definitions: true,
        ..Default::default()
    };
    let (catalog, definitions) =
        tool_broker::catalog::compile::compile_with(&Sources::embedded(), options)
            .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(definitions.len(), catalog.tools.len());
    for tool in &catalog.tools {
        let definition = &definitions[&tool.full_name];
        assert_eq!(
            tool_broker::catalog::identity::descriptor_hash(definition),
            tool.descriptor_hash,
            "{}: the hash covers the definition returned",
            tool.full_name
        );
    }
    for name in [
        "portal.call_read_tool",
        "hosting.dns_validate_dns_records_v1",
        "crm.oauth_get_location_access_token",
        "crm.email_create_template_v2",
        "agent.create_task",
        "media.media_export_to_drive",
    ] {
        let tool = catalog.resolve(name).unwrap();
        insta::assert_json_snapshot!(
            format!("normalized__{name}"),
            json!({ "hash": tool.descriptor_hash, "definition": definitions[&tool.full_name] })
        );
    }
}

#[test]
fn rendered_requests() {
    let catalog = compiled(&Sources::embedded());
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "hosting.dns_get_dns_snapshot_v1",
            json!({"domain": "a.b", "snapshotId": 7}),
            json!({}),
        ),
        (
            "hosting.billing_get_catalog_item_list_v1",
            json!({"category": "VPS", "name": ".COM*"}),
            json!({}),
        ),
        (
            "agent.list_tasks",
            json!({"limit": 5, "cursor": "c", "order": "desc"}),
            json!({}),
        ),
        (
            "crm.oauth_get_location_access_token",
            json!({"body": {"companyId": "c", "locationId": "l", "meta": {"a": [1, 2]}}, "query": {"v": 1}}),
            json!({}),
        ),
        (
            "crm.create_appointment",
            json!({"calendarId": "cal", "contactId": "ct", "startTime": "2026-12-01T09:00:00+01:00"}),
            json!({"location_id": "loc"}),
        ),
        (
            "crm.marketplace_get_rebilling_config",
            json!({"appId": "app"}),
            json!({"location_id": "loc"}),
        ),
        (
            "crm.update_calendar_resource_room",
            json!({"resourceId": "r1", "capacity": 4, "calendarIds": ["c1"]}),
            json!({}),
        ),
    ];
    let mut out = serde_json::Map::new();
    for (name, args, ctx) in cases {
        let tool = catalog.resolve(name).unwrap();
        let Action::Http(plan) = &tool.action else {
            panic!("{name} is not http")
        };
        let args = tool_broker::call::args::prepare(tool, Some(args)).unwrap();
        let context = Scope::new(json!({"args": args, "ctx": ctx, "settings": {}}));
        let request = render(plan, &catalog.templates, &context).unwrap();
        let body = request
            .body_bytes()
            .map(|(b, ct)| json!({"contentType": ct, "text": String::from_utf8(b).unwrap()}));
        out.insert(
            name.to_string(),
            json!({"preview": request.preview(), "queryString": request.query_string(), "body": body}),
        );
    }
    insta::assert_json_snapshot!("rendered_requests", Value::Object(out));
}
