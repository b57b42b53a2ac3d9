//! The one gate (decision 017): every request the broker sends upstream leaves through
//! [`Gate::send`], and only with a [`Permit`] for exactly that request. A permit is made
//! here and nowhere else ([`Broker::clear`]: its fields are private to this file), from
//!
//! - the policy decision of the tool the request belongs to ([`Decided`], made only by
//!   the policy stage: the door's tool, the inner tool of a dispatch or a step, the
//!   catalog tool an allowlisted endpoint matches);
//! - the confirmation that covers it (the call's [`Cover`]): a write under a preview is
//!   planned, not sent; under a confirmed plan it must be the plan's next write;
//! - the tool's rate limit and its cost, reserved against every budget that binds the
//!   caller;
//!
//! and, once the answer is in ([`Broker::finish`]), the reservation is settled and a
//! write sent inside another tool is audited under the outer call's trace. The upstream
//! client lives in [`Gate`], whose only way to send takes a permit; hooks never see the
//! driver, only [`crate::run::Pipeline`], which has no way to send but running a tool.
//! So a guarantee kept here holds for every tool that sends, today's and tomorrow's,
//! and a later check (guards on arguments) has one place to go.

use serde_json::{Value, json};

use super::Broker;
use super::budget::Hold;
use super::policy::Decided;
use crate::catalog::{Action, Hook, Tool};
use crate::error::{CallError, Classification};
use crate::run::cover::{Cover, Matched, Planned};
use crate::run::{Exec, RequestCtx};
use crate::upstream::mcp::{McpCall, McpTarget, Servers};
use crate::upstream::render::RenderedRequest;
use crate::upstream::{Outcome, Target, Upstream};

/// The upstream clients, reachable only through [`Gate::send`] and [`Gate::send_mcp`]:
/// the HTTP client, and the catalog's MCP servers.
#[derive(Debug)]
pub(super) struct Gate {
    client: Upstream,
    mcp: Servers,
}

/// A request on its way out, as the gate clears it: an HTTP request rendered, or a
/// `tools/call` of an MCP server's tool.
#[derive(Debug, Clone, Copy)]
pub(super) enum Leaving<'r> {
    /// An HTTP request.
    Http(&'r RenderedRequest),
    /// An MCP `tools/call`.
    Mcp(&'r McpCall),
}

impl Leaving<'_> {
    /// What a preview shows of it, and a confirmed plan binds.
    fn preview(&self) -> Value {
        match self {
            Self::Http(request) => request.preview(),
            Self::Mcp(call) => call.preview(),
        }
    }

    /// The headers its tool maps (none for an MCP call).
    fn headers(&self) -> &[(String, String)] {
        match self {
            Self::Http(request) => &request.headers,
            Self::Mcp(_) => &[],
        }
    }
}

impl Gate {
    /// The gate around a new upstream client and the catalog's MCP servers (none
    /// started until a call needs one).
    pub(super) fn new(
        catalog: &crate::catalog::Catalog,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        Ok(Self {
            client: Upstream::new()?,
            mcp: Servers::new(catalog, env)?,
        })
    }

    /// Sends one MCP `tools/call` with its permit, once its server's listing shows the
    /// tool as the catalog pinned it: the only call of the MCP servers.
    pub(super) async fn send_mcp(
        &self,
        _permit: &Permit<'_>,
        plan: &crate::catalog::mcp::McpPlan,
        call: &McpCall,
        target: &McpTarget<'_>,
    ) -> Result<Value, CallError> {
        self.mcp.call(plan, call, target).await
    }

    /// Reads an MCP server's tool listing now (no tool is called).
    pub(super) async fn mcp_relist(
        &self,
        target: &McpTarget<'_>,
    ) -> Result<crate::upstream::mcp::Listing, CallError> {
        self.mcp.relist(target).await
    }

    /// Whether the catalog has MCP services.
    pub(super) fn has_mcp(&self) -> bool {
        !self.mcp.is_empty()
    }

    /// The deployment's values an MCP service's server is passed: swept from answers.
    pub(super) fn mcp_secrets(&self, service: &str) -> &[String] {
        self.mcp.secrets(service)
    }

    /// What each MCP server last said of its tools (readiness, the console).
    pub(super) fn mcp_listings(
        &self,
    ) -> std::collections::BTreeMap<String, crate::upstream::mcp::Listing> {
        self.mcp.listings()
    }

    /// Sends one request with its permit: the only call of the upstream client. The
    /// request carries the idempotency key the permit gives it.
    pub(super) async fn send<'s>(
        &self,
        permit: &'s Permit<'_>,
        request: &RenderedRequest,
        mut target: Target<'s>,
    ) -> Result<Outcome, CallError> {
        target.idempotency_key = permit.idempotency();
        self.client.send(request, &target).await
    }
}

/// Leave for one request to go upstream. Made only by [`Broker::clear`]; ended by
/// [`Broker::finish`] (which settles its reservation and audits its write).
#[derive(Debug)]
#[must_use = "a permit's reservation is settled and its write audited by Broker::finish"]
pub(super) struct Permit<'t> {
    tool: &'t Tool,
    hold: Option<Hold>,
    /// A write sent inside another tool, and when it was cleared: audited by `finish`
    /// (the door audits its own).
    inner_write: Option<(Planned, jiff::Timestamp, std::time::Instant)>,
    /// The idempotency key the request carries upstream.
    idempotency: Option<String>,
    policies: Option<std::sync::Arc<[String]>>,
}

impl Permit<'_> {
    /// The idempotency key the request carries upstream.
    fn idempotency(&self) -> Option<&str> {
        self.idempotency.as_deref()
    }

    /// Whether [`Broker::finish`] has anything to do: a reservation to settle or a
    /// write to audit. A plain read has neither, and skips it.
    pub(super) fn leaves_work(&self) -> bool {
        self.hold.is_some() || self.inner_write.is_some()
    }
}

/// What the gate says of a request.
#[derive(Debug)]
pub(super) enum Cleared<'t> {
    /// It may leave, with this permit.
    Send(Permit<'t>),
    /// It is a write of a preview: planned, not sent; this is what its tool answers.
    Planned(Exec),
}

/// Whether a request of `tool` changes upstream state: a write tool's, or the allowlisted
/// endpoint tool's own (a path no catalog tool describes) unless it is a `GET`.
fn changes_state(tool: &Tool, request: Leaving<'_>) -> bool {
    match (&tool.action, request) {
        (Action::Hook(Hook::AllowlistedRequest), Leaving::Http(request)) => {
            request.method != hyper::Method::GET
        }
        _ => tool.risk == crate::catalog::descriptor::Risk::Write,
    }
}

/// `confirmation_required` for a write nothing in this call confirmed.
fn unconfirmed(tool: &Tool) -> CallError {
    CallError::new(
        Classification::ConfirmationRequired,
        format!(
            "a write of `{}` inside this call is not covered by its confirmation: nothing was sent; call the tool that runs it again to get its preview, and confirm that",
            tool.full_name
        ),
    )
    .with_details(json!({ "reason": "not_covered", "tool": tool.full_name }))
}

/// `confirmation_required` for a confirmed plan whose writes are not the ones now sent:
/// at confirmation (nothing sent), or while it ran (`sent` of its writes had left).
fn plan_changed(door: &str, sent: usize) -> CallError {
    let what = match sent {
        0 => "nothing was sent".to_string(),
        1 => "1 write of the plan was sent before it changed, nothing after".to_string(),
        n => format!("{n} writes of the plan were sent before it changed, nothing after"),
    };
    CallError::new(
        Classification::ConfirmationRequired,
        format!(
            "the plan changed since the preview (other writes or other bodies): {what}; call `{door}` again without a confirmation to see the new plan, and confirm that"
        ),
    )
    .with_details(json!({ "reason": "plan_changed", "sent": sent }))
}

impl Broker {
    /// Phase 6, reserve: clears one request of `tool` (the tool it belongs to) to leave: its confirmation
    /// (the call's cover), its rate limit, its reservation. `decided` is the policy
    /// stage's word on that tool for this call. A write under a preview is planned and
    /// answered here; nothing is sent.
    pub(super) async fn clear<'t>(
        &self,
        tool: &'t Tool,
        request: Leaving<'_>,
        decided: Decided<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Cleared<'t>, CallError> {
        // The request's cover.
        let own = ctx.door.is_some_and(|door| std::ptr::eq(door, tool))
            && matches!(tool.action, Action::Http(_) | Action::Mcp(_));
        let mut inner_write = None;
        let mut idempotency = ctx.idempotency.clone();
        if changes_state(tool, request) {
            // What binds and audits a write inside another tool; the door's own write
            // is bound and audited by the door.
            let write = || Planned::new(&tool.full_name, request.preview(), request.headers());
            let (place, write) = match &ctx.cover {
                Cover::Flags if own => (0, None),
                Cover::Flags => (ctx.writes_sent(), Some(write())),
                Cover::Door if own => (0, None),
                Cover::ReadsOnly | Cover::Door => return Err(unconfirmed(tool)),
                Cover::Plan(plan) => {
                    plan.record(write());
                    return Ok(Cleared::Planned(self.planned(tool, request, ctx)));
                }
                Cover::Confirmed(plan) => {
                    let write = write();
                    match plan.take(&write) {
                        Matched::Next(place) => (place, Some(write)),
                        Matched::Changed => {
                            let door = ctx.door.map_or(tool.full_name.as_str(), |d| &d.full_name);
                            return Err(plan_changed(door, ctx.writes_sent()));
                        }
                    }
                }
            };
            if let Some(write) = write {
                // Each write of a call carries a key of its own, derived from the call's.
                idempotency = idempotency.map(|key| format!("{key}-w{place}"));
                inner_write = Some((write, self.parts.now(), std::time::Instant::now()));
            }
        }
        // Its rate limit.
        if let Some(limit) = &tool.rate_limit {
            crate::call::ratelimit::check(
                &self.parts.store,
                &tool.full_name,
                &self.parts.job_owner(&tool.service, ctx),
                limit,
                self.parts.now(),
            )
            .await?;
        }
        // Its reservation. Budgets: boxed, so an unpriced call's future does not carry them.
        let hold = match decided.priced().0 {
            Some(p) if !self.parts.budgets.is_empty() => {
                Box::pin(self.reserve(tool, p, ctx, idempotency.as_deref())).await?
            }
            _ => None,
        };
        Ok(Cleared::Send(Permit {
            tool,
            hold,
            inner_write,
            idempotency,
            policies: decided.into_policies(),
        }))
    }

    /// Phase 10 for one request: ends its permit once its result is known: the reservation settled or
    /// released, and a write sent inside another tool audited under the call's trace.
    pub(super) async fn finish(
        &self,
        permit: Permit<'_>,
        result: &Result<Exec, CallError>,
        ctx: &RequestCtx<'_>,
    ) {
        let Permit {
            tool,
            hold,
            inner_write,
            policies,
            ..
        } = permit;
        if let Some(hold) = hold {
            Box::pin(self.settle(tool, hold, result)).await;
        }
        if let Some((write, at, started)) = inner_write {
            ctx.sent_write();
            // Audited as its own tool, under the outer call's trace.
            let entry = super::audit::Entry {
                tool,
                args_sha256: write.digest,
                at,
                duration_ms: super::span::elapsed_ms(started),
                policies: policies.as_deref(),
                mode: ctx.caller.confirmation,
                failed_cost: None,
            };
            Box::pin(self.audit(&entry, result, ctx)).await;
        }
    }

    /// What a write under a preview answers its tool: planned, nothing sent.
    fn planned(&self, tool: &Tool, request: Leaving<'_>, ctx: &RequestCtx<'_>) -> Exec {
        let mut shown = request.preview();
        self.redact_shown(&mut shown, ctx.headers);
        Exec {
            data:
                json!({ "dryRun": true, "planned": true, "tool": tool.full_name, "request": shown })
                    .into(),
            dry_run: true,
            summary: Some(format!("{} planned: nothing was sent", tool.full_name)),
            ..Exec::default()
        }
    }
}

/// The tool a request of the allowlisted endpoint tool `tool` belongs to: the catalog
/// tool of the same service whose method and path template it matches, with the
/// arguments the request holds as that tool names them (its path parameters; each
/// query parameter by its own name where the tool declares it, else in `params`; the
/// body as `body`); else the endpoint tool itself (a path under a prefix the deployment
/// allows), with no arguments.
pub(super) fn endpoint_tool<'c>(
    catalog: &'c crate::catalog::Catalog,
    tool: &'c Tool,
    request: &RenderedRequest,
) -> (&'c Tool, serde_json::Map<String, Value>) {
    let Some((matched, path)) =
        catalog.described_endpoint(&tool.service, &request.method, &request.path)
    else {
        return (tool, serde_json::Map::new());
    };
    let mut args: serde_json::Map<String, Value> = path
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let mut params = serde_json::Map::new();
    for (k, v) in &request.query {
        let value = Value::String(v.clone());
        if matched.declares(k) {
            args.entry(k.clone()).or_insert(value);
        } else {
            params.entry(k.clone()).or_insert(value);
        }
    }
    if !params.is_empty() {
        args.insert("params".into(), Value::Object(params));
    }
    if let Some(body) = &request.body {
        args.insert("body".into(), body.clone());
    }
    (matched, args)
}
