//! Phase 12, envelope: the call's answer in its service's envelope (standard or
//! portal, decision 002), with `meta` filled from the tool and its result; the call
//! counted, logged and its span finished. (The door then gives a held idempotency key
//! the answer.)

use serde_json::Value;

use super::Broker;
use super::admit::Ruling;
use super::resolve::Call;
use super::settle::Settled;
use super::span::{cost_span, elapsed_ms, result_span, tool_span};
use crate::answer::envelope::{self, Enveloped, Meta, Portal};
use crate::catalog::Tool;
use crate::catalog::descriptor::{Class, EnvelopeKind};
use crate::error::CallError;
use crate::run::Exec;

impl Broker {
    /// Phase 12: the envelope of a settled call; the metrics, the log line and the
    /// span. Takes the call's ids from `call`.
    pub(super) fn respond(
        &self,
        call: &mut Call<'_>,
        ruling: &Ruling,
        settled: Settled,
    ) -> Enveloped {
        let tool = call.tool;
        let Settled {
            result,
            failed_cost,
            duration_ms,
        } = settled;
        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) => e.classification.as_str(),
        };
        self.parts
            .metrics
            .record_call(&tool.full_name, outcome, duration_ms);
        let guards = self.guards_acted(&call.guards);
        tracing::info!(
            tool = %tool.full_name,
            caller = %call.caller.name,
            outcome,
            duration_ms,
            trace_id = %call.trace.id,
            "tool call"
        );
        call.trace.finish(
            || format!("tools/call {}", tool.full_name),
            |span| {
                tool_span(span, call.endpoint, call.caller, &call.request_id, tool);
                result_span(span, &result);
                let cost = match &result {
                    Ok(exec) => exec.cost.as_deref(),
                    Err(_) => failed_cost.as_deref(),
                };
                if let Some(cost) = cost {
                    cost_span(span, cost);
                }
                if !guards.is_empty() {
                    span.text("tool_broker.guards", guards.join(","));
                }
                if let Some(ids) = &ruling.policies {
                    let decision = if ruling.refused { "deny" } else { "allow" };
                    span.text("tool_broker.policy.decision", decision);
                    span.text("tool_broker.policy.ids", ids.join(","));
                }
            },
        );
        let meta = Meta {
            request_id: std::mem::take(&mut call.request_id),
            trace_id: std::mem::take(&mut call.trace.id),
            duration_ms,
            cost: failed_cost,
            guards,
            ..Meta::default()
        };
        self.envelope(tool, meta, result)
    }

    /// The ids of the guard rules that acted on the call (`meta.guards`, the span's
    /// `tool_broker.guards`), each counted once per direction in the metrics.
    fn guards_acted(&self, acted: &crate::catalog::guards::Acted) -> Vec<std::sync::Arc<str>> {
        use crate::catalog::guards::LooksAt;
        let all = acted.on(LooksAt::Both);
        if all.is_empty() {
            return Vec::new();
        }
        let guards = &self.parts.guards.guards;
        for (direction, name) in [
            (LooksAt::Arguments, "arguments"),
            (LooksAt::Answers, "answers"),
        ] {
            for i in acted.on(direction).iter() {
                let Some(rule) = guards.rules.get(i) else {
                    continue;
                };
                let action = rule.action.as_str();
                self.parts.metrics.record_guard(&rule.id, name, action);
            }
        }
        guards.ids(all)
    }

    /// A repeat of a finished write, answered from the store: counted, logged and
    /// traced as replayed.
    pub(super) fn replayed(&self, call: &Call<'_>, response: Enveloped) -> Enveloped {
        let tool = call.tool;
        self.parts
            .metrics
            .record_call(&tool.full_name, "replayed", elapsed_ms(call.started));
        tracing::info!(tool = %tool.full_name, caller = %call.caller.name, "idempotent repeat answered from the store");
        call.trace.finish(
            || format!("tools/call {}", tool.full_name),
            |span| {
                tool_span(span, call.endpoint, call.caller, &call.request_id, tool);
                span.text("tool_broker.classification", "replayed");
            },
        );
        response
    }

    /// The envelope of a finished call (portal or standard, by the tool's service);
    /// `meta` holds the call's ids, duration and a failed call's cost.
    fn envelope(&self, tool: &Tool, mut meta: Meta, result: Result<Exec, CallError>) -> Enveloped {
        if self
            .parts
            .catalog
            .services
            .get(&tool.service)
            .map(|s| s.envelope)
            == Some(EnvelopeKind::Portal)
        {
            return self.portal_response(&tool.full_name, &meta.trace_id, result);
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
        match result {
            Ok(exec) => {
                meta.dry_run = exec.dry_run;
                meta.upstream_status = exec.upstream_status;
                meta.pagination = exec.pagination;
                meta.truncation = exec.truncation;
                meta.redacted = exec.redacted;
                meta.dispatched_to = exec.dispatched_to;
                meta.cost = exec.cost;
                meta.content = exec.content;
                envelope::standard_ok_data(exec.data, meta)
            }
            Err(err) => {
                meta.upstream_status = err.upstream_status;
                envelope::standard_err(&err, meta, &self.parts.catalog.rules)
            }
        }
    }

    /// The portal envelope of a call of `name` (a `portal.` tool, or one a portal
    /// name did not resolve).
    pub(super) fn portal_response(
        &self,
        name: &str,
        trace_id: &str,
        result: Result<Exec, CallError>,
    ) -> Enveloped {
        let (service_id, tool_name) = name.split_once('.').unwrap_or(("portal", name));
        let rules = &self.parts.catalog.rules;
        match result {
            Ok(exec) => envelope::portal(
                Portal {
                    service_id: service_id.to_string(),
                    tool_name: tool_name.to_string(),
                    trace_id: trace_id.to_string(),
                    summary: exec.summary.unwrap_or_default(),
                    data: exec.data,
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
}
