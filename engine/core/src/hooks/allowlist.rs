//! `allowlisted_request`: the legacy fallback that calls one endpoint of the tool's own
//! service by method and path, within server-side allowlists (`[tool.allowlist]`).
//!
//! - Host: only the service's configured upstream; an absolute URL is refused (no
//!   request ever leaves for another host).
//! - Path: plain (no `..`, `//`, `?`, `#`, encoded dots or slashes) and either an
//!   endpoint the catalog describes for this service (same method, path template
//!   matched segment by segment) or under a prefix the deployment allows
//!   (`[settings.<service>] allowed_path_prefixes`).
//! - Methods other than GET need `confirm=true` (else `confirmation_required`).
//! - Body at most `max_body_bytes` (else `payload_too_large`), answer at most
//!   `max_response_bytes`.
//!
//! The request then leaves through the driver's one gate as the catalog tool it matches
//! (`Pipeline::send_endpoint`, decision 017): that tool's key fields, policies,
//! confirmation, rate limit, price and audit; then the caller's key, redaction,
//! truncation and the envelope. Under a token or an approval the `confirm` flag decides
//! nothing: the confirmation covers the call's plan.

use serde_json::{Map, Value, json};

use crate::catalog::Tool;
use crate::catalog::descriptor::BodyEncoding;
use crate::error::{CallError, Classification};
use crate::run::{Exec, Pipeline, RequestCtx};
use crate::upstream::render::RenderedRequest;

fn bad(pointer: &str, message: String) -> CallError {
    CallError::validation(message.clone())
        .with_details(json!([{ "pointer": pointer, "message": message }]))
}

fn plain_path(path: &str) -> Result<(), String> {
    if path.contains("://") {
        return Err(
            "give a path on this service's API, not a URL: other hosts are not allowed".into(),
        );
    }
    if !path.starts_with('/') {
        return Err("the path must start with `/`".into());
    }
    let lower = path.to_ascii_lowercase();
    if path.contains("..")
        || path.contains("//")
        || lower.contains("%2e")
        || lower.contains("%2f")
        || lower.contains("%5c")
    {
        return Err("the path may not contain `..`, `//` or encoded dots and slashes".into());
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "/-._~:@!$&'()*+,;=%".contains(c);
    if !path.chars().all(allowed) {
        return Err(
            "the path may contain only unreserved URL characters; put query parameters in `params`"
                .into(),
        );
    }
    Ok(())
}

fn query_pairs(params: &Value) -> Result<Vec<(String, String)>, CallError> {
    let mut out = Vec::new();
    let Some(map) = params.as_object() else {
        return if params.is_null() {
            Ok(out)
        } else {
            Err(bad("/params", "`params` must be an object".into()))
        };
    };
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    for (k, v) in map {
        match v {
            Value::Null => {}
            Value::Array(items) => {
                for item in items {
                    let text = scalar(item).ok_or_else(|| {
                        bad(
                            &format!("/params/{k}"),
                            format!("`params.{k}` may hold only scalars"),
                        )
                    })?;
                    out.push((k.clone(), text));
                }
            }
            other => {
                let text = scalar(other).ok_or_else(|| {
                    bad(
                        &format!("/params/{k}"),
                        format!("`params.{k}` must be a scalar or a list of scalars"),
                    )
                })?;
                out.push((k.clone(), text));
            }
        }
    }
    Ok(out)
}

/// Runs the hook.
pub async fn allowlisted_request(
    cx: &dyn Pipeline,
    tool: &Tool,
    args: Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let Some(rule) = &tool.allowlist else {
        return Err(CallError::internal());
    };
    let method_text = args
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("GET")
        .to_ascii_uppercase();
    let method = match method_text.as_str() {
        "GET" => hyper::Method::GET,
        "POST" => hyper::Method::POST,
        "PUT" => hyper::Method::PUT,
        "PATCH" => hyper::Method::PATCH,
        "DELETE" => hyper::Method::DELETE,
        other => return Err(bad("/method", format!("method `{other}` is not allowed"))),
    };
    let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
    plain_path(path).map_err(|m| bad("/path", m))?;
    let described = cx
        .catalog
        .described_endpoint(&tool.service, &method, path)
        .is_some();
    let prefixes = cx
        .setting(&tool.service, &rule.paths_setting)
        .and_then(Value::as_array);
    let prefixed = prefixes
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|p| path.starts_with(p));
    if !described && !prefixed {
        return Err(CallError::new(
            Classification::Forbidden,
            format!(
                "`{method_text} {path}` is not an endpoint this cx allows for `{}`: it must be one the catalog describes (find it with the service's find tool) or under a prefix the deployment allows",
                tool.service
            ),
        ));
    }
    if method != hyper::Method::GET
        && !ctx.confirmed(args.get("confirm") == Some(&Value::Bool(true)))
    {
        return Err(CallError::new(
            Classification::ConfirmationRequired,
            format!(
                "`{method_text}` changes upstream state: repeat with `confirm=true` after the user approves; nothing was sent"
            ),
        ));
    }
    let body = args.get("body").cloned().filter(|b| !b.is_null());
    if let Some(b) = &body {
        let size = b.to_string().len();
        if size > rule.max_body_bytes {
            return Err(CallError::new(
                Classification::PayloadTooLarge,
                format!(
                    "the body is {size} bytes; this endpoint tool allows {} bytes",
                    rule.max_body_bytes
                ),
            ));
        }
    }
    let request = RenderedRequest {
        method,
        path: path.to_string(),
        query: query_pairs(args.get("params").unwrap_or(&Value::Null))?,
        headers: Vec::new(),
        body,
        encoding: BodyEncoding::Json,
    };
    cx.send_endpoint(tool, &request, ctx, rule.max_response_bytes)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_plain() {
        for bad in [
            "https://evil.invalid/x",
            "x/y",
            "/a/../b",
            "/a//b",
            "/a/%2e%2e/b",
            "/a?b=1",
            "/a b",
        ] {
            assert!(plain_path(bad).is_err(), "{bad}");
        }
        assert!(plain_path("/contacts/search").is_ok());
    }
}
