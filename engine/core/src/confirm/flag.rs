//! Confirmation and dry-run (decision 005): decides, before anything is rendered
//! or sent, whether a call runs, answers a preview, or is refused.

use serde_json::{Map, Value};

use crate::catalog::Tool;
use crate::catalog::descriptor::ConfirmationMode;
use crate::catalog::rules::Confirmation;
use crate::error::{CallError, Classification};

/// What to do with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Send it.
    Run,
    /// Answer a dry-run preview; send nothing.
    Preview(PreviewReason),
}

/// Why a call is previewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewReason {
    /// The caller asked (`dry_run=true`).
    Requested,
    /// The tool is dry-run by default and `confirm=true` was not given.
    NotConfirmed,
}

/// Decides from the tool's resolved mode and the arguments.
pub fn decide(
    tool: &Tool,
    args: &Map<String, Value>,
    rules: &Confirmation,
) -> Result<Verdict, CallError> {
    if let Some(arg) = &tool.preview_arg
        && args.get(arg) == Some(&Value::Bool(true))
    {
        return Ok(Verdict::Preview(PreviewReason::Requested));
    }
    let confirmed = args.get(&rules.confirm_arg) == Some(&Value::Bool(true));
    match tool.confirmation {
        ConfirmationMode::None | ConfirmationMode::Auto => Ok(Verdict::Run),
        ConfirmationMode::DryRunDefault if confirmed => Ok(Verdict::Run),
        ConfirmationMode::DryRunDefault => Ok(Verdict::Preview(PreviewReason::NotConfirmed)),
        ConfirmationMode::ConfirmFlag if confirmed => Ok(Verdict::Run),
        ConfirmationMode::ConfirmFlag => Err(CallError::new(
            Classification::ConfirmationRequired,
            format!(
                "`{}` needs confirmation: nothing was sent; after the user approves, repeat the call with `{}=true`",
                tool.full_name, rules.confirm_arg
            ),
        )),
        ConfirmationMode::ConfirmApply => {
            if args.get(&rules.apply_arg).and_then(Value::as_str)
                == Some(rules.apply_phrase.as_str())
            {
                Ok(Verdict::Run)
            } else {
                Err(CallError::new(
                    Classification::ConfirmationRequired,
                    format!(
                        "`{}` needs confirmation: nothing was sent; after the user confirms the side effect, repeat the call with `{}` exactly `{}`",
                        tool.full_name, rules.apply_arg, rules.apply_phrase
                    ),
                ))
            }
        }
    }
}
