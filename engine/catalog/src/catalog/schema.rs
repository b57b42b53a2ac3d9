//! JSON Schemas of the catalog and rules formats, generated from the raw structs and
//! committed under `schemas/` for editor completion. A test fails when the committed
//! files are stale; `tool-broker catalog schema --write` refreshes them.

use crate::catalog::descriptor::{ServiceFile, ToolFile};
use crate::catalog::rules::{Limits, RawArgumentSets, RawConfirmation, RawErrors, RawRedaction};
use crate::catalog::search::RawSearch;

/// `(file name under schemas/, pretty JSON)` for every format.
pub fn format_schemas() -> Vec<(&'static str, String)> {
    let pretty = |s: schemars::Schema| {
        let mut text = serde_json::to_string_pretty(&s).unwrap_or_default();
        text.push('\n');
        text
    };
    vec![
        (
            "catalog-service.schema.json",
            pretty(schemars::schema_for!(ServiceFile)),
        ),
        (
            "catalog-tools.schema.json",
            pretty(schemars::schema_for!(ToolFile)),
        ),
        (
            "catalog-intents.schema.json",
            pretty(schemars::schema_for!(crate::catalog::intents::IntentsFile)),
        ),
        (
            "rules-errors.schema.json",
            pretty(schemars::schema_for!(RawErrors)),
        ),
        (
            "rules-redaction.schema.json",
            pretty(schemars::schema_for!(RawRedaction)),
        ),
        (
            "rules-confirmation.schema.json",
            pretty(schemars::schema_for!(RawConfirmation)),
        ),
        (
            "rules-limits.schema.json",
            pretty(schemars::schema_for!(Limits)),
        ),
        (
            "rules-argument-sets.schema.json",
            pretty(schemars::schema_for!(RawArgumentSets)),
        ),
        (
            "rules-search.schema.json",
            pretty(schemars::schema_for!(RawSearch)),
        ),
        (
            "rules-costs.schema.json",
            pretty(schemars::schema_for!(crate::catalog::costs::RawCosts)),
        ),
    ]
}
