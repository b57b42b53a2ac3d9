//! Call errors: the complete list of classifications (decision 003) and the one
//! error type every stage of a call returns. The HTTP status of each classification
//! comes from `rules/errors.toml`; `answer::envelope` (broker-upstream) is the one place that turns a
//! [`CallError`] into a response body.
//!
//! May import nothing of the crate: every stage speaks it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every classification a tool call can fail with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Classification {
    /// Body is not JSON or not a JSON-RPC `tools/call` request.
    InvalidRequest,
    /// Bearer token missing or unknown.
    Unauthorized,
    /// The tool's upstream key is missing, or the upstream refused it.
    MissingRequiredCredentials,
    /// The caller's key may not use this service, tier or risk.
    Forbidden,
    /// crm tenant routing mismatch.
    TenantMismatch,
    /// No such tool.
    UnknownTool,
    /// Request body over the limit.
    PayloadTooLarge,
    /// Arguments fail the schema or a rule.
    ValidationError,
    /// A write was called without its confirmation.
    ConfirmationRequired,
    /// A broker-side rate limit.
    RateLimited,
    /// The upstream answered a non-success status.
    UpstreamHttpError,
    /// The upstream could not be reached or answered garbage.
    UpstreamUnavailable,
    /// The upstream did not answer in time.
    UpstreamTimeout,
    /// A server-side setting the tool needs is absent.
    NotConfigured,
    /// The human approver declined the write, or its approval expired.
    ConfirmationDeclined,
    /// An `Idempotency-Key` already used by this caller for this tool with other
    /// arguments (or still in flight).
    IdempotencyConflict,
    /// The caller pinned a descriptor hash (the tool it reviewed) and the tool has
    /// changed since: nothing ran (decision 010).
    DescriptorChanged,
    /// An MCP server now describes the tool otherwise than the catalog pinned (its
    /// upstream descriptor no longer hashes to the pin): nothing was sent (decision 018).
    UpstreamChanged,
    /// A budget that binds the caller has no room for the call's cost in its window, or
    /// the call cannot be priced in the budget's unit: nothing was sent.
    BudgetExceeded,
    /// A guard rule (`rules/guards.toml`, the deployment's `[[guards.rule]]`) that blocks
    /// found what it looks for in the arguments (nothing was sent) or in the answer
    /// (nothing of it returned); `details` names the rule and where, never the text.
    GuardBlocked,
    /// A bug.
    InternalError,
}

impl Classification {
    /// All classifications, in the order of decision 003.
    pub const ALL: [Classification; 21] = [
        Self::InvalidRequest,
        Self::Unauthorized,
        Self::MissingRequiredCredentials,
        Self::Forbidden,
        Self::TenantMismatch,
        Self::UnknownTool,
        Self::PayloadTooLarge,
        Self::ValidationError,
        Self::ConfirmationRequired,
        Self::RateLimited,
        Self::UpstreamHttpError,
        Self::UpstreamUnavailable,
        Self::UpstreamTimeout,
        Self::NotConfigured,
        Self::ConfirmationDeclined,
        Self::IdempotencyConflict,
        Self::DescriptorChanged,
        Self::UpstreamChanged,
        Self::BudgetExceeded,
        Self::GuardBlocked,
        Self::InternalError,
    ];

    /// The wire name, e.g. `validation_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::Unauthorized => "unauthorized",
            Self::MissingRequiredCredentials => "missing_required_credentials",
            Self::Forbidden => "forbidden",
            Self::TenantMismatch => "tenant_mismatch",
            Self::UnknownTool => "unknown_tool",
            Self::PayloadTooLarge => "payload_too_large",
            Self::ValidationError => "validation_error",
            Self::ConfirmationRequired => "confirmation_required",
            Self::RateLimited => "rate_limited",
            Self::UpstreamHttpError => "upstream_http_error",
            Self::UpstreamUnavailable => "upstream_unavailable",
            Self::UpstreamTimeout => "upstream_timeout",
            Self::NotConfigured => "not_configured",
            Self::ConfirmationDeclined => "confirmation_declined",
            Self::IdempotencyConflict => "idempotency_conflict",
            Self::DescriptorChanged => "descriptor_changed",
            Self::UpstreamChanged => "upstream_changed",
            Self::BudgetExceeded => "budget_exceeded",
            Self::GuardBlocked => "guard_blocked",
            Self::InternalError => "internal_error",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

/// A failed call: what went wrong, in words safe to show the caller.
///
/// Messages never carry a key, token or header value; upstream bodies only reach
/// `details` after redaction and size capping.
#[derive(Debug, Clone, PartialEq)]
pub struct CallError {
    /// The classification, which decides the HTTP status.
    pub classification: Classification,
    /// What went wrong and what to do.
    pub message: String,
    /// Structured details (argument failures with JSON pointers, redacted upstream body).
    pub details: Option<Value>,
    /// The upstream status, when the upstream answered.
    pub upstream_status: Option<u16>,
    /// Seconds to wait before retrying, for `rate_limited`.
    pub retry_after_seconds: Option<u64>,
    /// The `WWW-Authenticate` challenge of an `unauthorized` answer, or of a
    /// `forbidden` one for a scope the caller's access token lacks.
    pub challenge: Option<String>,
}

impl CallError {
    /// A new error with a message and nothing else.
    pub fn new(classification: Classification, message: impl Into<String>) -> Self {
        Self {
            classification,
            message: message.into(),
            details: None,
            upstream_status: None,
            retry_after_seconds: None,
            challenge: None,
        }
    }

    /// Adds structured details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Records the upstream status.
    pub fn with_upstream_status(mut self, status: u16) -> Self {
        self.upstream_status = Some(status);
        self
    }

    /// Shorthand for `invalid_request`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(Classification::InvalidRequest, message)
    }

    /// Shorthand for `validation_error`.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(Classification::ValidationError, message)
    }

    /// A generic `internal_error`; the cause goes to the log, never to the caller.
    pub fn internal() -> Self {
        Self::new(
            Classification::InternalError,
            "the broker failed to handle this call; the cause is in the broker's log",
        )
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.classification.as_str(), self.message)
    }
}

impl std::error::Error for CallError {}
