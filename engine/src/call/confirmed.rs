//! A write under its caller's confirmation mode (decision 008): flags, a bound
//! token, or a person's approval (the approval page or MCP elicitation).

use serde_json::{Map, Value, json};

use super::{Args, Broker, Priced};
use crate::caller::Principal;
use crate::catalog::descriptor::{Class, ConfirmationMode, Risk};
use crate::catalog::{Action, Tool};
use crate::config::WriteConfirmation;
use crate::error::{CallError, Classification};
use crate::run::{Exec, RequestCtx, Want};

impl Broker {
    /// How the door's call is confirmed: a write under its caller's mode, and any call
    /// costing more than a binding budget's `confirm_over` under the deployment's
    /// strongest (a person approves a big spend, even of a read); the stricter of the
    /// two. `Flag`: the spec's flags decide, as for any read.
    pub(super) fn confirmation_of(
        &self,
        tool: &Tool,
        principal: &Principal,
        priced: Priced<'_>,
    ) -> WriteConfirmation {
        let own = if tool.risk == Risk::Write {
            principal.confirmation
        } else {
            WriteConfirmation::Flag
        };
        if self.over_confirm_limit(principal, priced) {
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
        (arguments, priced, mode): (Map<String, Value>, Priced<'_>, WriteConfirmation),
        (token, approval_id): (Option<String>, Option<String>),
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let door = |arguments| Args::Door(arguments, priced);
        if mode == WriteConfirmation::Flag {
            return self.execute_for_envelope(tool, door(arguments), ctx).await;
        }
        let rules = &self.catalog.rules.confirmation;
        let map = Some(&arguments);
        let digest = crate::confirm::bound::digest(tool, map, rules);
        let caller = self.job_owner(&tool.service, ctx);
        if mode == WriteConfirmation::Human {
            let spend = crate::confirm::bound::asks_to_run(tool, map, rules);
            if let Some(id) = approval_id {
                crate::confirm::approval::redeem(
                    self.confirming(),
                    tool,
                    ctx,
                    &caller,
                    &digest,
                    &id,
                    spend,
                )
                .await?;
                return self.execute_for_envelope(tool, door(arguments), ctx).await;
            }
            if !spend {
                // A preview (or the spec's own refusal without its flag): free.
                return self.execute_for_envelope(tool, door(arguments), ctx).await;
            }
            let elicitation = ctx.elicitation.filter(|e| e.applies());
            if let Some(e) = elicitation.filter(|e| e.state.is_some()) {
                crate::confirm::approval::elicit::answer(
                    self.confirming(),
                    tool,
                    ctx,
                    (&caller, &digest),
                    e,
                )
                .await?;
                return self.execute_for_envelope(tool, door(arguments), ctx).await;
            }
            // What the person will see: the preview of exactly this request.
            let preview = self.approval_preview(tool, door(arguments), ctx).await?;
            return Err(match elicitation {
                Some(_) => {
                    crate::confirm::approval::elicit::ask(
                        self.confirming(),
                        tool,
                        ctx,
                        &caller,
                        &digest,
                        &preview,
                    )
                    .await
                }
                None => {
                    crate::confirm::approval::ask(
                        self.confirming(),
                        tool,
                        ctx,
                        &caller,
                        &digest,
                        &preview,
                    )
                    .await
                }
            });
        }
        if let Some(token) = token {
            let spend = crate::confirm::bound::asks_to_run(tool, map, rules);
            crate::confirm::bound::redeem(self.confirming(), tool, &caller, &digest, &token, spend)
                .await?;
            return self.execute_for_envelope(tool, door(arguments), ctx).await;
        }
        // No token: the preview and a token for exactly this request.
        let result = self.execute_unconfirmed(tool, door(arguments), ctx).await;
        let refused_unconfirmed =
            matches!(&result, Err(e) if e.classification == Classification::ConfirmationRequired);
        if result.as_ref().is_ok_and(|e| !e.dry_run) || (result.is_err() && !refused_unconfirmed) {
            return result;
        }
        let issued =
            crate::confirm::bound::issue(self.confirming(), tool, &caller, &digest).await?;
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
                exec.materialize();
                if let Value::Object(data) = &mut exec.data {
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

    /// A write as if unconfirmed: an HTTP tool's preview whatever its flags say; a hook
    /// run without the flags, so it answers its own unconfirmed preview or refusal.
    async fn execute_unconfirmed(
        &self,
        tool: &Tool,
        mut arguments: Args<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        if matches!(tool.action, Action::Hook(_))
            && let Args::Door(map, _) = &mut arguments
        {
            let rules = &self.catalog.rules.confirmation;
            map.remove(&rules.confirm_arg);
            map.remove(&rules.apply_arg);
        }
        self.execute_as(tool, arguments, ctx, true, Want::Text)
            .await
    }

    /// What an approver is shown: the tool's preview of this request (a hook tool's
    /// arguments when it has no request preview), with the tool's words.
    async fn approval_preview(
        &self,
        tool: &Tool,
        arguments: Args<'_>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Value, CallError> {
        let shown_args = match &arguments {
            Args::Door(map, _) => Value::Object(map.clone()),
            Args::Raw(value) => value.clone().unwrap_or(Value::Null),
        };
        let request = match self.execute_unconfirmed(tool, arguments, ctx).await {
            Ok(exec) if exec.dry_run => exec.data.get("request").cloned().unwrap_or(Value::Null),
            Ok(_) => Value::Null,
            Err(e) if e.classification == Classification::ConfirmationRequired => Value::Null,
            Err(e) => return Err(e),
        };
        let mut arguments = shown_args;
        let secrets = self.secrets(ctx.headers);
        crate::answer::redact::redact(&mut arguments, &self.catalog.rules.redaction, &[], &secrets);
        let mut request = request;
        crate::answer::redact::redact(&mut request, &self.catalog.rules.redaction, &[], &secrets);
        Ok(json!({
            "title": tool.title,
            "risk": tool.risk.as_str(),
            "classes": json!(tool.classes),
            "consumesCredits": tool.classes.iter().any(|c| matches!(c, Class::Spend | Class::Credits)),
            "request": request,
            "arguments": arguments,
        }))
    }
}
