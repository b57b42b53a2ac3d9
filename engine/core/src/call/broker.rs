//! [`Broker`] built once from the catalog, the config and the environment (its fields
//! are in `mod.rs`, where every file of the driver reads them), what the endpoints keep
//! ([`EndpointState`]), and the [`Pipeline`] the stages it drives run tools through.

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

/// What the HTTP endpoints (`mcp`, `serve`: broker-surfaces) keep with the broker: their
/// settings from the config, and what they build once and share. Held here because an
/// endpoint is handed the broker; nothing in the driver reads it.
#[derive(Debug)]
pub struct EndpointState {
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// What a connection may cost (the `[server]` table).
    pub bounds: crate::config::server::ServerBounds,
    /// Set on shutdown: readiness answers 503 while calls in flight finish.
    pub draining: std::sync::atomic::AtomicBool,
    /// MCP `tools/list` entries of every catalog tool as JSON text, built on first use
    /// by the MCP endpoint.
    pub mcp_entries: std::sync::OnceLock<Vec<Box<str>>>,
    /// Which browser origins may call (`allowed_origins`) and the Host rule.
    pub origins: crate::caller::origin::OriginPolicy,
    /// The OpenAPI projection text (without and with legacy tools), built on first use;
    /// shared, not copied, by every answer.
    pub projection: [std::sync::OnceLock<bytes::Bytes>; 2],
    /// Who may open the operator's console (`[admin]`), checked at start.
    pub admin: Option<crate::config::admin::AdminConfig>,
    /// The config as the console shows it: secrets only as set or not set
    /// ([`crate::config::view`]), read once at start.
    pub config_view: Value,
    /// How long the audit and finished jobs are kept, in days (0: forever).
    pub audit_retention_days: u32,
    /// The store the console reads through: its own connections, so its queries never
    /// wait for or hold up a call's (set by `serve`; else the broker's store).
    pub console_store: Option<crate::store::Store>,
    /// When this broker was built.
    pub started: jiff::Timestamp,
}

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
        let origins = crate::caller::origin::OriginPolicy::new(&config.allowed_origins)?;
        let hub = crate::hub::Hub::new(config, &catalog, env)?;
        let parts = Parts::new(catalog, config, env, store)?;
        config.server.validate()?;
        if let Some(admin) = &config.admin {
            admin.check(config.oauth.as_ref())?;
        }
        Ok(Self {
            endpoints: EndpointState {
                bounds: config.server.clone(),
                draining: std::sync::atomic::AtomicBool::new(false),
                max_body_bytes: config
                    .max_body_bytes
                    .unwrap_or(parts.catalog.rules.limits.max_body_bytes),
                mcp_entries: std::sync::OnceLock::new(),
                origins,
                projection: [std::sync::OnceLock::new(), std::sync::OnceLock::new()],
                admin: config.admin.clone(),
                config_view: crate::config::view::effective(config, env),
                audit_retention_days: config
                    .audit_retention_days
                    .unwrap_or(crate::config::DEFAULT_AUDIT_RETENTION_DAYS),
                console_store: None,
                started: jiff::Timestamp::now(),
            },
            parts,
            callers,
            confirmations,
            hub,
            hooks: hooks::State::default(),
            gate: super::gate::Gate::new()?,
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
