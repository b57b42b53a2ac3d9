//! The normalized definition a tool's descriptor hash covers (decision 006):
//! every descriptor field and every execution rule, with the text of any template used.

use super::*;

impl ToolCompiler<'_, '_> {
    /// The normalized definition that the descriptor hash covers: every descriptor field
    /// and every execution rule, with the text of any template used. The fields every
    /// tool has ([`Self::declared`]), then those added only where present, so tools
    /// without one keep their hashes ([`Self::present`], [`Self::answer_extras`]).
    pub(super) fn normalized(&self, raw: &RawTool, full: &str, resolved: &Resolved<'_>) -> Value {
        let mut normalized = self.declared(raw, full, resolved);
        if let Some(map) = normalized.as_object_mut() {
            self.present(raw, resolved.arguments, map);
            if let Some(response) = map.get_mut("response").and_then(Value::as_object_mut) {
                self.answer_extras(&raw.response, response);
            }
        }
        normalized
    }

    /// The fields every tool's definition has, in the order of the tool format.
    fn declared(&self, raw: &RawTool, full: &str, resolved: &Resolved<'_>) -> Value {
        let Resolved {
            confirmation,
            preview_arg,
            timeout_ms,
            item_budget,
            ..
        } = *resolved;
        let http = raw.http.as_ref().map(|h| {
            json!({
                "method": h.method.get_ref(),
                "path": h.path.get_ref(),
                "path_params": spanned_map(&h.path_params),
                "query": spanned_map(&h.query),
                "query_object": opt(&h.query_object),
                "headers": spanned_map(&h.headers),
                "body": opt(&h.body),
                "body_template": h.body_template.as_ref().map(|t| self.template_text(t.get_ref())),
                "query_arrays": self.service_file.defaults.query_arrays,
                "body_encoding": h.body_encoding,
                "base_url": self.service.base_url,
                "credential": self.service.credential,
                "static_headers": self.service.static_headers,
                "context_headers": self.service.context_headers,
            })
        });
        json!({
            "name": full,
            "title": raw.title,
            "description": raw.description,
            "tier": raw.tier,
            "risk": raw.risk,
            "classes": raw.classes,
            "category": raw.category,
            "aliases": raw.aliases,
            "envelope": self.service.envelope,
            "confirmation": {
                "mode": confirmation,
                "confirm_arg": self.rules.confirmation.confirm_arg,
                "apply_arg": self.rules.confirmation.apply_arg,
                "apply_phrase": self.rules.confirmation.apply_phrase,
                "preview_arg": preview_arg,
            },
            "timeout_ms": timeout_ms,
            "item_budget": item_budget,
            "hook": opt(&raw.hook),
            "dispatch": raw.dispatch,
            "reschedule": raw.reschedule.as_ref().map(|r| json!({
                "search_tool": r.search_tool,
                "search_arguments": r.search_arguments.get_ref(),
                "items": r.items.get_ref(),
                "due_field": r.due_field,
                "item_id": r.item_id.get_ref(),
                "update_tool": r.update_tool,
                "update_arguments": r.update_arguments.get_ref(),
                "zone_tool": r.zone_tool,
                "zone_arguments": opt(&r.zone_arguments),
                "zone_path": opt(&r.zone_path),
            })),
            "http": http,
            "require": raw.require.iter().map(|r| json!({
                "check": r.check.get_ref(),
                "classification": r.classification,
                "message": r.message,
            })).collect::<Vec<_>>(),
            "response": {
                "data": opt(&raw.response.data),
                "pagination": spanned_map(&raw.response.pagination),
                "redact": raw.response.redact.iter().map(|r| r.get_ref().clone()).collect::<Vec<_>>(),
                "compact_arg": raw.response.compact_arg,
                "budget_arg": raw.response.budget_arg,
                "raw_arg": raw.response.raw_arg,
                "redact_unless": raw.response.redact_unless.iter().map(|r| json!({
                    "unless": r.unless.get_ref(),
                    "paths": r.paths.iter().map(|p| p.get_ref().clone()).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "summary": opt(&raw.response.summary),
                "upstream_errors": raw.response.upstream_errors,
            },
            // "arguments" and "output" are hashed in place (see `compile`).
            "fill_defaults": raw.fill_defaults,
            "exposed": raw.exposed,
            "source": raw.source,
        })
    }

    /// The fields added only where the tool has them. A lookup's hash covers the table
    /// it reads; a write's where its idempotency key goes; a tool that records jobs how
    /// the service's callbacks update them.
    fn present(&self, raw: &RawTool, arguments: &Value, map: &mut serde_json::Map<String, Value>) {
        if let Some(text) = &raw.documentation {
            map.insert("documentation".into(), json!(text));
        }
        if let Some(allowlist) = &raw.allowlist {
            map.insert("allowlist".into(), json!(allowlist));
        }
        // An MCP tool: the server's tool, its pinned descriptor, and how the server is
        // reached (where its arguments go).
        if let Some(mcp) = &raw.mcp {
            map.insert(
                "mcp".into(),
                json!({
                    "tool": mcp.tool,
                    "sha256": mcp.sha256,
                    "open_world": mcp.open_world,
                    "server": self.service_file.mcp,
                    "credential": self.service.credential,
                    "static_headers": self.service.static_headers,
                }),
            );
        }
        if let Some(limit) = &raw.rate_limit {
            map.insert("rate_limit".into(), json!(limit));
        }
        // Where a write sends its idempotency key changes what it sends: hashed, for
        // HTTP writes of services that have one.
        if let (Some(header), Some(_), crate::catalog::descriptor::Risk::Write) =
            (&self.service.idempotency_header, &raw.http, raw.risk)
        {
            map.insert("idempotency_header".into(), json!(header));
        }
        if let Some(tenancy) = &self.service.tenancy {
            let declares = |name: &str| {
                arguments
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|p| p.contains_key(name))
            };
            if declares(&tenancy.tenant_arg) || declares(&tenancy.location_arg) {
                map.insert("tenancy".into(), json!(tenancy));
            }
        }
        if let (Some(_), Some(webhook)) = (&raw.response.job_id, &self.service.webhook) {
            map.insert("webhook".into(), json!(webhook.spec));
        }
        if let Some(l) = &raw.lookup {
            map.insert(
                "lookup".into(),
                json!({
                    "table": l.table,
                    "table_data": l.table.as_ref().and_then(|t| self.service.tables.get(t)),
                    "query": opt(&l.query),
                    "filter": opt(&l.filter),
                    "fields": l.fields,
                    "result": l.result.get_ref(),
                }),
            );
        }
        if let Some(t) = &raw.task {
            map.insert(
                "task".into(),
                json!({ "watch": t.watch, "arguments": t.arguments.get_ref() }),
            );
        }
        if let Some(p) = &raw.poll {
            map.insert("poll".into(), poll_fields(p));
        }
    }

    /// The answer's fields added only where present: the job it records, and the
    /// shaping arguments with the table a compact answer keeps by.
    fn answer_extras(&self, r: &RawResponse, response: &mut serde_json::Map<String, Value>) {
        if let Some(job_id) = &r.job_id {
            response.insert("job_id".into(), json!(job_id.get_ref()));
        }
        if let Some(job) = &r.job_status {
            response.insert(
                "job_status".into(),
                json!({ "id": job.id.get_ref(), "status": job.status.get_ref() }),
            );
        }
        if r.mode_arg.is_some() || r.fields_arg.is_some() || r.compact_table.is_some() {
            response.insert("mode_arg".into(), json!(r.mode_arg));
            response.insert("fields_arg".into(), json!(r.fields_arg));
            response.insert(
                "compact_table".into(),
                json!(r.compact_table.as_ref().map(|t| json!({
                    "name": t,
                    "data": self.service.tables.get(t),
                }))),
            );
        }
    }

    /// A template's text and the text of everything it includes, for hashing.
    pub(super) fn template_text(&self, name: &str) -> Value {
        let mut seen = BTreeMap::new();
        let mut todo = vec![name.to_string()];
        while let Some(n) = todo.pop() {
            if seen.contains_key(&n) {
                continue;
            }
            let text = self
                .c
                .sources
                .get(&format!("templates/{n}"))
                .unwrap_or_default()
                .to_string();
            todo.extend(referenced_templates(&text));
            seen.insert(n, Value::String(text));
        }
        json!({ "name": name, "texts": seen })
    }
}

/// A map of spanned texts as JSON.
fn spanned_map(m: &BTreeMap<String, SpannedStr>) -> Value {
    m.iter()
        .map(|(k, v)| (k.clone(), json!(v.get_ref())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// An optional spanned text as JSON.
fn opt(s: &Option<SpannedStr>) -> Option<String> {
    s.as_ref().map(|v| v.get_ref().clone())
}

/// A `[tool.poll]` table as its definition hashes it.
fn poll_fields(p: &crate::catalog::descriptor::RawPoll) -> Value {
    json!({
        "submit": p.submit.iter().map(|s| json!({
            "when": opt(&s.when),
            "tool": s.tool,
            "arguments": s.arguments.get_ref(),
        })).collect::<Vec<_>>(),
        "id": p.id.get_ref(),
        "status_tool": p.status_tool,
        "status_arguments": p.status_arguments.get_ref(),
        "status": p.status.get_ref(),
        "done": p.done,
        "failed": p.failed,
        "waiting": p.waiting,
        "result": p.result.get_ref(),
        "interval_ms": p.interval_ms,
        "wait_arg": p.wait_arg,
        "default_wait_seconds": p.default_wait_seconds,
        "max_wait_seconds": p.max_wait_seconds,
        "check_tool": p.check_tool,
    })
}
