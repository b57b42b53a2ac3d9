//! What the surfaces serve: the broker ([`crate::call::Broker`], which drives calls and
//! knows nothing of HTTP) beside what the endpoints and the console keep for
//! themselves ([`EndpointState`]). Every route is handed a [`Served`]; the call driver
//! is handed only the broker.

use std::sync::Arc;

use serde_json::Value;

use crate::call::Broker;
use crate::config::ConfigFile;

/// A relayed MCP call held on this replica until its caller answers its server's
/// question (`mcp::stream`): the call's task, and what its server says meanwhile.
pub type HeldCall = (
    tokio::task::JoinHandle<crate::answer::envelope::Enveloped>,
    tokio::sync::mpsc::Receiver<crate::upstream::mcp::relay::Relayed>,
);

/// The broker and the endpoints' own state: what `serve`, the MCP endpoint and the
/// console are handed.
#[derive(Debug)]
pub struct Served {
    /// What drives every call.
    pub broker: Arc<Broker>,
    /// What the endpoints and the console keep.
    pub endpoints: EndpointState,
}

impl Served {
    /// The endpoints' state read from the config beside a built broker; a config the
    /// endpoints cannot serve (a bad origin, bounds out of range, an `[admin]` table
    /// without what it needs) is refused with what to change.
    pub fn new(
        broker: Arc<Broker>,
        config: &ConfigFile,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let endpoints = EndpointState::new(config, env, &broker.parts.catalog)?;
        Ok(Self { broker, endpoints })
    }
}

/// What the HTTP endpoints and the console keep: their settings from the config, and
/// what they build once and share.
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
    /// The questions of MCP servers put to callers and not yet answered (decision 019).
    pub questions: Arc<crate::upstream::mcp::relay::Questions>,
    /// The calls of 2026-07-28 callers waiting for the answer to their server's question.
    pub held_calls: Arc<crate::upstream::mcp::relay::Held<HeldCall>>,
}

impl EndpointState {
    /// The endpoints' settings from the config; refused as [`Served::new`] says.
    pub fn new(
        config: &ConfigFile,
        env: &dyn Fn(&str) -> Option<String>,
        catalog: &crate::catalog::Catalog,
    ) -> Result<Self, String> {
        let origins = crate::caller::origin::OriginPolicy::new(&config.allowed_origins)?;
        config.server.validate()?;
        if let Some(admin) = &config.admin {
            admin.check(config.oauth.as_ref())?;
        }
        Ok(Self {
            bounds: config.server.clone(),
            draining: std::sync::atomic::AtomicBool::new(false),
            max_body_bytes: config
                .max_body_bytes
                .unwrap_or(catalog.rules.limits.max_body_bytes),
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
            questions: Arc::default(),
            held_calls: Arc::default(),
        })
    }
}
