//! Between phases 4 and 5: a write's idempotency key (decision 004). The first call
//! with a key holds it and runs; a repeat with the same arguments is answered from the
//! store with the first call's envelope, and nothing runs again; a repeat with other
//! arguments is refused. The key the upstream gets is derived from the caller's.

use super::Broker;
use super::admit::Admitted;
use super::resolve::Call;
use crate::answer::envelope::Response;
use crate::confirm::idempotency::{Begin, Held, begin, key_of};
use crate::error::CallError;
use crate::run::RequestCtx;

/// What holding a call's key decided.
pub(super) enum Claim<'p> {
    /// The call goes on (admitted or not), holding its key when it has one.
    Go(Result<Admitted<'p>, CallError>, Option<Held>),
    /// A repeat of a finished call: its kept answer.
    Replay(Response),
}

impl Broker {
    /// Holds an admitted write's idempotency key (the `Idempotency-Key` header, or the
    /// one given outside the headers), and sets the key the upstream gets in `ctx`.
    pub(super) async fn hold_key<'p>(
        &self,
        call: &Call<'_>,
        admitted: Result<Admitted<'p>, CallError>,
        ctx: &mut RequestCtx<'_>,
    ) -> Claim<'p> {
        // Only a write has a hash of its arguments; a refused call holds nothing.
        let Some(sha) = call.args_sha256.as_deref().filter(|_| admitted.is_ok()) else {
            return Claim::Go(admitted, None);
        };
        let key = match key_of(call.idempotency_key.as_deref(), call.headers) {
            Ok(Some(key)) => key,
            Ok(None) => return Claim::Go(admitted, None),
            Err(e) => return Claim::Go(Err(e), None),
        };
        let owner = self.job_owner(&call.tool.service, ctx);
        match begin(&self.store, call.tool, &owner, &key, sha, || self.now()).await {
            Ok(Begin::Replay(response)) => Claim::Replay(response),
            Ok(Begin::Run(held)) => {
                ctx.idempotency = Some(held.upstream.clone());
                Claim::Go(admitted, Some(held))
            }
            Err(e) => Claim::Go(Err(e), None),
        }
    }
}
