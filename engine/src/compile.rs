//! The compile stage: raw TOML structs -> [`Catalog`].
//!
//! Reads every file of a catalog root, parses each strictly, checks everything that can
//! be checked before a request arrives (names, hooks, templates, expressions, JSONPaths,
//! schemas, confirmation arguments), computes descriptor hashes, and reports every
//! problem together, each with its file and line. Nothing here runs on the request path.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use toml::Spanned;

use crate::catalog::{
    Action, BodyPlan, Catalog, HttpPlan, JsonPath, PathPart, Require, ResponsePlan, SchemaText,
    Service, Tool,
};
use crate::descriptor::{
    ConfirmationMode, EnvelopeKind, RawHttp, RawResponse, RawTool, ServiceFile, SpannedStr,
    VersionFormat,
};
use crate::diag::{Diagnostics, LineIndex, did_you_mean, line_of};
use crate::error::Classification;
use crate::hooks::Hook;
use crate::identity::{Field, LOCK_PATH, compact_is_canonical, descriptor_hash_with};
use crate::rules::RawArgumentSets;
use crate::rules::{
    Confirmation, Limits, RawConfirmation, RawErrors, RawRedaction, Redaction, Rules,
};
use crate::search::RawSearch;
use crate::source::Sources;
use crate::template::{Expr, Templates, describe, referenced_templates};
use crate::tool_file::Parsed;

/// Shared templates the engine itself renders.
pub const REQUIRED_TEMPLATES: [&str; 2] = ["dry_run_next_action.j2", "summary_default.j2"];

/// Compiles a catalog root; on failure returns every problem found.
pub fn compile(sources: &Sources) -> Result<Catalog, Diagnostics> {
    compile_with(sources, Options::default()).map(|(catalog, _)| catalog)
}

/// What [`compile_with`] does beyond [`compile`].
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Also return every tool's normalized definition (what its descriptor hash
    /// covers), by full name. A served catalog keeps only the hashes: the definitions,
    /// as JSON trees, would be a fifth of its memory.
    pub keep_definitions: bool,
    /// Evaluate plain expressions (literals, lookups, picks) without minijinja, as
    /// served catalogs do; `false` compiles every expression as a template, to check
    /// that both give the same answers.
    pub plain_expressions: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            keep_definitions: false,
            plain_expressions: true,
        }
    }
}

/// Compiles a catalog root with `options`; the map holds the normalized definitions
/// when they were asked for.
pub fn compile_with(
    sources: &Sources,
    options: Options,
) -> Result<(Catalog, BTreeMap<String, serde_json::Value>), Diagnostics> {
    let started = std::time::Instant::now();
    let mut definitions = BTreeMap::new();
    let mut c = Compiler {
        sources,
        diags: Diagnostics::default(),
        definitions: options.keep_definitions.then_some(&mut definitions),
    };
    let rules = c.rules();
    let fuel = rules.as_ref().map_or(50_000, |r| r.limits.template_fuel);
    let mut templates = Templates::new(fuel);
    templates.set_plain_expressions(options.plain_expressions);
    c.templates(&mut templates);
    let services = c.services();
    let mut tools = Vec::new();
    if let Some(rules) = &rules {
        // Each tool's schemas as parsed go to the check as the tool is compiled, and are
        // dropped there (the tools keep them as text).
        let mut checker = crate::schema_check::Checker::start();
        let mut seen: BTreeMap<String, (String, usize)> = BTreeMap::new();
        let mut files = Vec::new();
        for (file, text) in c.tool_files() {
            match service_of(file).and_then(|id| services.get(id)) {
                Some(service) => files.push((file, text, service)),
                None => c.diags.push(
                    file,
                    0,
                    "tool file is not in a service folder with a `service.toml`",
                ),
            }
        }
        let texts: Vec<&str> = files.iter().map(|(_, text, _)| *text).collect();
        let mut lines = LineIndex::new("");
        // Files are parsed on a second thread while this one compiles (crate::tool_file).
        crate::tool_file::read_all(&texts, |index, parsed| {
            let Some(&(file, _, service)) = files.get(index) else {
                return;
            };
            let (offset, raw) = match parsed {
                Parsed::Tool(offset, raw) => (offset, raw),
                Parsed::File(index) => {
                    lines = index;
                    return;
                }
                Parsed::Error(offset, e) => {
                    c.parse_error(file, &lines, offset, &e);
                    return;
                }
            };
            let line = lines.line(offset + raw.name.span().start);
            let full = format!("{}.{}", service.0.id, raw.name.get_ref());
            if let Some((f, l)) = seen.get(&full) {
                c.diags.push(
                    file,
                    line,
                    format!("tool `{full}` is defined twice (first at {f}:{l})"),
                );
                return;
            }
            seen.insert(full, (file.to_string(), line));
            let mut tc = ToolCompiler {
                c: &mut c,
                file,
                lines: &lines,
                offset,
                service: &service.0,
                service_file: &service.1,
                rules,
                templates: &mut templates,
            };
            if let Some((tool, parsed)) = tc.compile(*raw, line) {
                checker.submit(&tool.arguments, tool.output.as_ref(), parsed);
                tools.push(tool);
            }
        });
        let compiled = started.elapsed();
        let checked = checker.finish();
        for (file, line, message) in crate::schema_check::problems(&tools, checked) {
            c.diags.push(&file, line, message);
        }
        tracing::debug!(
            tools_ms = compiled.as_millis() as u64,
            schemas_ms = (started.elapsed() - compiled).as_millis() as u64,
            "tools compiled and their schemas checked"
        );
    }
    for tool in &tools {
        // Step tools of multi-step hooks: raw HTTP tools of the same service, of the
        // risk their step needs.
        use crate::descriptor::Risk;
        // `(name, risk, must be an HTTP tool)`.
        let mut steps: Vec<(&String, Risk, bool)> = Vec::new();
        if let Some(r) = &tool.reschedule {
            steps.push((&r.search_tool, Risk::Read, true));
            steps.push((&r.update_tool, Risk::Write, true));
            steps.extend(r.zone.iter().map(|(t, _, _)| (t, Risk::Read, true)));
        }
        if let Some(p) = &tool.poll {
            steps.extend(p.submit.iter().map(|(_, t, _)| (t, Risk::Write, true)));
            steps.push((&p.status_tool, Risk::Read, true));
            // The tool named to check later may be local (a hook).
            steps.extend(p.check_tool.iter().map(|t| (t, Risk::Read, false)));
        }
        {
            for (name, risk, http) in steps {
                let found = tools
                    .iter()
                    .find(|t| t.service == tool.service && &t.name == name);
                match found {
                    Some(t) if t.risk == risk && (!http || matches!(t.action, Action::Http(_))) => {
                    }
                    Some(_) => c.diags.push(
                        &tool.source.0,
                        tool.source.1,
                        format!(
                            "tool `{}`: step tool `{name}` must be a {} {}tool",
                            tool.full_name,
                            risk.as_str(),
                            if http { "HTTP " } else { "" }
                        ),
                    ),
                    None => c.diags.push_help(
                        &tool.source.0,
                        tool.source.1,
                        format!(
                            "tool `{}`: step tool `{name}` is not a tool of service `{}`",
                            tool.full_name, tool.service
                        ),
                        did_you_mean(
                            name,
                            tools
                                .iter()
                                .filter(|t| t.service == tool.service)
                                .map(|t| t.name.as_str()),
                        ),
                    ),
                }
            }
        }
        // A task's watch: a read `submit_and_poll` tool of the same service that takes
        // the job from its arguments (no submit choices).
        if let Some(plan) = &tool.task {
            let found = tools
                .iter()
                .find(|t| t.service == tool.service && t.name == plan.watch);
            let fits = found.is_some_and(|t| {
                t.risk == Risk::Read && t.poll.as_ref().is_some_and(|p| p.submit.is_empty())
            });
            if !fits {
                c.diags.push_help(
                    &tool.source.0,
                    tool.source.1,
                    format!(
                        "tool `{}`: `[tool.task] watch = \"{}\"` must name a read `submit_and_poll` tool of service `{}` without submit choices{}",
                        tool.full_name,
                        plan.watch,
                        tool.service,
                        if found.is_some() { "" } else { " (no such tool)" }
                    ),
                    did_you_mean(
                        &plan.watch,
                        tools
                            .iter()
                            .filter(|t| t.service == tool.service && t.poll.is_some())
                            .map(|t| t.name.as_str()),
                    ),
                );
            }
        }
        for category in tool.dispatch.iter().flat_map(|d| &d.categories) {
            let known = tools.iter().any(|t| {
                t.service == tool.service && t.category.as_deref() == Some(category.as_str())
            });
            if !known {
                let candidates: Vec<&str> = tools
                    .iter()
                    .filter(|t| t.service == tool.service)
                    .filter_map(|t| t.category.as_deref())
                    .collect();
                c.diags.push_help(
                    &tool.source.0,
                    tool.source.1,
                    format!(
                        "tool `{}`: no tool of service `{}` has the category `{category}`",
                        tool.full_name, tool.service
                    ),
                    did_you_mean(category, candidates),
                );
            }
        }
    }
    // A webhook's verification key tool: a read HTTP tool of the same service.
    for (id, (service, _)) in &services {
        let Some((name, _)) = service.webhook.as_ref().and_then(|w| w.public_key.as_ref()) else {
            continue;
        };
        let ok = tools.iter().any(|t| {
            &t.full_name == name
                && t.risk == crate::descriptor::Risk::Read
                && matches!(t.action, Action::Http(_))
        });
        if !ok {
            c.diags.push(
                &format!("catalog/{id}/service.toml"),
                0,
                format!(
                    "[webhook] public_key.tool `{name}` must be a read HTTP tool of the service"
                ),
            );
        }
    }
    let Some(rules) = rules else {
        c.diags.sort();
        return Err(c.diags);
    };
    if !c.diags.is_empty() {
        c.diags.sort();
        return Err(c.diags);
    }
    let services = services.into_iter().map(|(k, (s, _))| (k, s)).collect();
    match Catalog::assemble(services, tools, rules, templates, sources.origin.clone()) {
        Ok(catalog) => Ok((catalog, definitions)),
        Err(collisions) => {
            let mut diags = Diagnostics::default();
            for (file, line, message) in collisions {
                diags.push(&file, line, message);
            }
            diags.sort();
            Err(diags)
        }
    }
}

/// A schema as hashed into its tool's descriptor: its compact text where that is its
/// canonical text, else the parsed value.
fn schema_field<'a>(text: Option<&'a SchemaText>, value: &'a Value) -> Field<'a> {
    match text.map(SchemaText::as_str) {
        Some(text) if compact_is_canonical(text) => Field::Canonical(text),
        _ => Field::Value(value),
    }
}

/// Service id from a path `catalog/<id>/...`.
fn service_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("catalog/")?;
    rest.split_once('/').map(|(id, _)| id)
}

struct Compiler<'a> {
    sources: &'a Sources,
    diags: Diagnostics,
    /// Where normalized definitions go when the caller asked for them.
    definitions: Option<&'a mut BTreeMap<String, serde_json::Value>>,
}

impl<'a> Compiler<'a> {
    /// Parses a TOML file strictly, reporting the error with its line.
    fn parse<T: DeserializeOwned>(&mut self, file: &str, text: &str) -> Option<T> {
        match toml::from_str::<T>(text) {
            Ok(v) => Some(v),
            Err(e) => {
                self.parse_error(file, &LineIndex::new(text), 0, &e);
                None
            }
        }
    }

    /// Reports a TOML error whose span is relative to byte `offset` of the file.
    fn parse_error(&mut self, file: &str, lines: &LineIndex, offset: usize, e: &toml::de::Error) {
        let line = e.span().map_or(0, |s| lines.line(offset + s.start));
        let message = e.message().trim().to_string();
        let help = unknown_field_help(&message);
        self.diags.push_help(file, line, message, help);
    }

    fn rules(&mut self) -> Option<Rules> {
        let load = |c: &mut Self, name: &str| -> Option<(String, String)> {
            let path = format!("rules/{name}");
            match c.sources.get(&path) {
                Some(text) => Some((path, text.to_string())),
                None => {
                    c.diags.push(&path, 0, "rules file is missing");
                    None
                }
            }
        };
        let errors = load(self, "errors.toml")
            .and_then(|(p, t)| self.parse::<RawErrors>(&p, &t).map(|e| (p, t, e)));
        let redaction =
            load(self, "redaction.toml").and_then(|(p, t)| self.parse::<RawRedaction>(&p, &t));
        let confirmation = load(self, "confirmation.toml")
            .and_then(|(p, t)| self.parse::<RawConfirmation>(&p, &t).map(|c| (p, c)));
        let limits = load(self, "limits.toml").and_then(|(p, t)| self.parse::<Limits>(&p, &t));
        let search = load(self, "search.toml").and_then(|(p, t)| self.parse::<RawSearch>(&p, &t));
        let argument_sets = load(self, "argument_sets.toml")
            .and_then(|(p, t)| self.parse::<RawArgumentSets>(&p, &t));

        let mut error_rules = BTreeMap::new();
        if let Some((path, text, raw)) = &errors {
            for (name, rule) in raw {
                let line = text
                    .find(&format!("[{name}]"))
                    .map_or(0, |o| line_of(text, o));
                match Classification::parse(name) {
                    Some(c) => {
                        if !(100..=599).contains(&rule.status) {
                            self.diags.push(
                                path,
                                line,
                                format!("status {} of `{name}` is not an HTTP status", rule.status),
                            );
                        }
                        error_rules.insert(c, *rule);
                    }
                    None => self.diags.push_help(
                        path,
                        line,
                        format!("unknown classification `{name}`"),
                        did_you_mean(name, Classification::ALL.iter().map(|c| c.as_str())),
                    ),
                }
            }
            for c in Classification::ALL {
                if !error_rules.contains_key(&c) {
                    self.diags.push(
                        path,
                        0,
                        format!("classification `{}` has no status", c.as_str()),
                    );
                }
            }
        }
        if let Some((path, raw)) = &confirmation {
            for p in &raw.policy {
                if p.mode == ConfirmationMode::Auto {
                    self.diags
                        .push(path, 0, "a policy's mode cannot be `auto`; name a mode");
                }
            }
        }
        Some(Rules {
            errors: error_rules,
            redaction: Redaction::compile(redaction?),
            confirmation: confirmation.map(|(_, raw)| Confirmation {
                confirm_arg: raw.confirm_arg,
                apply_arg: raw.apply_arg,
                apply_phrase: raw.apply_phrase,
                policies: raw.policy,
            })?,
            limits: limits?,
            search: search?,
            argument_sets: argument_sets?,
        })
        .filter(|_| errors.is_some())
    }

    fn templates(&mut self, templates: &mut Templates) {
        for (path, text) in &self.sources.files {
            let Some(name) = path.strip_prefix("templates/") else {
                continue;
            };
            if let Err(e) = templates.add_template(name, text) {
                self.diags.push(
                    path,
                    e.line().unwrap_or(0),
                    format!("template does not parse: {}", describe(&e)),
                );
            }
        }
        for name in REQUIRED_TEMPLATES {
            if !templates.has(name) {
                self.diags.push(
                    &format!("templates/{name}"),
                    0,
                    "the engine needs this shared template and it is missing",
                );
            }
        }
        // Includes must exist: a missing one would only fail at run time.
        for (path, text) in &self.sources.files {
            if path.starts_with("templates/") {
                for name in referenced_templates(text) {
                    if !templates.has(&name) {
                        self.diags.push(
                            path,
                            0,
                            format!("template includes `{name}`, which does not exist"),
                        );
                    }
                }
            }
        }
    }

    fn services(&mut self) -> BTreeMap<String, (Service, ServiceFile)> {
        let mut out = BTreeMap::new();
        // `sources` outlives `self`'s borrow: iterate it without copying the texts.
        let sources = self.sources;
        for (path, text) in sources
            .files
            .iter()
            .filter(|(p, _)| p.starts_with("catalog/"))
        {
            if path == LOCK_PATH {
                continue;
            }
            let rest = path.trim_start_matches("catalog/");
            if !rest.contains('/') {
                self.diags.push(
                    path,
                    0,
                    "unexpected file: `catalog/` holds one folder per service and `catalog.lock`",
                );
                continue;
            }
            if !path.ends_with("/service.toml") {
                continue;
            }
            let Some(raw) = self.parse::<ServiceFile>(path, text) else {
                continue;
            };
            let folder = service_of(path).unwrap_or_default().to_string();
            let line = |s: &SpannedStr| line_of(text, s.span().start);
            if raw.id.get_ref() != &folder {
                self.diags.push(
                    path,
                    line(&raw.id),
                    format!(
                        "service id `{}` does not match its folder `{folder}`",
                        raw.id.get_ref()
                    ),
                );
            }
            if !version_matches(
                raw.version_format,
                raw.id.get_ref(),
                raw.catalog_version.get_ref(),
            ) {
                self.diags.push_help(
                    path,
                    line(&raw.catalog_version),
                    format!(
                        "catalog_version `{}` does not have the form {}",
                        raw.catalog_version.get_ref(),
                        version_form(raw.version_format, raw.id.get_ref())
                    ),
                    None,
                );
            }
            if let Some(url) = &raw.base_url
                && !(url.starts_with("https://") || url.starts_with("http://"))
            {
                self.diags.push(
                    path,
                    0,
                    format!("base_url `{url}` must be an http or https URL"),
                );
            }
            let (headers, problems) = crate::catalog::ServiceHeaders::parse(
                raw.credential.as_ref(),
                &raw.static_headers,
                raw.idempotency_header.as_deref(),
            );
            for problem in problems {
                self.diags.push(path, 0, problem);
            }
            // A name that does not parse at all is reported above.
            if let Some(cred) = &raw.credential
                && headers.caller_key.is_some()
                && cred.header != cred.header.to_ascii_lowercase()
            {
                self.diags.push(
                    path,
                    0,
                    format!(
                        "credential header `{}` must be a lowercase header name",
                        cred.header
                    ),
                );
            }
            for name in raw.context_headers.values() {
                if hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    self.diags
                        .push(path, 0, format!("`{name}` is not a valid header name"));
                }
            }
            let webhook =
                raw.webhook.as_ref().and_then(|spec| {
                    match crate::webhook::spec::compile(spec, &folder) {
                        Ok(webhook) => Some(webhook),
                        Err(errors) => {
                            for e in errors {
                                self.diags.push(path, 0, e);
                            }
                            None
                        }
                    }
                });
            // The folder decides the id, so a mismatch is reported once, not again for
            // every tool.
            let service = Service {
                webhook,
                id: folder.clone(),
                title: raw.title.clone(),
                description: raw.description.clone(),
                catalog_version: raw.catalog_version.get_ref().clone(),
                version_format: raw.version_format,
                envelope: raw.envelope,
                base_url: raw
                    .base_url
                    .as_ref()
                    .map(|u| u.trim_end_matches('/').to_string()),
                credential: raw.credential.clone(),
                static_headers: raw.static_headers.clone(),
                idempotency_header: raw.idempotency_header.clone(),
                context_headers: raw.context_headers.clone(),
                tables: raw.tables.clone(),
                tenancy: raw.tenancy.clone(),
                figures: crate::catalog::ServiceFigures::default(),
                headers,
            };
            out.insert(folder, (service, raw));
        }
        out
    }

    fn tool_files(&self) -> Vec<(&'a str, &'a str)> {
        let sources: &'a Sources = self.sources;
        sources
            .files
            .iter()
            .filter(|(p, _)| {
                p.starts_with("catalog/")
                    && p.ends_with(".toml")
                    && !p.ends_with("/service.toml")
                    && p.trim_start_matches("catalog/").contains('/')
            })
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect()
    }
}

/// "did you mean" for toml's "unknown field `x`, expected one of `a`, `b`" messages.
fn unknown_field_help(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    did_you_mean(field, expected)
}

fn version_form(format: VersionFormat, id: &str) -> String {
    match format {
        VersionFormat::ServiceDottedDate => format!("`{id}-YYYY.MM.DD.n`"),
        VersionFormat::DashedDate => "`YYYY-MM-DD.n`".into(),
        VersionFormat::Semver => "`MAJOR.MINOR.PATCH`".into(),
    }
}

fn all_digits(s: &str, len: Option<usize>) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && len.is_none_or(|l| s.len() == l)
}

/// Whether a catalog version has its service's form.
pub fn version_matches(format: VersionFormat, id: &str, version: &str) -> bool {
    let date = |y: &str, m: &str, d: &str, n: &str| {
        all_digits(y, Some(4))
            && all_digits(m, Some(2))
            && all_digits(d, Some(2))
            && all_digits(n, None)
    };
    match format {
        VersionFormat::ServiceDottedDate => version
            .strip_prefix(&format!("{id}-"))
            .map(|rest| rest.split('.').collect::<Vec<_>>())
            .is_some_and(|p| p.len() == 4 && date(p[0], p[1], p[2], p[3])),
        VersionFormat::DashedDate => version
            .split_once('.')
            .map(|(d, n)| (d.split('-').collect::<Vec<_>>(), n))
            .is_some_and(|(p, n)| p.len() == 3 && date(p[0], p[1], p[2], n)),
        VersionFormat::Semver => {
            let p: Vec<&str> = version.split('.').collect();
            p.len() == 3 && p.iter().all(|x| all_digits(x, None))
        }
    }
}

struct ToolCompiler<'a, 'b> {
    c: &'a mut Compiler<'b>,
    file: &'a str,
    lines: &'a LineIndex,
    /// Byte offset of the tool's part in the file (its spans are relative to it).
    offset: usize,
    service: &'a Service,
    service_file: &'a ServiceFile,
    rules: &'a Rules,
    templates: &'a mut Templates,
}

impl ToolCompiler<'_, '_> {
    fn line(&self, s: &SpannedStr) -> usize {
        self.lines.line(self.offset + s.span().start)
    }

    fn err(&mut self, line: usize, message: impl Into<String>) {
        self.c.diags.push(self.file, line, message);
    }

    fn expr(&mut self, full: &str, slot: &str, source: &SpannedStr) -> Option<Expr> {
        match self
            .templates
            .add_expr(format!("tool:{full}:{slot}"), source.get_ref())
        {
            Ok(e) => Some(e),
            Err(e) => {
                let line = self.line(source);
                self.err(
                    line,
                    format!(
                        "tool `{full}`: expression `{slot}` does not parse: {}",
                        describe(&e)
                    ),
                );
                None
            }
        }
    }

    fn jsonpath(&mut self, full: &str, what: &str, source: &SpannedStr) -> Option<JsonPath> {
        match jsonpath_rust::parser::parse_json_path(source.get_ref()) {
            Ok(query) => Some(JsonPath {
                source: source.get_ref().clone(),
                query,
                pointer: crate::catalog::simple_pointer(source.get_ref()),
            }),
            Err(e) => {
                let line = self.line(source);
                self.err(
                    line,
                    format!(
                        "tool `{full}`: {what} `{}` is not a JSONPath: {e}",
                        source.get_ref()
                    ),
                );
                None
            }
        }
    }

    /// The compiled tool and its schemas as parsed, for the schema check.
    fn compile(
        &mut self,
        mut raw: RawTool,
        line: usize,
    ) -> Option<(Tool, crate::schema_check::Schemas)> {
        let name = raw.name.get_ref().clone();
        let full = format!("{}.{name}", self.service.id);
        let before = self.c.diags.0.len();
        if !is_snake_name(&name) {
            self.err(
                line,
                format!("tool name `{name}` must be snake_case: lowercase letters, digits and `_`, starting with a letter"),
            );
        }

        // Argument schema, with the service's argument sets merged in.
        let args_line = self.lines.line(self.offset + raw.arguments.span().start);
        // Taken, not copied: the definition hashes the schema apart (`schema_field`).
        let mut arguments = std::mem::take(raw.arguments.get_mut());
        for set in &raw.argument_sets {
            // The service's own sets first, then the shared ones of rules/argument_sets.toml.
            let Some(props) = self
                .service_file
                .argument_sets
                .get(set)
                .or_else(|| self.rules.argument_sets.get(set))
            else {
                self.c.diags.push_help(
                    self.file,
                    line,
                    format!(
                        "tool `{full}`: neither service `{}` nor rules/argument_sets.toml has an argument set `{set}`",
                        self.service.id
                    ),
                    did_you_mean(
                        set,
                        self.service_file
                            .argument_sets
                            .keys()
                            .chain(self.rules.argument_sets.keys())
                            .map(String::as_str),
                    ),
                );
                continue;
            };
            if let Some(target) = arguments
                .as_object_mut()
                .map(|o| o.entry("properties").or_insert_with(|| json!({})))
                .and_then(Value::as_object_mut)
            {
                for (k, v) in props {
                    if target.contains_key(k) {
                        self.c.diags.push(self.file, args_line, format!("tool `{full}`: argument `{k}` is both in its schema and in argument set `{set}`"));
                    } else {
                        target.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        if arguments.get("type") != Some(&json!("object")) {
            self.err(args_line, format!("tool `{full}`: the argument schema must be an object schema (`type = \"object\"`)"));
        }
        // Whether the argument and output schemas are valid JSON Schema is checked once
        // every tool is compiled (`crate::schema_check`).
        let properties: BTreeSet<String> = arguments
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let defaults: Vec<(String, Value)> = arguments
            .get("properties")
            .filter(|_| raw.fill_defaults)
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .filter_map(|(k, v)| v.get("default").map(|d| (k.clone(), d.clone())))
                    .collect()
            })
            .unwrap_or_default();

        // Confirmation.
        let confirmation = match raw.confirmation {
            ConfirmationMode::Auto => self
                .rules
                .confirmation
                .mode_for(&self.service.id, raw.risk, &raw.classes)
                .unwrap_or_else(|| {
                    self.c.diags.push(self.file, line, format!("tool `{full}`: no policy in rules/confirmation.toml matches it; set `confirmation`"));
                    ConfirmationMode::None
                }),
            mode => mode,
        };
        let needed = match confirmation {
            ConfirmationMode::ConfirmFlag | ConfirmationMode::DryRunDefault => {
                Some(self.rules.confirmation.confirm_arg.clone())
            }
            ConfirmationMode::ConfirmApply => Some(self.rules.confirmation.apply_arg.clone()),
            _ => None,
        };
        if let Some(arg) = needed
            && !properties.contains(&arg)
        {
            self.err(args_line, format!("tool `{full}`: its confirmation needs the argument `{arg}`, which its argument schema does not declare"));
        }

        // Action.
        let preview_arg = if raw.http.is_some() {
            self.service_file.defaults.preview_arg.clone()
        } else {
            None
        };
        if let Some(arg) = &preview_arg
            && !properties.contains(arg)
        {
            self.err(args_line, format!("tool `{full}`: service `{}` previews with `{arg}`, which the argument schema does not declare", self.service.id));
        }
        let action = match (&raw.hook, &raw.http) {
            (Some(_), Some(_)) => {
                self.err(line, format!("tool `{full}` has both `hook` and `[tool.http]`; a tool is local or upstream, not both"));
                None
            }
            (None, None) => {
                self.err(
                    line,
                    format!("tool `{full}` has neither `hook` nor `[tool.http]`"),
                );
                None
            }
            (Some(hook), None) => match Hook::parse(hook.get_ref()) {
                Some(h) => Some(Action::Hook(h)),
                None => {
                    let l = self.line(hook);
                    self.c.diags.push_help(
                        self.file,
                        l,
                        format!("tool `{full}`: unknown hook `{}`", hook.get_ref()),
                        did_you_mean(hook.get_ref(), Hook::ALL.iter().map(|h| h.name())),
                    );
                    None
                }
            },
            (None, Some(http)) => self.http(&full, http).map(|p| Action::Http(Box::new(p))),
        };
        match (&action, &raw.dispatch) {
            (Some(Action::Hook(Hook::CategoryDispatch)), None) => {
                self.err(line, format!("tool `{full}`: the `category_dispatch` hook needs a `[tool.dispatch]` table"));
            }
            (Some(Action::Hook(Hook::CategoryDispatch)), Some(d)) if d.categories.is_empty() => {
                self.err(
                    line,
                    format!("tool `{full}`: `[tool.dispatch]` names no category"),
                );
            }
            (Some(Action::Hook(Hook::CategoryDispatch)), Some(_)) | (_, None) => {}
            (_, Some(_)) => {
                self.err(line, format!("tool `{full}`: `[tool.dispatch]` is only for `hook = \"category_dispatch\"`"));
            }
        }
        match (&action, &raw.allowlist) {
            (Some(Action::Hook(Hook::AllowlistedRequest)), None) => {
                self.err(line, format!("tool `{full}`: the `allowlisted_request` hook needs a `[tool.allowlist]` table"));
            }
            (Some(Action::Hook(Hook::AllowlistedRequest)), Some(_)) | (_, None) => {}
            (_, Some(_)) => {
                self.err(line, format!("tool `{full}`: `[tool.allowlist]` is only for `hook = \"allowlisted_request\"`"));
            }
        }
        let poll = match (&action, &raw.poll) {
            (Some(Action::Hook(Hook::SubmitAndPoll)), Some(p)) => self.poll(&full, p, line),
            (Some(Action::Hook(Hook::SubmitAndPoll)), None) => {
                self.err(
                    line,
                    format!(
                        "tool `{full}`: the `submit_and_poll` hook needs a `[tool.poll]` table"
                    ),
                );
                None
            }
            (_, Some(_)) => {
                self.err(
                    line,
                    format!(
                        "tool `{full}`: `[tool.poll]` is only for `hook = \"submit_and_poll\"`"
                    ),
                );
                None
            }
            (_, None) => None,
        };
        let task = raw.task.as_ref().and_then(|t| {
            if raw.poll.is_some() {
                self.err(line, format!("tool `{full}`: `[tool.task]` is for tools that answer a job at once; a `[tool.poll]` tool already watches its job"));
                return None;
            }
            let arguments = self.expr(&full, "task.arguments", &t.arguments)?;
            Some(crate::catalog::TaskPlan {
                watch: t.watch.clone(),
                arguments,
            })
        });
        let lookup = match (&action, &raw.lookup) {
            (Some(Action::Hook(Hook::TableLookup)), Some(l)) => self.lookup(&full, l, line),
            (Some(Action::Hook(Hook::TableLookup)), None) => {
                self.err(
                    line,
                    format!("tool `{full}`: the `table_lookup` hook needs a `[tool.lookup]` table"),
                );
                None
            }
            (_, Some(_)) => {
                self.err(
                    line,
                    format!("tool `{full}`: `[tool.lookup]` is only for `hook = \"table_lookup\"`"),
                );
                None
            }
            (_, None) => None,
        };
        let reschedule = match (&action, &raw.reschedule) {
            (Some(Action::Hook(Hook::RescheduleOverdue)), Some(r)) => self.reschedule(&full, r),
            (Some(Action::Hook(Hook::RescheduleOverdue)), None) => {
                self.err(line, format!("tool `{full}`: the `reschedule_overdue` hook needs a `[tool.reschedule]` table"));
                None
            }
            (_, Some(_)) => {
                self.err(line, format!("tool `{full}`: `[tool.reschedule]` is only for `hook = \"reschedule_overdue\"`"));
                None
            }
            (_, None) => None,
        };
        if matches!(action, Some(Action::Http(_))) && self.service.envelope == EnvelopeKind::Portal
        {
            self.err(line, format!("tool `{full}`: portal tools are local hooks"));
        }

        // Preconditions.
        let mut require = Vec::new();
        for (i, r) in raw.require.iter().enumerate() {
            let check = self.expr(&full, &format!("require.{i}"), &r.check);
            let classification = Classification::parse(&r.classification);
            if classification.is_none() {
                let l = self.line(&r.check);
                self.c.diags.push_help(
                    self.file,
                    l,
                    format!(
                        "tool `{full}`: unknown classification `{}`",
                        r.classification
                    ),
                    did_you_mean(
                        &r.classification,
                        Classification::ALL.iter().map(|c| c.as_str()),
                    ),
                );
            }
            if let (Some(check), Some(classification)) = (check, classification) {
                require.push(Require {
                    check,
                    classification,
                    message: r.message.clone(),
                });
            }
        }

        let response = self.response(&full, &raw.response, line);
        for arg in [
            &response.compact_arg,
            &response.budget_arg,
            &response.raw_arg,
        ]
        .into_iter()
        .flatten()
        {
            if !properties.contains(arg) {
                self.err(args_line, format!("tool `{full}`: its response names the argument `{arg}`, which its argument schema does not declare"));
            }
        }
        let item_budget = raw
            .item_budget
            .or(self.service_file.defaults.item_budget)
            .unwrap_or(self.rules.limits.default_item_budget);
        let timeout_ms = raw
            .timeout_ms
            .or(self.service_file.defaults.timeout_ms)
            .unwrap_or(self.rules.limits.default_timeout_ms);
        if !(1..=300_000).contains(&timeout_ms) {
            self.err(
                line,
                format!("tool `{full}`: timeout_ms {timeout_ms} must be between 1 and 300000"),
            );
        }
        if item_budget == 0 {
            self.err(
                line,
                format!("tool `{full}`: item_budget must be at least 1"),
            );
        }

        if self.c.diags.0.len() > before {
            return None;
        }
        let action = action?;
        let resolved = Resolved {
            arguments: &arguments,
            confirmation,
            preview_arg: &preview_arg,
            timeout_ms,
            item_budget,
        };
        let mut normalized = self.normalized(&raw, &full, &resolved);
        // The schemas are most of a definition: hashed where they are, not copied in,
        // and from the compact text the tool keeps where that is their canonical text.
        let output = raw.output.as_ref().unwrap_or(&Value::Null);
        let arguments_text = SchemaText::new(&arguments);
        let output_text = raw.output.as_ref().map(SchemaText::new);
        let hashed = [
            ("arguments", schema_field(Some(&arguments_text), &arguments)),
            ("output", schema_field(output_text.as_ref(), output)),
        ];
        let descriptor_hash = descriptor_hash_with(&normalized, &hashed);
        if let Some(definitions) = self.c.definitions.as_deref_mut() {
            if let Some(map) = normalized.as_object_mut() {
                for (name, schema) in [("arguments", &arguments), ("output", output)] {
                    map.insert(name.into(), schema.clone());
                }
            }
            definitions.insert(full.clone(), normalized);
        }
        let tool = Tool {
            service: self.service.id.clone(),
            name,
            full_name: full,
            title: raw.title,
            description: raw.description,
            tier: raw.tier,
            risk: raw.risk,
            classes: raw.classes,
            category: raw.category,
            aliases: raw.aliases,
            confirmation,
            preview_arg,
            timeout: Duration::from_millis(timeout_ms),
            item_budget,
            action,
            dispatch: raw.dispatch.clone(),
            reschedule,
            poll,
            task,
            lookup,
            rate_limit: raw.rate_limit,
            allowlist: raw.allowlist.clone(),
            require,
            response,
            arguments: arguments_text,
            argument_names: properties.into_iter().collect(),
            required_arguments: SchemaText::new(&Value::Object(
                crate::describe::required_arguments(&arguments),
            )),
            closed_arguments: arguments.get("additionalProperties") == Some(&Value::Bool(false)),
            validator: std::sync::OnceLock::new(),
            output: output_text,
            defaults,
            descriptor_hash,
            meta_names: Default::default(),
            source: (self.file.to_string(), line),
            provenance: raw.source.clone(),
            exposed: raw.exposed,
        };
        let schemas = crate::schema_check::Schemas {
            arguments,
            output: raw.output,
            line: args_line,
        };
        Some((tool, schemas))
    }

    fn http(&mut self, full: &str, http: &RawHttp) -> Option<HttpPlan> {
        let method_line = self.line(&http.method);
        let method = match http.method.get_ref().as_str() {
            m @ ("GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD") => {
                hyper::Method::from_bytes(m.as_bytes()).ok()
            }
            other => {
                self.c.diags.push_help(
                    self.file,
                    method_line,
                    format!("tool `{full}`: method `{other}` is not one of GET, POST, PUT, PATCH, DELETE, HEAD"),
                    did_you_mean(&other.to_ascii_uppercase(), ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]),
                );
                None
            }
        };
        let path_line = self.line(&http.path);
        let path = http.path.get_ref().clone();
        let segments = match parse_path(&path) {
            Ok(s) => s,
            Err(msg) => {
                self.err(path_line, format!("tool `{full}`: path `{path}` {msg}"));
                Vec::new()
            }
        };
        let mut path_params = BTreeMap::new();
        let placeholders: BTreeSet<String> = segments
            .iter()
            .filter_map(|s| match s {
                PathPart::Param(p) => Some(p.clone()),
                PathPart::Literal(_) => None,
            })
            .collect();
        for p in &placeholders {
            let source = http
                .path_params
                .get(p)
                .cloned()
                .unwrap_or_else(|| Spanned::new(http.path.span(), format!("args.{p}")));
            if let Some(e) = self.expr(full, &format!("path.{p}"), &source) {
                path_params.insert(p.clone(), e);
            }
        }
        for (k, v) in &http.path_params {
            if !placeholders.contains(k) {
                let l = self.line(v);
                self.err(l, format!("tool `{full}`: path_params has `{k}`, which is not a placeholder of `{path}`"));
            }
        }
        let mut query = Vec::new();
        for (k, v) in &http.query {
            if let Some(e) = self.expr(full, &format!("query.{k}"), v) {
                query.push((k.clone(), e));
            }
        }
        let query_object = http
            .query_object
            .as_ref()
            .and_then(|q| self.expr(full, "query_object", q));
        let mut headers = Vec::new();
        let reserved = [
            "authorization",
            "host",
            "content-length",
            "content-type",
            "cookie",
        ];
        let cred_name = self
            .service
            .credential
            .as_ref()
            .map(|c| c.name.to_ascii_lowercase());
        for (k, v) in &http.headers {
            let lower = k.to_ascii_lowercase();
            if reserved.contains(&lower.as_str()) || cred_name.as_deref() == Some(lower.as_str()) {
                let l = self.line(v);
                self.err(
                    l,
                    format!(
                        "tool `{full}`: header `{k}` is set by the broker and cannot be mapped"
                    ),
                );
            } else if hyper::header::HeaderName::from_bytes(k.as_bytes()).is_err() {
                let l = self.line(v);
                self.err(
                    l,
                    format!("tool `{full}`: `{k}` is not a valid header name"),
                );
            } else if let Some(e) = self.expr(full, &format!("header.{k}"), v) {
                headers.push((k.clone(), e));
            }
        }
        let body = match (&http.body, &http.body_template) {
            (Some(a), Some(_)) => {
                let l = self.line(a);
                self.err(
                    l,
                    format!("tool `{full}`: give `body` or `body_template`, not both"),
                );
                None
            }
            (Some(b), None) => self.expr(full, "body", b).map(BodyPlan::Expr),
            (None, Some(t)) => {
                if self.templates.has(t.get_ref()) {
                    Some(BodyPlan::Template(t.get_ref().clone()))
                } else {
                    let l = self.line(t);
                    self.err(
                        l,
                        format!(
                            "tool `{full}`: body_template `{}` is not in templates/",
                            t.get_ref()
                        ),
                    );
                    None
                }
            }
            (None, None) => None,
        };
        if body.is_some()
            && matches!(method, Some(ref m) if m == hyper::Method::GET || m == hyper::Method::HEAD)
        {
            self.err(
                method_line,
                format!(
                    "tool `{full}`: a {} request cannot carry a body",
                    http.method.get_ref()
                ),
            );
        }
        Some(HttpPlan {
            method: method?,
            path,
            segments,
            path_params,
            query,
            query_object,
            headers,
            body,
            body_encoding: http.body_encoding,
            indexed_query: self.service_file.defaults.query_arrays
                == crate::descriptor::QueryArrays::Indexed,
        })
    }

    fn lookup(
        &mut self,
        full: &str,
        l: &crate::descriptor::RawLookup,
        line: usize,
    ) -> Option<crate::catalog::Lookup> {
        if let Some(table) = &l.table
            && !self.service.tables.contains_key(table)
        {
            self.c.diags.push_help(
                self.file,
                line,
                format!(
                    "tool `{full}`: service `{}` has no table `{table}`",
                    self.service.id
                ),
                did_you_mean(table, self.service.tables.keys().map(String::as_str)),
            );
            return None;
        }
        let query = match &l.query {
            Some(q) => Some(self.expr(full, "lookup.query", q)?),
            None => None,
        };
        let filter = match &l.filter {
            Some(f) => Some(self.expr(full, "lookup.filter", f)?),
            None => None,
        };
        let result = self.expr(full, "lookup.result", &l.result)?;
        Some(crate::catalog::Lookup {
            table: l.table.clone(),
            query,
            filter,
            fields: l.fields.clone(),
            result,
        })
    }

    fn poll(
        &mut self,
        full: &str,
        p: &crate::descriptor::RawPoll,
        line: usize,
    ) -> Option<crate::catalog::Poll> {
        let mut submit = Vec::new();
        let mut ok = true;
        for (i, s) in p.submit.iter().enumerate() {
            let when = match &s.when {
                Some(w) => match self.expr(full, &format!("poll.submit.{i}.when"), w) {
                    Some(e) => Some(e),
                    None => {
                        ok = false;
                        None
                    }
                },
                None => None,
            };
            match self.expr(full, &format!("poll.submit.{i}.arguments"), &s.arguments) {
                Some(a) => submit.push((when, s.tool.clone(), a)),
                None => ok = false,
            }
        }
        let id = self.expr(full, "poll.id", &p.id);
        let status_arguments = self.expr(full, "poll.status_arguments", &p.status_arguments);
        let status = self.expr(full, "poll.status", &p.status);
        let result = self.expr(full, "poll.result", &p.result);
        if p.done.is_empty() {
            self.err(
                line,
                format!("tool `{full}`: `[tool.poll]` names no `done` status"),
            );
            ok = false;
        }
        if p.interval_ms == 0
            || p.max_wait_seconds > 300
            || p.default_wait_seconds > p.max_wait_seconds
        {
            self.err(line, format!("tool `{full}`: poll timing must have interval_ms > 0 and default_wait_seconds <= max_wait_seconds <= 300"));
            ok = false;
        }
        if !ok {
            return None;
        }
        Some(crate::catalog::Poll {
            submit,
            id: id?,
            status_tool: p.status_tool.clone(),
            status_arguments: status_arguments?,
            status: status?,
            done: p.done.clone(),
            failed: p.failed.clone(),
            waiting: p.waiting.clone(),
            result: result?,
            interval: std::time::Duration::from_millis(p.interval_ms),
            wait_arg: p.wait_arg.clone(),
            default_wait: std::time::Duration::from_secs(p.default_wait_seconds),
            max_wait: std::time::Duration::from_secs(p.max_wait_seconds),
            check_tool: p.check_tool.clone(),
        })
    }

    fn reschedule(
        &mut self,
        full: &str,
        r: &crate::descriptor::RawReschedule,
    ) -> Option<crate::catalog::Reschedule> {
        let search = self.expr(full, "reschedule.search_arguments", &r.search_arguments);
        let items = self.jsonpath(full, "reschedule.items", &r.items);
        let item_id = self.expr(full, "reschedule.item_id", &r.item_id);
        let update = self.expr(full, "reschedule.update_arguments", &r.update_arguments);
        let zone = match (&r.zone_tool, &r.zone_arguments, &r.zone_path) {
            (None, None, None) => None,
            (Some(tool), Some(args), Some(path)) => {
                let a = self.expr(full, "reschedule.zone_arguments", args);
                let p = self.jsonpath(full, "reschedule.zone_path", path);
                Some((tool.clone(), a?, p?))
            }
            _ => {
                let l = self.line(&r.search_arguments);
                self.err(l, format!("tool `{full}`: give all of zone_tool, zone_arguments and zone_path, or none"));
                return None;
            }
        };
        Some(crate::catalog::Reschedule {
            search_tool: r.search_tool.clone(),
            search_arguments: search?,
            items: items?,
            due_field: r.due_field.clone(),
            item_id: item_id?,
            update_tool: r.update_tool.clone(),
            update_arguments: update?,
            zone,
        })
    }

    fn response(&mut self, full: &str, raw: &RawResponse, line: usize) -> ResponsePlan {
        let mut plan = ResponsePlan {
            data: raw
                .data
                .as_ref()
                .and_then(|p| self.jsonpath(full, "response.data", p)),
            ..ResponsePlan::default()
        };
        plan.compact_arg = raw.compact_arg.clone();
        plan.budget_arg = raw.budget_arg.clone();
        plan.raw_arg = raw.raw_arg.clone();
        plan.mode_arg = raw.mode_arg.clone();
        plan.job_id = raw
            .job_id
            .as_ref()
            .and_then(|p| self.jsonpath(full, "response.job_id", p));
        plan.job_status = raw.job_status.as_ref().and_then(|j| {
            let id = self.expr(full, "response.job_status.id", &j.id);
            let status = self.jsonpath(full, "response.job_status.status", &j.status);
            Some((id?, status?))
        });
        plan.fields_arg = raw.fields_arg.clone();
        if let Some(table) = &raw.compact_table {
            match self.service.tables.get(table) {
                Some(t) => plan.compact_fields = Some(t.clone()),
                None => self.err(
                    line,
                    format!(
                        "tool `{full}`: response.compact_table `{table}` is not a table of service `{}`",
                        self.service.id
                    ),
                ),
            }
        }
        for (k, v) in &raw.pagination {
            if let Some(p) = self.jsonpath(full, "response.pagination", v) {
                plan.pagination.push((k.clone(), p));
            }
        }
        for r in &raw.redact {
            if let Some(p) = self.jsonpath(full, "response.redact", r) {
                plan.redact.push(p);
            }
        }
        for (i, rule) in raw.redact_unless.iter().enumerate() {
            let expr = self.expr(full, &format!("redact_unless.{i}"), &rule.unless);
            let paths: Vec<JsonPath> = rule
                .paths
                .iter()
                .filter_map(|p| self.jsonpath(full, "response.redact_unless", p))
                .collect();
            if let Some(expr) = expr {
                plan.redact_unless.push((expr, paths));
            }
        }
        if let Some(summary) = &raw.summary {
            let name = format!("tool:{full}:summary");
            match self.templates.add_template(&name, summary.get_ref()) {
                Ok(()) => plan.summary = Some(name),
                Err(e) => {
                    let l = self.line(summary);
                    self.err(
                        l,
                        format!(
                            "tool `{full}`: summary template does not parse: {}",
                            describe(&e)
                        ),
                    );
                }
            }
        }
        for (status, classification) in &raw.upstream_errors {
            let parsed_status = status
                .parse::<u16>()
                .ok()
                .filter(|s| (400..=599).contains(s));
            let parsed_class = Classification::parse(classification);
            match (parsed_status, parsed_class) {
                (Some(s), Some(c)) => {
                    plan.upstream_errors.insert(s, c);
                }
                (None, _) => self.err(
                    line,
                    format!(
                        "tool `{full}`: upstream_errors key `{status}` is not an HTTP error status"
                    ),
                ),
                (_, None) => self.c.diags.push_help(
                    self.file,
                    line,
                    format!("tool `{full}`: unknown classification `{classification}`"),
                    did_you_mean(
                        classification,
                        Classification::ALL.iter().map(|c| c.as_str()),
                    ),
                ),
            }
        }
        plan
    }

    /// The normalized definition that the descriptor hash covers: every descriptor field
    /// and every execution rule, with the text of any template used.
    fn normalized(&self, raw: &RawTool, full: &str, resolved: &Resolved<'_>) -> Value {
        let Resolved {
            arguments,
            confirmation,
            preview_arg,
            timeout_ms,
            item_budget,
        } = *resolved;
        let spanned_map = |m: &BTreeMap<String, SpannedStr>| -> Value {
            m.iter()
                .map(|(k, v)| (k.clone(), json!(v.get_ref())))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        let opt = |s: &Option<SpannedStr>| s.as_ref().map(|v| v.get_ref().clone());
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
        let mut normalized = json!({
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
        });
        // Added only where present, so tools without one keep their hashes. A lookup's
        // hash covers the table it reads, a compact answer's the table it keeps by.
        if let (Some(allowlist), Some(map)) = (&raw.allowlist, normalized.as_object_mut()) {
            map.insert("allowlist".into(), json!(allowlist));
        }
        if let (Some(limit), Some(map)) = (&raw.rate_limit, normalized.as_object_mut()) {
            map.insert("rate_limit".into(), json!(limit));
        }
        // Where a write sends its idempotency key changes what it sends: hashed, for
        // HTTP writes of services that have one.
        if let (Some(header), Some(map), Some(_), crate::descriptor::Risk::Write) = (
            &self.service.idempotency_header,
            normalized.as_object_mut(),
            &raw.http,
            raw.risk,
        ) {
            map.insert("idempotency_header".into(), json!(header));
        }
        if let (Some(tenancy), Some(map)) = (&self.service.tenancy, normalized.as_object_mut()) {
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
        // A tool that records jobs: how the service's callbacks update them is part of
        // what the tool does.
        if let (Some(_), Some(webhook), Some(map)) = (
            &raw.response.job_id,
            &self.service.webhook,
            normalized.as_object_mut(),
        ) {
            map.insert("webhook".into(), json!(webhook.spec));
        }
        let r = &raw.response;
        if let (Some(job_id), Some(response)) = (
            &r.job_id,
            normalized
                .get_mut("response")
                .and_then(Value::as_object_mut),
        ) {
            response.insert("job_id".into(), json!(job_id.get_ref()));
        }
        if let (Some(job), Some(response)) = (
            &r.job_status,
            normalized
                .get_mut("response")
                .and_then(Value::as_object_mut),
        ) {
            response.insert(
                "job_status".into(),
                json!({ "id": job.id.get_ref(), "status": job.status.get_ref() }),
            );
        }
        if (r.mode_arg.is_some() || r.fields_arg.is_some() || r.compact_table.is_some())
            && let Some(response) = normalized
                .get_mut("response")
                .and_then(Value::as_object_mut)
        {
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
        if let (Some(l), Some(map)) = (&raw.lookup, normalized.as_object_mut()) {
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
        if let (Some(t), Some(map)) = (&raw.task, normalized.as_object_mut()) {
            map.insert(
                "task".into(),
                json!({ "watch": t.watch, "arguments": t.arguments.get_ref() }),
            );
        }
        if let (Some(p), Some(map)) = (&raw.poll, normalized.as_object_mut()) {
            map.insert(
                "poll".into(),
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
                }),
            );
        }
        normalized
    }

    /// A template's text and the text of everything it includes, for hashing.
    fn template_text(&self, name: &str) -> Value {
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

/// Tool settings resolved from the tool, its service and the rules, for the hash.
#[derive(Clone, Copy)]
struct Resolved<'a> {
    arguments: &'a Value,
    confirmation: ConfirmationMode,
    preview_arg: &'a Option<String>,
    timeout_ms: u64,
    item_budget: usize,
}

fn is_snake_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Splits `/a/{b}/c` into literals and placeholders.
pub fn parse_path(path: &str) -> Result<Vec<PathPart>, &'static str> {
    if !path.starts_with('/') {
        return Err("must start with `/`");
    }
    if path.contains("..") || path.contains('?') || path.contains('#') {
        return Err("must not contain `..`, `?` or `#`");
    }
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            return Err("has an unclosed `{`");
        };
        if start > 0 {
            out.push(PathPart::Literal(rest[..start].to_string()));
        }
        let name = &rest[start + 1..start + len];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err("has a placeholder that is not a plain name");
        }
        out.push(PathPart::Param(name.to_string()));
        rest = &rest[start + len + 1..];
    }
    if rest.contains('}') {
        return Err("has an unmatched `}`");
    }
    if !rest.is_empty() {
        out.push(PathPart::Literal(rest.to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_forms() {
        use VersionFormat::*;
        assert!(version_matches(
            ServiceDottedDate,
            "hosting",
            "hosting-2026.11.21.1"
        ));
        assert!(!version_matches(
            ServiceDottedDate,
            "hosting",
            "crm-2026.11.21.1"
        ));
        assert!(!version_matches(
            ServiceDottedDate,
            "hosting",
            "hosting-2026.11.21"
        ));
        assert!(version_matches(DashedDate, "crm", "2026-11-21.3"));
        assert!(!version_matches(DashedDate, "crm", "2026-11-21"));
        assert!(version_matches(Semver, "leads", "1.0.2"));
        assert!(!version_matches(Semver, "leads", "1.0"));
    }

    #[test]
    fn paths_split_into_parts() {
        assert_eq!(
            parse_path("/a/{b}/c{d}"),
            Ok(vec![
                PathPart::Literal("/a/".into()),
                PathPart::Param("b".into()),
                PathPart::Literal("/c".into()),
                PathPart::Param("d".into()),
            ])
        );
        assert!(parse_path("a").is_err());
        assert!(parse_path("/a/{b").is_err());
        assert!(parse_path("/a/../b").is_err());
    }
}
