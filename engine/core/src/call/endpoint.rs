//! The allowlisted endpoint tool's request (`hooks::allowlist` checked its host, path,
//! method and body size), sent as the catalog tool it matches (decision 017): that
//! tool's key fields, its policies on the arguments the request holds (path parameters,
//! query, `body`), its confirmation, rate limit and price, and an audit record under
//! the call's trace. A path only a deployment's prefix allows belongs to the endpoint
//! tool itself. The answer is the endpoint tool's (its limits and shape), redacted as
//! every answer is.

use super::Broker;
use super::gate::{Cleared, endpoint_tool};
use super::send::Exchange;
use crate::catalog::Tool;
use crate::catalog::template::Scope;
use crate::error::CallError;
use crate::run::{Exec, RequestCtx, Want};
use crate::upstream::render::RenderedRequest;

impl Broker {
    /// Sends `request`, built by the allowlisted endpoint tool `tool`, as the tool it
    /// belongs to; `max_response` bounds the answer.
    pub async fn send_endpoint(
        &self,
        tool: &Tool,
        request: &RenderedRequest,
        ctx: &RequestCtx<'_>,
        max_response: usize,
    ) -> Result<Exec, CallError> {
        let (owner, args) = endpoint_tool(&self.parts.catalog, tool, request);
        // 2. authorize, 3. price, 4. decide: as the tool the request belongs to.
        ctx.caller.check(owner)?;
        let priced = self.estimate(owner, &args)?;
        // The request was rendered from arguments the guards read already: what fired
        // on them is what its policies see.
        let fired = ctx
            .guards
            .map_or(crate::catalog::guards::Set::EMPTY, |acted| {
                acted.on(crate::catalog::guards::LooksAt::Arguments)
            });
        let decided = self.inner_policy(owner, ctx, &args, false, priced, fired)?;
        // 6. reserve.
        let permit = match self
            .clear(owner, super::gate::Leaving::Http(request), decided, ctx)
            .await?
        {
            Cleared::Send(permit) => permit,
            Cleared::Planned(exec) => return Ok(exec),
        };
        let scope = Scope::new(self.parts.template_context(tool, &args, ctx.headers));
        // 7. send; 8. read the answer; 9. redact: as the endpoint tool's answer.
        let exchange = Exchange {
            request,
            args: &args,
            scope: &scope,
            max_response: Some(max_response),
            want: Want::Value,
        };
        // ... and 10. settle.
        self.send_cleared(tool, &exchange, permit, priced, ctx)
            .await
    }
}
