//! Tenant and location routing for services that declare `[tenancy]` (crm).
//!
//! For every tool whose arguments declare the tenant or location argument, before any
//! template runs:
//! 1. A `locationId` argument that differs from the runtime location (the
//!    `x-crm-location-id` header, `ctx.location_id`) is refused with `tenant_mismatch`,
//!    unless the deployment runs in public runtime mode (`[settings.crm] runtime_mode =
//!    "public"`), where the runtime location wins and replaces it.
//! 2. A `tenantId` must name a configured tenant (`[[settings.crm.tenants]]` with `id`,
//!    `location_id`, `name`). With `strictTenant` (default true) its location must
//!    equal the routed location, else `tenant_mismatch`; with no location at all the
//!    tenant's location is the route.
//! 3. Templates see the routed location as `ctx.location_id`.
//!
//! Nothing is sent upstream when routing refuses a call.

use serde_json::{Map, Value};

use crate::call::Broker;
use crate::catalog::Tool;
use crate::catalog::descriptor::Tenancy;
use crate::error::{CallError, Classification};

fn mismatch(message: String) -> CallError {
    CallError::new(Classification::TenantMismatch, message)
}

/// Whether routing applies to a tool of a service with `tenancy`.
pub fn applies(tool: &Tool, tenancy: &Tenancy) -> bool {
    tool.declares(&tenancy.tenant_arg) || tool.declares(&tenancy.location_arg)
}

/// Routes one call; returns the location templates see as `ctx.<context>`, if any.
pub fn route(
    broker: &Broker,
    tool: &Tool,
    args: &mut Map<String, Value>,
    headers: &hyper::HeaderMap,
) -> Result<Option<String>, CallError> {
    let Some(service) = broker.parts.catalog.services.get(&tool.service) else {
        return Ok(None);
    };
    let Some(tenancy) = &service.tenancy else {
        return Ok(None);
    };
    if !applies(tool, tenancy) {
        return Ok(None);
    }
    let runtime = service
        .context_headers
        .get(&tenancy.context)
        .and_then(|h| headers.get(h.as_str()))
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from);
    let public = broker
        .parts
        .setting(&tool.service, &tenancy.mode_setting)
        .and_then(Value::as_str)
        == Some("public");
    let given = args
        .get(&tenancy.location_arg)
        .and_then(Value::as_str)
        .map(String::from);
    let mut routed = match (&runtime, &given) {
        (Some(r), Some(g)) if r != g => {
            if !public {
                return Err(mismatch(format!(
                    "`{}` is `{g}` but this request's runtime location is `{r}`; omit `{}` or call for the runtime location",
                    tenancy.location_arg, tenancy.location_arg
                )));
            }
            // Public runtime mode: the header's location wins.
            if tool.declares(&tenancy.location_arg) {
                args.insert(tenancy.location_arg.clone(), Value::String(r.clone()));
            }
            Some(r.clone())
        }
        (Some(r), _) => Some(r.clone()),
        (None, g) => g.clone(),
    };
    if let Some(tenant_id) = args.get(&tenancy.tenant_arg).and_then(Value::as_str) {
        let strict = args.get(&tenancy.strict_arg) != Some(&Value::Bool(false));
        let tenants = broker
            .parts
            .setting(&tool.service, &tenancy.tenants_setting)
            .and_then(Value::as_array);
        let tenant = tenants
            .into_iter()
            .flatten()
            .find(|t| t.get("id").and_then(Value::as_str) == Some(tenant_id));
        let Some(tenant) = tenant else {
            return Err(mismatch(format!(
                "`{tenant_id}` is not a tenant of this deployment; list them with the tenant-listing tool"
            )));
        };
        let tenant_location = tenant.get("location_id").and_then(Value::as_str);
        match (&routed, tenant_location) {
            (Some(r), Some(t)) if strict && r != t => {
                return Err(mismatch(format!(
                    "tenant `{tenant_id}` is routed to another location than `{r}`; use its own location, or pass `{}=false` to skip this check",
                    tenancy.strict_arg
                )));
            }
            (None, Some(t)) => routed = Some(t.to_string()),
            _ => {}
        }
    }
    Ok(routed)
}
