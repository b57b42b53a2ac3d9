//! `check_configuration`: a service's readiness as booleans and safe mode names only.
//! Never a key, a header value or a URL: only whether each is present.

use serde_json::{Map, Value, json};

use super::State;
use crate::catalog::{Service, Tool};
use crate::error::CallError;
use crate::run::{Exec, Pipeline, RequestCtx};

/// What a service's readiness says that depends on the caller, its headers and the
/// broker's state: everything [`readiness`] adds to the service's fixed part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallerPart {
    /// The caller may use the service.
    pub granted: bool,
    /// The caller sent the service's key, stored it in the hub, the deployment has one,
    /// or the service needs none.
    pub credential_present: bool,
    /// Whether callbacks are received (services that record jobs only).
    pub webhook_receiver: Option<bool>,
    /// Whether the caller sent the runtime location header (services with tenancy only).
    pub location_present: Option<bool>,
}

impl CallerPart {
    /// The caller's part of `service`'s readiness; `stored` are the services whose key
    /// the calling user stored in the hub ([`Pipeline::stored_keys`]).
    pub fn of(
        cx: &dyn Pipeline,
        service: &Service,
        ctx: &RequestCtx<'_>,
        stored: &[String],
    ) -> Self {
        Self {
            granted: ctx.caller.may_use_service(&service.id),
            credential_present: service.credential.is_none()
                || cx.upstream_key(&service.id, ctx.headers).is_some()
                || stored.contains(&service.id),
            // Callbacks are received where the catalog has a [webhook] and the deployment
            // its secret (a fetched public key may arrive while the broker runs).
            webhook_receiver: service
                .figures
                .records_jobs
                .then(|| crate::webhook::ready(cx, &service.id)),
            location_present: service.tenancy.as_ref().map(|tenancy| {
                service
                    .context_headers
                    .get(&tenancy.context)
                    .is_some_and(|h| ctx.headers.contains_key(h.as_str()))
            }),
        }
    }

    /// One byte of a cache key (`hooks::portal`): each fact a bit, absent facts apart
    /// from false ones.
    pub fn key_byte(self) -> u8 {
        let bit = |on: bool, at: u8| u8::from(on) << at;
        let opt = |v: Option<bool>, at: u8| match v {
            None => 0,
            Some(on) => (1 << at) | bit(on, at + 1),
        };
        bit(self.granted, 0)
            | bit(self.credential_present, 1)
            | opt(self.webhook_receiver, 2)
            | opt(self.location_present, 4)
    }
}

/// Readiness of one service for this request: the service's fixed part (built once,
/// see [`fixed_part`]) and what depends on the caller and its headers.
pub fn readiness(
    cx: &dyn Pipeline,
    state: &State,
    service: &Service,
    ctx: &RequestCtx<'_>,
    stored: &[String],
) -> Value {
    readiness_with(
        cx,
        state,
        service,
        CallerPart::of(cx, service, ctx, stored),
        ctx,
    )
}

/// [`readiness`] with the caller's part already found.
pub fn readiness_with(
    cx: &dyn Pipeline,
    state: &State,
    service: &Service,
    caller: CallerPart,
    ctx: &RequestCtx<'_>,
) -> Value {
    let mut map = state
        .readiness
        .get_or_init(|| {
            cx.catalog
                .services
                .values()
                .map(|s| (s.id.clone(), fixed_part(cx, s)))
                .collect()
        })
        .get(&service.id)
        .cloned()
        .unwrap_or_else(|| fixed_part(cx, service));
    map.insert("granted".into(), json!(caller.granted));
    map.insert("credentialPresent".into(), json!(caller.credential_present));
    // Who confirms this caller's writes (decision 008).
    map.insert(
        "writeConfirmation".into(),
        json!(ctx.caller.confirmation.as_str()),
    );
    if let Some(ready) = caller.webhook_receiver {
        map.insert("webhookReceiver".into(), json!(ready));
    }
    if let Some(present) = caller.location_present {
        map.insert("runtimeLocationPresent".into(), json!(present));
    }
    Value::Object(map)
}

/// What a service's readiness says whoever calls: the catalog's figures and what the
/// deployment configured (endpoint, server keys, settings, store, routing profiles),
/// none of which changes while the broker runs. Built once per service, on first use.
fn fixed_part(cx: &dyn Pipeline, service: &Service) -> Map<String, Value> {
    let figures = service.figures;
    let key_mode = match &service.credential {
        None => "none",
        Some(c) if c.server_side && cx.routes.has_server_key(&service.id) => "byok_or_server",
        Some(_) => "byok",
    };
    let mut map = Map::new();
    map.insert("serviceId".into(), json!(service.id));
    map.insert("catalogVersion".into(), json!(service.catalog_version));
    map.insert("toolCount".into(), json!(figures.tools));
    map.insert("agentReadyCount".into(), json!(figures.agent_ready));
    map.insert(
        "endpointConfigured".into(),
        json!(cx.routes.base_url(&service.id).is_some()),
    );
    map.insert("keyMode".into(), json!(key_mode));
    map.insert(
        "credentialHeader".into(),
        json!(service.credential.as_ref().map(|c| &c.header)),
    );
    if figures.records_jobs {
        // Jobs are recorded in the durable store.
        map.insert("jobStore".into(), json!(cx.store.kind()));
    }
    if let Some(tenancy) = &service.tenancy {
        let tenants = cx
            .setting(&service.id, &tenancy.tenants_setting)
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let public = cx
            .setting(&service.id, &tenancy.mode_setting)
            .and_then(Value::as_str)
            == Some("public");
        map.insert("tenantsConfigured".into(), json!(tenants));
        map.insert(
            "runtimeMode".into(),
            json!(if public { "public" } else { "private" }),
        );
    }
    if service
        .credential
        .as_ref()
        .is_some_and(|c| c.profile_args.is_some())
    {
        map.insert(
            "routingProfiles".into(),
            json!(cx.routes.profile_count(&service.id)),
        );
    }
    map
}

/// The service a local check tool belongs to (compile guarantees it exists).
fn service_of<'a>(cx: &'a dyn Pipeline, tool: &Tool) -> Result<&'a Service, CallError> {
    cx.catalog
        .services
        .get(&tool.service)
        .ok_or_else(CallError::internal)
}

/// The `runtime_health` hook: the configuration readiness plus what this process has
/// seen of the service's calls since it started (counts by outcome, upstream failures,
/// mean duration). Local: it never contacts the upstream, so it reports observed health,
/// not a probe.
pub fn runtime_health(
    cx: &dyn Pipeline,
    state: &State,
    tool: &Tool,
    ctx: &RequestCtx<'_>,
    stored: &[String],
) -> Result<Exec, CallError> {
    let service = service_of(cx, tool)?;
    let readiness = readiness(cx, state, service, ctx, stored);
    let observed = cx.metrics.service_summary(&service.id);
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
        data: crate::answer::envelope::object([
            ("status", json!(status)),
            ("readiness", readiness),
            ("observed", observed),
            (
                "note",
                json!("observed since this broker process started; the upstream is not probed"),
            ),
        ])
        .into(),
        ..Exec::default()
    })
}

/// The `check_configuration` hook.
pub async fn check_configuration(
    cx: &dyn Pipeline,
    state: &State,
    tool: &Tool,
    ctx: &RequestCtx<'_>,
    stored: &[String],
) -> Result<Exec, CallError> {
    let service = service_of(cx, tool)?;
    let mut data = readiness(cx, state, service, ctx, stored);
    let store_ready = cx.store.ping().await;
    if let Some(map) = data.as_object_mut() {
        // The store's kind and whether it answers: never its location or URL.
        map.insert(
            "store".into(),
            json!({ "kind": cx.store.kind(), "ready": store_ready }),
        );
        map.insert("snapshotId".into(), json!(cx.catalog.snapshot_id));
        map.insert(
            "catalogSource".into(),
            json!(if cx.catalog.origin == "embedded" {
                "embedded"
            } else {
                "directory"
            }),
        );
    }
    Ok(Exec {
        summary: Some(format!("{} configuration checked", service.id)),
        data: data.into(),
        ..Exec::default()
    })
}
