//! Descriptors: how a tool describes itself to callers (tool reference, capabilities,
//! coverage, find results). One place, so every door shows the same facts.

use serde_json::{Value, json};

use crate::catalog::{Action, Catalog, Tool};
use crate::descriptor::{ConfirmationMode, Tier};

/// The build id: the broker's version and the catalog snapshot it serves.
pub fn build_id(catalog: &Catalog) -> String {
    format!(
        "tool-broker-{}+{}",
        env!("CARGO_PKG_VERSION"),
        catalog.snapshot_id
    )
}

/// What a caller must do before the tool acts, as data.
pub fn confirmation(catalog: &Catalog, tool: &Tool) -> Value {
    let c = &catalog.rules.confirmation;
    match tool.confirmation {
        ConfirmationMode::None | ConfirmationMode::Auto => json!({ "mode": "none" }),
        ConfirmationMode::ConfirmFlag => json!({
            "mode": "confirm_flag",
            "argument": c.confirm_arg,
            "rule": format!("refused with confirmation_required unless `{}` is true", c.confirm_arg),
        }),
        ConfirmationMode::DryRunDefault => json!({
            "mode": "dry_run_default",
            "argument": c.confirm_arg,
            "previewArgument": tool.preview_arg,
            "rule": format!("answers a dry-run preview and sends nothing unless `{}` is true", c.confirm_arg),
        }),
        ConfirmationMode::ConfirmApply => json!({
            "mode": "confirm_apply",
            "argument": c.apply_arg,
            "phrase": c.apply_phrase,
            "rule": format!("refused with confirmation_required unless `{}` is exactly `{}`", c.apply_arg, c.apply_phrase),
        }),
    }
}

/// Exposure status for coverage: `exposed`, `raw_only` or `legacy`.
pub fn status(tool: &Tool) -> &'static str {
    if !tool.exposed {
        "raw_only"
    } else if tool.tier == Tier::Legacy {
        "legacy"
    } else {
        "exposed"
    }
}

/// A compact line: what a search result or a listing shows.
pub fn summary(tool: &Tool) -> Value {
    let (method, path, hook) = tool.upstream_label();
    json!({
        "name": tool.name,
        "fullName": tool.full_name,
        "title": tool.title,
        "description": tool.description,
        "risk": tool.risk,
        "classes": tool.classes,
        "category": tool.category,
        "tier": tool.tier,
        "method": method,
        "path": path,
        "local": hook.is_some(),
    })
}

/// The complete descriptor: everything a caller needs to call the tool correctly.
pub fn descriptor(catalog: &Catalog, tool: &Tool) -> Value {
    let (method, path, hook) = tool.upstream_label();
    let service = catalog.services.get(&tool.service);
    json!({
        "name": tool.name,
        "fullName": tool.full_name,
        "canonicalName": tool.canonical_name(),
        "service": tool.service,
        "title": tool.title,
        "description": tool.description,
        "aliases": tool.aliases,
        "tier": tool.tier,
        "risk": tool.risk,
        "classes": tool.classes,
        "category": tool.category,
        "status": status(tool),
        "confirmation": confirmation(catalog, tool),
        "upstream": match &tool.action {
            Action::Http(_) => json!({ "method": method, "path": path }),
            Action::Hook(_) => Value::Null,
        },
        "local": hook.is_some(),
        "arguments": tool.arguments,
        "output": tool.output,
        "timeoutMs": u64::try_from(tool.timeout.as_millis()).unwrap_or(u64::MAX),
        "source": tool.provenance,
        "catalogFile": format!("{}:{}", tool.source.0, tool.source.1),
        "catalogVersion": service.map(|s| s.catalog_version.clone()),
        "descriptorHash": tool.descriptor_hash,
        "snapshotId": catalog.snapshot_id,
        "buildId": build_id(catalog),
    })
}
