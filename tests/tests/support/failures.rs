//! A local tool slow enough to be cut by its time limit.

/// A read that gives up after 200 ms (the media upstream; also priced by budget tests).
pub const SLOW_TOOL: &str = r#"
[[tool]]
name = "slow_job"
title = "Slow Job"
description = "A test tool with a short timeout."
tier = "agent_ready"
risk = "read"
timeout_ms = 200
[tool.http]
method = "GET"
path = "/v1/slow"
[tool.arguments]
type = "object"
"#;
