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
    for value in map.values_mut() {
        whole_numbers_as_integers(value);
    }
    for (key, default) in &tool.defaults {
        map.entry(key.clone()).or_insert_with(|| default.clone());
    }
    Ok(map)
}

/// Writes every whole number a caller sent in float form (`4000.0`, `1e3`, `-0`) as the
/// integer it is, so an upstream, a template and a policy read `4000`, never `4000.0`:
/// JSON Schema counts `4000.0` as an integer, and an upstream parsing an integer field
/// may not. Only values within ±2^53, where a float holds every whole number exactly.
pub fn whole_numbers_as_integers(value: &mut Value) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() <= EXACT
            {
                // In range and whole: the conversion is exact.
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::whole_numbers_as_integers;

    #[test]
    fn whole_floats_become_integers_and_fractions_stay() {
        let cases = [
            ("4000.0", "4000"),
            ("1e3", "1000"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("-12.0", "-12"),
            ("2.5", "2.5"),
            ("9007199254740992.0", "9007199254740992"),
            ("1e300", "1e300"),
            ("7", "7"),
            (
                r#"{"a":[1.0,{"b":3e0}],"c":"1.0"}"#,
                r#"{"a":[1,{"b":3}],"c":"1.0"}"#,
            ),
        ];
        for (input, expected) in cases {
            let mut value: Value = serde_json::from_str(input).unwrap_or_default();
            whole_numbers_as_integers(&mut value);
            let expected: Value = serde_json::from_str(expected).unwrap_or_default();
            assert_eq!(value.to_string(), expected.to_string(), "{input}");
        }
        let mut big = json!(1e300);
        whole_numbers_as_integers(&mut big);
        assert!(big.is_f64());
    }
}
