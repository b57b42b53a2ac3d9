//! [`Broker`] built once from the catalog, the config and the environment (its fields
//! are in `mod.rs`, where every file of the driver reads them), and the [`Pipeline`] the
//! stages it drives run tools through. What the HTTP endpoints keep is theirs
//! (`broker-surfaces`: `served::EndpointState`).

use std::sync::Arc;

use serde_json::Value;

use super::Broker;
use crate::caller::Callers;
use crate::catalog::{Catalog, Tool};
use crate::config::ConfigFile;
use crate::confirm::Confirmations;
use crate::hooks;
use crate::run::{Parts, Pipeline, RequestCtx, Running};
use crate::upstream::render::RenderedRequest;

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("parts", &self.parts)
            .finish_non_exhaustive()
    }
}

impl Broker {
    /// Builds a broker. `env` reads environment variables (injectable for tests).
    pub fn new(
        catalog: Arc<Catalog>,
        config: &ConfigFile,
        env: &dyn Fn(&str) -> Option<String>,
        store: crate::store::Store,
    ) -> Result<Self, String> {
        let callers = Callers::new(config, &catalog, env)?;
        let confirmations = Confirmations::new(config, env)?;
        let hub = crate::hub::Hub::new(config, &catalog, env)?;
        let parts = Parts::new(catalog, config, env, store)?;
        let gate = super::gate::Gate::new(&parts.catalog, env)?;
        Ok(Self {
            parts,
            callers,
            confirmations,
            hub,
            hooks: hooks::State::default(),
            gate,
        })
    }

    /// What confirmation code reads: the parts and this deployment's confirmation
    /// settings.
    pub fn confirming(&self) -> crate::confirm::Context<'_> {
        crate::confirm::Context {
            parts: &self.parts,
            confirmations: &self.confirmations,
        }
    }

    /// Replaces the clock (tests pin "now").
    pub fn with_clock(mut self, clock: fn() -> jiff::Timestamp) -> Self {
        self.parts.set_clock(clock);
        self
    }

    /// Reads every MCP server's tool listing now (at start and every few minutes:
    /// [`crate::upstream::mcp::RELIST_AFTER`]), so a changed tool shows in readiness,
    /// the metric and the log before a call meets it; each drifted tool is logged. An
    /// HTTP server that takes the caller's key and has no server-side one is listed on
    /// its first call instead.
    pub async fn refresh_mcp(&self) {
        let catalog = &self.parts.catalog;
        for (id, service) in &catalog.services {
            let Some(server) = &service.mcp else { continue };
            let http = server.transport == crate::catalog::mcp::Transport::Http;
            let base_url = self.parts.routes.base_url(id);
            let key = self.parts.routes.server_key(service);
            if http && (base_url.is_none() || (service.credential.is_some() && key.is_none())) {
                continue;
            }
            let trace = self.parts.traces.start(None);
            let target = crate::upstream::mcp::McpTarget {
                service,
                base_url,
                key,
                bearer: false,
                timeout: std::time::Duration::from_secs(30),
                max_body_bytes: catalog.rules.limits.max_upstream_body_bytes,
                trace: &trace,
                relay: None,
                sweep: &[],
            };
            if let Err(e) = self.gate.mcp_relist(&target).await {
                tracing::warn!(service = %id, error = %e.message, "mcp server's tools could not be listed");
            }
        }
        for drift in self.mcp_drift() {
            tracing::warn!(
                service = %drift.service,
                tool = %drift.tool,
                "mcp server describes a tool otherwise than the catalog pinned: its calls answer upstream_changed until it is reviewed and imported"
            );
        }
    }

    /// Each MCP service, and whether its server has been listed yet.
    pub fn mcp_listed(&self) -> std::collections::BTreeMap<String, bool> {
        self.gate
            .mcp_listings()
            .into_iter()
            .map(|(service, listing)| (service, listing.read_at.is_some()))
            .collect()
    }

    /// Whether the catalog has MCP services (asked on every `/mcp` call: one look).
    pub fn has_mcp(&self) -> bool {
        self.gate.has_mcp()
    }

    /// The MCP tools whose server, when last asked, described them otherwise than the
    /// catalog pinned (or no longer listed them), by service: readiness, the console
    /// and `tool_broker_upstream_drift` read it. A server not yet asked has none.
    pub fn mcp_drift(&self) -> Vec<Drift> {
        let listings = self.gate.mcp_listings();
        let mut drift = Vec::new();
        for tool in self.parts.catalog.tools.iter() {
            let crate::catalog::Action::Mcp(plan) = &tool.action else {
                continue;
            };
            let Some(listing) = listings.get(&tool.service).filter(|l| l.read_at.is_some()) else {
                continue;
            };
            let seen = listing.hashes.get(&plan.tool);
            if seen != Some(&plan.pinned) {
                drift.push(Drift {
                    service: tool.service.clone(),
                    tool: tool.full_name.clone(),
                    pinned: plan.pinned.clone(),
                    seen: seen.cloned(),
                });
            }
        }
        drift
    }
}

/// An MCP tool its server no longer describes as the catalog pinned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// The service.
    pub service: String,
    /// The catalog tool.
    pub tool: String,
    /// The pinned upstream descriptor hash.
    pub pinned: String,
    /// What the server's descriptor hashes to now (`None`: it no longer lists it).
    pub seen: Option<String>,
}

impl Pipeline for Broker {
    fn parts(&self) -> &Parts {
        &self.parts
    }

    fn execute<'a>(
        &'a self,
        tool: &'a Tool,
        arguments: Option<Value>,
        ctx: &'a RequestCtx<'_>,
    ) -> Running<'a> {
        Box::pin(Broker::execute(self, tool, arguments, ctx))
    }

    fn send_endpoint<'a>(
        &'a self,
        tool: &'a Tool,
        request: &'a RenderedRequest,
        ctx: &'a RequestCtx<'_>,
        max_response: usize,
    ) -> Running<'a> {
        Box::pin(Broker::send_endpoint(
            self,
            tool,
            request,
            ctx,
            max_response,
        ))
    }

    fn stored_keys<'a>(
        &'a self,
        caller: &'a crate::caller::Caller,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<String>> + Send + 'a>> {
        Box::pin(async move {
            match (&self.hub, &caller.user) {
                (Some(hub), Some(user)) => hub.stored_services(&self.parts, user).await,
                _ => Vec::new(),
            }
        })
    }
}
