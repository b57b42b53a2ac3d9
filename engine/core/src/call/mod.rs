//! One call, end to end (decisions 002-005):
//!
//! resolve -> may the caller use it -> validate arguments -> preconditions ->
//! confirmation (preview or refusal, nothing sent) -> hook, or: base URL and upstream
//! key (refused before any contact) -> render -> send -> classify -> redact -> data,
//! pagination, truncation -> envelope.
//!
//! [`Broker`] (`broker.rs`) holds everything a call needs that is not in the request: the
//! parts every stage reads ([`crate::run::Parts`]), the caller keys, the confirmation
//! settings, the hooks' caches, the upstream client and what the endpoints keep. It is
//! the [`crate::run::Pipeline`] hooks and webhooks run tools through.
//!
//! Here: one call from its name to its envelope, and a resolved tool run (arguments,
//! tenancy, preconditions, the flag decision, hook or render). `confirmed.rs`: a write
//! under its caller's confirmation mode. `send.rs`: the upstream exchange and the answer
//! made a result. What only the driver uses: `args`, `tenancy`, `ratelimit`.
//!
//! May import every stage below it (confirm, hooks, webhook, run, answer, upstream,
//! the store, callers, config, telemetry, the catalog); never an endpoint (`mcp`,
//! `serve`: broker-surfaces).

pub mod args;
mod broker;
mod budget;
mod confirmed;
mod endpoint;
mod gate;
mod policy;
pub mod ratelimit;
mod send;
pub mod tenancy;

pub use broker::EndpointState;

use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::answer::envelope::{self, Cost, Meta, Portal, Response};
use crate::caller::Caller;
use crate::catalog::costs::{Estimate, Price, Reading, TooMany};
use crate::catalog::descriptor::{Class, ConfirmationMode, EnvelopeKind, Risk};
use crate::catalog::template::Scope;
use crate::catalog::{Action, Tool};
use crate::config::WriteConfirmation;
use crate::confirm::flag::{PreviewReason, Verdict, decide};
use crate::error::{CallError, Classification};
use crate::hooks;
use crate::run::cover::Cover;
use crate::run::{Elicitation, Exec, RequestCtx, TaskWatch, Want};
use crate::upstream::render::render;

/// The broker: the parts every stage reads ([`crate::run::Parts`], also reached through `Deref`),
/// who may call, this deployment's confirmation settings, the hooks' caches, what the
/// endpoints keep, and the upstream client. It drives each call ([`Broker::call`]) and
/// is the [`crate::run::Pipeline`] the stages it drives run tools through.
pub struct Broker {
    /// What every stage may read: the catalog, the store, routes, settings, counters,
    /// callback keys, the clock.
    pub parts: crate::run::Parts,
    /// Who may call: the keys and the users of access tokens.
    pub callers: crate::caller::Callers,
    /// Who confirms writes, and how (modes `bound` and `human`).
    pub confirmations: crate::confirm::Confirmations,
    /// The keys users store (`vault_key_env`; decision 012).
    pub hub: Option<crate::hub::Hub>,
    /// The hooks' own caches.
    pub hooks: hooks::State,
    /// What the HTTP endpoints keep with the broker.
    pub endpoints: broker::EndpointState,
    /// The one way out: the upstream client behind the gate (decision 017).
    gate: gate::Gate,
}

/// A caller's pin (decision 010): the descriptor hash it reviewed, held against
/// the tool's current one. A mismatch is `descriptor_changed` with the current hash, and
/// nothing runs; a pin that is no descriptor hash at all is the caller's mistake
/// (`invalid_request`), never taken for a change.
pub fn check_pin(tool: &Tool, pinned: Option<&str>) -> Result<(), CallError> {
    let Some(pinned) = pinned else {
        return Ok(());
    };
    let hash = pinned.trim();
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CallError::invalid_request(
            "the descriptor hash must be the 64 hex characters a tool's `descriptorHash` shows (tools/list `_meta`, get_tool_reference)",
        ));
    }
    if hash.eq_ignore_ascii_case(&tool.descriptor_hash) {
        return Ok(());
    }
    Err(CallError::new(
        Classification::DescriptorChanged,
        format!(
            "`{}` has changed since the descriptor you reviewed: nothing ran",
            tool.full_name
        ),
    )
    .with_details(json!({
        "tool": tool.full_name,
        "currentHash": tool.descriptor_hash,
        "pinnedHash": hash.to_ascii_lowercase(),
        "nextAction": format!(
            "Read `{}` again (tools/list or get_tool_reference), review what changed, then call it with the new descriptorHash.",
            tool.full_name
        ),
    })))
}

/// One `tools/call`.
#[derive(Debug)]
pub struct CallInput<'a> {
    /// JSON-RPC id as a string.
    pub request_id: String,
    /// `params.name`.
    pub name: &'a str,
    /// `params.arguments`.
    pub arguments: Option<Value>,
    /// Request headers.
    pub headers: &'a hyper::HeaderMap,
    /// The authenticated caller.
    pub principal: &'a Caller,
    /// An idempotency key given outside the headers (MCP `_meta.idempotencyKey`); the
    /// `Idempotency-Key` header is read when this is `None`.
    pub idempotency_key: Option<String>,
    /// The trace the caller's request continues: its `traceparent` header, or on `/mcp`
    /// `params._meta.traceparent` first (read by the MCP endpoint).
    pub trace_parent: Option<crate::telemetry::trace::Parent>,
    /// The call endpoint the call came through.
    pub endpoint: Endpoint,
    /// The MCP endpoint's elicitation capability and round (`None` on other endpoints).
    pub elicitation: Option<Elicitation>,
    /// Run as an MCP task (see [`RequestCtx::task_watch`]).
    pub task_watch: Option<TaskWatch>,
    /// The descriptor hash the caller reviewed (MCP `_meta.descriptorHash`,
    /// `params.descriptorHash`, `X-Descriptor-Hash`): when the tool's differs, nothing
    /// runs ([`check_pin`]).
    pub descriptor_hash: Option<String>,
}

/// The call endpoint a call came through (its span's `tool_broker.endpoint`; the JSON-RPC
/// endpoints also set `jsonrpc.request.id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /`: JSON-RPC `tools/call`.
    Rpc,
    /// `POST /mcp`: MCP Streamable HTTP.
    Mcp,
    /// `POST /mcp/<service>/<tool>`: the REST paths of the OpenAPI projection.
    Rest,
}

impl Endpoint {
    /// The call endpoint a `POST` to `path` (no query) goes to, if any.
    pub fn of(path: &str) -> Option<Self> {
        match path {
            "/" => Some(Self::Rpc),
            "/mcp" => Some(Self::Mcp),
            _ if path.starts_with("/mcp/") => Some(Self::Rest),
            _ => None,
        }
    }

    /// The endpoint's name in a span.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rpc => "rpc",
            Self::Mcp => "mcp",
            Self::Rest => "rest",
        }
    }
}

impl Broker {
    /// Runs one `tools/call` and returns the response to send.
    #[expect(
        clippy::too_many_lines,
        reason = "the call path read top to bottom in the order of docs/behaviour.md's checks; each step is a call already, and splitting the rest would pass the call's state through more frames on the hot path"
    )]
    pub async fn call(&self, mut input: CallInput<'_>) -> Response {
        let started = Instant::now();
        // The broker's own arguments: taken out before anything hashes or validates.
        let token = crate::confirm::bound::take_token(&mut input.arguments);
        let approval_id =
            crate::confirm::bound::take_arg(&mut input.arguments, crate::confirm::APPROVAL_ARG);
        let trace = self.traces.start(input.trace_parent.take());
        let trace_id = trace.id.clone();
        let mut meta = Meta {
            request_id: std::mem::take(&mut input.request_id),
            trace_id: trace_id.clone(),
            ..Meta::default()
        };
        let portal_name = input.name.starts_with("portal.");
        let Some(tool) = self.catalog.resolve(input.name) else {
            let err = crate::catalog::unknown_tool(&self.catalog, input.name);
            meta.duration_ms = elapsed_ms(started);
            self.metrics
                .record_call("unknown", err.classification.as_str(), meta.duration_ms);
            trace.finish(
                || "tools/call".into(),
                |span| {
                    let name: String = input.name.chars().take(256).collect();
                    call_span(
                        span,
                        (input.endpoint, input.principal),
                        &meta.request_id,
                        &name,
                    );
                    span.text("error.type", err.classification.as_str());
                    span.text("tool_broker.classification", err.classification.as_str());
                    span.error = true;
                },
            );
            return if portal_name {
                self.portal_response(input.name, &trace_id, Err(err))
            } else {
                envelope::standard_err(&err, meta, &self.catalog.rules)
            };
        };
        let task_args = (input.task_watch.is_some() && tool.task.is_some()).then(|| {
            input
                .arguments
                .as_ref()
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        });
        let started_at = self.now();
        let write = tool.risk == Risk::Write;
        let args_sha256 = write.then(|| audit_hash(input.arguments.as_ref()));
        // Who may: the key or role fields, the pinned descriptor; then the arguments,
        // validated and priced once for the whole call, and the policies on them.
        let policies = self.policy_set();
        let door = input
            .principal
            .check(tool)
            .and_then(|()| check_pin(tool, input.descriptor_hash.as_deref()))
            .and_then(|()| args::prepare(tool, input.arguments.take()))
            .and_then(|args| {
                let priced = self.estimate(tool, &args)?;
                let decision =
                    self.door_policy(policies.as_deref(), tool, input.principal, (&args, priced))?;
                Ok((args, priced, decision))
            });
        // The determining policies, whether they permitted or refused (the audit's).
        let policy_ids = door
            .as_ref()
            .ok()
            .and_then(|(_, _, d)| d.as_ref())
            .map(|d| d.policies.clone());
        let policy_refused = matches!(&door, Ok((_, _, Some(d))) if !d.allowed);
        let door = door.and_then(|(args, priced, d)| match d {
            Some(d) if !d.allowed => Err(policy::refusal(tool, &d)),
            d => Ok((args, priced, d)),
        });
        let raised = match &door {
            Ok((_, _, Some(d))) => policy::raised(input.principal, d.confirm),
            _ => None,
        };
        let principal = raised.as_ref().unwrap_or(input.principal);
        let mode = match &door {
            Ok((_, priced, _)) => self.confirmation_of(tool, principal, *priced),
            Err(_) => principal.confirmation,
        };
        // Writes inside the call are confirmed by the flags only where the caller's
        // writes are; else each pass of the call says what covers them (decision 017).
        let cover = if mode == WriteConfirmation::Flag
            && principal.confirmation == WriteConfirmation::Flag
        {
            Cover::Flags
        } else {
            Cover::ReadsOnly
        };
        let mut ctx = RequestCtx {
            principal,
            headers: input.headers,
            trace: &trace,
            idempotency: None,
            elicitation: input.elicitation.as_ref(),
            task_watch: input.task_watch,
            policies,
            door: Some(tool),
            cover,
            writes: std::sync::atomic::AtomicUsize::new(0),
        };
        let mut held = None;
        let priced = door.as_ref().ok().map(|(_, priced, _)| *priced);
        let result = match door {
            Err(e) => Err(e),
            Ok((args, priced, _)) => match (
                &args_sha256,
                crate::confirm::idempotency::key_of(
                    input.idempotency_key.as_deref(),
                    input.headers,
                ),
            ) {
                (Some(_), Err(e)) => Err(e),
                (Some(sha), Ok(Some(key))) => {
                    let owner = self.job_owner(&tool.service, &ctx);
                    match crate::confirm::idempotency::begin(
                        &self.store,
                        tool,
                        &owner,
                        &key,
                        sha,
                        || self.now(),
                    )
                    .await
                    {
                        Ok(crate::confirm::idempotency::Begin::Replay(response)) => {
                            self.metrics.record_call(
                                &tool.full_name,
                                "replayed",
                                elapsed_ms(started),
                            );
                            tracing::info!(tool = %tool.full_name, caller = %input.principal.name, "idempotent repeat answered from the store");
                            trace.finish(
                                || format!("tools/call {}", tool.full_name),
                                |span| {
                                    let caller = (input.endpoint, input.principal);
                                    tool_span(span, caller, &meta.request_id, tool);
                                    span.text("tool_broker.classification", "replayed");
                                },
                            );
                            return response;
                        }
                        Ok(crate::confirm::idempotency::Begin::Run(h)) => {
                            ctx.idempotency = Some(h.upstream.clone());
                            held = Some(h);
                            self.execute_confirmed(
                                tool,
                                (args, policy::Decided::door(priced), mode),
                                (token, approval_id),
                                &ctx,
                            )
                            .await
                        }
                        Err(e) => Err(e),
                    }
                }
                _ => {
                    let decided = policy::Decided::door(priced);
                    self.execute_confirmed(tool, (args, decided, mode), (token, approval_id), &ctx)
                        .await
                }
            },
        };
        // Run as an MCP task, a tool that answered a job at once watches it.
        let result = match (result, &tool.task) {
            (Ok(exec), Some(plan)) if ctx.task_watch.is_some() && !exec.dry_run => {
                let args = task_args.unwrap_or_default();
                Ok(crate::hooks::watch_answered_job(self, tool, plan, &args, exec, &ctx).await)
            }
            (result, _) => result,
        };
        let duration_ms = elapsed_ms(started);
        // A priced call that failed still says what it cost (`meta.cost`).
        if let (Err(e), Some(priced)) = (&result, priced) {
            meta.cost = priced.failed(e);
        }
        let ran = write_outcome(&result) == Some(crate::store::audit::Outcome::Executed);
        if let Some(args_sha256) = args_sha256 {
            self.audit(
                tool,
                &ctx,
                &result,
                args_sha256,
                (started_at, duration_ms),
                (policy_ids.as_deref(), mode, meta.cost.as_deref()),
            )
            .await;
        }
        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) => e.classification.as_str(),
        };
        self.metrics
            .record_call(&tool.full_name, outcome, duration_ms);
        tracing::info!(
            tool = %tool.full_name,
            caller = %input.principal.name,
            outcome,
            duration_ms,
            trace_id = %trace.id,
            "tool call"
        );
        trace.finish(
            || format!("tools/call {}", tool.full_name),
            |span| {
                tool_span(
                    span,
                    (input.endpoint, input.principal),
                    &meta.request_id,
                    tool,
                );
                result_span(span, &result);
                let cost = match &result {
                    Ok(exec) => exec.cost.as_deref(),
                    Err(_) => meta.cost.as_deref(),
                };
                if let Some(cost) = cost {
                    cost_span(span, cost);
                }
                if let Some(ids) = &policy_ids {
                    span.text(
                        "tool_broker.policy.decision",
                        if policy_refused { "deny" } else { "allow" },
                    );
                    span.text("tool_broker.policy.ids", ids.join(","));
                }
            },
        );
        let response = self.respond(tool, &trace_id, meta, duration_ms, result);
        if let Some(held) = &held {
            crate::confirm::idempotency::finish(&self.store, held, ran, &response).await;
        }
        response
    }

    /// The envelope of a finished call (portal or standard, by the tool's service).
    fn respond(
        &self,
        tool: &Tool,
        trace_id: &str,
        mut meta: Meta,
        duration_ms: u64,
        result: Result<Exec, CallError>,
    ) -> Response {
        if self.catalog.services.get(&tool.service).map(|s| s.envelope)
            == Some(EnvelopeKind::Portal)
        {
            return self.portal_response(&tool.full_name, trace_id, result);
        }
        let names = &tool.meta_names;
        meta.service = Some(names.service.clone());
        meta.tool = Some(names.tool.clone());
        meta.catalog_version = Some(names.catalog_version.clone());
        meta.descriptor_hash = Some(names.descriptor_hash.clone());
        meta.consumes_credits = tool
            .classes
            .iter()
            .any(|c| matches!(c, Class::Spend | Class::Credits));
        meta.snapshot_id = Some(names.snapshot_id.clone());
        meta.duration_ms = duration_ms;
        match result {
            Ok(exec) => {
                meta.dry_run = exec.dry_run;
                meta.upstream_status = exec.upstream_status;
                meta.pagination = exec.pagination;
                meta.truncation = exec.truncation;
                meta.redacted = exec.redacted;
                meta.dispatched_to = exec.dispatched_to;
                meta.cost = exec.cost;
                match exec.data_text {
                    Some(text) => envelope::standard_ok_text(text, meta),
                    None => envelope::standard_ok(exec.data, meta),
                }
            }
            Err(err) => {
                meta.upstream_status = err.upstream_status;
                envelope::standard_err(&err, meta, &self.catalog.rules)
            }
        }
    }

    /// Appends the audit record of a write call (a preview is not a write and is not
    /// recorded). A store that fails is logged; the caller still gets its answer, since
    /// the write may already have run.
    async fn audit(
        &self,
        tool: &Tool,
        ctx: &RequestCtx<'_>,
        result: &Result<Exec, CallError>,
        args_sha256: String,
        (at, duration_ms): (jiff::Timestamp, u64),
        (policies, mode, failed_cost): (
            Option<&[String]>,
            crate::config::WriteConfirmation,
            Option<&Cost>,
        ),
    ) {
        use crate::store::audit::AuditRecord;
        let Some(outcome) = write_outcome(result) else {
            return;
        };
        let (upstream_status, classification) = match result {
            Ok(exec) => (exec.upstream_status, "ok"),
            Err(e) => (e.upstream_status, e.classification.as_str()),
        };
        let record = AuditRecord {
            seq: 0,
            at: at.to_string(),
            key_name: ctx.principal.name.clone(),
            tool: tool.full_name.clone(),
            descriptor_hash: tool.descriptor_hash.clone(),
            catalog_version: self
                .catalog
                .services
                .get(&tool.service)
                .map(|s| s.catalog_version.clone())
                .unwrap_or_default(),
            args_sha256,
            outcome,
            upstream_status,
            classification: classification.to_string(),
            trace_id: ctx.trace.id.to_string(),
            duration_ms,
            confirmation: Some(mode.as_str().to_string()),
            policies: policies.map(<[String]>::to_vec),
            cost: match result {
                Ok(exec) => exec.cost.as_deref(),
                Err(_) => failed_cost,
            }
            .and_then(|c| {
                c.actual
                    .filter(|n| *n > 0 || result.is_ok())
                    .map(|n| std::iter::once((c.unit.to_string(), n)).collect())
            }),
        };
        if let Err(e) = self.store.append_audit(&record).await {
            tracing::error!(error = %e, tool = %tool.full_name, trace_id = %ctx.trace.id, "write audit record not stored");
        }
    }

    fn portal_response(
        &self,
        name: &str,
        trace_id: &str,
        result: Result<Exec, CallError>,
    ) -> Response {
        let (service_id, tool_name) = name.split_once('.').unwrap_or(("portal", name));
        let rules = &self.catalog.rules;
        match result {
            Ok(exec) => envelope::portal(
                Portal {
                    service_id: service_id.to_string(),
                    tool_name: tool_name.to_string(),
                    trace_id: trace_id.to_string(),
                    summary: exec.summary.unwrap_or_default(),
                    data: exec.data,
                    data_text: exec.data_text,
                    resource: exec.resource.unwrap_or(Value::Null),
                    pagination: exec.pagination.unwrap_or(Value::Null),
                    next_action: exec.next_action,
                },
                None,
                rules,
            ),
            Err(err) => envelope::portal(
                Portal {
                    service_id: service_id.to_string(),
                    tool_name: tool_name.to_string(),
                    trace_id: trace_id.to_string(),
                    summary: format!("{name} failed: {}", err.classification.as_str()),
                    ..Portal::default()
                },
                Some(&err),
                rules,
            ),
        }
    }

    /// Runs a resolved tool the caller may use: everything after the permission check.
    pub async fn execute(
        &self,
        tool: &Tool,
        arguments: Option<Value>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        self.execute_as(tool, Args::Raw(arguments), ctx, false, Want::Value)
            .await
    }

    /// [`Broker::execute`] for a call whose result goes straight into its envelope: the
    /// result may be JSON text ([`Want::Text`]).
    async fn execute_for_envelope(
        &self,
        tool: &Tool,
        arguments: Args<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        self.execute_as(tool, arguments, ctx, false, Want::Text)
            .await
    }

    /// [`Broker::execute`], or with `preview_only` the tool's preview whatever its
    /// confirmation flags say (HTTP tools; hooks answer as they are).
    async fn execute_as(
        &self,
        tool: &Tool,
        arguments: Args<'_>,
        ctx: &RequestCtx<'_>,
        preview_only: bool,
        want: Want,
    ) -> Result<Exec, CallError> {
        // The door's arguments come validated, priced and decided; any other tool's
        // (one a hook or a portal tool runs) are here.
        let (mut args, door) = match arguments {
            Args::Door(args, decided) => (args, Some(decided)),
            Args::Raw(arguments) => (args::prepare(tool, arguments)?, None),
        };
        let routed = crate::call::tenancy::route(self, tool, &mut args, ctx.headers)?;
        // Built only if a template reads it (`routed_context` copies the arguments).
        let (arguments, routed_to) = (&args, routed.as_deref());
        let template_ctx = Scope::lazy(arguments, move || {
            self.routed_context(tool, arguments, ctx.headers, routed_to)
        });
        let templates = &self.catalog.templates;
        for rule in &tool.require {
            let ok = templates.truthy(&rule.check, &template_ctx).map_err(|e| {
                tracing::error!(template = %e.name, kind = %e.kind, "precondition failed to evaluate");
                CallError::internal()
            })?;
            if !ok {
                return Err(CallError::new(rule.classification, rule.message.clone()));
            }
        }
        let decision = if preview_only {
            Verdict::Preview(PreviewReason::NotConfirmed)
        } else {
            self.flag_decision(tool, &args, ctx)?
        };
        let decided = match door {
            Some(decided) => decided,
            None => {
                let priced = self.estimate(tool, &args)?;
                let dry_run = matches!(decision, Verdict::Preview(_));
                self.inner_policy(tool, ctx, &args, (dry_run, priced))?
            }
        };
        let priced = decided.priced();
        match &tool.action {
            Action::Hook(hook) => {
                drop(template_ctx);
                // A hook running other tools is charged for the priced ones it runs,
                // each where its request leaves (the gate).
                hooks::run(*hook, self, &self.hooks, tool, args, ctx)
                    .await
                    .map(|exec| priced.charge(exec))
            }
            Action::Http(plan) => {
                let request = render(plan, templates, &template_ctx)?;
                if let Verdict::Preview(reason) = decision {
                    let mut exec = priced.charge(self.preview(tool, request.preview(), reason));
                    if let Some(cost) = exec.cost.as_mut().filter(|_| !self.budgets.is_empty()) {
                        cost.budgets = crate::run::budgets::standing(
                            &self.parts,
                            ctx.principal,
                            Some(&cost.unit),
                            Some(cost.estimate.unwrap_or(u64::MAX)),
                        )
                        .await;
                    }
                    return Ok(exec);
                }
                let permit = match self.clear(tool, &request, decided, ctx).await? {
                    gate::Cleared::Send(permit) => permit,
                    gate::Cleared::Planned(exec) => return Ok(exec),
                };
                let result = self
                    .send_rendered(
                        tool,
                        (&request, &permit),
                        &args,
                        &template_ctx,
                        ctx,
                        (None, want),
                    )
                    .await
                    .map(|exec| priced.charge(exec));
                if permit.leaves_work() {
                    self.finish(permit, &result, ctx).await;
                }
                result
            }
        }
    }

    /// Whether a call runs, answers a preview or is refused, by its tool's confirmation
    /// rule and the flags (decision 005); under a token or an approval for the whole
    /// call ([`Cover::by_the_door`]) the flags decide nothing, and only an explicit
    /// preview is one.
    fn flag_decision(
        &self,
        tool: &Tool,
        args: &Map<String, Value>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Verdict, CallError> {
        if !ctx.cover.by_the_door() {
            return decide(tool, args, &self.catalog.rules.confirmation);
        }
        let asked = tool
            .preview_arg
            .as_ref()
            .is_some_and(|arg| args.get(arg) == Some(&Value::Bool(true)));
        Ok(if asked {
            Verdict::Preview(PreviewReason::Requested)
        } else {
            Verdict::Run
        })
    }

    /// A call's estimated cost by its tool's price, if it has one; a call with more
    /// items than its price allows is refused before anything is sent.
    fn estimate<'p>(
        &'p self,
        tool: &Tool,
        args: &Map<String, Value>,
    ) -> Result<Priced<'p>, CallError> {
        let Some(price) = self.costs.price(&self.catalog, tool) else {
            return Ok(Priced(None));
        };
        match price.estimate(args) {
            Ok(estimate) => Ok(Priced(Some((price, estimate)))),
            Err(TooMany { pointer, max }) => Err(CallError::validation(format!(
                "`{}` takes at most {max} items in `{pointer}` a call; split the call",
                tool.full_name
            ))
            .with_details(json!([{ "pointer": pointer, "keyword": "maxItems", "message": format!("at most {max} items a call") }]))),
        }
    }

    fn preview(&self, tool: &Tool, mut request: Value, reason: PreviewReason) -> Exec {
        // Credential-like fields of the request (an `apiKey` the caller passes on to the
        // upstream) are shown redacted, as everywhere else in an answer.
        let redacted =
            crate::answer::redact::redact(&mut request, &self.catalog.rules.redaction, &[], &[]);
        let needs_confirm = matches!(
            tool.confirmation,
            ConfirmationMode::ConfirmFlag | ConfirmationMode::DryRunDefault
        );
        let next = self.render_shared(
            "dry_run_next_action.j2",
            &json!({
                "tool": { "name": tool.full_name, "title": tool.title },
                "confirm_arg": self.catalog.rules.confirmation.confirm_arg,
                "preview_arg": (reason == PreviewReason::Requested).then_some(tool.preview_arg.clone()).flatten(),
                "needs_confirm": needs_confirm,
            }),
        );
        Exec {
            data: crate::answer::envelope::object([
                ("dryRun", Value::Bool(true)),
                ("request", request),
                ("nextAction", Value::String(next.clone())),
            ]),
            dry_run: true,
            redacted: (redacted > 0).then_some(redacted),
            next_action: Some(next),
            summary: Some(format!("dry run of {}: nothing was sent", tool.full_name)),
            ..Exec::default()
        }
    }
}

/// A call's arguments on their way to [`Broker::execute_as`].
enum Args<'p> {
    /// The door's: validated (defaults in), priced and decided by the policies there.
    Door(Map<String, Value>, policy::Decided<'p>),
    /// Those of a tool another runs (a hook's step, a portal read), as it passed them:
    /// validated, priced and decided when run.
    Raw(Option<Value>),
}

/// A call's price and estimate, when its tool has one: worked out once per tool run.
#[derive(Clone, Copy)]
struct Priced<'p>(Option<(&'p Price, Estimate)>);

impl<'p> Priced<'p> {
    /// The unit and units of a priced estimate (`None`: unpriced, or not priceable).
    fn units(self) -> Option<(&'p String, u64)> {
        let (price, estimate) = self.0?;
        Some((&price.unit, estimate.units()?))
    }

    /// `meta.cost` with the estimate and what the call was charged (`None`: nothing
    /// settled, as for a preview); `None` for an unpriced tool.
    fn cost(self, actual: impl FnOnce(Option<u64>) -> Option<u64>) -> Option<Box<Cost>> {
        let (price, estimate) = self.0?;
        let estimate = estimate.units();
        Some(Box::new(Cost {
            unit: price.unit.as_str().into(),
            estimate,
            actual: actual(estimate),
            budgets: Vec::new(),
        }))
    }

    /// `exec` with its `meta.cost`: the estimate and, unless it was a preview, what the
    /// call is charged (what the answer said of it, or the estimate).
    fn charge(self, mut exec: Exec) -> Exec {
        if self.0.is_none() {
            return exec;
        }
        let reading = exec.cost_reading.take().unwrap_or(Reading::Estimate);
        let dry_run = exec.dry_run;
        exec.cost = self.cost(|estimate| match (dry_run, estimate, reading) {
            (true, ..) => None,
            (false, Some(n), reading) => Some(reading.apply(n)),
            (false, None, Reading::Figure(n)) => Some(n),
            (false, None, Reading::Nothing) => Some(0),
            (false, None, Reading::Estimate) => None,
        });
        exec
    }

    /// `meta.cost` of a call that failed: its estimate, and what it was charged:
    /// nothing when nothing was sent or the upstream refused it (the reservation was
    /// released), the estimate when no answer came in time (kept).
    fn failed(self, err: &CallError) -> Option<Box<Cost>> {
        let released = budget::releases(err);
        self.cost(|estimate| if released { Some(0) } else { estimate })
    }
}

fn write_outcome(result: &Result<Exec, CallError>) -> Option<crate::store::audit::Outcome> {
    use crate::store::audit::Outcome;
    match result {
        Ok(exec) if exec.token_issued => Some(Outcome::TokenIssued),
        Ok(exec) if exec.dry_run => None,
        Ok(_) => Some(Outcome::Executed),
        Err(e)
            if e.upstream_status.is_some()
                || e.classification == Classification::UpstreamTimeout =>
        {
            Some(Outcome::Executed)
        }
        Err(_) => Some(Outcome::Refused),
    }
}

/// sha256 (hex) of the canonical JSON of a call's arguments (absent counts as `{}`).
fn audit_hash(arguments: Option<&Value>) -> String {
    let empty = Value::Object(Map::new());
    let text = crate::catalog::identity::canonical_json(arguments.unwrap_or(&empty));
    crate::catalog::identity::sha256_hex(text.as_bytes())
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A call's SERVER span attributes (`find_tools` and the other discovery tools too) from the OpenTelemetry MCP conventions, the
/// endpoint and the caller. Never an argument value, a key or a token.
pub fn call_span(
    span: &mut crate::telemetry::trace::Span,
    (endpoint, principal): (Endpoint, &Caller),
    request_id: &str,
    tool: &str,
) {
    span.text("mcp.method.name", "tools/call");
    span.text("gen_ai.operation.name", "execute_tool");
    span.text("gen_ai.tool.name", tool);
    if endpoint != Endpoint::Rest && !request_id.is_empty() {
        span.text("jsonrpc.request.id", request_id);
    }
    span.text("tool_broker.endpoint", endpoint.as_str());
    span.text("tool_broker.user", principal.name.as_str());
}

/// A resolved tool's call: [`call_span`], what the catalog says of the tool, and who
/// confirms its writes.
fn tool_span(
    span: &mut crate::telemetry::trace::Span,
    (endpoint, principal): (Endpoint, &Caller),
    request_id: &str,
    tool: &Tool,
) {
    call_span(span, (endpoint, principal), request_id, &tool.full_name);
    span.text("tool_broker.service", tool.service.as_str());
    span.text("tool_broker.risk", tool.risk.as_str());
    if tool.risk == Risk::Write {
        span.text("tool_broker.confirmation", principal.confirmation.as_str());
    }
}

/// What a priced call cost: its unit, estimate and (once charged) actual units.
fn cost_span(span: &mut crate::telemetry::trace::Span, cost: &Cost) {
    span.text("tool_broker.cost.unit", &*cost.unit);
    for (name, n) in [
        ("tool_broker.cost.estimate", cost.estimate),
        ("tool_broker.cost.actual", cost.actual),
    ] {
        if let Some(n) = n {
            span.int(name, i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
}

/// How the call ended: its classification (`error.type` and status ERROR when it
/// failed), the upstream status, whether it was a dry run.
fn result_span(span: &mut crate::telemetry::trace::Span, result: &Result<Exec, CallError>) {
    match result {
        Ok(exec) => {
            span.text("tool_broker.classification", "ok");
            span.bool("tool_broker.dry_run", exec.dry_run);
            if let Some(status) = exec.upstream_status {
                span.int("tool_broker.upstream.status", i64::from(status));
            }
        }
        Err(e) => {
            span.text("error.type", e.classification.as_str());
            span.text("tool_broker.classification", e.classification.as_str());
            span.bool("tool_broker.dry_run", false);
            if let Some(status) = e.upstream_status {
                span.int("tool_broker.upstream.status", i64::from(status));
            }
            span.error = true;
        }
    }
}
