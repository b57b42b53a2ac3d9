//! [`Parts`]: what every stage may read, built once from the catalog, the config and the
//! environment.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::RequestCtx;
use crate::caller::callbacks::Receivers;
use crate::catalog::template::Scope;
use crate::catalog::{Catalog, Tool};
use crate::config::ConfigFile;
use crate::store::Store;
use crate::telemetry::metrics::Metrics;
use crate::telemetry::trace::Tracer;
use crate::upstream::route::Routes;

/// The deployment's parts every stage may read: none of them knows who drives a call.
pub struct Parts {
    /// The compiled catalog.
    pub catalog: Arc<Catalog>,
    /// The durable store: jobs, rate-limit windows, the write audit, confirmations.
    pub store: Store,
    /// Where each service's requests go and with which key.
    pub routes: Routes,
    /// What verifies each service's callbacks; secrets never leave the broker.
    pub callbacks: Receivers,
    /// Counters for `GET /metrics`.
    pub metrics: Metrics,
    /// Every call's trace, and the span exporter when `OTEL_*` sets one.
    pub traces: Tracer,
    /// The deployment's Cedar policies (`[policy]`), reloadable; `None` without.
    pub policies: Option<crate::policy::PolicyState>,
    /// What each tool costs: `rules/costs.toml` with the deployment's `[costs]`.
    pub costs: Arc<crate::catalog::costs::Costs>,
    /// Which guard rules read each tool's arguments and answers: `rules/guards.toml`
    /// with the deployment's `[[guards.rule]]`.
    pub guards: Arc<crate::catalog::guards::applied::Applied>,
    /// `[[budgets]]`: how much each user, role or key may spend per window.
    pub budgets: Arc<[crate::config::budgets::Budget]>,
    /// `[settings.<service>]`: non-secret values templates read.
    settings: BTreeMap<String, Value>,
    clock: fn() -> jiff::Timestamp,
}

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parts")
            .field("snapshot_id", &self.catalog.snapshot_id)
            .field("routes", &self.routes)
            .finish_non_exhaustive()
    }
}

/// The catalog's costs, or with the deployment's `[costs]` the two compiled together
/// (its costs win at equal specificity); every problem with its file and line.
fn deployment_costs(
    catalog: &Catalog,
    config: &ConfigFile,
) -> Result<crate::catalog::costs::Costs, String> {
    use crate::catalog::costs::{compile, written};
    let Some(own) = &config.costs else {
        return Ok(catalog.costs.clone());
    };
    let (file, text) = config
        .file
        .clone()
        .unwrap_or_else(|| ("the config".into(), String::new()));
    let (units, rules) = &catalog.cost_rules;
    let mut all = rules.clone();
    all.extend(written(own.clone(), &file, &text, true));
    let units = units.iter().chain(&own.units).cloned();
    compile(&catalog.tools, units, &all).map_err(|problems| {
        let lines: Vec<String> = problems
            .iter()
            .map(|(origin, message)| format!("{origin}: {message}"))
            .collect();
        format!("the costs do not compile:\n{}", lines.join("\n"))
    })
}

/// The catalog's guard rules, or with the deployment's `[[guards.rule]]` the two
/// compiled together (each of its rules changes, extends or adds to the shipped ones);
/// every problem with the config's file and line.
fn deployment_guards(
    catalog: &Catalog,
    config: &ConfigFile,
) -> Result<Arc<crate::catalog::guards::applied::Applied>, String> {
    use crate::catalog::guards::applied::Applied;
    let Some(own) = &config.guards else {
        return Ok(catalog.guards.clone());
    };
    let (file, text) = config
        .file
        .clone()
        .unwrap_or_else(|| ("the config".into(), String::new()));
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[guards.rule]]")
        .map(|(i, _)| i + 1)
        .collect();
    let refused = |problems: Vec<(usize, String)>| {
        let lines: Vec<String> = problems
            .iter()
            .map(|(line, message)| format!("{file}:{line}: {message}"))
            .collect();
        format!("the guard rules do not compile:\n{}", lines.join("\n"))
    };
    let guards = catalog
        .rules
        .guards
        .with(&own.rule, &lines)
        .map_err(refused)?;
    let guards = Arc::new(guards);
    Applied::new(guards.clone(), &catalog.tools)
        .map(Arc::new)
        .map_err(|problems| {
            refused(
                problems
                    .into_iter()
                    .map(|(rule, message)| (guards.line(rule), message))
                    .collect(),
            )
        })
}

impl Parts {
    /// Builds the parts. `env` reads environment variables (injectable for tests).
    pub fn new(
        catalog: Arc<Catalog>,
        config: &ConfigFile,
        env: &dyn Fn(&str) -> Option<String>,
        store: Store,
    ) -> Result<Self, String> {
        let callbacks = Receivers::build(&catalog, &config.webhook_secrets, env)?;
        let routes = Routes::new(&catalog, config, env, callbacks.secrets())?;
        let settings = config
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(Value::Null)))
            .collect();
        let costs = Arc::new(deployment_costs(&catalog, config)?);
        let guards = deployment_guards(&catalog, config)?;
        let policies = match &config.policy {
            Some(policy) => {
                // `context.cost` is typed with every unit the costs know.
                let policy = crate::config::PolicyConfig {
                    units: costs.units.iter().cloned().collect(),
                    ..policy.clone()
                };
                Some(crate::policy::PolicyState::load(&policy, &catalog)?)
            }
            None => None,
        };
        let (file, text) = config
            .file
            .as_ref()
            .map_or(("the config", ""), |(f, t)| (f.as_str(), t.as_str()));
        let budgets: Arc<[_]> =
            crate::config::budgets::compile(&config.budgets, &costs.units, file, text)?.into();
        let metrics = Metrics::default();
        if !budgets.is_empty() {
            metrics.enable_spending();
        }
        if policies.is_some() {
            metrics.enable_policy_reloads();
        }
        if !config.connect.is_empty() {
            metrics.enable_refreshes();
        }
        Ok(Self {
            policies,
            costs,
            guards,
            budgets,
            catalog,
            store,
            routes,
            callbacks,
            metrics,
            traces: Tracer::new(crate::telemetry::otlp::config::from_env(env)?),
            settings,
            clock: jiff::Timestamp::now,
        })
    }

    /// The policy set a call starting now decides under (`None` without `[policy]`).
    pub fn policy_set(&self) -> Option<Arc<crate::policy::Policies>> {
        self.policies
            .as_ref()
            .map(crate::policy::PolicyState::current)
    }

    /// Whether `caller` sees `tool` in lists, searches and references: its key or
    /// role fields allow it and, with `[policy]`, some call of it could be permitted.
    pub fn may_see(
        &self,
        policies: Option<&crate::policy::Policies>,
        caller: &crate::caller::Caller,
        tool: &Tool,
    ) -> bool {
        caller.may_see(tool) && policies.is_none_or(|p| p.may_see(tool, caller))
    }

    /// Reads the policy folder again (SIGHUP): a valid set decides every call that
    /// starts after it, an invalid one is logged with every problem and the old set
    /// kept. Counted on `/metrics`. Nothing without `[policy]`.
    pub fn reload_policies(&self) {
        let Some(state) = &self.policies else {
            tracing::info!("SIGHUP: no [policy] to reload");
            return;
        };
        match state.reload(&self.catalog) {
            Ok(count) => {
                self.metrics.record_policy_reload(true);
                tracing::info!(dir = %state.dir().display(), policies = count, "policies reloaded");
            }
            Err(problems) => {
                self.metrics.record_policy_reload(false);
                for problem in &problems {
                    tracing::error!(problem = %problem, "policy reload rejected");
                }
                tracing::error!(dir = %state.dir().display(), problems = problems.len(), "policy reload rejected: the previous policies still decide");
            }
        }
    }

    /// Replaces the clock (tests pin "now").
    pub fn set_clock(&mut self, clock: fn() -> jiff::Timestamp) {
        self.clock = clock;
    }

    /// The current time.
    pub fn now(&self) -> jiff::Timestamp {
        (self.clock)()
    }

    /// The upstream key for a service: the caller's BYOK header, else a server-side key.
    pub fn upstream_key<'a>(
        &'a self,
        service: &str,
        headers: &'a hyper::HeaderMap,
    ) -> Option<&'a str> {
        self.routes.upstream_key(&self.catalog, service, headers)
    }

    /// Who owns jobs submitted in this request (see [`crate::store::jobs::owner`]).
    pub fn job_owner(&self, service: &str, ctx: &RequestCtx<'_>) -> String {
        crate::store::jobs::owner(&ctx.caller.name, self.upstream_key(service, ctx.headers))
    }

    /// Secrets of this request, searched for in upstream answers ([`Routes::secrets`]).
    pub fn secrets<'a>(&'a self, headers: &'a hyper::HeaderMap) -> Vec<&'a str> {
        self.routes.secrets(&self.catalog.rules.redaction, headers)
    }

    /// One non-secret deployment setting of a service (`[settings.<service>]`).
    pub fn setting(&self, service: &str, key: &str) -> Option<&Value> {
        self.settings.get(service).and_then(|s| s.get(key))
    }

    /// The template context of a call: `args`, `ctx`, `settings`, `tool`.
    pub fn template_context(
        &self,
        tool: &Tool,
        args: &Map<String, Value>,
        headers: &hyper::HeaderMap,
    ) -> Value {
        self.routed_context(tool, args, headers, None)
    }

    /// The template context with the location tenant routing chose as the service's
    /// runtime-location context value ([`crate::call::tenancy`]).
    pub fn routed_context(
        &self,
        tool: &Tool,
        args: &Map<String, Value>,
        headers: &hyper::HeaderMap,
        routed: Option<&str>,
    ) -> Value {
        let mut context = Map::new();
        if let Some(service) = self.catalog.services.get(&tool.service) {
            for (name, header) in &service.context_headers {
                if let Some(v) = headers.get(header.as_str()).and_then(|v| v.to_str().ok()) {
                    context.insert(name.clone(), json!(v));
                }
            }
            if let (Some(tenancy), Some(location)) = (&service.tenancy, routed) {
                context.insert(tenancy.context.clone(), json!(location));
            }
        }
        // Built from copies, not through `json!` (which would serialise `args` into a
        // new tree): this context is made for every call.
        let text = |s: &str| Value::String(s.to_string());
        crate::answer::envelope::object([
            ("args", Value::Object(args.clone())),
            ("ctx", Value::Object(context)),
            (
                "settings",
                self.settings
                    .get(&tool.service)
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            ),
            (
                "tool",
                crate::answer::envelope::object([
                    ("service", text(&tool.service)),
                    ("name", text(&tool.name)),
                    ("title", text(&tool.title)),
                ]),
            ),
        ])
    }

    /// Renders a shared template from `templates/`; a failure is logged and yields "".
    pub fn render_shared(&self, name: &str, ctx: &Value) -> String {
        self.catalog
            .templates
            .render(name, &Scope::borrowed(ctx))
            .unwrap_or_else(|e| {
                tracing::error!(template = %e.name, kind = %e.kind, "shared template failed");
                String::new()
            })
    }

    /// The one-line summary of a tool's result (portal envelopes only): the tool's
    /// `response.summary` template, else `summary_default.j2`.
    pub fn summary(&self, tool: &Tool, data: &Value) -> String {
        let ctx = json!({ "data": data, "tool": { "name": tool.full_name, "title": tool.title } });
        let name = tool
            .response
            .summary
            .as_deref()
            .unwrap_or("summary_default.j2");
        self.render_shared(name, &ctx).trim().to_string()
    }
}
