//! The compile stage: raw TOML structs -> [`Catalog`].
//!
//! Reads every file of a catalog root, parses each strictly, checks everything that can
//! be checked before a request arrives (names, hooks, templates, expressions, JSONPaths,
//! schemas, confirmation arguments), computes descriptor hashes, and reports every
//! problem together, each with its file and line. Nothing here runs on the request path.

mod checks;
mod normalize;
mod tool;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::catalog::Hook;
use crate::catalog::descriptor::{
    ConfirmationMode, EnvelopeKind, RawHttp, RawResponse, RawTool, ServiceFile, Spanned,
    SpannedStr, VersionFormat,
};
use crate::catalog::diag::{Diagnostics, LineIndex, did_you_mean, line_of};
use crate::catalog::identity::{Field, LOCK_PATH, compact_is_canonical, descriptor_hash_with};
use crate::catalog::rules::RawArgumentSets;
use crate::catalog::rules::{
    Confirmation, Limits, RawConfirmation, RawErrors, RawRedaction, Redaction, Rules,
};
use crate::catalog::search::RawSearch;
use crate::catalog::source::Sources;
use crate::catalog::start_cache::StartCache;
use crate::catalog::template::{Expr, Templates, describe, referenced_templates};
use crate::catalog::tool_file::{Input, Parsed, read_all};
use crate::catalog::{
    Action, BodyPlan, Catalog, HttpPlan, JsonPath, PathPart, Require, ResponsePlan, SchemaText,
    Service, Tool,
};
use crate::error::Classification;

/// Shared templates the engine itself renders.
pub const REQUIRED_TEMPLATES: [&str; 2] = ["dry_run_next_action.j2", "summary_default.j2"];

/// Compiles a catalog root; on failure returns every problem found.
pub fn compile(sources: &Sources) -> Result<Catalog, Diagnostics> {
    compile_with(sources, Options::default()).map(|(catalog, _)| catalog)
}

/// What [`compile_with`] does beyond [`compile`].
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// Also return every tool's normalized definition (what its descriptor hash
    /// covers), by full name. A served catalog keeps only the hashes: the definitions,
    /// as JSON trees, would be a fifth of its memory.
    pub keep_definitions: bool,
    /// Evaluate plain expressions (literals, lookups, picks) without minijinja, as
    /// served catalogs do; `false` compiles every expression as a template, to check
    /// that both give the same answers.
    pub plain_expressions: bool,
    /// A start's cache ([`crate::catalog::start_cache`]): where it holds, the tool
    /// files are read from it and the schema check is skipped; where it does not, the
    /// parsed tools are recorded into it.
    pub start: Option<&'a StartCache>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            keep_definitions: false,
            plain_expressions: true,
            start: None,
        }
    }
}

/// Compiles a catalog root with `options`; the map holds the normalized definitions
/// when they were asked for. In order: the rules, the templates, the services, every
/// tool (its schemas checked as it comes), what is checked across tools, and the
/// catalog assembled with its costs.
pub fn compile_with(
    sources: &Sources,
    options: Options<'_>,
) -> Result<(Catalog, BTreeMap<String, serde_json::Value>), Diagnostics> {
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
    if let Some(rules) = &rules {
        c.check_service_names(&rules.search, &services);
        c.check_id_services(&rules.search, &services);
        c.check_action_openings(&rules.search);
    }
    let mut tools = match &rules {
        Some(rules) => c.tools(rules, &services, &mut templates, &options),
        None => Vec::new(),
    };
    c.intents(&mut tools);
    for tool in &tools {
        c.check_steps(tool, &tools);
        c.check_task(tool, &tools);
        c.check_categories(tool, &tools);
    }
    c.check_webhook_keys(&services, &tools);
    let Some(rules) = rules else {
        c.diags.sort();
        return Err(c.diags);
    };
    if !c.diags.is_empty() {
        c.diags.sort();
        return Err(c.diags);
    }
    let services = services.into_iter().map(|(k, (s, _))| (k, s)).collect();
    let catalog = c.assembled(services, tools, rules, templates)?;
    Ok((catalog, definitions))
}

impl<'a> Compiler<'a> {
    /// Every tool file of a service folder compiled, its files parsed on a second thread
    /// while this one compiles (`crate::catalog::tool_file`); each tool's schemas as
    /// parsed go to the check as the tool is compiled, and are dropped there (the tools
    /// keep them as text). With a start cache that holds the files, they are read from it
    /// and not checked again.
    fn tools(
        &mut self,
        rules: &Rules,
        services: &BTreeMap<String, (Service, ServiceFile)>,
        templates: &mut Templates,
        options: &Options<'_>,
    ) -> Vec<Tool> {
        let started = std::time::Instant::now();
        let mut tools = Vec::new();
        // Each tool's schemas as parsed go to the check as the tool is compiled, and are
        // dropped there (the tools keep them as text).
        let held = options.start.filter(|cache| cache.holds());
        let mut checker = held
            .is_none()
            .then(crate::catalog::schema_check::Checker::start);
        let mut seen: BTreeMap<String, (String, usize)> = BTreeMap::new();
        let mut files = Vec::new();
        for (file, text) in self.tool_files() {
            match service_of(file).and_then(|id| services.get(id)) {
                Some(service) => files.push((file, text, service)),
                None => self.diags.push(
                    file,
                    0,
                    "tool file is not in a service folder with a `service.toml`",
                ),
            }
        }
        let inputs: Vec<Input<'_>> = files
            .iter()
            .map(|(file, text, _)| Input {
                text,
                kept: held.and_then(|cache| cache.kept(file)),
            })
            .collect();
        let record = options.start.is_some() && held.is_none();
        let mut lines = LineIndex::new("");
        // Files are parsed on a second thread while this one compiles (crate::catalog::tool_file).
        let recorded = read_all(&inputs, record, |index, parsed| {
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
                    self.parse_error(file, &lines, offset, &e);
                    return;
                }
                Parsed::Unreadable(e) => {
                    self.diags.push(
                        file,
                        0,
                        format!(
                            "the start cache's copy of this file cannot be read ({e}); remove `{}` from the data folder",
                            crate::catalog::start_cache::FILE
                        ),
                    );
                    return;
                }
            };
            let line = lines.line(offset + raw.name.span().start);
            let full = format!("{}.{}", service.0.id, raw.name.get_ref());
            if let Some((f, l)) = seen.get(&full) {
                self.diags.push(
                    file,
                    line,
                    format!("tool `{full}` is defined twice (first at {f}:{l})"),
                );
                return;
            }
            seen.insert(full, (file.to_string(), line));
            let mut tc = ToolCompiler {
                c: &mut *self,
                file,
                lines: &lines,
                offset,
                service: &service.0,
                service_file: &service.1,
                rules,
                templates: &mut *templates,
            };
            if let Some((tool, parsed)) = tc.compile(*raw, line) {
                if let Some(checker) = &mut checker {
                    checker.submit(&tool.arguments, tool.output.as_ref(), parsed);
                }
                tools.push(tool);
            }
        });
        if let (Some(cache), Some(recorded)) = (options.start, recorded) {
            cache.record(
                files
                    .iter()
                    .zip(recorded)
                    .map(|((file, _, _), json)| ((*file).to_string(), json))
                    .collect(),
            );
        }
        let compiled = started.elapsed();
        if let Some(checker) = checker {
            let checked = checker.finish();
            for (file, line, message) in crate::catalog::schema_check::problems(&tools, checked) {
                self.diags.push(&file, line, message);
            }
        }
        tracing::debug!(
            tools_ms = compiled.as_millis() as u64,
            schemas_ms = (started.elapsed() - compiled).as_millis() as u64,
            "tools compiled and their schemas checked"
        );
        tools
    }

    /// The catalog from its checked parts, with its costs compiled against its tools.
    fn assembled(
        mut self,
        services: BTreeMap<String, Service>,
        tools: Vec<Tool>,
        rules: Rules,
        templates: Templates,
    ) -> Result<Catalog, Diagnostics> {
        let origin = self.sources.origin.clone();
        let mut catalog = match Catalog::assemble(services, tools, rules, templates, origin) {
            Ok(catalog) => catalog,
            Err(collisions) => {
                let mut diags = Diagnostics::default();
                for (file, line, message) in collisions {
                    diags.push(&file, line, message);
                }
                diags.sort();
                return Err(diags);
            }
        };
        let (units, written) = self.cost_rules();
        match crate::catalog::costs::compile(&catalog.tools, units.clone(), &written) {
            Ok(costs) => catalog.costs = costs,
            Err(problems) => {
                for (origin, message) in problems {
                    self.diags.push(&origin.file, origin.line, message);
                }
            }
        }
        let guards = catalog.rules.guards.clone();
        match crate::catalog::guards::applied::Applied::new(guards.clone(), &catalog.tools) {
            Ok(applied) => catalog.guards = std::sync::Arc::new(applied),
            Err(problems) => {
                for (rule, message) in problems {
                    self.diags
                        .push("rules/guards.toml", guards.line(rule), message);
                }
            }
        }
        if !self.diags.is_empty() {
            self.diags.sort();
            return Err(self.diags);
        }
        catalog.cost_rules = (units, written);
        Ok(catalog)
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
        let search = load(self, "search.toml").and_then(|(p, t)| {
            let search = self.parse::<RawSearch>(&p, &t)?;
            if let Some(problem) = search.meaning.and_then(|m| m.problem()) {
                let line = t.find("[meaning]").map_or(0, |o| line_of(&t, o));
                self.diags.push(&p, line, problem);
            }
            Some(search)
        });
        let argument_sets = load(self, "argument_sets.toml")
            .and_then(|(p, t)| self.parse::<RawArgumentSets>(&p, &t));
        let guards = load(self, "guards.toml").and_then(|(p, t)| self.guards(&p, &t));

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
            guards: std::sync::Arc::new(guards?),
        })
        .filter(|_| errors.is_some())
    }

    /// `rules/guards.toml` compiled; every rule whose pattern, validator or own
    /// examples fail reported at its `[[rule]]` line.
    fn guards(&mut self, path: &str, text: &str) -> Option<crate::catalog::guards::Guards> {
        let raw = self.parse::<crate::catalog::guards::RawGuards>(path, text)?;
        let lines: Vec<usize> = text
            .match_indices("[[rule]]")
            .map(|(o, _)| line_of(text, o))
            .collect();
        match crate::catalog::guards::Guards::compile(&raw.rule, &lines) {
            Ok(guards) => Some(guards),
            Err(refusals) => {
                for (line, message) in refusals {
                    self.diags.push(path, line, message);
                }
                // Reported; the rest of the catalog still compiles, so its own
                // mistakes are found in the same run.
                Some(crate::catalog::guards::Guards::empty())
            }
        }
    }

    /// `rules/costs.toml` as written (costs compile once the tools are assembled).
    fn cost_rules(&mut self) -> (Vec<String>, Vec<crate::catalog::costs::Written>) {
        const PATH: &str = "rules/costs.toml";
        let Some(text) = self.sources.get(PATH) else {
            self.diags.push(PATH, 0, "rules file is missing");
            return (Vec::new(), Vec::new());
        };
        match self.parse::<crate::catalog::costs::RawCosts>(PATH, text) {
            Some(raw) => {
                let units = raw.units.clone();
                (
                    units,
                    crate::catalog::costs::written(raw, PATH, text, false),
                )
            }
            None => (Vec::new(), Vec::new()),
        }
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
            let headers = self.service_headers(path, &raw);
            if let (Some(spec), Some(cred)) = (&raw.mcp, &raw.credential) {
                if !spec.command.is_empty() {
                    self.diags.push(path, 0, "a stdio MCP server gets no caller's key (`[credential]`): per-user credentials reach HTTP servers only; pass a deployment's key through `[mcp] env`");
                } else if cred.placement != crate::catalog::descriptor::Placement::Header {
                    self.diags.push(path, 0, "an MCP server over HTTP takes the caller's key in a header: `[credential] placement` must be `header`");
                }
            }
            let mcp = raw.mcp.as_ref().and_then(|spec| {
                match crate::catalog::mcp::compile_server(spec, raw.base_url.as_deref()) {
                    Ok(server) => Some(server),
                    Err(problems) => {
                        for problem in problems {
                            self.diags.push(path, 0, problem);
                        }
                        None
                    }
                }
            });
            let webhook = raw.webhook.as_ref().and_then(|spec| {
                match crate::catalog::webhook::compile(spec, &folder) {
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
                // An MCP server's URL is its base URL: a deployment points it
                // elsewhere as any other.
                base_url: raw
                    .base_url
                    .as_ref()
                    .or(raw.mcp.as_ref().and_then(|m| m.url.as_ref()))
                    .map(|u| u.trim_end_matches('/').to_string()),
                credential: raw.credential.clone(),
                static_headers: raw.static_headers.clone(),
                idempotency_header: raw.idempotency_header.clone(),
                context_headers: raw.context_headers.clone(),
                tables: raw.tables.clone(),
                tenancy: raw.tenancy.clone(),
                figures: crate::catalog::ServiceFigures::default(),
                headers,
                mcp,
            };
            out.insert(folder, (service, raw));
        }
        out
    }

    /// A service's headers (its credential, static and idempotency headers) parsed,
    /// every problem reported: a credential header must be lowercase, a context
    /// header a valid name.
    fn service_headers(&mut self, path: &str, raw: &ServiceFile) -> crate::catalog::ServiceHeaders {
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
        headers
    }

    /// Each service folder's `intents.toml` given to its tools (see
    /// [`crate::catalog::intents`]); a file in a folder without a service is reported.
    fn intents(&mut self, tools: &mut [Tool]) {
        let sources: &'a Sources = self.sources;
        let suffix = format!("/{}", crate::catalog::intents::FILE_NAME);
        for (file, text) in &sources.files {
            if !file.starts_with("catalog/") || !file.ends_with(&suffix) {
                continue;
            }
            let service = service_of(file).unwrap_or_default();
            if tools.iter().any(|t| t.service == service) {
                crate::catalog::intents::attach(file, text, service, tools, &mut self.diags);
            } else {
                self.diags.push(
                    file,
                    0,
                    "intents file is not in a service folder with tools",
                );
            }
        }
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
                    && !p.ends_with(&format!("/{}", crate::catalog::intents::FILE_NAME))
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
