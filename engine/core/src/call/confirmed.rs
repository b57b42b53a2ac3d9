//! Phase 5, confirm: a write under its caller's confirmation mode (decision 008):
//! flags, a bound token, or a person's approval (the approval page or MCP
//! elicitation).
//!
//! A write tool that runs others (a dispatch, steps, polling, the allowlisted
//! endpoint) is confirmed by its plan (decision 017): its preview runs it with every
//! write planned and none sent, lists those writes, and binds the token or the approval
//! to them; once confirmed, the plan is read again, a changed one is refused with
//! nothing sent, and the run lets exactly the planned writes through, each once. A plan
//! without writes needs no confirmation: its run is the answer.

use serde_json::{Map, Value, json};

use super::Broker;
use super::admit::Admitted;
use super::execute::{Args, RunAs};
use super::price::Priced;
use super::resolve::Brought;
use crate::caller::Caller;
use crate::catalog::descriptor::{Class, ConfirmationMode, Risk};
use crate::catalog::{Action, Tool};
use crate::config::WriteConfirmation;
use crate::confirm::Bind;
use crate::error::{CallError, Classification};
use crate::run::cover::{Cover, Plan};
use crate::run::{Elicitation, Exec, RequestCtx};

/// What a confirmation of one request is bound to, worked out once.
struct Binding {
    /// sha256 of the arguments a confirmation covers ([`crate::confirm::bound::digest`]).
    digest: String,
    /// Whether the call asks to run (a confirmation is spent), not only to preview.
    spend: bool,
    /// Whose call it is (the job owner).
    caller: String,
}

/// A plan a confirmation is asked for: how, for whom, and bound to what.
#[derive(Clone, Copy)]
struct Asked<'a> {
    /// The mode that confirms it (`bound` or `human`).
    mode: WriteConfirmation,
    /// The writes its plan pass recorded.
    plan: &'a Plan,
    /// Whose call it is (the job owner).
    caller: &'a str,
    /// What the confirmation is bound to: the arguments and the plan.
    bind: Bind<'a>,
    /// The call's validated arguments (what an approver is shown).
    arguments: &'a Map<String, Value>,
}

/// The confirmation a call of a tool that runs others brought.
enum Given<'c> {
    /// A confirmation token (mode `bound`).
    Token(&'c str),
    /// An approval's id (mode `human`, the approval page).
    Approval(&'c str),
    /// The person's answer in the MCP client (mode `human`, elicitation).
    Elicited(&'c Elicitation),
}

impl Broker {
    /// How the door's call is confirmed: a write under its caller's mode, and any call
    /// costing more than a binding budget's `confirm_over` under the deployment's
    /// strongest (a person approves a big spend, even of a read); the stricter of the
    /// two. `Flag`: the contract's flags decide, as for any read.
    pub(super) fn confirmation_of(
        &self,
        tool: &Tool,
        caller: &Caller,
        priced: Priced<'_>,
    ) -> WriteConfirmation {
        let own = if tool.risk == Risk::Write {
            caller.confirmation
        } else {
            WriteConfirmation::Flag
        };
        if self.over_confirm_limit(caller, priced) {
            own.max(self.confirmations.strongest())
        } else {
            own
        }
    }

    /// Runs the door's call under its confirmation `mode` ([`Broker::confirmation_of`],
    /// decision 008). Under `bound`, a call without a token answers its preview
    /// (whatever the flags say) and a token bound to it; a call with one runs only if
    /// the token holds, and spends it when the call asks to run. Under `human`, a
    /// person approves. `Flag` runs it as it is.
    pub(super) async fn execute_confirmed(
        &self,
        tool: &Tool,
        admitted: Admitted<'_>,
        brought: &Brought,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let Admitted {
            args: arguments,
            decided,
            mode,
        } = admitted;
        if mode == WriteConfirmation::Flag {
            return self
                .run_tool(tool, Args::Door(arguments, decided), ctx, RunAs::Door)
                .await;
        }
        if matches!(tool.action, Action::Hook(_)) && tool.risk == Risk::Write {
            let admitted = Admitted {
                args: arguments,
                decided,
                mode,
            };
            return self.execute_planned(tool, admitted, brought, ctx).await;
        }
        let rules = &self.parts.catalog.rules.confirmation;
        let binding = Binding {
            digest: crate::confirm::bound::digest(tool, Some(&arguments), rules),
            spend: crate::confirm::bound::asks_to_run(tool, Some(&arguments), rules),
            caller: self.parts.job_owner(&tool.service, ctx),
        };
        let door = Args::Door(arguments, decided);
        if mode == WriteConfirmation::Human {
            self.confirm_by_person(tool, door, &binding, brought, ctx)
                .await
        } else {
            self.confirm_by_token(tool, door, &binding, brought, ctx)
                .await
        }
    }

    /// Mode `human`: an approval's id or the MCP client's answer lets the call run once;
    /// without one, a person is asked (the approval page, or the MCP client where it can
    /// ask) with the preview of exactly this request, and nothing runs. A call that only
    /// previews is free.
    async fn confirm_by_person(
        &self,
        tool: &Tool,
        door: Args<'_>,
        binding: &Binding,
        brought: &Brought,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        // Once confirmed, the door's own request is covered; nothing else is.
        let confirmed = ctx.pass(Cover::Door);
        let (bind, caller) = (Bind::args(&binding.digest), &binding.caller);
        let cx = self.confirming();
        if let Some(id) = &brought.approval_id {
            crate::confirm::approval::redeem(cx, tool, ctx, caller, bind, id, binding.spend)
                .await?;
            return self.run_tool(tool, door, &confirmed, RunAs::Door).await;
        }
        if !binding.spend {
            // A preview (or the contract's own refusal without its flag): free.
            return self.run_tool(tool, door, ctx, RunAs::Door).await;
        }
        let elicitation = ctx.elicitation.filter(|e| e.applies());
        if let Some(e) = elicitation.filter(|e| e.state.is_some()) {
            crate::confirm::approval::elicit::answer(cx, tool, ctx, caller, bind, e).await?;
            return self.run_tool(tool, door, &confirmed, RunAs::Door).await;
        }
        // What the person will see: the preview of exactly this request.
        let preview = self.approval_preview(tool, door, ctx).await?;
        Err(self.ask_person(tool, ctx, caller, bind, &preview).await)
    }

    /// Asks a person to approve `preview`: in the MCP client where it can ask, else on
    /// the approval page. The answer is the refusal that says where.
    async fn ask_person(
        &self,
        tool: &Tool,
        ctx: &RequestCtx<'_>,
        caller: &str,
        bind: Bind<'_>,
        preview: &Value,
    ) -> CallError {
        let cx = self.confirming();
        match ctx.elicitation.filter(|e| e.applies()) {
            Some(_) => {
                crate::confirm::approval::elicit::ask(cx, tool, ctx, caller, bind, preview).await
            }
            None => crate::confirm::approval::ask(cx, tool, ctx, caller, bind, preview).await,
        }
    }

    /// Mode `bound`: a token bound to exactly this request lets it run (spent when the
    /// call asks to run); without one, the call answers its preview and a token for it.
    async fn confirm_by_token(
        &self,
        tool: &Tool,
        door: Args<'_>,
        binding: &Binding,
        brought: &Brought,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let rules = &self.parts.catalog.rules.confirmation;
        let (bind, caller) = (Bind::args(&binding.digest), binding.caller.as_str());
        if let Some(token) = &brought.token {
            let cx = self.confirming();
            crate::confirm::bound::redeem(cx, tool, caller, bind, token, binding.spend).await?;
            // Once confirmed, the door's own request is covered; nothing else is.
            return self
                .run_tool(tool, door, &ctx.pass(Cover::Door), RunAs::Door)
                .await;
        }
        // No token: the preview and a token for exactly this request.
        let result = self.execute_unconfirmed(tool, door, ctx).await;
        let refused_unconfirmed =
            matches!(&result, Err(e) if e.classification == Classification::ConfirmationRequired);
        if result.as_ref().is_ok_and(|e| !e.dry_run) || (result.is_err() && !refused_unconfirmed) {
            return result;
        }
        let issued = crate::confirm::bound::issue(self.confirming(), tool, caller, bind).await?;
        with_token(tool, rules, result, &issued)
    }

    /// A call as if unconfirmed: an HTTP tool's preview whatever its flags say; a local
    /// tool's arguments, not run (a read that costs more than a budget lets pass
    /// unconfirmed: its run is what waits for the confirmation).
    async fn execute_unconfirmed(
        &self,
        tool: &Tool,
        arguments: Args<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        if matches!(tool.action, Action::Hook(_)) {
            let mut shown = arguments.shown();
            self.redact_shown(&mut shown, ctx.headers);
            return Ok(Exec {
                data: json!({ "dryRun": true, "arguments": shown }).into(),
                dry_run: true,
                summary: Some(format!("{} not run: nothing was sent", tool.full_name)),
                ..Exec::default()
            });
        }
        self.run_tool(tool, arguments, ctx, RunAs::Preview).await
    }

    /// A write tool that runs others, under a token or a person (decision 017). A
    /// confirmation it brought is checked first (not spent); then the plan pass runs it
    /// with every write planned and none sent (its reads go). Without writes, that run
    /// is the answer. Without a confirmation, the plan is what the caller gets to show
    /// (with a token) or what a person is asked to approve. With one, the confirmation
    /// must be for exactly this plan, is spent, and the confirmed pass lets the plan's
    /// writes through, in order, each once.
    async fn execute_planned(
        &self,
        tool: &Tool,
        admitted: Admitted<'_>,
        brought: &Brought,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let Admitted {
            args: arguments,
            decided,
            mode,
        } = admitted;
        let rules = &self.parts.catalog.rules.confirmation;
        let digest = crate::confirm::bound::digest(tool, Some(&arguments), rules);
        let caller = self.parts.job_owner(&tool.service, ctx);
        let elicited = ctx.elicitation.filter(|e| e.applies() && e.state.is_some());
        let given = match (mode, &brought.token, &brought.approval_id, elicited) {
            (WriteConfirmation::Bound, Some(token), ..) => Some(Given::Token(token)),
            (WriteConfirmation::Human, _, Some(id), _) => Some(Given::Approval(id)),
            (WriteConfirmation::Human, _, None, Some(e)) => Some(Given::Elicited(e)),
            _ => None,
        };
        if let Some(given) = &given {
            let before = Bind::before_plan(&digest);
            self.check_given(tool, ctx, &caller, before, given, false)
                .await?;
        }
        let plan = Plan::default();
        let run = self
            .run_tool(
                tool,
                Args::Door(arguments.clone(), decided.clone()),
                &ctx.pass(Cover::Plan(&plan)),
                RunAs::Door,
            )
            .await;
        if plan.is_empty() {
            // Nothing to confirm: every request it sent was a read.
            return run;
        }
        run?;
        let plan_digest = plan.digest();
        let bind = Bind::with_plan(&digest, plan_digest.as_deref());
        let Some(given) = given else {
            let asked = Asked {
                mode,
                plan: &plan,
                caller: &caller,
                bind,
                arguments: &arguments,
            };
            return self.ask_for_plan(tool, &asked, ctx).await;
        };
        self.check_given(tool, ctx, &caller, bind, &given, true)
            .await?;
        let confirmed = Plan::of(plan.writes());
        self.run_tool(
            tool,
            Args::Door(arguments, decided),
            &ctx.pass(Cover::Confirmed(&confirmed)),
            RunAs::Door,
        )
        .await
    }

    /// Checks the confirmation a call brought against `bind`; with `spend`, uses it.
    async fn check_given(
        &self,
        tool: &Tool,
        ctx: &RequestCtx<'_>,
        caller: &str,
        bind: Bind<'_>,
        given: &Given<'_>,
        spend: bool,
    ) -> Result<(), CallError> {
        let cx = self.confirming();
        match given {
            Given::Token(token) => {
                crate::confirm::bound::redeem(cx, tool, caller, bind, token, spend).await
            }
            Given::Approval(id) => {
                crate::confirm::approval::redeem(cx, tool, ctx, caller, bind, id, spend).await
            }
            Given::Elicited(e) if spend => {
                crate::confirm::approval::elicit::answer(cx, tool, ctx, caller, bind, e).await
            }
            Given::Elicited(e) => {
                crate::confirm::approval::elicit::check(cx, tool, ctx, caller, bind, e).await
            }
        }
    }

    /// The plan's writes as a preview shows them: tool, method, path, query and body,
    /// redacted as any preview is.
    fn shown_plan(&self, plan: &Plan, ctx: &RequestCtx<'_>) -> Value {
        Value::Array(
            plan.writes()
                .into_iter()
                .map(|write| {
                    let mut request = write.request;
                    self.redact_shown(&mut request, ctx.headers);
                    let mut shown = json!({ "tool": write.tool });
                    if let (Value::Object(shown), Value::Object(request)) = (&mut shown, request) {
                        shown.extend(request);
                    }
                    shown
                })
                .collect(),
        )
    }

    /// A plan without a confirmation: under `bound`, the plan and a token bound to it;
    /// under `human`, a person is asked to approve it (the approval page, or the MCP
    /// client where it can ask).
    async fn ask_for_plan(
        &self,
        tool: &Tool,
        asked: &Asked<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let Asked {
            mode,
            plan,
            caller,
            bind,
            arguments,
        } = *asked;
        let shown = self.shown_plan(plan, ctx);
        let count = shown.as_array().map_or(0, Vec::len);
        if mode == WriteConfirmation::Bound {
            let issued =
                crate::confirm::bound::issue(self.confirming(), tool, caller, bind).await?;
            let next = format!(
                "This deployment confirms writes by token. Show the user this plan of {count} write{}; only after they approve it, call `{}` again with the same arguments and `confirmationToken` set to the token here (single use, valid until {}). A plan that changed by then is refused and nothing is sent.",
                if count == 1 { "" } else { "s" },
                tool.full_name,
                issued.expires_at
            );
            return Ok(Exec {
                data: json!({
                    "dryRun": true,
                    "plan": shown,
                    "confirmationToken": issued.token,
                    "confirmationExpiresAt": issued.expires_at.to_string(),
                    "nextAction": next,
                })
                .into(),
                dry_run: true,
                token_issued: true,
                next_action: Some(next),
                summary: Some(format!(
                    "plan of {} ({count} write{}): nothing was sent",
                    tool.full_name,
                    if count == 1 { "" } else { "s" }
                )),
                ..Exec::default()
            });
        }
        let mut shown_args = Value::Object(arguments.clone());
        self.redact_shown(&mut shown_args, ctx.headers);
        let mut preview = approver_view(tool, Value::Null, shown_args);
        preview["plan"] = shown;
        Err(self.ask_person(tool, ctx, caller, bind, &preview).await)
    }

    /// What an approver is shown: the tool's preview of this request (a hook tool's
    /// arguments when it has no request preview), with the tool's words.
    async fn approval_preview(
        &self,
        tool: &Tool,
        arguments: Args<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Value, CallError> {
        let shown_args = arguments.shown();
        let request = match self.execute_unconfirmed(tool, arguments, ctx).await {
            Ok(mut exec) if exec.dry_run => exec
                .data
                .value_mut()
                .get_mut("request")
                .map_or(Value::Null, Value::take),
            Ok(_) => Value::Null,
            Err(e) if e.classification == Classification::ConfirmationRequired => Value::Null,
            Err(e) => return Err(e),
        };
        let (mut arguments, mut request) = (shown_args, request);
        self.redact_shown(&mut arguments, ctx.headers);
        self.redact_shown(&mut request, ctx.headers);
        Ok(approver_view(tool, request, arguments))
    }
}

/// A preview (or the refusal a flag-less call gets) with the token issued for exactly
/// its request, and what to do with it.
fn with_token(
    tool: &Tool,
    rules: &crate::catalog::rules::Confirmation,
    result: Result<Exec, CallError>,
    issued: &crate::confirm::bound::Issued,
) -> Result<Exec, CallError> {
    let next = format!(
        "This deployment confirms writes by token. Show the user this preview; only after they approve it, call `{}` again with the same arguments, `confirmationToken` set to the token here{} (single use, valid until {}).",
        tool.full_name,
        match tool.confirmation {
            ConfirmationMode::ConfirmApply =>
                format!(" and `{}` \"{}\"", rules.apply_arg, rules.apply_phrase),
            ConfirmationMode::None | ConfirmationMode::Auto => String::new(),
            _ => format!(" and `{}=true`", rules.confirm_arg),
        },
        issued.expires_at
    );
    match result {
        Ok(mut exec) => {
            if let Value::Object(data) = exec.data.value_mut() {
                data.insert("confirmationToken".into(), json!(issued.token));
                data.insert(
                    "confirmationExpiresAt".into(),
                    json!(issued.expires_at.to_string()),
                );
                data.insert("nextAction".into(), json!(next));
            }
            exec.next_action = Some(next);
            exec.token_issued = true;
            Ok(exec)
        }
        Err(mut e) => {
            e.message = next;
            e.details = Some(json!({
                "confirmationToken": issued.token,
                "confirmationExpiresAt": issued.expires_at.to_string(),
            }));
            Err(e)
        }
    }
}

/// What an approver is shown of a call of `tool`: its words, its risk and classes, the
/// request it would send and its arguments (both redacted already).
fn approver_view(tool: &Tool, request: Value, arguments: Value) -> Value {
    json!({
        "title": tool.title,
        "risk": tool.risk.as_str(),
        "classes": json!(tool.classes),
        "consumesCredits": tool.classes.iter().any(|c| matches!(c, Class::Spend | Class::Credits)),
        "request": request,
        "arguments": arguments,
    })
}
