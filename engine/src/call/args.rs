//! Argument validation: the tool's compiled JSON Schema, every failure reported with
//! its JSON pointer, then the schema's top-level defaults filled in.
//!
//! Messages are masked: a failing value is never echoed (arguments may carry keys,
//! as crm `create_custom_provider_config` does).

use serde_json::{Map, Value, json};

use crate::catalog::Tool;
use crate::error::CallError;

/// Validates arguments and returns them with defaults applied.
pub fn prepare(tool: &Tool, arguments: Option<Value>) -> Result<Map<String, Value>, CallError> {
    let args = match arguments {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            return Err(CallError::validation(format!(
                "the arguments of `{}` must be a JSON object",
                tool.full_name
            ))
            .with_details(json!([{ "pointer": "", "message": "must be an object" }])));
        }
    };
    let failures: Vec<Value> = tool
        .validator()?
        .iter_errors(&args)
        .map(|e| {
            let mut pointer = e.instance_path().to_string();
            if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind()
                && let Some(name) = property.as_str()
            {
                pointer.push('/');
                pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
            }
            json!({
                "pointer": pointer,
                "keyword": e.kind().keyword(),
                "message": e.masked_with("value").to_string(),
            })
        })
        .collect();
    if !failures.is_empty() {
        let count = failures.len();
        return Err(CallError::validation(format!(
            "{count} argument{} of `{}` fail{} its schema; see `details` for each pointer",
            if count == 1 { "" } else { "s" },
            tool.full_name,
            if count == 1 { "s" } else { "" },
        ))
        .with_details(Value::Array(failures)));
    }
    let Value::Object(mut map) = args else {
        return Err(CallError::internal());
    };
    for (key, default) in &tool.defaults {
        map.entry(key.clone()).or_insert_with(|| default.clone());
    }
    Ok(map)
}
