//! Phase 10 at the door: once the call's run is over (each request's reservation was
//! settled where its permit ended, `gate.rs`), a call run as an MCP task whose tool
//! answered a job at once watches that job ([`Broker::watch_job`]), and a priced call
//! that failed says what it cost ([`settle_call`]).

use serde_json::{Map, Value};

use super::Broker;
use super::price::Priced;
use super::resolve::Call;
use super::span::elapsed_ms;
use crate::answer::envelope::Cost;
use crate::error::CallError;
use crate::run::{Exec, RequestCtx};

/// A call's result once settled: what phases 11 and 12 read.
pub(super) struct Settled {
    /// The tool's result, or why the call failed.
    pub(super) result: Result<Exec, CallError>,
    /// What a failed priced call was charged (`meta.cost`).
    pub(super) failed_cost: Option<Box<Cost>>,
    /// How long the call took, to here.
    pub(super) duration_ms: u64,
}

impl Broker {
    /// Phase 10 for a call run as an MCP task whose tool answered a job at once: the
    /// job watched for the task's bound, its state added to the answer. Any other
    /// result is as it came.
    pub(super) async fn watch_job(
        &self,
        call: &Call<'_>,
        result: Result<Exec, CallError>,
        task_args: Option<Map<String, Value>>,
        ctx: &RequestCtx<'_>,
    ) -> Result<Exec, CallError> {
        let tool = call.tool;
        match (result, &tool.task) {
            (Ok(exec), Some(plan)) if ctx.task_watch.is_some() && !exec.dry_run => {
                let args = task_args.unwrap_or_default();
                Ok(crate::hooks::watch_answered_job(self, tool, plan, &args, exec, ctx).await)
            }
            (result, _) => result,
        }
    }
}

/// Phase 10 for the door's call, once its run is over: how long it took, and what a
/// priced call that failed still cost (`meta.cost`).
pub(super) fn settle_call(
    call: &Call<'_>,
    result: Result<Exec, CallError>,
    priced: Option<Priced<'_>>,
) -> Settled {
    let failed_cost = match (&result, priced) {
        (Err(e), Some(priced)) => priced.failed(e),
        _ => None,
    };
    Settled {
        result,
        failed_cost,
        duration_ms: elapsed_ms(call.started),
    }
}
