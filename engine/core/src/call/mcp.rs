//! Phases 5 to 10 for a tool of an MCP server (docs/mcp-upstreams.md): its preview, its
//! permit at the gate (the same cover, rate limit and reservation as an HTTP request),
//! the `tools/call` sent with the caller's key once the server's listing shows the tool
//! as pinned, and its `CallToolResult` read (`answer::mcp`), redacted and cut as any
//! answer.

use serde_json::{Map, Value, json};

use super::Broker;
use super::gate::{Cleared, Leaving};
use super::policy::Decided;
use crate::answer::redact::redact;
use crate::answer::response::truncate;
use crate::catalog::Tool;
use crate::catalog::mcp::McpPlan;
use crate::confirm::flag::Verdict;
use crate::error::{CallError, Classification};
use crate::run::{Exec, RequestCtx};
use crate::upstream::mcp::{McpCall, McpTarget};

/// The most of a failing tool's own text kept in `details.message`.
const MOST_FAILURE_TEXT: usize = 2048;

impl Broker {
    /// Runs an MCP tool whose arguments were validated, priced and decided: a preview
    /// where the flags say so, else cleared at the gate and sent.
    pub(super) async fn run_mcp(
        &self,
        tool: &Tool,
        plan: &McpPlan,
        args: Map<String, Value>,
        verdict: Verdict,
        decided: Decided<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let call = McpCall {
            tool: plan.tool.clone(),
            arguments: self.forwarded(tool, &args),
        };
        let priced = decided.priced();
        if let Verdict::Preview(reason) = verdict {
            return Ok(self
                .preview_priced(tool, call.preview(), reason, priced, ctx)
                .await);
        }
        let permit = match self.clear(tool, Leaving::Mcp(&call), decided, ctx).await? {
            Cleared::Send(permit) => permit,
            Cleared::Planned(exec) => return Ok(exec),
        };
        let result = self
            .send_mcp(tool, plan, &call, &args, &permit, ctx)
            .await
            .map(|exec| priced.charge(exec));
        if permit.leaves_work() {
            self.finish(permit, &result, ctx).await;
        }
        result
    }

    /// The arguments the server gets: the caller's, without the broker's own
    /// (confirmation, preview and answer-shaping flags).
    fn forwarded(&self, tool: &Tool, args: &Map<String, Value>) -> Map<String, Value> {
        let rules = &self.parts.catalog.rules.confirmation;
        let response = &tool.response;
        let own: Vec<&str> = [
            Some(rules.confirm_arg.as_str()),
            Some(rules.apply_arg.as_str()),
            tool.preview_arg.as_deref(),
            response.compact_arg.as_deref(),
            response.budget_arg.as_deref(),
            response.raw_arg.as_deref(),
            response.mode_arg.as_deref(),
            response.fields_arg.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect();
        args.iter()
            .filter(|(k, _)| !own.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Phases 7 to 9: the key chosen, the call sent through the gate, its result read
    /// and redacted (the rules' names, the tool's paths, every secret of the call).
    async fn send_mcp(
        &self,
        tool: &Tool,
        plan: &McpPlan,
        call: &McpCall,
        args: &Map<String, Value>,
        permit: &super::gate::Permit<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let service = self
            .parts
            .catalog
            .services
            .get(&tool.service)
            .ok_or_else(CallError::internal)?;
        let stdio = service
            .mcp
            .as_ref()
            .is_some_and(|m| m.transport != crate::catalog::mcp::Transport::Http);
        let base_url = self.parts.routes.base_url(&tool.service);
        if !stdio && base_url.is_none() {
            return Err(super::send::no_base_url(&tool.service));
        }
        let keyed = self.key_for(tool, service, args, ctx).await?;
        let mut secrets = self.parts.secrets(ctx.headers);
        if let Some(stored) = &keyed.stored {
            secrets.push(stored.as_str());
        }
        secrets.extend(
            self.gate
                .mcp_secrets(&tool.service)
                .iter()
                .map(String::as_str),
        );
        let target = McpTarget {
            service,
            base_url,
            key: keyed.key(),
            bearer: keyed.bearer(),
            timeout: tool.timeout,
            max_body_bytes: self.parts.catalog.rules.limits.max_upstream_body_bytes,
            trace: ctx.trace,
            relay: ctx.relay,
            sweep: &secrets,
        };
        let redaction = &self.parts.catalog.rules.redaction;
        let result = match self.gate.send_mcp(permit, plan, call, &target).await {
            Ok(result) => result,
            Err(mut e) => {
                if let Some(details) = e.details.as_mut() {
                    redact(details, redaction, &[], &secrets);
                }
                return Err(e);
            }
        };
        let read = crate::answer::mcp::read(result);
        if let Some(text) = read.failed {
            let mut said = Value::String(cut(text));
            redact(&mut said, redaction, &[], &secrets);
            self.guard_answer(tool, &mut said, ctx.guards)?;
            return Err(CallError::new(
                Classification::UpstreamHttpError,
                format!(
                    "`{}` failed on the `{}` MCP server (it answered `isError`); its own words are in details.message",
                    tool.full_name, tool.service
                ),
            )
            .with_details(json!({ "isError": true, "message": said })));
        }
        let mut data = read.data;
        let paths: Vec<&crate::catalog::JsonPath> = tool.response.redact.iter().collect();
        let mut redacted = redact(&mut data, redaction, &paths, &secrets);
        self.guard_answer(tool, &mut data, ctx.guards)?;
        let truncation = truncate(&mut data, tool.item_budget);
        let mut blocks = read.blocks;
        for block in &mut blocks {
            redacted += redact(block, redaction, &[], &secrets);
            // The text a block carries (an embedded resource's); never an image's or a
            // blob's bytes, which a pattern would read as letters.
            if let Some(text) = block.pointer_mut("/resource/text") {
                self.guard_answer(tool, text, ctx.guards)?;
            }
        }
        Ok(Exec {
            data: data.into(),
            truncation,
            redacted: Some(redacted),
            content: (!blocks.is_empty()).then(|| blocks.into_boxed_slice()),
            ..Exec::default()
        })
    }
}

/// A failing tool's text, cut to [`MOST_FAILURE_TEXT`] bytes.
fn cut(mut text: String) -> String {
    if text.len() > MOST_FAILURE_TEXT {
        let mut at = MOST_FAILURE_TEXT;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
        text.push('…');
    }
    text
}
