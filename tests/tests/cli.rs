//! The catalog commands auditors and authors use: lock, verify, diff, list, schema.

use std::path::Path;

use serde_json::Value;
use tool_broker::cli::{CatalogCommand, Format, catalog};

use crate::support::{root, scratch_root};

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn the_committed_lock_is_current() {
    let out = catalog(CatalogCommand::Verify { upstreams: false }, &root())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.starts_with("ok: lock matches"), "{out}");
}

#[test]
fn verify_demands_a_version_bump_then_a_fresh_lock() {
    let (_keep, dir) = scratch_root();
    edit(
        &dir.join("catalog/crm/operations.toml"),
        "Gets one opportunity (GET /opportunities/{id}).",
        "Gets an opportunity (GET /opportunities/{id}).",
    );
    let err = catalog(CatalogCommand::Verify { upstreams: false }, &dir).unwrap_err();
    assert!(
        err.contains("service `crm`: descriptors changed (`crm.get_opportunity`)"),
        "{err}"
    );
    assert!(
        err.contains("bump catalog_version in catalog/crm/service.toml"),
        "{err}"
    );

    let service = dir.join("catalog/crm/service.toml");
    let text = std::fs::read_to_string(&service).unwrap();
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("catalog_version = "))
        .unwrap()
        .trim_matches('"')
        .to_string();
    edit(
        &service,
        &format!("catalog_version = \"{version}\""),
        "catalog_version = \"2099-12-31.9\"",
    );
    let err = catalog(CatalogCommand::Verify { upstreams: false }, &dir).unwrap_err();
    assert!(err.contains("the lock file is stale"), "{err}");

    catalog(CatalogCommand::Lock, &dir).unwrap();
    let out = catalog(CatalogCommand::Verify { upstreams: false }, &dir).unwrap();
    assert!(out.starts_with("ok"), "{out}");
}

#[test]
fn changing_where_a_tool_sends_data_changes_its_hash() {
    let (_keep, dir) = scratch_root();
    let before = catalog(
        CatalogCommand::List {
            format: Format::Json,
        },
        &dir,
    )
    .unwrap();
    edit(
        &dir.join("catalog/crm/service.toml"),
        "Version = \"2021-07-28\"",
        "Version = \"2021-04-15\"",
    );
    edit(
        &dir.join("templates/crm/email_template_body.json.j2"),
        "omit(\"html\")",
        "omit(\"html\", \"x\")",
    );
    let after = catalog(
        CatalogCommand::List {
            format: Format::Json,
        },
        &dir,
    )
    .unwrap();
    // Hooks (wrappers) send nothing themselves; every crm HTTP tool changes.
    let hashes = |text: &str| -> Vec<(String, String, bool)> {
        let rows: Vec<Value> = serde_json::from_str(text).unwrap();
        rows.iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_string(),
                    r["descriptorHash"].as_str().unwrap().to_string(),
                    r["method"].is_string(),
                )
            })
            .collect()
    };
    let (b, a) = (hashes(&before), hashes(&after));
    for ((name, hb, http), (_, ha, _)) in b.iter().zip(&a) {
        if name.starts_with("crm.") && *http {
            assert_ne!(
                hb, ha,
                "{name}: a static header change must change the hash"
            );
        } else {
            assert_eq!(hb, ha, "{name} did not change");
        }
    }
}

#[test]
fn diff_lists_added_removed_and_changed_tools() {
    let (_keep, dir) = scratch_root();
    edit(
        &dir.join("catalog/crm/operations.toml"),
        "Lists a location's tags",
        "Lists every tag of a location",
    );
    let text = std::fs::read_to_string(dir.join("catalog/crm/operations.toml")).unwrap();
    let cut = text.find("[[tool]]\nname = \"get_opportunity\"").unwrap();
    std::fs::write(dir.join("catalog/crm/operations.toml"), &text[..cut]).unwrap();
    // A removed tool's intents go with it (an intent naming no tool is a mistake).
    let intents = std::fs::read_to_string(dir.join("catalog/crm/intents.toml")).unwrap();
    let from = intents.find("\nget_opportunity = [").unwrap() + 1;
    let to = from + intents[from..].find("]\n").unwrap() + 2;
    let kept = format!("{}{}", &intents[..from], &intents[to..]);
    std::fs::write(dir.join("catalog/crm/intents.toml"), kept).unwrap();
    std::fs::write(
        dir.join("catalog/media/extra.toml"),
        "[[tool]]\nname = \"get_thumbnail\"\ntitle = \"Get Thumbnail\"\ndescription = \"Reads a job.\"\ntier = \"agent_ready\"\nrisk = \"read\"\n[tool.http]\nmethod = \"GET\"\npath = \"/v1/jobs/{job_id}\"\n[tool.arguments]\ntype = \"object\"\nrequired = [\"job_id\"]\nproperties = { job_id = { type = \"string\" } }\n",
    )
    .unwrap();
    // Policies that name a changed tool, pin its old hash, or name none of them.
    let old_hash =
        tool_broker::catalog::compile::compile(&tool_broker::catalog::source::Sources::embedded())
            .unwrap()
            .resolve("crm.get_opportunity")
            .unwrap()
            .descriptor_hash
            .clone();
    let policies = dir.join("policies");
    std::fs::create_dir(&policies).unwrap();
    std::fs::write(
        policies.join("p.cedar"),
        format!(
            "@id(\"tags\")\npermit(principal, action == Action::\"crm.list_tags\", resource);\n\
             @id(\"pinned\")\npermit(principal, action in Action::\"crm\", resource) when {{ resource.descriptorHash == \"{old_hash}\" }};\n\
             @id(\"reads\")\npermit(principal, action in Action::\"read\", resource);\n"
        ),
    )
    .unwrap();
    let out = catalog(
        CatalogCommand::Diff {
            old_dir: root(),
            policy_dir: Some(policies.clone()),
            format: Format::Json,
        },
        &dir,
    )
    .unwrap();
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    let named: Vec<&Value> = rows.iter().map(|r| &r["policies"]).collect();
    assert_eq!(
        named,
        [
            &serde_json::json!(["pinned"]),
            &serde_json::json!(["tags"]),
            &serde_json::json!([])
        ]
    );
    let summary: Vec<(String, String, bool, bool)> = rows
        .iter()
        .map(|r| {
            (
                r["change"].as_str().unwrap().to_string(),
                r["tool"].as_str().unwrap().to_string(),
                r["old_hash"].is_string(),
                r["new_hash"].is_string(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("removed".into(), "crm.get_opportunity".into(), true, false),
            ("changed".into(), "crm.list_tags".into(), true, true),
            ("added".into(), "media.get_thumbnail".into(), false, true),
        ]
    );
    let text = catalog(
        CatalogCommand::Diff {
            old_dir: root(),
            policy_dir: Some(policies),
            format: Format::Text,
        },
        &dir,
    )
    .unwrap();
    assert!(text.contains("3 changes"), "{text}");
    assert!(
        text.contains("crm.list_tags") && text.contains("  policies: tags\n"),
        "{text}"
    );
}

#[test]
fn list_prints_one_object_per_tool() {
    let out = catalog(
        CatalogCommand::List {
            format: Format::Json,
        },
        &root(),
    )
    .unwrap();
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert!(rows.len() >= 35);
    let row = rows
        .iter()
        .find(|r| r["name"] == "hosting.dns_get_dns_records_v1")
        .unwrap();
    assert_eq!(row["service"], "hosting");
    assert_eq!(row["tier"], "agent_ready");
    assert_eq!(row["risk"], "read");
    assert_eq!(row["method"], "GET");
    assert_eq!(row["path"], "/api/dns/v1/zones/{domain}");
    assert_eq!(row["hook"], Value::Null);
    let version = tool_broker::catalog::compile::compile(
        &tool_broker::catalog::source::Sources::from_dir(&root()).unwrap(),
    )
    .unwrap()
    .services["hosting"]
        .catalog_version
        .clone();
    assert_eq!(row["catalogVersion"], version.as_str());
    assert_eq!(row["descriptorHash"].as_str().unwrap().len(), 64);
    let hook = rows
        .iter()
        .find(|r| r["name"] == "portal.check_connection")
        .unwrap();
    assert_eq!(hook["hook"], "portal.check_connection");
}

#[test]
fn check_reports_problems_and_fails() {
    let (_keep, dir) = scratch_root();
    edit(
        &dir.join("catalog/crm/operations.toml"),
        "risk = \"read\"",
        "risk = \"reed\"",
    );
    let err = catalog(CatalogCommand::Check, &dir).unwrap_err();
    assert!(err.contains("catalog/crm/operations.toml:"), "{err}");
    assert!(err.contains("1 problem found"), "{err}");
    let err = catalog(CatalogCommand::Check, Path::new("/nonexistent-root")).unwrap_err();
    assert!(err.contains("is not a catalog root"), "{err}");
}

#[test]
fn the_committed_format_schemas_are_current() {
    for (name, text) in tool_broker::catalog::schema::format_schemas() {
        let committed =
            std::fs::read_to_string(root().join("schemas").join(name)).unwrap_or_default();
        assert!(
            committed == text,
            "schemas/{name} is stale: run `cargo run -p tool-broker -- catalog schema --write`"
        );
    }
}

#[test]
fn lint_refuses_schemas_providers_would_refuse() {
    let (_keep, dir) = scratch_root();
    let out = catalog(CatalogCommand::Lint, &dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains(", 0 refused by model providers"), "{out}");
    std::fs::write(
        dir.join("catalog/media/lint_probe.toml"),
        r##"
[[tool]]
name = "lint_probe"
title = "Lint probe"
description = "A tool whose schema keeps a reference."
tier = "agent_ready"
risk = "read"
hook = "check_configuration"

[tool.arguments]
type = "object"
properties = { a = { "$ref" = "#/$defs/a" }, "b[]" = { type = "string" } }
"$defs" = { a = { type = "string" } }
"##,
    )
    .unwrap();
    let err = catalog(CatalogCommand::Lint, &dir).unwrap_err();
    assert!(
        err.contains("error: media.lint_probe /properties/a/$ref"),
        "{err}"
    );
    assert!(err.contains("error: media.lint_probe /$defs"), "{err}");
    assert!(
        err.contains("warning: media.lint_probe /properties/b[]"),
        "{err}"
    );
    assert!(
        err.contains(", 1 refused by model providers (2 findings)"),
        "{err}"
    );
}

#[test]
fn lint_fails_on_a_name_a_model_api_would_refuse_and_warns_on_a_shortened_one() {
    let (_keep, dir) = scratch_root();
    let tool = |name: &str| {
        format!(
            r#"
[[tool]]
name = "{name}"
title = "Name probe"
description = "A tool whose name is probed."
tier = "agent_ready"
risk = "read"
hook = "check_configuration"
[tool.arguments]
type = "object"
"#
        )
    };
    // A name with a dot (model APIs refuse dots) does not get past the catalog check.
    std::fs::write(
        dir.join("catalog/media/name_probe.toml"),
        tool("name.probe"),
    )
    .unwrap();
    let err = catalog(CatalogCommand::Lint, &dir).unwrap_err();
    assert!(err.contains("must be snake_case"), "{err}");
    // A name that is too long for one is listed shortened: a warning naming both.
    let long = format!("name_probe_{}", "very_long_".repeat(6));
    std::fs::write(dir.join("catalog/media/name_probe.toml"), tool(&long)).unwrap();
    let out = catalog(CatalogCommand::Lint, &dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.contains(&format!(
            "warning: media.{long} /: listed on /mcp as `media_name_probe_very_long_"
        )),
        "{out}"
    );
    assert!(out.contains(", 0 refused by model providers"), "{out}");
}
