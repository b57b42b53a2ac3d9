//! Counters for `GET /metrics` (Prometheus text format, no bearer token needed).
//!
//! Labels are only catalog tool names, classification names and HTTP statuses, never
//! anything a caller sent: a call to an unknown tool counts under `tool="unknown"`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// The outcomes of a connected account's refresh, as counted.
const REFRESH_OUTCOMES: [&str; 3] = ["refreshed", "reconnect_needed", "failed"];

/// Process-wide call counters.
#[derive(Debug, Default)]
pub struct Metrics {
    calls: Mutex<Calls>,
    responses: Mutex<BTreeMap<u16, u64>>,
    /// Connections the broker's own HTTP/1.1 server handed to hyper's server
    /// (`serve::http1`, broker-surfaces).
    handovers: std::sync::atomic::AtomicU64,
    /// Policy reloads (accepted, rejected), shown once a deployment has `[policy]`.
    policy_reloads: Mutex<Option<[u64; 2]>>,
    /// Units charged by unit and service, and calls a budget refused, shown once a
    /// deployment has `[[budgets]]` or a priced call settles.
    spending: Mutex<Option<Spending>>,
    /// Refreshes of connected accounts' tokens by outcome, shown once a deployment has
    /// `[connect.*]` (refreshed, reconnect_needed, failed).
    refreshes: Mutex<Option<[u64; 3]>>,
    /// The guard rules' hits (`tool_broker_guard_hits_total`, the console's last hour).
    guards: Mutex<super::guard_hits::GuardHits>,
}

/// The totals since start and the last hour, under one lock.
#[derive(Debug, Default)]
struct Calls {
    /// By tool, then outcome: a call of a tool seen before allocates nothing.
    totals: BTreeMap<String, BTreeMap<&'static str, Counter>>,
    recent: super::recent::Recent,
}

impl Calls {
    /// The totals keyed by tool and outcome, for the exposition.
    fn flat(&self) -> BTreeMap<(String, &'static str), Counter> {
        self.totals
            .iter()
            .flat_map(|(tool, outcomes)| {
                outcomes
                    .iter()
                    .map(move |(outcome, c)| ((tool.clone(), *outcome), *c))
            })
            .collect()
    }
}

#[derive(Debug, Default)]
struct Spending {
    units: BTreeMap<(String, String), u64>,
    refusals: BTreeMap<String, u64>,
}

/// What became of the finished spans, when traces are exported
/// ([`crate::telemetry::otlp::export::Exporter::counts`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SpanCounts {
    /// Spans the collector accepted.
    pub exported: u64,
    /// Spans dropped because the export queue was full.
    pub dropped: u64,
    /// Spans lost to a failed export.
    pub failed: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct Counter {
    count: u64,
    duration_ms: u64,
}

/// Unix seconds now.
fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
}

impl Metrics {
    /// Records one tool call and how it ended (`ok` or a classification).
    pub fn record_call(&self, tool: &str, outcome: &'static str, duration_ms: u64) {
        let now_s = now_s();
        if let Ok(mut guard) = self.calls.lock() {
            let calls = &mut *guard;
            let c = match calls.totals.get_mut(tool) {
                Some(outcomes) => outcomes.entry(outcome).or_default(),
                None => calls
                    .totals
                    .entry(tool.to_string())
                    .or_default()
                    .entry(outcome)
                    .or_default(),
            };
            c.count += 1;
            c.duration_ms += duration_ms;
            calls.recent.record(now_s, tool, outcome, duration_ms);
        }
    }

    /// Records that guard rule `rule` acted on one call's `direction` (`arguments` or
    /// `answers`) doing `action`.
    pub fn record_guard(&self, rule: &str, direction: &'static str, action: &'static str) {
        if let Ok(mut hits) = self.guards.lock() {
            hits.record(rule, direction, action, now_s());
        }
    }

    /// Hits by guard rule in the last hour.
    pub fn guard_hits_last_hour(&self) -> BTreeMap<String, u64> {
        self.guards
            .lock()
            .map(|hits| hits.last_hour(now_s()))
            .unwrap_or_default()
    }

    /// Records one response status of `POST /`.
    pub fn record_status(&self, status: u16) {
        if let Ok(mut responses) = self.responses.lock() {
            *responses.entry(status).or_default() += 1;
        }
    }

    /// Shows `tool_broker_policy_reloads_total` (a deployment with `[policy]`).
    pub fn enable_policy_reloads(&self) {
        if let Ok(mut r) = self.policy_reloads.lock() {
            r.get_or_insert([0, 0]);
        }
    }

    /// Counts one reload of the policy folder: accepted, or rejected (the old set kept).
    pub fn record_policy_reload(&self, accepted: bool) {
        if let Ok(mut r) = self.policy_reloads.lock() {
            let counts = r.get_or_insert([0, 0]);
            counts[usize::from(!accepted)] += 1;
        }
    }

    /// Shows `tool_broker_units_spent_total` and `tool_broker_budget_refusals_total`
    /// (a deployment with `[[budgets]]`), at zero until something is charged.
    pub fn enable_spending(&self) {
        if let Ok(mut s) = self.spending.lock() {
            s.get_or_insert_with(Spending::default);
        }
    }

    /// Counts `units` of `unit` charged for a call of one of `service`'s tools.
    pub fn record_spent(&self, unit: &str, service: &str, units: u64) {
        if let Ok(mut s) = self.spending.lock() {
            let s = s.get_or_insert_with(Spending::default);
            *s.units
                .entry((unit.to_string(), service.to_string()))
                .or_default() += units;
        }
    }

    /// Counts a call a budget refused (by the budget's name, from the config).
    pub fn record_budget_refusal(&self, budget: &str) {
        if let Ok(mut s) = self.spending.lock() {
            let s = s.get_or_insert_with(Spending::default);
            *s.refusals.entry(budget.to_string()).or_default() += 1;
        }
    }

    /// Shows `tool_broker_hub_refreshes_total` (a deployment with `[connect.*]`).
    pub fn enable_refreshes(&self) {
        if let Ok(mut r) = self.refreshes.lock() {
            r.get_or_insert([0; 3]);
        }
    }

    /// Counts one refresh of a connected account's token: `refreshed`,
    /// `reconnect_needed` (the provider refused the refresh token) or `failed` (no
    /// usable answer; the connection kept).
    pub fn record_refresh(&self, outcome: &str) {
        let at = REFRESH_OUTCOMES
            .iter()
            .position(|o| *o == outcome)
            .unwrap_or(2);
        if let Ok(mut r) = self.refreshes.lock() {
            r.get_or_insert([0; 3])[at] += 1;
        }
    }

    /// Records a connection the broker's own HTTP/1.1 server handed to hyper's server.
    pub fn record_handover(&self) {
        self.handovers
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The last hour of calls at `now_s` (Unix seconds): per minute, errors by
    /// classification, p50/p99 latency, per service ([`super::recent::Recent`]).
    pub fn last_hour(&self, now_s: i64) -> serde_json::Value {
        let recent = self
            .calls
            .lock()
            .map(|c| c.recent.clone())
            .unwrap_or_default();
        recent.summary(now_s)
    }

    /// Calls of one service's tools since the process started: totals by outcome and
    /// the mean duration (for runtime-health tools).
    pub fn service_summary(&self, service: &str) -> serde_json::Value {
        let prefix = format!("{service}.");
        let calls = self.calls.lock().map(|c| c.flat()).unwrap_or_default();
        let mut outcomes: BTreeMap<&str, u64> = BTreeMap::new();
        let (mut total, mut duration) = (0u64, 0u64);
        for ((tool, outcome), c) in &calls {
            if tool.starts_with(&prefix) {
                *outcomes.entry(outcome).or_default() += c.count;
                total += c.count;
                duration += c.duration_ms;
            }
        }
        let upstream_failures: u64 = outcomes
            .iter()
            .filter(|(o, _)| o.starts_with("upstream_"))
            .map(|(_, n)| n)
            .sum();
        serde_json::json!({
            "calls": total,
            "byOutcome": outcomes,
            "upstreamFailures": upstream_failures,
            "meanDurationMs": duration.checked_div(total).unwrap_or(0),
        })
    }

    /// The Prometheus text exposition; `spans` when traces are exported.
    pub fn render(&self, snapshot_id: &str, tools: usize, spans: Option<SpanCounts>) -> String {
        let mut out = String::new();
        family(
            &mut out,
            "tool_broker_catalog_info",
            "gauge",
            "The catalog being served.",
        );
        let _ = writeln!(
            out,
            "tool_broker_catalog_info{{snapshot=\"{snapshot_id}\",tools=\"{tools}\"}} 1"
        );
        let calls = self.calls.lock().map(|c| c.flat()).unwrap_or_default();
        self.render_guards(&mut out);
        family(
            &mut out,
            "tool_broker_calls_total",
            "counter",
            "Tool calls by tool and outcome.",
        );
        for ((tool, outcome), c) in &calls {
            let _ = writeln!(
                out,
                "tool_broker_calls_total{{tool=\"{tool}\",outcome=\"{outcome}\"}} {}",
                c.count
            );
        }
        family(
            &mut out,
            "tool_broker_call_duration_milliseconds_total",
            "counter",
            "Time spent in tool calls.",
        );
        for ((tool, outcome), c) in &calls {
            let _ = writeln!(
                out,
                "tool_broker_call_duration_milliseconds_total{{tool=\"{tool}\",outcome=\"{outcome}\"}} {}",
                c.duration_ms
            );
        }
        let responses = self.responses.lock().map(|r| r.clone()).unwrap_or_default();
        family(
            &mut out,
            "tool_broker_responses_total",
            "counter",
            "Responses of POST / by HTTP status.",
        );
        for (status, n) in &responses {
            let _ = writeln!(
                out,
                "tool_broker_responses_total{{status=\"{status}\"}} {n}"
            );
        }
        family(
            &mut out,
            "tool_broker_http1_handovers_total",
            "counter",
            "Connections the broker's own HTTP/1.1 server handed to hyper's server (another path or method, HTTP/1.0, a chunked body, Expect, HTTP/2).",
        );
        let _ = writeln!(
            out,
            "tool_broker_http1_handovers_total {}",
            self.handovers.load(std::sync::atomic::Ordering::Relaxed)
        );
        if let Some([accepted, rejected]) = self.policy_reloads.lock().ok().and_then(|r| *r) {
            family(
                &mut out,
                "tool_broker_policy_reloads_total",
                "counter",
                "Reloads of the policy folder (SIGHUP): accepted (the new set decides), rejected (invalid; the old set still decides).",
            );
            let _ = writeln!(
                out,
                "tool_broker_policy_reloads_total{{outcome=\"accepted\"}} {accepted}"
            );
            let _ = writeln!(
                out,
                "tool_broker_policy_reloads_total{{outcome=\"rejected\"}} {rejected}"
            );
        }
        self.render_spending(&mut out);
        if let Ok(refreshes) = self.refreshes.lock()
            && let Some(counts) = *refreshes
        {
            family(
                &mut out,
                "tool_broker_hub_refreshes_total",
                "counter",
                "Refreshes of connected accounts' access tokens (docs/hub.md): refreshed, reconnect_needed (the provider refused the refresh token; the user must connect again), failed (no usable answer; the connection kept).",
            );
            for (outcome, n) in REFRESH_OUTCOMES.iter().zip(counts) {
                let _ = writeln!(
                    out,
                    "tool_broker_hub_refreshes_total{{outcome=\"{outcome}\"}} {n}"
                );
            }
        }
        if let Some(spans) = spans {
            family(
                &mut out,
                "tool_broker_spans_total",
                "counter",
                "Finished trace spans: exported (the collector accepted them), dropped (the export queue was full), failed (an export failed).",
            );
            for (outcome, n) in [
                ("exported", spans.exported),
                ("dropped", spans.dropped),
                ("failed", spans.failed),
            ] {
                let _ = writeln!(out, "tool_broker_spans_total{{outcome=\"{outcome}\"}} {n}");
            }
        }
        out
    }

    /// The spending families, once budgets are on: units spent, budget refusals.
    /// `tool_broker_guard_hits_total{rule,direction,action}`.
    fn render_guards(&self, out: &mut String) {
        family(
            out,
            "tool_broker_guard_hits_total",
            "counter",
            "Calls a guard rule acted on (docs/guards.md), by rule, direction (arguments, answers) and action.",
        );
        if let Ok(hits) = self.guards.lock() {
            for ((rule, direction, action), n) in hits.totals() {
                let _ = writeln!(
                    out,
                    "tool_broker_guard_hits_total{{rule=\"{rule}\",direction=\"{direction}\",action=\"{action}\"}} {n}"
                );
            }
        }
    }

    fn render_spending(&self, out: &mut String) {
        if let Ok(spending) = self.spending.lock()
            && let Some(spending) = spending.as_ref()
        {
            family(
                out,
                "tool_broker_units_spent_total",
                "counter",
                "Units charged for calls of priced tools (docs/budgets.md), by unit and service.",
            );
            for ((unit, service), n) in &spending.units {
                let _ = writeln!(
                    out,
                    "tool_broker_units_spent_total{{unit=\"{unit}\",service=\"{service}\"}} {n}"
                );
            }
            family(
                out,
                "tool_broker_budget_refusals_total",
                "counter",
                "Calls refused because a budget had no room for their cost (budget_exceeded), by budget.",
            );
            let total: u64 = spending.refusals.values().sum();
            if spending.refusals.is_empty() {
                let _ = writeln!(out, "tool_broker_budget_refusals_total {total}");
            }
            for (budget, n) in &spending.refusals {
                let _ = writeln!(
                    out,
                    "tool_broker_budget_refusals_total{{budget=\"{budget}\"}} {n}"
                );
            }
        }
    }
}

/// Writes `tool_broker_hub_connections{service,state}`: accounts connected by OAuth,
/// `connected` or needing a `reconnect`, by service (each service that connects by
/// OAuth shown, at 0 when it has none).
pub fn render_connections(out: &mut String, services: &[String], counts: &[(String, String, i64)]) {
    family(
        out,
        "tool_broker_hub_connections",
        "gauge",
        "Accounts connected to the hub by OAuth, by service and state: connected, or reconnect (the provider refused the refresh token; the user must connect again).",
    );
    for service in services {
        for state in ["connected", "reconnect"] {
            let n = counts
                .iter()
                .find(|(s, st, _)| s == service && st == state)
                .map_or(0, |c| c.2);
            let _ = writeln!(
                out,
                "tool_broker_hub_connections{{service=\"{service}\",state=\"{state}\"}} {n}"
            );
        }
    }
}

/// Writes `tool_broker_upstream_drift{service}`: per MCP service, how many of its tools
/// its server now describes otherwise than the catalog pinned (0 when none).
pub fn render_upstream_drift(out: &mut String, per_service: &[(String, usize)]) {
    family(
        out,
        "tool_broker_upstream_drift",
        "gauge",
        "MCP tools whose server describes them otherwise than the catalog pinned (they answer upstream_changed), by service.",
    );
    for (service, drifted) in per_service {
        let _ = writeln!(
            out,
            "tool_broker_upstream_drift{{service=\"{service}\"}} {drifted}"
        );
    }
}

/// Writes a metric family's `# HELP` and `# TYPE` lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}
