//! One tool compiled: its request plan, hook steps, response plan and schemas, every
//! problem reported with the tool file's line.

use super::*;

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

    /// The compiled tool and its schemas as parsed, for the schema check: each section
    /// of the tool format in its order (arguments, confirmation, action and its tables,
    /// preconditions, answer, limits), every problem reported with its line; a tool
    /// with any problem is not built.
    pub(super) fn compile(
        &mut self,
        mut raw: RawTool,
        line: usize,
    ) -> Option<(Tool, crate::catalog::schema_check::Schemas)> {
        let name = raw.name.get_ref().clone();
        let full = format!("{}.{name}", self.service.id);
        let before = self.c.diags.0.len();
        if !is_snake_name(&name) {
            self.err(
                line,
                format!("tool name `{name}` must be snake_case: lowercase letters, digits and `_`, starting with a letter"),
            );
        }
        let arguments = self.arguments(&mut raw, &full, line);
        let confirmation = self.confirmation(&raw, &full, line, &arguments);
        let preview_arg = self.preview_arg(&raw, &full, &arguments);
        let action = self.action(&raw, &full, line);
        let tables = self.tables(&raw, &full, line, action.as_ref());
        let require = self.preconditions(&raw, &full);
        let response = self.response(&full, &raw.response, line);
        self.check_answer_arguments(&full, &response, &arguments);
        let limits = self.limits(&raw, &full, line);
        if self.c.diags.0.len() > before {
            return None;
        }
        let sections = Sections {
            name,
            full,
            line,
            arguments,
            confirmation,
            preview_arg,
            action: action?,
            tables,
            require,
            response,
            limits,
        };
        Some(self.built(raw, sections))
    }

    /// The argument schema, with the service's argument sets merged in: it must be an
    /// object schema (whether it is valid JSON Schema is checked once every tool is
    /// compiled, `crate::catalog::schema_check`).
    fn arguments(&mut self, raw: &mut RawTool, full: &str, line: usize) -> Arguments {
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
        Arguments {
            schema: arguments,
            line: args_line,
            properties,
            defaults,
        }
    }

    /// The confirmation mode (`auto`: the first rule of rules/confirmation.toml that
    /// matches), and the argument it needs declared.
    fn confirmation(
        &mut self,
        raw: &RawTool,
        full: &str,
        line: usize,
        arguments: &Arguments,
    ) -> ConfirmationMode {
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
            && !arguments.properties.contains(&arg)
        {
            self.err(arguments.line, format!("tool `{full}`: its confirmation needs the argument `{arg}`, which its argument schema does not declare"));
        }
        confirmation
    }

    /// The service's preview argument, for an upstream tool; it must be declared.
    fn preview_arg(&mut self, raw: &RawTool, full: &str, arguments: &Arguments) -> Option<String> {
        let preview_arg = if raw.http.is_some() || raw.mcp.is_some() {
            self.service_file.defaults.preview_arg.clone()
        } else {
            None
        };
        if let Some(arg) = &preview_arg
            && !arguments.properties.contains(arg)
        {
            self.err(arguments.line, format!("tool `{full}`: service `{}` previews with `{arg}`, which the argument schema does not declare", self.service.id));
        }
        preview_arg
    }

    /// What the tool does: a hook, an upstream request (`[tool.http]`) or a tool of the
    /// service's MCP server (`[tool.mcp]`): exactly one.
    fn action(&mut self, raw: &RawTool, full: &str, line: usize) -> Option<Action> {
        let given = [raw.hook.is_some(), raw.http.is_some(), raw.mcp.is_some()];
        match given.iter().filter(|g| **g).count() {
            0 => {
                self.err(
                    line,
                    format!("tool `{full}` has none of `hook`, `[tool.http]` and `[tool.mcp]`"),
                );
                return None;
            }
            1 => {}
            _ => {
                self.err(line, format!("tool `{full}` has more than one of `hook`, `[tool.http]` and `[tool.mcp]`; a tool is local, an HTTP request or an MCP tool"));
                return None;
            }
        }
        if let Some(http) = &raw.http {
            return self.http(full, http).map(|p| Action::Http(Box::new(p)));
        }
        if let Some(mcp) = &raw.mcp {
            return self.mcp(full, line, mcp).map(|p| Action::Mcp(Box::new(p)));
        }
        let hook = raw.hook.as_ref()?;
        match Hook::parse(hook.get_ref()) {
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
        }
    }

    /// `[tool.mcp]`: only in a service that is an MCP server, with a pin that is a
    /// sha256.
    fn mcp(
        &mut self,
        full: &str,
        line: usize,
        raw: &crate::catalog::descriptor::RawMcp,
    ) -> Option<crate::catalog::mcp::McpPlan> {
        if self.service_file.mcp.is_none() {
            self.err(line, format!("tool `{full}` has `[tool.mcp]`, but service `{}` has no `[mcp]` table saying how to reach its server", self.service.id));
            return None;
        }
        let is_hash = raw.sha256.len() == 64
            && raw
                .sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !is_hash {
            self.err(line, format!("tool `{full}`: `[tool.mcp] sha256` must be 64 lowercase hex digits (written by `tool-broker catalog import-mcp`)"));
            return None;
        }
        if raw.tool.is_empty() {
            self.err(
                line,
                format!("tool `{full}`: `[tool.mcp] tool` names the server's tool"),
            );
            return None;
        }
        Some(crate::catalog::mcp::McpPlan {
            tool: raw.tool.clone(),
            pinned: raw.sha256.clone(),
            open_world: raw.open_world,
        })
    }

    /// The tables a hook reads (`[tool.dispatch]`, `[tool.allowlist]`, `[tool.poll]`,
    /// `[tool.lookup]`, `[tool.reschedule]`), each only beside its hook and never
    /// missing from it; `[tool.task]`; and no upstream request from a portal tool.
    fn tables(
        &mut self,
        raw: &RawTool,
        full: &str,
        line: usize,
        action: Option<&Action>,
    ) -> HookTables {
        let hook = match action {
            Some(Action::Hook(hook)) => Some(*hook),
            _ => None,
        };
        match (hook, &raw.dispatch) {
            (Some(Hook::CategoryDispatch), None) => {
                self.err(line, format!("tool `{full}`: the `category_dispatch` hook needs a `[tool.dispatch]` table"));
            }
            (Some(Hook::CategoryDispatch), Some(d)) if d.categories.is_empty() => {
                self.err(
                    line,
                    format!("tool `{full}`: `[tool.dispatch]` names no category"),
                );
            }
            (Some(Hook::CategoryDispatch), Some(_)) | (_, None) => {}
            (_, Some(_)) => {
                self.err(line, format!("tool `{full}`: `[tool.dispatch]` is only for `hook = \"category_dispatch\"`"));
            }
        }
        match (hook, &raw.allowlist) {
            (Some(Hook::AllowlistedRequest), None) => {
                self.err(line, format!("tool `{full}`: the `allowlisted_request` hook needs a `[tool.allowlist]` table"));
            }
            (Some(Hook::AllowlistedRequest), Some(_)) | (_, None) => {}
            (_, Some(_)) => {
                self.err(line, format!("tool `{full}`: `[tool.allowlist]` is only for `hook = \"allowlisted_request\"`"));
            }
        }
        let poll = match (hook, &raw.poll) {
            (Some(Hook::SubmitAndPoll), Some(p)) => self.poll(full, p, line),
            (Some(Hook::SubmitAndPoll), None) => {
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
            let arguments = self.expr(full, "task.arguments", &t.arguments)?;
            Some(crate::catalog::TaskPlan {
                watch: t.watch.clone(),
                arguments,
            })
        });
        let lookup = match (hook, &raw.lookup) {
            (Some(Hook::TableLookup), Some(l)) => self.lookup(full, l, line),
            (Some(Hook::TableLookup), None) => {
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
        let reschedule = match (hook, &raw.reschedule) {
            (Some(Hook::RescheduleOverdue), Some(r)) => self.reschedule(full, r),
            (Some(Hook::RescheduleOverdue), None) => {
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
        HookTables {
            poll,
            task,
            lookup,
            reschedule,
        }
    }

    /// The preconditions (`[[tool.require]]`): an expression and the classification
    /// a call that fails it is refused with.
    fn preconditions(&mut self, raw: &RawTool, full: &str) -> Vec<Require> {
        let mut require = Vec::new();
        for (i, r) in raw.require.iter().enumerate() {
            let check = self.expr(full, &format!("require.{i}"), &r.check);
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
        require
    }

    /// The arguments the answer's plan reads must be declared.
    fn check_answer_arguments(
        &mut self,
        full: &str,
        response: &ResponsePlan,
        arguments: &Arguments,
    ) {
        for arg in [
            &response.compact_arg,
            &response.budget_arg,
            &response.raw_arg,
        ]
        .into_iter()
        .flatten()
        {
            if !arguments.properties.contains(arg) {
                self.err(arguments.line, format!("tool `{full}`: its response names the argument `{arg}`, which its argument schema does not declare"));
            }
        }
    }

    /// The item budget and timeout: the tool's, else its service's, else the rules'.
    fn limits(&mut self, raw: &RawTool, full: &str, line: usize) -> Limits {
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
        Limits {
            item_budget,
            timeout_ms,
        }
    }

    /// The tool built from its checked sections, with its descriptor hash (and its
    /// normalized definition kept where `catalog diff` asks for them).
    fn built(
        &mut self,
        raw: RawTool,
        sections: Sections,
    ) -> (Tool, crate::catalog::schema_check::Schemas) {
        let Sections {
            name,
            full,
            line,
            arguments,
            confirmation,
            preview_arg,
            action,
            tables,
            require,
            response,
            limits,
        } = sections;
        let resolved = Resolved {
            arguments: &arguments.schema,
            confirmation,
            preview_arg: &preview_arg,
            timeout_ms: limits.timeout_ms,
            item_budget: limits.item_budget,
        };
        let mut normalized = self.normalized(&raw, &full, &resolved);
        // The schemas are most of a definition: hashed where they are, not copied in,
        // and from the compact text the tool keeps where that is their canonical text.
        let schema = arguments.schema;
        let output = raw.output.as_ref().unwrap_or(&Value::Null);
        let arguments_text = SchemaText::new(&schema);
        let output_text = raw.output.as_ref().map(SchemaText::new);
        let hashed = [
            ("arguments", schema_field(Some(&arguments_text), &schema)),
            ("output", schema_field(output_text.as_ref(), output)),
        ];
        let descriptor_hash = descriptor_hash_with(&normalized, &hashed);
        if let Some(definitions) = self.c.definitions.as_deref_mut() {
            if let Some(map) = normalized.as_object_mut() {
                for (name, value) in [("arguments", &schema), ("output", output)] {
                    map.insert(name.into(), value.clone());
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
            documentation: raw.documentation,
            tier: raw.tier,
            risk: raw.risk,
            classes: raw.classes,
            category: raw.category,
            aliases: raw.aliases,
            intents: Vec::new(),
            confirmation,
            preview_arg,
            timeout: Duration::from_millis(limits.timeout_ms),
            item_budget: limits.item_budget,
            action,
            dispatch: raw.dispatch.clone(),
            reschedule: tables.reschedule,
            poll: tables.poll,
            task: tables.task,
            lookup: tables.lookup,
            rate_limit: raw.rate_limit,
            allowlist: raw.allowlist.clone(),
            require,
            response,
            arguments: arguments_text,
            argument_names: arguments.properties.into_iter().collect(),
            required_arguments: SchemaText::new(&Value::Object(
                crate::catalog::describe::required_arguments(&schema),
            )),
            closed_arguments: schema.get("additionalProperties") == Some(&Value::Bool(false)),
            validator: std::sync::OnceLock::new(),
            output: output_text,
            defaults: arguments.defaults,
            descriptor_hash,
            meta_names: Default::default(),
            listed_name: String::new(),
            source: (self.file.to_string(), line),
            provenance: raw.source.clone(),
            exposed: raw.exposed,
        };
        let schemas = crate::catalog::schema_check::Schemas {
            arguments: schema,
            output: raw.output,
            line: arguments.line,
        };
        (tool, schemas)
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
        let headers = self.mapped_headers(full, http);
        let body = self.body_plan(full, http);
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
                == crate::catalog::descriptor::QueryArrays::Indexed,
        })
    }

    /// The request headers a tool maps, refusing those the broker sets itself (the
    /// credential, `authorization`, `host`, the body's length and type, cookies) and
    /// names no header can have.
    fn mapped_headers(&mut self, full: &str, http: &RawHttp) -> Vec<(String, Expr)> {
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
        headers
    }

    /// The request body: an expression over the arguments, or a template of
    /// `templates/`; not both.
    fn body_plan(&mut self, full: &str, http: &RawHttp) -> Option<BodyPlan> {
        match (&http.body, &http.body_template) {
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
        }
    }

    fn lookup(
        &mut self,
        full: &str,
        l: &crate::catalog::descriptor::RawLookup,
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
        p: &crate::catalog::descriptor::RawPoll,
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
        r: &crate::catalog::descriptor::RawReschedule,
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
}

/// A tool's argument schema as compiled, and what the later sections read of it.
struct Arguments {
    /// The schema, argument sets merged in.
    schema: Value,
    /// Its line in the tool file.
    line: usize,
    /// Its declared argument names.
    properties: BTreeSet<String>,
    /// The defaults a call is filled with (`fill_defaults`).
    defaults: Vec<(String, Value)>,
}

/// What a hook reads from the tool's own tables.
struct HookTables {
    poll: Option<crate::catalog::Poll>,
    task: Option<crate::catalog::TaskPlan>,
    lookup: Option<crate::catalog::Lookup>,
    reschedule: Option<crate::catalog::Reschedule>,
}

/// A tool's item budget and timeout, resolved.
struct Limits {
    item_budget: usize,
    timeout_ms: u64,
}

/// A tool's sections, each compiled and checked, from which it is built.
struct Sections {
    name: String,
    full: String,
    line: usize,
    arguments: Arguments,
    confirmation: ConfirmationMode,
    preview_arg: Option<String>,
    action: Action,
    tables: HookTables,
    require: Vec<Require>,
    response: ResponsePlan,
    limits: Limits,
}
