//! Cedar policies typed by the catalog: the schema `policy schema` prints, and a
//! deployment naming policies that `serve` does not yet decide by.

use tool_broker::cli::{CatalogRoot, PolicyCommand, policy};

use crate::support::config_error;

#[test]
fn the_schema_has_an_action_per_tool_in_its_groups() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("broker.toml");
    std::fs::write(
        &config,
        "[policy]\ndir = \"policies\"\nclaims = [\"email\"]\n",
    )
    .unwrap();
    let json = policy(
        PolicyCommand::Schema {
            config: Some(config),
        },
        &CatalogRoot::Embedded,
    )
    .unwrap();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let types = &json[""]["entityTypes"];
    assert_eq!(
        types["Tool"]["memberOfTypes"],
        serde_json::json!(["Service"])
    );
    assert_eq!(types["Key"]["memberOfTypes"], serde_json::json!(["Role"]));
    assert_eq!(
        types["User"]["shape"]["attributes"]["email"],
        serde_json::json!({ "type": "String", "required": false })
    );
    let actions = json[""]["actions"].as_object().unwrap();
    // Every tool; the nine services' groups; call, read, write and the five classes.
    assert_eq!(actions.len(), 1_817 + 9 + 8);
    let refund = &actions["payments.post_refunds"];
    let groups: Vec<&str> = refund["memberOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["id"].as_str())
        .collect();
    assert_eq!(groups, ["call", "payments", "write", "spend"]);
    let context = &refund["appliesTo"]["context"]["attributes"];
    assert_eq!(
        context["arguments"]["attributes"]["amount"],
        serde_json::json!({ "type": "Long", "required": false })
    );
    assert_eq!(context["dryRun"]["type"], "Boolean");
    let destructive = actions
        .values()
        .filter(|a| {
            a["memberOf"]
                .as_array()
                .is_some_and(|m| m.iter().any(|g| g["id"] == "destructive"))
        })
        .count();
    assert!(destructive > 10, "{destructive}");
}

#[tokio::test]
async fn serve_refuses_policies_it_does_not_yet_decide_by() {
    let err = config_error("[policy]\ndir = \"policies\"\n").await;
    assert!(
        err.contains("[policy]") && err.contains("does not yet decide"),
        "{err}"
    );
}
