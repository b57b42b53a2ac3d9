//! Phases 7 to 9 for a request the gate cleared: the key it carries (a routing
//! profile, the caller's own, the one the user stored in the hub, or the server's), the
//! exchange through the gate; then the answer read (refusals classified, jobs noted)
//! and redacted, shaped and truncated: as a tree, or written in one pass.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Broker;
use super::gate::Permit;
use super::price::Priced;
use crate::answer::redact::redact;
use crate::answer::response::{extract_data, extract_pagination, refusal_error, select, truncate};
use crate::catalog::template::Scope;
use crate::catalog::{JsonPath, Tool};
use crate::error::{CallError, Classification};
use crate::run::{Data, Exec, RequestCtx, Want};
use crate::upstream::render::RenderedRequest;
use crate::upstream::{Outcome, Target};

/// One request on its way out and its answer's way back: what phases 7 to 9 read.
pub(super) struct Exchange<'x, 's> {
    /// The request, rendered.
    pub(super) request: &'x RenderedRequest,
    /// The tool's validated arguments (its key fields, how its answer is shaped).
    pub(super) args: &'x Map<String, Value>,
    /// What its templates read (conditions on redaction, a job's id).
    pub(super) scope: &'x Scope<'s>,
    /// Lowers the largest answer read (the allowlisted endpoint's bound).
    pub(super) max_response: Option<usize>,
    /// Whether the result may be JSON text.
    pub(super) want: Want,
}

/// Where a request's key comes from: a routing profile or the caller's header, the
/// key the hub opened (a secret every answer is swept for), or the server's.
pub(super) struct Keyed<'k> {
    given: Option<&'k str>,
    pub(super) stored: Option<zeroize::Zeroizing<String>>,
    server: Option<&'k str>,
    /// The stored value is a connected account's token for `Authorization: Bearer`.
    stored_bearer: bool,
}

impl Keyed<'_> {
    /// The key the request carries: given, else stored, else the server's.
    pub(super) fn key(&self) -> Option<&str> {
        self.given
            .or(self.stored.as_deref().map(String::as_str))
            .or(self.server)
    }

    /// Whether the key the request carries is a bearer token for `Authorization`.
    pub(super) fn bearer(&self) -> bool {
        self.given.is_none() && self.stored.is_some() && self.stored_bearer
    }
}

impl Broker {
    /// Phases 7 to 10 for a request the gate cleared: sent with its `permit`, its
    /// answer read, redacted and charged at `priced`, then the permit ended (its
    /// reservation settled, a write inside another tool audited).
    pub(super) async fn send_cleared(
        &self,
        tool: &Tool,
        exchange: &Exchange<'_, '_>,
        permit: Permit<'_>,
        priced: Priced<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let result = self
            .send(tool, exchange, &permit, ctx)
            .await
            .map(|exec| priced.charge(exec));
        if permit.leaves_work() {
            self.finish(permit, &result, ctx).await;
        }
        result
    }

    /// Phase 7's exchange, then phases 8 and 9: `exchange.request` of `tool` sent
    /// through the gate with the key it carries, and its answer made the tool's result.
    async fn send(
        &self,
        tool: &Tool,
        exchange: &Exchange<'_, '_>,
        permit: &Permit<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let Some(base_url) = self.parts.routes.base_url(&tool.service) else {
            return Err(no_base_url(&tool.service));
        };
        let service = self
            .parts
            .catalog
            .services
            .get(&tool.service)
            .ok_or_else(CallError::internal)?;
        let keyed = self.key_for(tool, service, exchange.args, ctx).await?;
        let target = Target {
            service,
            base_url,
            key: keyed.key(),
            bearer: keyed.bearer(),
            // The permit's, set by the gate.
            idempotency_key: None,
            timeout: tool.timeout,
            max_body_bytes: exchange
                .max_response
                .unwrap_or(self.parts.catalog.rules.limits.max_upstream_body_bytes),
            trace: ctx.trace,
            path_template: match &tool.action {
                crate::catalog::Action::Http(plan) => plan.path.as_str(),
                _ => "",
            },
        };
        let mut secrets = self.parts.secrets(ctx.headers);
        if let Some(stored) = &keyed.stored {
            secrets.push(stored.as_str());
        }
        match self.gate.send(permit, exchange.request, target).await? {
            Outcome::Refusal(refusal) => Err(refusal_error(
                tool,
                refusal,
                &self.parts.catalog.rules,
                &secrets,
            )),
            Outcome::Answer(answer) => {
                self.read_answer(tool, &answer, exchange, &secrets, ctx)
                    .await
            }
        }
    }

    /// The key a request of `tool` carries: a routing profile's, else the caller's own
    /// (its header, else the key the user stored in the hub: decision 012; a header
    /// wins), else a server-side key. A service that needs a key and has none is
    /// refused here, before anything is sent.
    pub(super) async fn key_for<'k>(
        &'k self,
        tool: &Tool,
        service: &'k crate::catalog::Service,
        args: &Map<String, Value>,
        ctx: &'k RequestCtx<'_>,
    ) -> Result<Keyed<'k>, CallError> {
        let profile =
            self.parts
                .routes
                .profile_key(&self.parts.catalog, tool, args, &ctx.caller.profiles)?;
        let header = match profile {
            Some(_) => None,
            None => self.parts.routes.caller_key(service, ctx.headers),
        };
        let from_hub = match (profile.or(header), &self.hub, &ctx.caller.user) {
            (None, Some(hub), Some(user)) if hub.holds(&tool.service) => {
                let subject_token = ctx
                    .headers
                    .get(hyper::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(crate::caller::bearer_token);
                hub.credential_for(&self.parts, user, &tool.service, subject_token)
                    .await?
            }
            _ => crate::hub::Stored::None,
        };
        let (stored, stored_bearer) = match from_hub {
            crate::hub::Stored::None => (None, false),
            crate::hub::Stored::Key(key) => (Some(key), false),
            crate::hub::Stored::Token { token, bearer } => (Some(token), bearer),
            crate::hub::Stored::Reconnect => {
                let (Some(hub), Some(user)) = (&self.hub, &ctx.caller.user) else {
                    return Err(CallError::internal());
                };
                return Err(hub.reconnect(
                    &tool.full_name,
                    &tool.service,
                    user,
                    ctx.headers,
                    self.parts.now().as_millisecond(),
                ));
            }
        };
        let given = profile.or(header);
        let server = match (given, &stored) {
            (None, None) => self.parts.routes.server_key(service),
            _ => None,
        };
        let keyed = Keyed {
            given,
            stored,
            server,
            stored_bearer,
        };
        let Some(cred) = service
            .credential
            .as_ref()
            .filter(|_| keyed.key().is_none())
        else {
            return Ok(keyed);
        };
        if let (Some(hub), Some(user)) = (&self.hub, &ctx.caller.user)
            && hub.holds(&tool.service)
        {
            return Err(hub.missing_key(
                &tool.full_name,
                &tool.service,
                &cred.header,
                user,
                ctx.headers,
                self.parts.now().as_millisecond(),
            ));
        }
        Err(CallError::new(
            Classification::MissingRequiredCredentials,
            format!(
                "`{}` needs your `{}` key in the `{}` request header; nothing was sent upstream",
                tool.full_name, tool.service, cred.header
            ),
        ))
    }

    /// Phases 8 and 9 for an answer that came: in one pass where nothing reads into it,
    /// else as a tree: a price's reading, redaction (by path, by condition, by secret),
    /// pagination, jobs noted, shaping and truncation.
    async fn read_answer(
        &self,
        tool: &Tool,
        answer: &crate::upstream::UpstreamAnswer,
        exchange: &Exchange<'_, '_>,
        secrets: &[&str],
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let asked = Asked::of(&tool.response, exchange.args, tool.item_budget);
        // A price settled from the answer reads it as a value.
        let price =
            (self.parts.costs.price(&self.parts.catalog, tool)).filter(|p| p.reads_answer());
        if exchange.want == Want::Text
            && price.is_none()
            && asked.one_pass(&tool.response)
            && let Some(exec) = self.one_pass(tool, answer, secrets, asked.budget)?
        {
            return Ok(exec);
        }
        let mut body = answer.json(&tool.service)?;
        let cost_reading = price.map(|p| p.read(&body));
        let redacted = self.redact_answer(tool, &mut body, exchange.scope, secrets)?;
        self.guard_answer_of(tool, &mut body, &answer.bytes, ctx.guards)?;
        let pagination = extract_pagination(tool, &body);
        self.note_jobs(tool, &body, exchange.scope, ctx).await;
        let plan = &tool.response;
        let raw = asked.raw.then(|| body.clone());
        let mut data = extract_data(tool, body);
        if let Some(fields) = asked.fields {
            data = crate::answer::shape::project(data, &fields);
        } else if asked.compact {
            data = crate::answer::shape::compact(data, plan.compact_fields.as_ref());
        }
        let truncation = match asked.budget {
            Some(budget) => truncate(&mut data, budget),
            None => Vec::new(),
        };
        if let Some(raw) = raw {
            data = crate::answer::envelope::object([("data", data), ("raw", raw)]);
        }
        Ok(Exec {
            data: data.into(),
            upstream_status: Some(answer.status),
            pagination,
            truncation,
            redacted: Some(redacted),
            cost_reading,
            ..Exec::default()
        })
    }

    /// Phase 9 on a tree: the tool's redaction paths, those its conditions add, the
    /// rules' names and every secret of the call; how many values were replaced.
    fn redact_answer(
        &self,
        tool: &Tool,
        body: &mut Value,
        scope: &Scope<'_>,
        secrets: &[&str],
    ) -> Result<usize, CallError> {
        let mut paths: Vec<&JsonPath> = tool.response.redact.iter().collect();
        for (unless, extra) in &tool.response.redact_unless {
            let keep = self.parts.catalog.templates.truthy(unless, scope).map_err(|e| {
                tracing::error!(template = %e.name, kind = %e.kind, "redaction condition failed");
                CallError::internal()
            })?;
            if !keep {
                paths.extend(extra.iter());
            }
        }
        Ok(redact(
            body,
            &self.parts.catalog.rules.redaction,
            &paths,
            secrets,
        ))
    }

    /// A job the answer started, recorded for its caller, and the status a job status
    /// read answered. The answer goes back whatever the store says: the upstream did
    /// the work, and its id is in the answer the caller gets.
    async fn note_jobs(&self, tool: &Tool, body: &Value, scope: &Scope<'_>, ctx: &RequestCtx<'_>) {
        if let Some(path) = &tool.response.job_id
            && let Some(Value::String(id)) = select(path, body)
            && let Err(e) = self
                .parts
                .store
                .record_job(
                    &tool.service,
                    &self.parts.job_owner(&tool.service, ctx),
                    &id,
                    &tool.name,
                    self.parts.now(),
                )
                .await
        {
            tracing::error!(error = %e, tool = %tool.full_name, "job not recorded");
        }
        if let Some((id, path)) = &tool.response.job_status {
            self.note_job_status(tool, id, path, body, scope, ctx).await;
        }
    }

    /// Phases 8 and 9 in one pass ([`crate::answer::scan`]): the same text, redaction
    /// count and truncation the tree path gives, kept as text; `None` when a guard rule
    /// would act on one of its strings (the tree path reads it then).
    fn one_pass(
        &self,
        tool: &Tool,
        answer: &crate::upstream::UpstreamAnswer,
        secrets: &[&str],
        budget: Option<usize>,
    ) -> Result<Option<Exec>, CallError> {
        let scanned = if answer.is_empty() {
            crate::answer::scan::Scanned {
                text: "null".into(),
                redacted: 0,
                truncation: Vec::new(),
            }
        } else {
            let rules = &self.parts.catalog.rules.redaction;
            let guard = self.one_pass_guard(tool, &answer.bytes);
            let reads = guard
                .as_ref()
                .map(|g| move |text: &str, decoded: bool| g.acts_on(text, decoded));
            let reads = reads.as_ref().map(|f| f as crate::answer::scan::Guard<'_>);
            match crate::answer::scan::scan_guarded(&answer.bytes, rules, secrets, budget, reads)
                .map_err(|_| crate::upstream::not_json(&tool.service, answer.status))?
            {
                Some(scanned) => scanned,
                None => return Ok(None),
            }
        };
        Ok(Some(Exec {
            data: Data::Text(Arc::from(scanned.text)),
            upstream_status: Some(answer.status),
            truncation: scanned.truncation,
            redacted: Some(scanned.redacted),
            ..Exec::default()
        }))
    }

    /// Writes the status a job status read answered to the caller's job record. The
    /// answer goes back whatever the store says: the upstream is the source of truth.
    async fn note_job_status(
        &self,
        tool: &Tool,
        id: &crate::catalog::template::Expr,
        path: &crate::catalog::JsonPath,
        body: &Value,
        scope: &Scope<'_>,
        ctx: &RequestCtx<'_>,
    ) {
        let job = match self.parts.catalog.templates.eval(id, scope) {
            Ok(Some(Value::String(s))) if !s.is_empty() => s,
            Ok(Some(Value::Number(n))) => n.to_string(),
            _ => return,
        };
        let status = match select(path, body) {
            Some(Value::String(s)) if !s.is_empty() => s,
            _ => return,
        };
        let owner = self.parts.job_owner(&tool.service, ctx);
        if let Err(e) = self
            .parts
            .store
            .update_job(&tool.service, &owner, &job, &status, self.parts.now())
            .await
        {
            tracing::error!(error = %e, tool = %tool.full_name, "job status not recorded");
        }
    }
}

/// `not_configured` for a service whose upstream has no address (an HTTP service's base
/// URL, an HTTP MCP server's URL).
pub(super) fn no_base_url(service: &str) -> CallError {
    CallError::new(
        Classification::NotConfigured,
        format!(
            "the `{service}` upstream has no base URL; set TOOL_BROKER_UPSTREAM_{} or [upstreams] {service} in the config file",
            service.to_ascii_uppercase()
        ),
    )
}

/// What a call's arguments ask of its answer's shape (`response.*_arg`).
struct Asked {
    /// The whole redacted answer beside `data` (`raw_arg` true).
    raw: bool,
    /// Only these fields of each item (`fields_arg`, when it names any).
    fields: Option<Vec<String>>,
    /// Compact items (`mode_arg` other than `"full"`, when the tool has one).
    compact: bool,
    /// The item budget lists are cut to; `None` when `compact_arg` is false.
    budget: Option<usize>,
}

impl Asked {
    fn of(plan: &crate::catalog::ResponsePlan, args: &Map<String, Value>, default: usize) -> Self {
        let flag = |name: &Option<String>| name.as_ref().and_then(|n| args.get(n));
        let fields: Option<Vec<String>> = flag(&plan.fields_arg)
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .filter(|f: &Vec<String>| !f.is_empty());
        let compact = fields.is_none()
            && plan.mode_arg.is_some()
            && flag(&plan.mode_arg).and_then(Value::as_str) != Some("full");
        let budget = flag(&plan.budget_arg)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(default);
        Self {
            raw: flag(&plan.raw_arg) == Some(&Value::Bool(true)),
            fields,
            compact,
            budget: (flag(&plan.compact_arg) != Some(&Value::Bool(false))).then_some(budget),
        }
    }

    /// Whether the answer can be written in one pass: nothing selected, redacted by
    /// path, read for pagination or a job, or reshaped; only cut to the budget.
    fn one_pass(&self, plan: &crate::catalog::ResponsePlan) -> bool {
        !self.raw
            && self.fields.is_none()
            && !self.compact
            && plan.data.is_none()
            && plan.redact.is_empty()
            && plan.redact_unless.is_empty()
            && plan.pagination.is_empty()
            && plan.job_id.is_none()
            && plan.job_status.is_none()
    }
}
