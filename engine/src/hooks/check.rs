//! `check_configuration`: a service's readiness as booleans and safe mode names only.
//! Never a key, a header value or a URL: only whether each is present.

use serde_json::{Value, json};

use crate::call::{Broker, Exec, RequestCtx};
use crate::catalog::{Service, Tool};
use crate::descriptor::Tier;
use crate::error::CallError;

/// Readiness of one service for this request.
pub fn readiness(broker: &Broker, service: &Service, ctx: &RequestCtx<'_>) -> Value {
    let catalog = &broker.catalog;
    let tools: Vec<&Tool> = catalog
        .tools
        .iter()
        .filter(|t| t.service == service.id)
        .collect();
    let key_mode = match &service.credential {
        None => "none",
        Some(c) if c.server_side && broker.has_server_key(&service.id) => "byok_or_server",
        Some(_) => "byok",
    };
    json!({
        "serviceId": service.id,
        "catalogVersion": service.catalog_version,
        "toolCount": tools.len(),
        "agentReadyCount": tools.iter().filter(|t| t.tier == Tier::AgentReady).count(),
        "endpointConfigured": broker.base_url(&service.id).is_some(),
        "keyMode": key_mode,
        "credentialHeader": service.credential.as_ref().map(|c| c.header.clone()),
        "credentialPresent": service.credential.is_none()
            || broker.upstream_key(&service.id, ctx.headers).is_some(),
    })
}

/// The `runtime_health` hook: the configuration readiness plus what this process has
/// seen of the service's calls since it started (counts by outcome, upstream failures,
/// mean duration). Local: it never contacts the upstream, so it reports observed health,
/// not a probe.
pub fn runtime_health(
    broker: &Broker,
    tool: &Tool,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let service = broker
        .catalog
        .services
        .get(&tool.service)
        .ok_or_else(CallError::internal)?;
    let readiness = readiness(broker, service, ctx);
    let observed = broker.metrics.service_summary(&service.id);
    let calls = observed["calls"].as_u64().unwrap_or(0);
    let failures = observed["upstreamFailures"].as_u64().unwrap_or(0);
    let status = if readiness["endpointConfigured"] != json!(true) {
        "not_configured"
    } else if calls >= 5 && failures * 2 > calls {
        "degraded"
    } else {
        "ok"
    };
    Ok(Exec {
        summary: Some(format!("{} runtime health: {status}", service.id)),
        data: json!({
            "status": status,
            "readiness": readiness,
            "observed": observed,
            "note": "observed since this broker process started; the upstream is not probed",
        }),
        ..Exec::default()
    })
}

/// The `check_configuration` hook.
pub fn check_configuration(
    broker: &Broker,
    tool: &Tool,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let service = broker
        .catalog
        .services
        .get(&tool.service)
        .ok_or_else(CallError::internal)?;
    let mut data = readiness(broker, service, ctx);
    if let Some(map) = data.as_object_mut() {
        map.insert("snapshotId".into(), json!(broker.catalog.snapshot_id));
        map.insert(
            "catalogSource".into(),
            json!(if broker.catalog.origin == "embedded" {
                "embedded"
            } else {
                "directory"
            }),
        );
    }
    Ok(Exec {
        summary: Some(format!("{} configuration checked", service.id)),
        data,
        ..Exec::default()
    })
}
