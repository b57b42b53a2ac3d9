//! `table_lookup`: a local answer computed from a service's reference table (models,
//! guides, planning data) and the arguments, with no upstream contact.
//!
//! Rows are kept by the `filter` expression, ranked by how many distinct words of the
//! `query` text they contain in their `fields` (the same tokenizer and stemmer as find
//! tools; ties keep the table's order, so a table lists its preferred rows first), and
//! the `result` expression shapes the answer from `table`, `ranked` and `best`.
//! Planning tools (plan a generation, recommend a model, build an OAuth URL) are all
//! this hook with different data. Expressions of a service with a `[webhook]` also see
//! `webhook` (`path`, `secretConfigured`), for callback setup answers.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::steps::eval;
use crate::catalog::Tool;
use crate::catalog::template::Scope;
use crate::error::CallError;
use crate::run::{Exec, Pipeline, RequestCtx};

fn field_text(row: &Value, field: &str) -> String {
    match row.get(field) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" "),
        Some(other) if !other.is_null() => other.to_string(),
        _ => String::new(),
    }
}

/// Runs the hook.
pub fn table_lookup(
    cx: &dyn Pipeline,
    tool: &Tool,
    args: &Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let Some(plan) = &tool.lookup else {
        return Err(CallError::internal());
    };
    let catalog = &cx.catalog;
    let table = plan
        .table
        .as_ref()
        .and_then(|t| catalog.services.get(&tool.service)?.tables.get(t))
        .cloned()
        .unwrap_or(Value::Null);
    let mut scope = cx.template_context(tool, args, ctx.headers);
    scope["table"] = table.clone();
    // The service's webhook receiver, for setup answers: where callbacks go and whether
    // this deployment has the secret. Never the secret.
    if catalog
        .services
        .get(&tool.service)
        .is_some_and(|s| s.webhook.is_some())
    {
        scope["webhook"] = json!({
            "path": format!("/webhooks/{}", tool.service),
            "secretConfigured": crate::webhook::ready(cx, &tool.service),
        });
    }

    let query_words: HashSet<String> = match &plan.query {
        Some(q) => {
            let text = eval(cx, q, &scope)?;
            catalog
                .search()
                .words(text.as_str().unwrap_or_default())
                .into_iter()
                .collect()
        }
        None => HashSet::new(),
    };
    let mut ranked: Vec<(usize, usize, Value)> = Vec::new();
    for (position, row) in table.as_array().into_iter().flatten().enumerate() {
        if let Some(filter) = &plan.filter {
            let mut row_scope = scope.clone();
            row_scope["row"] = row.clone();
            let keep = catalog
                .templates
                .truthy(filter, &Scope::new(row_scope))
                .map_err(|e| {
                    tracing::error!(template = %e.name, kind = %e.kind, "lookup filter failed");
                    CallError::internal()
                })?;
            if !keep {
                continue;
            }
        }
        let row_words: HashSet<String> = plan
            .fields
            .iter()
            .flat_map(|f| catalog.search().words(&field_text(row, f)))
            .collect();
        let score = query_words.intersection(&row_words).count();
        let mut row = row.clone();
        if let Value::Object(map) = &mut row {
            map.insert("score".into(), json!(score));
        }
        ranked.push((score, position, row));
    }
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let ranked: Vec<Value> = ranked.into_iter().map(|(_, _, row)| row).collect();
    scope["best"] = ranked.first().cloned().unwrap_or(Value::Null);
    scope["ranked"] = Value::Array(ranked);
    let data = eval(cx, &plan.result, &scope)?;
    Ok(Exec {
        summary: Some(format!("{}: answered locally", tool.full_name)),
        data: data.into(),
        ..Exec::default()
    })
}
