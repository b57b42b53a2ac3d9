//! Response mapping: a (redacted) upstream answer -> `data`, pagination figures and
//! truncation to the tool's item budget; a refusal -> the right classification with a
//! redacted, size-capped `details`.

use jsonpath_rust::query::js_path_process;
use serde_json::{Map, Value, json};

use crate::answer::envelope::Truncation;
use crate::answer::redact::redact;
use crate::catalog::rules::Rules;
use crate::catalog::{JsonPath, Tool};
use crate::error::{CallError, Classification};
use crate::upstream::UpstreamRefusal;

/// The first value a JSONPath selects, cloned.
pub fn select(path: &JsonPath, value: &Value) -> Option<Value> {
    if let Some(pointer) = &path.pointer {
        return value.pointer(pointer).cloned();
    }
    js_path_process(&path.query, value)
        .ok()
        .and_then(|refs| refs.into_iter().next().map(|r| r.val.clone()))
}

/// `data` of the envelope: the tool's `response.data` selection, or the whole body.
pub fn extract_data(tool: &Tool, mut body: Value) -> Value {
    match &tool.response.data {
        Some(path) => match &path.pointer {
            Some(pointer) => body
                .pointer_mut(pointer)
                .map(Value::take)
                .unwrap_or(Value::Null),
            None => select(path, &body).unwrap_or(Value::Null),
        },
        None => body,
    }
}

/// Pagination figures named by the tool, or `None` when it names none or none is found.
pub fn extract_pagination(tool: &Tool, body: &Value) -> Option<Value> {
    let mut out = Map::new();
    for (name, path) in &tool.response.pagination {
        if let Some(v) = select(path, body).filter(|v| !v.is_null()) {
            out.insert(name.clone(), v);
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// Cuts lists in `data` to `budget` items: `data` itself when it is a list, else every
/// list directly under it. Returns what was cut.
pub fn truncate(data: &mut Value, budget: usize) -> Vec<Truncation> {
    let mut cut = Vec::new();
    let mut trim = |pointer: String, list: &mut Vec<Value>| {
        if list.len() > budget {
            cut.push(Truncation {
                pointer,
                total: list.len(),
                returned: budget,
            });
            list.truncate(budget);
        }
    };
    match data {
        Value::Array(list) => trim(String::new(), list),
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if let Value::Array(list) = value {
                    trim(
                        format!("/{}", key.replace('~', "~0").replace('/', "~1")),
                        list,
                    );
                }
            }
        }
        _ => {}
    }
    cut
}

/// Classifies a non-2xx upstream answer.
pub fn refusal_error(
    tool: &Tool,
    refusal: UpstreamRefusal,
    rules: &Rules,
    secrets: &[&str],
) -> CallError {
    let status = refusal.status;
    let mut body = refusal.body;
    let paths: Vec<&JsonPath> = tool.response.redact.iter().collect();
    redact(&mut body, &rules.redaction, &paths, secrets);
    let details = cap(body, rules.limits.error_details_bytes);
    let service = &tool.service;
    let err = if status == 401 || status == 403 {
        CallError::new(
            Classification::MissingRequiredCredentials,
            format!(
                "the `{service}` upstream refused the upstream key ({status}); check the key sent for `{service}`"
            ),
        )
    } else if let Some(&classification) = tool.response.upstream_errors.get(&status) {
        CallError::new(
            classification,
            format!(
                "the `{service}` upstream rejected the request ({status}); `details` has its reasons"
            ),
        )
    } else {
        CallError::new(
            Classification::UpstreamHttpError,
            format!("the `{service}` upstream answered {status}"),
        )
    };
    let err = err.with_upstream_status(status);
    if details.is_null() {
        err
    } else {
        err.with_details(details)
    }
}

/// Keeps a value whole when its JSON is small, else a cut text preview.
fn cap(body: Value, max: usize) -> Value {
    if body.is_null() {
        return Value::Null;
    }
    let text = body.to_string();
    if text.len() <= max {
        return crate::answer::envelope::object([("upstreamBody", body)]);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    json!({ "upstreamBodyPreview": &text[..end], "truncated": true })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_top_level_lists_only() {
        let mut data = json!({"items": [1, 2, 3, 4], "nested": {"x": [1, 2, 3]}, "n": 1});
        let cut = truncate(&mut data, 2);
        assert_eq!(data["items"], json!([1, 2]));
        assert_eq!(data["nested"]["x"], json!([1, 2, 3]));
        assert_eq!(
            cut,
            vec![Truncation {
                pointer: "/items".into(),
                total: 4,
                returned: 2
            }]
        );
        let mut list = json!([1, 2, 3]);
        assert_eq!(truncate(&mut list, 5), vec![]);
    }
}
