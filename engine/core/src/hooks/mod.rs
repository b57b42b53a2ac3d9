//! Native hooks: the few local tools that cannot be said as an upstream call.
//!
//! May import: the stages below the call driver (the catalog, config, callers, the
//! store, upstream, answers, telemetry, webhooks) and [`crate::run`], through whose
//! [`Pipeline`] a hook runs other tools; never the driver or an endpoint.
//!
//! A tool names its hook in the catalog (`hook = "portal.call_read_tool"`); compile
//! resolves the name against [`crate::catalog::Hook::ALL`] once, so the request path
//! never looks a hook up by string: the names are catalog data, the code is here
//! ([`run`]). Each hook is shared by every service that needs it and is parameterised by
//! catalog data, never written per tool. Hooks never contact an
//! upstream themselves; `portal.call_read_tool` runs another catalog tool through the
//! same pipeline as any call.

use serde_json::{Map, Value};

use crate::catalog::{Hook, Tool};
use crate::error::CallError;
use crate::run::{Exec, Pipeline, RequestCtx};

mod allowlist;
mod check;
mod dispatch;
mod jobs;
mod lookup;
mod navigation;
mod poll;
mod portal;
mod reschedule;
mod steps;

pub use allowlist::allowlisted_request;
pub use check::{check_configuration, runtime_health};
pub use dispatch::category_dispatch;
pub use jobs::list_jobs;
pub use lookup::table_lookup;
pub use navigation::{
    FindFilters, capabilities, endpoint_coverage, find_tools, text, tool_reference,
};
pub use poll::{submit_and_poll, watch_answered_job};
pub use portal::{ConnectionAnswers, call_read_tool, check_connection, get_budget};
pub use reschedule::reschedule_overdue;

/// Runs a tool's hook: the one place a hook name (catalog data) meets its code.
pub async fn run(
    hook: Hook,
    cx: &dyn Pipeline,
    state: &State,
    tool: &Tool,
    args: Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    // What a readiness answer says of a user's keys stored in the hub (users only: a
    // key's answer costs no store read).
    let stored = async || match ctx.caller.user {
        Some(_) => cx.stored_keys(ctx.caller).await,
        None => Vec::new(),
    };
    match hook {
        Hook::PortalCallReadTool => Box::pin(call_read_tool(cx, args, ctx)).await,
        Hook::PortalCheckConnection => check_connection(cx, state, args, ctx, &stored().await),
        Hook::PortalGetBudget => Ok(get_budget(cx, ctx).await),
        Hook::CheckConfiguration => {
            check_configuration(cx, state, tool, ctx, &stored().await).await
        }
        Hook::CategoryDispatch => Box::pin(category_dispatch(cx, tool, args, ctx)).await,
        Hook::RescheduleOverdue => Box::pin(reschedule_overdue(cx, tool, args, ctx)).await,
        Hook::FindTools => find_tools(cx, tool, &args, ctx),
        Hook::ToolReference => tool_reference(cx, tool, &args, ctx),
        Hook::Capabilities => capabilities(cx, tool, &args, ctx),
        Hook::EndpointCoverage => endpoint_coverage(cx, tool, &args, ctx),
        Hook::SubmitAndPoll => Box::pin(submit_and_poll(cx, tool, args, ctx)).await,
        Hook::TableLookup => table_lookup(cx, tool, &args, ctx),
        Hook::ListJobs => list_jobs(cx, tool, &args, ctx).await,
        Hook::RuntimeHealth => runtime_health(cx, state, tool, ctx, &stored().await),
        Hook::AllowlistedRequest => Box::pin(allowlisted_request(cx, tool, args, ctx)).await,
    }
}

/// The hooks' own caches, kept with the broker.
#[derive(Debug, Default)]
pub struct State {
    /// Each service's readiness that does not depend on the caller
    /// ([`check::readiness`]), built on first use.
    pub(crate) readiness:
        std::sync::OnceLock<std::collections::BTreeMap<String, Map<String, Value>>>,
    /// `portal.check_connection` answers by what they depend on
    /// ([`portal::check_connection`]), as JSON text with their service count.
    pub(crate) connection_answers: std::sync::Mutex<ConnectionAnswers>,
}
