//! Rendering: a tool's compiled [`HttpPlan`] plus validated arguments -> the exact
//! upstream request, without credentials. The caller's key is added by
//! [`crate::upstream`] at send time, so a rendered request (and a dry-run preview made
//! from it) never holds one.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value, json};

use crate::catalog::descriptor::BodyEncoding;
use crate::catalog::template::{RenderError, Scope, Templates};
use crate::catalog::{BodyPlan, HttpPlan, PathPart};
use crate::error::{CallError, Classification};

/// Characters left as they are in a path segment or query component (RFC 3986 unreserved).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// An upstream request, minus credentials and static headers.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedRequest {
    /// Method.
    pub method: hyper::Method,
    /// Path with placeholders filled and percent-encoded.
    pub path: String,
    /// Query pairs in order, unencoded.
    pub query: Vec<(String, String)>,
    /// Mapped headers (never credentials).
    pub headers: Vec<(String, String)>,
    /// Body as JSON (encoded at send time).
    pub body: Option<Value>,
    /// Body encoding.
    pub encoding: BodyEncoding,
}

fn render_failure(e: RenderError) -> CallError {
    tracing::error!(template = %e.name, kind = %e.kind, "catalog template failed at run time");
    CallError::internal()
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Flattens a value into `key`, `key[sub]`, `key[0]` pairs (deepObject / form style).
/// Arrays in the query repeat the key unless `indexed`.
pub fn flatten(key: &str, value: &Value, indexed: bool, out: &mut Vec<(String, String)>) {
    match value {
        Value::Null => {}
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&format!("{key}[{k}]"), v, indexed, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                if indexed || !matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
                    flatten(&format!("{key}[{i}]"), v, indexed, out);
                } else {
                    flatten(key, v, indexed, out);
                }
            }
        }
        other => {
            if let Some(s) = scalar(other) {
                out.push((key.to_string(), s));
            }
        }
    }
}

/// Renders a request from a plan, the template context and the arguments.
pub fn render(
    plan: &HttpPlan,
    templates: &Templates,
    ctx: &Scope<'_>,
) -> Result<RenderedRequest, CallError> {
    let mut path = String::new();
    for part in &plan.segments {
        match part {
            PathPart::Literal(text) => path.push_str(text),
            PathPart::Param(name) => {
                let value = match plan.path_params.get(name) {
                    Some(expr) => templates.eval(expr, ctx).map_err(render_failure)?,
                    None => None,
                };
                let text = value.as_ref().and_then(scalar).filter(|s| !s.is_empty());
                let Some(text) = text else {
                    return Err(CallError::validation(format!(
                        "the path parameter `{name}` is missing or not a string or number"
                    ))
                    .with_details(json!([{ "pointer": format!("/{name}"), "message": "required path parameter" }])));
                };
                // `.` and `..` are left as they are by percent-encoding (unreserved), and a
                // server or proxy normalises such a segment into another resource
                // (`/v1/customers/..` is `/v1/`): refused before anything is sent.
                if text == "." || text == ".." {
                    return Err(CallError::validation(format!(
                        "the path parameter `{name}` may not be `{text}`: as a whole path segment it would address another resource"
                    ))
                    .with_details(json!([{ "pointer": format!("/{name}"), "message": "a dot segment is not a value" }])));
                }
                path.extend(utf8_percent_encode(&text, COMPONENT));
            }
        }
    }
    let mut query = Vec::new();
    for (key, expr) in &plan.query {
        if let Some(v) = templates.eval(expr, ctx).map_err(render_failure)? {
            flatten(key, &v, plan.indexed_query, &mut query);
        }
    }
    if let Some(expr) = &plan.query_object {
        match templates.eval(expr, ctx).map_err(render_failure)? {
            None => {}
            Some(Value::Object(map)) => {
                // Named query parameters win over the same key in the free-form object.
                let named: Vec<String> = query.iter().map(|(k, _)| k.clone()).collect();
                for (k, v) in &map {
                    if !named
                        .iter()
                        .any(|n| n == k || n.starts_with(&format!("{k}[")))
                    {
                        flatten(k, v, plan.indexed_query, &mut query);
                    }
                }
            }
            Some(_) => {
                return Err(CallError::validation(
                    "the query arguments must be an object",
                ));
            }
        }
    }
    let mut headers = Vec::new();
    for (name, expr) in &plan.headers {
        if let Some(v) = templates.eval(expr, ctx).map_err(render_failure)?
            && let Some(s) = scalar(&v)
        {
            headers.push((name.clone(), s));
        }
    }
    let body = match &plan.body {
        None => None,
        Some(BodyPlan::Expr(expr)) => templates.eval(expr, ctx).map_err(render_failure)?,
        Some(BodyPlan::Template(name)) => {
            let text = templates.render(name, ctx).map_err(render_failure)?;
            let parsed: Value = serde_json::from_str(&text).map_err(|_| {
                tracing::error!(template = %name, "body template did not render JSON");
                CallError::internal()
            })?;
            Some(parsed)
        }
    };
    if plan.body_encoding == BodyEncoding::Form
        && let Some(b) = &body
        && !b.is_object()
    {
        return Err(CallError::new(
            Classification::ValidationError,
            "a form-encoded body must be an object",
        ));
    }
    Ok(RenderedRequest {
        method: plan.method.clone(),
        path,
        query,
        headers,
        body,
        encoding: plan.body_encoding,
    })
}

impl RenderedRequest {
    /// The query string, percent-encoded (empty when there is no query).
    pub fn query_string(&self) -> String {
        encode_pairs(&self.query)
    }

    /// The body bytes and content type.
    pub fn body_bytes(&self) -> Option<(Vec<u8>, &'static str)> {
        let body = self.body.as_ref()?;
        Some(match self.encoding {
            BodyEncoding::Json => (body.to_string().into_bytes(), "application/json"),
            BodyEncoding::Form => {
                let mut pairs = Vec::new();
                if let Value::Object(map) = body {
                    for (k, v) in map {
                        flatten(k, v, true, &mut pairs);
                    }
                }
                (
                    encode_pairs(&pairs).into_bytes(),
                    "application/x-www-form-urlencoded",
                )
            }
        })
    }

    /// The preview of decision 005: method, path, query and body; no credentials.
    pub fn preview(&self) -> Value {
        let mut query = Map::new();
        for (k, v) in &self.query {
            match query.get_mut(k) {
                Some(Value::Array(list)) => list.push(json!(v)),
                Some(existing) => *existing = json!([existing.clone(), v]),
                None => {
                    query.insert(k.clone(), json!(v));
                }
            }
        }
        json!({
            "method": self.method.as_str(),
            "path": self.path,
            "query": query,
            "body": self.body,
        })
    }
}

/// `k=v&...`, each side percent-encoded as a query component.
pub fn encode_pairs(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                utf8_percent_encode(k, COMPONENT),
                utf8_percent_encode(v, COMPONENT)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_values_flatten_like_forms() {
        let mut out = Vec::new();
        flatten(
            "metadata",
            &json!({"order": "7", "tags": ["a", "b"]}),
            true,
            &mut out,
        );
        assert_eq!(
            out,
            vec![
                ("metadata[order]".to_string(), "7".to_string()),
                ("metadata[tags][0]".to_string(), "a".to_string()),
                ("metadata[tags][1]".to_string(), "b".to_string()),
            ]
        );
        let mut out = Vec::new();
        flatten("tlds", &json!(["com", "net"]), false, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1], ("tlds".to_string(), "net".to_string()));
    }

    #[test]
    fn percent_encoding_leaves_dot_segments_which_are_refused() {
        // Why the check exists: `.` is unreserved, so encoding keeps `..` as it is.
        assert_eq!(utf8_percent_encode("..", COMPONENT).to_string(), "..");
        assert_eq!(utf8_percent_encode("../x", COMPONENT).to_string(), "..%2Fx");
    }
}
