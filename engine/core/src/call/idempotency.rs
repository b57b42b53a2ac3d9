//! Between phases 4 and 5: a write's idempotency key (decision 004). The first call
//! with a key holds it and runs; a repeat with the same arguments is answered from the
//! store with the first call's envelope, and nothing runs again; a repeat with other
//! arguments is refused. The key the upstream gets is derived from the caller's.

use super::Broker;
use super::resolve::Call;
use crate::answer::envelope::Enveloped;
use crate::confirm::idempotency::{Begin, Held, begin, key_of};
use crate::error::CallError;
use crate::run::RequestCtx;

/// What holding a call's key decided.
pub(super) enum Claim {
    /// The call goes on, holding its key when it has one.
    Go(Option<Held>),
    /// The key is refused (malformed, or held for other arguments): nothing runs.
    Refused(CallError),
    /// A repeat of a finished call: its kept answer.
    Replay(Enveloped),
}

impl Broker {
    /// Holds an admitted write's idempotency key (the `Idempotency-Key` header, or the
    /// one given outside the headers), and sets the key the upstream gets in `ctx`.
    /// Only a write has a hash of its arguments: a read holds nothing.
    pub(super) async fn hold_key(
        &self,
        call: &Call<'_>,
        sha: &str,
        ctx: &mut RequestCtx<'_>,
    ) -> Claim {
        let key = match key_of(call.idempotency_key.as_deref(), call.headers) {
            Ok(Some(key)) => key,
            Ok(None) => return Claim::Go(None),
            Err(e) => return Claim::Refused(e),
        };
        let owner = self.parts.job_owner(&call.tool.service, ctx);
        match begin(&self.parts.store, call.tool, &owner, &key, sha, || {
            self.parts.now()
        })
        .await
        {
            Ok(Begin::Replay(response)) => Claim::Replay(response),
            Ok(Begin::Run(held)) => {
                ctx.idempotency = Some(held.upstream.clone());
                Claim::Go(Some(held))
            }
            Err(e) => Claim::Refused(e),
        }
    }
}
