//! A tool's run, once its call is confirmed (phase 5, `confirmed.rs`) or, for a tool
//! run inside another, as it is asked for: the tenancy route, the preconditions, the
//! flags' verdict; then a hook runs, or the request is rendered (phase 7), cleared at
//! the gate (phase 6: its permit and reservation), sent and read (phases 7 to 9,
//! `send.rs`), and its permit ended (phase 10: settled, an inner write audited).

use serde_json::{Map, Value, json};

use super::Broker;
use super::gate;
use super::policy::Decided;
use super::price::Priced;
use super::send::Exchange;
use crate::catalog::descriptor::ConfirmationMode;
use crate::catalog::template::Scope;
use crate::catalog::{Action, Tool};
use crate::confirm::flag::{PreviewReason, Verdict, decide};
use crate::error::CallError;
use crate::hooks;
use crate::run::{Exec, RequestCtx, Want};
use crate::upstream::render::render;

/// A call's arguments on their way to [`Broker::run_tool`].
pub(super) enum Args<'p> {
    /// The door's: validated (defaults in), priced and decided by the policies there.
    Door(Map<String, Value>, Decided<'p>),
    /// Those of a tool another runs (a hook's step, a portal read), as it passed them:
    /// validated, priced and decided when run (phases 3 and 4, as at the door).
    Inner(Option<Value>),
}

impl Args<'_> {
    /// The arguments as a value, for a preview that shows them.
    pub(super) fn shown(&self) -> Value {
        match self {
            Self::Door(map, _) => Value::Object(map.clone()),
            Self::Inner(value) => value.clone().unwrap_or(Value::Null),
        }
    }
}

/// How a tool runs, and what its result is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RunAs {
    /// Run; its result is read by the tool that ran it ([`Want::Value`]).
    Inner,
    /// Run; its result goes straight into the door's envelope (it may be JSON text,
    /// [`Want::Text`]).
    Door,
    /// Its preview whatever its flags say (HTTP tools; hooks answer as they are),
    /// into the door's envelope.
    Preview,
}

impl Broker {
    /// Runs a resolved tool inside another (a hook's step, a portal read): its
    /// arguments validated and priced (phase 3) and decided (phase 4) under the door's
    /// policy set, then run under the door's cover. The caller's key or role fields
    /// are checked by the hook that names the tool (phase 2).
    pub async fn execute(
        &self,
        tool: &Tool,
        arguments: Option<Value>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        self.run_tool(tool, Args::Inner(arguments), ctx, RunAs::Inner)
            .await
    }

    /// Runs `tool` with `arguments` as `run_as` says.
    pub(super) async fn run_tool(
        &self,
        tool: &Tool,
        arguments: Args<'_>,
        ctx: &RequestCtx<'_>,
        run_as: RunAs,
    ) -> Result<Exec, CallError> {
        let mut fired = crate::catalog::guards::Set::EMPTY;
        let (mut args, door) = match arguments {
            Args::Door(args, decided) => (args, Some(decided)),
            Args::Inner(mut arguments) => {
                fired = self.guard_arguments(tool, &mut arguments, ctx.guards)?;
                (super::args::prepare(tool, arguments)?, None)
            }
        };
        let routed = crate::call::tenancy::route(self, tool, &mut args, ctx.headers)?;
        // Built only if a template reads it (`routed_context` copies the arguments).
        let (arguments, routed_to) = (&args, routed.as_deref());
        let scope = Scope::lazy(arguments, move || {
            self.parts
                .routed_context(tool, arguments, ctx.headers, routed_to)
        });
        let templates = &self.parts.catalog.templates;
        for rule in &tool.require {
            let ok = templates.truthy(&rule.check, &scope).map_err(|e| {
                tracing::error!(template = %e.name, kind = %e.kind, "precondition failed to evaluate");
                CallError::internal()
            })?;
            if !ok {
                return Err(CallError::new(rule.classification, rule.message.clone()));
            }
        }
        let verdict = if run_as == RunAs::Preview {
            Verdict::Preview(PreviewReason::NotConfirmed)
        } else {
            self.flag_verdict(tool, &args, ctx)?
        };
        let decided = match door {
            Some(decided) => decided,
            None => {
                let priced = self.estimate(tool, &args)?;
                let dry_run = matches!(verdict, Verdict::Preview(_));
                self.inner_policy(tool, ctx, &args, dry_run, priced, fired)?
            }
        };
        let priced = decided.priced();
        let plan = match &tool.action {
            Action::Hook(hook) => {
                drop(scope);
                // A hook running other tools is charged for the priced ones it runs,
                // each where its request leaves (the gate).
                return hooks::run(*hook, self, &self.hooks, tool, args, ctx)
                    .await
                    .map(|exec| priced.charge(exec));
            }
            Action::Mcp(mcp) => {
                drop(scope);
                // Boxed: an MCP exchange's future is deep, and a call's future holds
                // it only on this path.
                return Box::pin(self.run_mcp(tool, mcp, args, verdict, decided, ctx)).await;
            }
            Action::Http(plan) => plan,
        };
        // 7. render.
        let request = render(plan, templates, &scope)?;
        if let Verdict::Preview(reason) = verdict {
            return Ok(self
                .preview_priced(tool, request.preview(), reason, priced, ctx)
                .await);
        }
        // 6. reserve: the request's permit.
        let permit = match self
            .clear(tool, gate::Leaving::Http(&request), decided, ctx)
            .await?
        {
            gate::Cleared::Send(permit) => permit,
            gate::Cleared::Planned(exec) => return Ok(exec),
        };
        // 7. send; 8. read the answer; 9. redact.
        let want = if run_as == RunAs::Inner {
            Want::Value
        } else {
            Want::Text
        };
        let exchange = Exchange {
            request: &request,
            args: &args,
            scope: &scope,
            max_response: None,
            want,
        };
        // ... and 10. settle its reservation (and audit a write inside another tool).
        self.send_cleared(tool, &exchange, permit, priced, ctx)
            .await
    }

    /// Whether a call runs, answers a preview or is refused, by its tool's confirmation
    /// rule and the flags (decision 005); under a token or an approval for the whole
    /// call ([`crate::run::cover::Cover::by_the_door`]) the flags decide nothing, and
    /// only an explicit preview is one.
    fn flag_verdict(
        &self,
        tool: &Tool,
        args: &Map<String, Value>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Verdict, CallError> {
        if !ctx.cover.by_the_door() {
            return decide(tool, args, &self.parts.catalog.rules.confirmation);
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

    /// A preview with its price: the estimate, and where budgets bind the caller, what
    /// they have left.
    pub(super) async fn preview_priced(
        &self,
        tool: &Tool,
        request: Value,
        reason: PreviewReason,
        priced: Priced<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Exec {
        let mut exec = priced.charge(self.preview(tool, request, reason));
        if let Some(cost) = exec
            .cost
            .as_mut()
            .filter(|_| !self.parts.budgets.is_empty())
        {
            cost.budgets = crate::run::budgets::standing(
                &self.parts,
                ctx.caller,
                Some(&cost.unit),
                Some(cost.estimate.unwrap_or(u64::MAX)),
            )
            .await;
        }
        exec
    }

    /// A dry run's answer: the request that would be sent (redacted), and what to do
    /// to run it.
    fn preview(&self, tool: &Tool, mut request: Value, reason: PreviewReason) -> Exec {
        // Credential-like fields of the request (an `apiKey` the caller passes on to the
        // upstream) are shown redacted, as everywhere else in an answer.
        let redacted = crate::answer::redact::redact(
            &mut request,
            &self.parts.catalog.rules.redaction,
            &[],
            &[],
        );
        let needs_confirm = matches!(
            tool.confirmation,
            ConfirmationMode::ConfirmFlag | ConfirmationMode::DryRunDefault
        );
        let next = self.parts.render_shared(
            "dry_run_next_action.j2",
            &json!({
                "tool": { "name": tool.full_name, "title": tool.title },
                "confirm_arg": self.parts.catalog.rules.confirmation.confirm_arg,
                "preview_arg": (reason == PreviewReason::Requested).then_some(tool.preview_arg.clone()).flatten(),
                "needs_confirm": needs_confirm,
            }),
        );
        Exec {
            data: crate::answer::envelope::object([
                ("dryRun", Value::Bool(true)),
                ("request", request),
                ("nextAction", Value::String(next.clone())),
            ])
            .into(),
            dry_run: true,
            redacted: (redacted > 0).then_some(redacted),
            next_action: Some(next),
            summary: Some(format!("dry run of {}: nothing was sent", tool.full_name)),
            ..Exec::default()
        }
    }
}
