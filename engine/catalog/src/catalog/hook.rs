//! The names of the native hooks a tool may name (`hook = "find_tools"`): catalog data,
//! resolved once at compile. The hooks' code is in `hooks` (broker-core), which the catalog
//! never imports.

/// A native hook, by the name catalog files use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Runs one catalog read tool of any service (portal envelope).
    PortalCallReadTool,
    /// Checks authentication and catalog readiness (portal envelope).
    PortalCheckConnection,
    /// The caller's budgets: limit, used, remaining, reset (portal envelope).
    PortalGetBudget,
    /// A service's configuration readiness: booleans and safe mode names only.
    CheckConfiguration,
    /// A wrapper that runs one raw tool of its service's categories (`[tool.dispatch]`).
    CategoryDispatch,
    /// Moves overdue items to the next business day (`[tool.reschedule]`).
    RescheduleOverdue,
    /// Ranked search over the service's tools.
    FindTools,
    /// One complete descriptor by name, canonical name, alias or title.
    ToolReference,
    /// Identity and counts, or every descriptor (paginated).
    Capabilities,
    /// Upstream endpoints mapped to tools, with coverage figures.
    EndpointCoverage,
    /// Submits a job once and watches it for a bounded time (`[tool.poll]`).
    SubmitAndPoll,
    /// A local answer from a service table (`[tool.lookup]`).
    TableLookup,
    /// The caller's recent jobs from the job registry.
    ListJobs,
    /// One endpoint of the service by method and path, within allowlists.
    AllowlistedRequest,
    /// Configuration readiness plus the calls this process has seen.
    RuntimeHealth,
}

impl Hook {
    /// Every hook, for resolution and "did you mean".
    pub const ALL: [Hook; 15] = [
        Hook::PortalCallReadTool,
        Hook::PortalCheckConnection,
        Hook::PortalGetBudget,
        Hook::CheckConfiguration,
        Hook::CategoryDispatch,
        Hook::RescheduleOverdue,
        Hook::FindTools,
        Hook::ToolReference,
        Hook::Capabilities,
        Hook::EndpointCoverage,
        Hook::SubmitAndPoll,
        Hook::TableLookup,
        Hook::ListJobs,
        Hook::AllowlistedRequest,
        Hook::RuntimeHealth,
    ];

    /// The name catalog files use.
    pub fn name(self) -> &'static str {
        match self {
            Hook::PortalCallReadTool => "portal.call_read_tool",
            Hook::PortalCheckConnection => "portal.check_connection",
            Hook::PortalGetBudget => "portal.get_budget",
            Hook::CheckConfiguration => "check_configuration",
            Hook::CategoryDispatch => "category_dispatch",
            Hook::RescheduleOverdue => "reschedule_overdue",
            Hook::FindTools => "find_tools",
            Hook::ToolReference => "tool_reference",
            Hook::Capabilities => "capabilities",
            Hook::EndpointCoverage => "endpoint_coverage",
            Hook::SubmitAndPoll => "submit_and_poll",
            Hook::TableLookup => "table_lookup",
            Hook::ListJobs => "list_jobs",
            Hook::AllowlistedRequest => "allowlisted_request",
            Hook::RuntimeHealth => "runtime_health",
        }
    }

    /// Resolves a hook name.
    pub fn parse(name: &str) -> Option<Hook> {
        Self::ALL.into_iter().find(|h| h.name() == name)
    }
}
