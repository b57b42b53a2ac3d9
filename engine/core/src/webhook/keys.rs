//! Keeps fetched callback keys fresh ([`spawn_refresh`]): the catalog's `public_key`
//! tool run through the ordinary pipeline, with the API key the deployment gives, at
//! start and then hourly. The keys themselves are [`crate::caller::callbacks`]'s.

use std::time::Duration;

use crate::caller::callbacks::pem_to_der;
use crate::run::Pipeline;

/// How often a fetched public key is fetched again (a provider may rotate it).
pub const KEY_REFRESH: Duration = Duration::from_secs(3600);
/// How soon a failed fetch is tried again.
pub const KEY_RETRY: Duration = Duration::from_secs(30);

/// Fetches every fetched public key once; returns how many services failed.
pub async fn refresh(cx: &dyn Pipeline) -> usize {
    let mut failed = 0;
    let jobs: Vec<(String, String)> = cx
        .callbacks
        .fetched()
        .map(|(s, k)| (s.to_string(), k.to_string()))
        .collect();
    for (service, api_key) in jobs {
        match fetch(cx, &service, &api_key).await {
            Ok(der) => {
                cx.callbacks.set_rsa_key(&service, der);
                tracing::info!(service = %service, "webhook public key fetched");
            }
            Err(e) => {
                failed += 1;
                tracing::warn!(service = %service, error = %e, "webhook public key not fetched; callbacks wait for it");
            }
        }
    }
    failed
}

async fn fetch(cx: &dyn Pipeline, service: &str, api_key: &str) -> Result<Vec<u8>, String> {
    let svc = cx.catalog.services.get(service).ok_or("no such service")?;
    let (tool_name, path) = svc
        .webhook
        .as_ref()
        .and_then(|w| w.public_key.as_ref())
        .ok_or("the catalog names no public key tool")?;
    let tool = cx
        .catalog
        .resolve(tool_name)
        .ok_or("the public key tool is not in the catalog")?;
    let credential = svc
        .credential
        .as_ref()
        .ok_or("the service takes no credential")?;
    let mut headers = hyper::HeaderMap::new();
    let name = hyper::header::HeaderName::from_bytes(credential.header.as_bytes())
        .map_err(|_| "the credential header is not a header name")?;
    let value = hyper::header::HeaderValue::from_str(api_key)
        .map_err(|_| "the API key is not a valid header value")?;
    headers.insert(name, value);
    let caller = crate::caller::Caller::unrestricted("webhook-key-refresh");
    let trace = cx.traces.start(None);
    // The broker's own refresh of callback keys, not a caller's call: no policy, and
    // a read of the service's key tool, so nothing here may write.
    let ctx = crate::run::RequestCtx::own(&caller, &headers, &trace);
    let mut exec = cx
        .execute(tool, Some(serde_json::json!({})), &ctx)
        .await
        .map_err(|e| format!("{}: {}", e.classification.as_str(), e.message))?;
    let pem = match crate::answer::response::select(path, exec.data.value_mut()) {
        Some(serde_json::Value::String(pem)) => pem,
        _ => return Err(format!("the answer has no PEM text at {}", path.source)),
    };
    pem_to_der(&pem)
}

/// Keeps fetched public keys fresh: now, then every [`KEY_REFRESH`] (every
/// [`KEY_RETRY`] after a failure). Does nothing when no key is fetched.
pub fn spawn_refresh(cx: std::sync::Arc<dyn Pipeline>) {
    if cx.callbacks.fetched().next().is_none() {
        return;
    }
    tokio::spawn(async move {
        loop {
            let wait = if refresh(&*cx).await == 0 {
                KEY_REFRESH
            } else {
                KEY_RETRY
            };
            tokio::time::sleep(wait).await;
        }
    });
}
