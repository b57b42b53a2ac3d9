//! The one minijinja environment of a compiled catalog.
//!
//! Everything a catalog author writes as a template or expression is parsed once, at
//! compile time, into this environment:
//! - text templates from `templates/` (summaries, next-action texts, dry-run notes,
//!   JSON bodies), under their relative path;
//! - every mapping expression of every tool (`query.limit = "args.limit"`), stored as
//!   a template `{% set value = (EXPR) %}` under a generated name, so that evaluating
//!   it on the request path is a lookup and a run of already compiled instructions.
//!
//! Undefined values are strict where it catches mistakes (minijinja's `SemiStrict`):
//! printing, iterating or looking into an undefined value is an error, so a misspelt
//! variable in a text template fails loudly; testing one (`args.x or settings.y`,
//! `{% if args.x %}`) is false, so optional arguments read naturally. An expression
//! whose result is undefined or `none` means "leave this out".
//!
//! Two filters are added for request mapping: `pick("a", "b")` keeps only those keys
//! of an object that are present and not `none`; `omit("a")` drops keys.
//! Every evaluation runs with fuel, so no template can loop forever.
//!
//! Most expressions of a catalog are one of a few plain forms: a literal
//! (`"2021-07-28"`), a lookup (`args.website_uid`) or a pick of argument keys
//! (`args | pick("a", "b")`). Those are recognised at compile time and evaluated straight
//! on the JSON context, with minijinja's exact semantics (tested against minijinja on
//! every form the catalog uses): no template is kept for them and a call whose
//! expressions are all plain never converts its context into minijinja values. Every
//! other expression is compiled once per distinct source text and shared by the tools
//! that write it.

use std::sync::OnceLock;

use minijinja::value::Serde;
use minijinja::{Environment, ErrorKind, UndefinedBehavior, Value};

/// The compiled templates and expressions of a catalog.
#[derive(Debug)]
pub struct Templates {
    env: Environment<'static>,
    /// Whether plain expressions skip minijinja (always, but in differential tests).
    plain: bool,
}

/// A compiled expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    /// Where it was written, for messages, e.g. `tool:hosting.x:query.category`.
    pub name: String,
    /// The expression as written, for hashes and messages.
    pub source: String,
    form: Form,
}

impl Expr {
    /// The argument a plain lookup `args.<name>` reads, if that is all the expression is.
    pub fn argument(&self) -> Option<&str> {
        match &self.form {
            Form::Lookup(path) => match &path[..] {
                [root, name] if root == "args" => Some(name),
                _ => None,
            },
            _ => None,
        }
    }
}

/// How an expression is evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Form {
    /// A string, integer or boolean literal.
    Literal(serde_json::Value),
    /// `root.key.key`: a lookup in the context.
    Lookup(Box<[String]>),
    /// `root.key | pick("a", "b")`.
    Pick(Box<[String]>, Box<[String]>),
    /// Anything else: the name of the shared template `{% set value = (...) %}`.
    Template(String),
}

/// What a template or expression is evaluated against: the JSON context, and its
/// minijinja form, each built only when a template needs it (once per scope).
pub struct Scope<'a> {
    json: OnceLock<std::borrow::Cow<'a, serde_json::Value>>,
    /// Builds the JSON context on first use ([`Scope::lazy`]).
    make: Option<Make<'a>>,
    /// The context's `args`, read by lookups without building the context.
    args: Option<&'a serde_json::Map<String, serde_json::Value>>,
    jinja: OnceLock<Value>,
}

/// A context builder of a lazy scope.
type Make<'a> = Box<dyn Fn() -> serde_json::Value + Send + Sync + 'a>;

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("json", &self.json.get())
            .finish_non_exhaustive()
    }
}

impl Scope<'static> {
    /// A scope owning its context.
    pub fn new(json: serde_json::Value) -> Self {
        Scope {
            json: OnceLock::from(std::borrow::Cow::Owned(json)),
            make: None,
            args: None,
            jinja: OnceLock::new(),
        }
    }
}

impl<'a> Scope<'a> {
    /// A scope over a context owned elsewhere.
    pub fn borrowed(json: &'a serde_json::Value) -> Self {
        Scope {
            json: OnceLock::from(std::borrow::Cow::Borrowed(json)),
            make: None,
            args: None,
            jinja: OnceLock::new(),
        }
    }

    /// A scope whose context `make` builds when a template first reads it; `args` is
    /// the context's `args`, which lookups rooted there (`args.category`, the usual
    /// query and path mapping) read directly. A call whose tool reads nothing else
    /// never builds the context.
    pub fn lazy(
        args: &'a serde_json::Map<String, serde_json::Value>,
        make: impl Fn() -> serde_json::Value + Send + Sync + 'a,
    ) -> Self {
        Scope {
            json: OnceLock::new(),
            make: Some(Box::new(make)),
            args: Some(args),
            jinja: OnceLock::new(),
        }
    }

    /// What `path` (`root.key...`) finds in the context.
    fn find(&self, path: &[String]) -> Result<Found<'_>, ()> {
        if let (Some(args), [root, key, rest @ ..]) = (self.args, path)
            && root == "args"
        {
            return match args.get(key) {
                Some(value) => find(value, rest),
                None if rest.is_empty() => Ok(Found::Undefined),
                None => Err(()),
            };
        }
        find(self.json(), path)
    }

    /// The JSON context.
    pub fn json(&self) -> &serde_json::Value {
        self.json.get_or_init(|| {
            std::borrow::Cow::Owned(self.make.as_ref().map_or(serde_json::Value::Null, |m| m()))
        })
    }

    fn jinja(&self) -> &Value {
        self.jinja.get_or_init(|| Value::from(Serde(self.json())))
    }
}

/// Words minijinja reads as something other than a name.
const KEYWORDS: [&str; 15] = [
    "true", "false", "none", "True", "False", "None", "and", "or", "not", "in", "is", "if", "else",
    "loop", "self",
];

/// minijinja's global functions: a name that is one of them reads the function when the
/// context lacks it, so a lookup rooted there is left to minijinja.
const GLOBALS: [&str; 7] = [
    "range",
    "dict",
    "debug",
    "namespace",
    "lipsum",
    "cycler",
    "joiner",
];

fn identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&s)
}

/// A quoted string with no escapes and no quote inside.
fn string_literal(s: &str) -> Option<&str> {
    let quote = s.chars().next().filter(|q| *q == '"' || *q == '\'')?;
    let inner = s.strip_prefix(quote)?.strip_suffix(quote)?;
    (!inner.contains(quote) && !inner.contains('\\')).then_some(inner)
}

fn lookup_path(s: &str) -> Option<Box<[String]>> {
    let parts: Vec<String> = s.split('.').map(str::to_string).collect();
    let global = parts
        .first()
        .is_some_and(|root| GLOBALS.contains(&root.as_str()));
    (!global && parts.iter().all(|p| identifier(p))).then(|| parts.into_boxed_slice())
}

/// The plain form of an expression, if it has one.
fn plain(source: &str) -> Option<Form> {
    let s = source.trim();
    if let Some(text) = string_literal(s) {
        return Some(Form::Literal(serde_json::Value::String(text.to_string())));
    }
    if let Some(digits) = s.strip_prefix('-').or(Some(s))
        && !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && let Ok(n) = s.parse::<i64>()
    {
        return Some(Form::Literal(serde_json::Value::from(n)));
    }
    match s {
        "true" | "True" => return Some(Form::Literal(serde_json::Value::Bool(true))),
        "false" | "False" => return Some(Form::Literal(serde_json::Value::Bool(false))),
        _ => {}
    }
    if let Some(path) = lookup_path(s) {
        return Some(Form::Lookup(path));
    }
    let (base, filter) = s.split_once('|')?;
    let base = lookup_path(base.trim())?;
    let inner = filter.trim().strip_prefix("pick(")?.strip_suffix(')')?;
    let keys = inner
        .split(',')
        .map(|k| string_literal(k.trim()).map(str::to_string))
        .collect::<Option<Vec<_>>>()?;
    Some(Form::Pick(base, keys.into_boxed_slice()))
}

/// What a lookup found: a value, or undefined.
enum Found<'v> {
    Value(&'v serde_json::Value),
    Undefined,
}

/// A lookup as minijinja does it under `SemiStrict`: a missing key or a key of
/// something that is not a map is undefined; looking into undefined is an error.
fn find<'v>(ctx: &'v serde_json::Value, path: &[String]) -> Result<Found<'v>, ()> {
    let mut found = Found::Value(ctx);
    for key in path {
        found = match found {
            Found::Undefined => return Err(()),
            Found::Value(serde_json::Value::Object(map)) => {
                map.get(key).map_or(Found::Undefined, Found::Value)
            }
            Found::Value(_) => Found::Undefined,
        };
    }
    Ok(found)
}

/// Why a template or expression failed at run time. Never carries a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` failed: {kind}")]
pub struct RenderError {
    /// The template or expression name.
    pub name: String,
    /// What kind of failure (undefined value, bad operation, out of fuel, ...).
    pub kind: String,
}

fn render_error(name: &str, err: &minijinja::Error) -> RenderError {
    let kind = match err.kind() {
        ErrorKind::UndefinedError => "an undefined value was used".to_string(),
        ErrorKind::OutOfFuel => "the template ran out of fuel".to_string(),
        other => format!("{other}"),
    };
    RenderError {
        name: name.to_string(),
        kind,
    }
}

/// Text of a minijinja error for catalog diagnostics (compile time only; no values).
pub fn describe(err: &minijinja::Error) -> String {
    let mut text = format!("{}", err.kind());
    if let Some(detail) = err.detail() {
        text.push_str(": ");
        text.push_str(detail);
    }
    text
}

impl Templates {
    /// An empty environment with strict undefined values and the given fuel.
    pub fn new(fuel: u64) -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
        env.add_filter("pick", pick);
        env.add_filter("omit", omit);
        env.add_filter("merge", merge);
        env.set_fuel(Some(fuel));
        env.set_recursion_limit(64);
        Self { env, plain: true }
    }

    /// With `false`, every expression added afterwards is compiled as a template, so a
    /// test can check that plain forms answer exactly what minijinja answers.
    pub fn set_plain_expressions(&mut self, plain: bool) {
        self.plain = plain;
    }

    /// Parses a text template.
    pub fn add_template(&mut self, name: &str, source: &str) -> Result<(), minijinja::Error> {
        self.env
            .add_template_owned(name.to_string(), source.to_string())
    }

    /// Parses an expression written at `name` (a place, for messages).
    pub fn add_expr(&mut self, name: String, source: &str) -> Result<Expr, minijinja::Error> {
        // Parse the expression on its own first, so a syntax error points at it and not
        // at the wrapper, and so `{% ... %}` cannot be smuggled into the wrapper.
        self.env.compile_expression(source)?;
        let form = match plain(source).filter(|_| self.plain) {
            Some(form) => form,
            None => {
                // One template per distinct source, shared by every place that writes it.
                let key = format!("expr:{source}");
                if self.env.get_template(&key).is_err() {
                    self.env.add_template_owned(
                        key.clone(),
                        format!("{{% set value = ({source}) %}}"),
                    )?;
                }
                Form::Template(key)
            }
        };
        Ok(Expr {
            name,
            source: source.to_string(),
            form,
        })
    }

    /// Whether an expression is evaluated without minijinja (a literal, a lookup or a
    /// pick).
    pub fn is_plain(expr: &Expr) -> bool {
        !matches!(expr.form, Form::Template(_))
    }

    /// Whether a template of that name exists.
    pub fn has(&self, name: &str) -> bool {
        self.env.get_template(name).is_ok()
    }

    /// Evaluates an expression; `None` when it is undefined or `none`.
    pub fn eval(
        &self,
        expr: &Expr,
        scope: &Scope<'_>,
    ) -> Result<Option<serde_json::Value>, RenderError> {
        let undefined = || RenderError {
            name: expr.name.clone(),
            kind: "an undefined value was used".to_string(),
        };
        let key = match &expr.form {
            Form::Literal(value) => return Ok(Some(value.clone())),
            Form::Lookup(path) => {
                return match scope.find(path).map_err(|()| undefined())? {
                    Found::Value(serde_json::Value::Null) | Found::Undefined => Ok(None),
                    Found::Value(value) => Ok(Some(value.clone())),
                };
            }
            Form::Pick(path, keys) => {
                let mut out = serde_json::Map::new();
                let base = scope.find(path).map_err(|()| undefined())?;
                match base {
                    // minijinja's `get_attr` on an undefined value is an error.
                    Found::Undefined => return Err(undefined()),
                    Found::Value(serde_json::Value::Object(map)) => {
                        for key in keys {
                            if let Some(v) = map.get(key.as_str()).filter(|v| !v.is_null()) {
                                out.insert(key.clone(), v.clone());
                            }
                        }
                    }
                    Found::Value(_) => {}
                }
                return Ok(Some(serde_json::Value::Object(out)));
            }
            Form::Template(key) => key,
        };
        let template = self
            .env
            .get_template(key)
            .map_err(|e| render_error(&expr.name, &e))?;
        let captured = template
            .render_captured(scope.jinja().clone())
            .map_err(|e| render_error(&expr.name, &e))?;
        let value = captured.state().lookup("value");
        match value {
            None => Ok(None),
            Some(v) if v.is_undefined() || v.is_none() => Ok(None),
            Some(v) => serde_json::to_value(&v).map(Some).map_err(|_| RenderError {
                name: expr.name.clone(),
                kind: "the result is not representable as JSON".into(),
            }),
        }
    }

    /// Whether an expression is truthy.
    pub fn truthy(&self, expr: &Expr, scope: &Scope<'_>) -> Result<bool, RenderError> {
        Ok(match self.eval(expr, scope)? {
            None | Some(serde_json::Value::Bool(false)) => false,
            Some(serde_json::Value::String(s)) => !s.is_empty(),
            Some(serde_json::Value::Array(a)) => !a.is_empty(),
            Some(serde_json::Value::Object(o)) => !o.is_empty(),
            Some(serde_json::Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
            Some(_) => true,
        })
    }

    /// Renders a text template.
    pub fn render(&self, name: &str, scope: &Scope<'_>) -> Result<String, RenderError> {
        let template = self
            .env
            .get_template(name)
            .map_err(|e| render_error(name, &e))?;
        template
            .render(scope.jinja().clone())
            .map_err(|e| render_error(name, &e))
    }
}

/// Keeps the named keys of an object that are present and not `none`.
fn pick(value: Value, keys: minijinja::value::Rest<String>) -> Result<Value, minijinja::Error> {
    let mut out = std::collections::BTreeMap::new();
    for key in keys.iter() {
        let v = value.get_attr(key)?;
        if !v.is_undefined() && !v.is_none() {
            out.insert(key.clone(), v);
        }
    }
    Ok(Value::from(out))
}

/// Drops the named keys of an object (and keys whose value is `none`).
fn omit(value: Value, keys: minijinja::value::Rest<String>) -> Result<Value, minijinja::Error> {
    let mut out = std::collections::BTreeMap::new();
    for key in value.try_iter()? {
        let name = key.to_string();
        let v = value.get_item(&key)?;
        if !keys.contains(&name) && !v.is_undefined() && !v.is_none() {
            out.insert(name, v);
        }
    }
    Ok(Value::from(out))
}

/// An object with the keys of `other` laid over `value` (`a | merge(b)`); keys whose
/// value in `other` is `none` are dropped.
fn merge(value: Value, other: Value) -> Result<Value, minijinja::Error> {
    let mut out = std::collections::BTreeMap::new();
    for source in [&value, &other] {
        if source.is_none() || source.is_undefined() {
            continue;
        }
        for key in source.try_iter()? {
            let name = key.to_string();
            let v = source.get_item(&key)?;
            if v.is_none() || v.is_undefined() {
                out.remove(&name);
            } else {
                out.insert(name, v);
            }
        }
    }
    Ok(Value::from(out))
}

/// Names of templates a template source pulls in (`include`, `import`, `extends`,
/// `from`), for descriptor hashes: a tool's hash covers the text of what it includes.
pub fn referenced_templates(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        let after = &rest[start + 2..];
        let end = after.find("%}").unwrap_or(after.len());
        let tag = after[..end].trim().trim_start_matches('-').trim();
        let keyword = tag.split_whitespace().next().unwrap_or("");
        if matches!(keyword, "include" | "import" | "extends" | "from") {
            for quote in ['"', '\''] {
                let mut parts = tag.split(quote);
                parts.next();
                if let Some(name) = parts.next() {
                    out.push(name.to_string());
                    break;
                }
            }
        }
        rest = &after[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expressions_keep_types_and_treat_missing_as_absent() {
        let mut t = Templates::new(10_000);
        let a = t
            .add_expr("a".into(), "args.limit")
            .unwrap_or_else(|e| panic!("{e}"));
        let b = t
            .add_expr("b".into(), "args.missing")
            .unwrap_or_else(|e| panic!("{e}"));
        let c = t
            .add_expr("c".into(), "args.body | default({})")
            .unwrap_or_else(|e| panic!("{e}"));
        let ctx = Scope::new(json!({"args": {"limit": 5}}));
        assert_eq!(t.eval(&a, &ctx), Ok(Some(json!(5))));
        assert_eq!(t.eval(&b, &ctx), Ok(None));
        assert_eq!(t.eval(&c, &ctx), Ok(Some(json!({}))));
        let d = t
            .add_expr("d".into(), "args.missing or settings.folder")
            .unwrap_or_else(|e| panic!("{e}"));
        let ctx2 = Scope::new(json!({"args": {}, "settings": {"folder": "f"}}));
        assert_eq!(t.eval(&d, &ctx2), Ok(Some(json!("f"))));
        let e = t
            .add_expr("e".into(), "args | pick('a', 'b', 'z')")
            .unwrap_or_else(|e| panic!("{e}"));
        let f = t
            .add_expr("f".into(), "args | omit('a')")
            .unwrap_or_else(|e| panic!("{e}"));
        let ctx3 = Scope::new(json!({"args": {"a": 1, "b": null, "c": [1]}}));
        assert_eq!(t.eval(&e, &ctx3), Ok(Some(json!({"a": 1}))));
        assert_eq!(t.eval(&f, &ctx3), Ok(Some(json!({"c": [1]}))));
    }

    /// Every plain form answers what minijinja answers, error or value, over contexts
    /// with the keys missing, null, of another type, nested and present.
    #[test]
    fn plain_forms_answer_what_minijinja_answers() {
        let sources = [
            "\"2021-07-28\"",
            "'single'",
            "\"\"",
            "42",
            "-7",
            "007",
            "true",
            "False",
            "args",
            "args.limit",
            "args.a.b",
            "args.a.b.c",
            "ctx.location_id",
            "missing",
            "missing.x",
            "args | pick(\"a\", \"limit\")",
            "args | pick('a')",
            "args.a | pick(\"b\", \"z\")",
            "missing | pick(\"a\")",
            "args.a.b | pick(\"c\")",
        ];
        let contexts = [
            json!({}),
            json!({"args": {}}),
            json!({"args": null}),
            json!({"args": "text"}),
            json!({"args": [1, 2]}),
            json!({"args": {"limit": 5, "a": null}}),
            json!({"args": {"limit": null, "a": "text"}}),
            json!({"args": {"limit": [1, {"x": 1}], "a": 3}}),
            json!({"args": {"a": {"b": null}}, "ctx": {}}),
            json!({"args": {"a": {"b": {"c": 1.5, "d": true}}, "limit": 0}}),
            json!({"args": {"a": {"b": "text", "z": {"k": [null]}}}, "ctx": {"location_id": "l"}}),
            json!({"args": {"a": {"b": 18446744073709551615u64}, "limit": -9007199254740993i64}}),
        ];
        let mut plain = Templates::new(10_000);
        let mut templated = Templates::new(10_000);
        templated.set_plain_expressions(false);
        for (i, source) in sources.iter().enumerate() {
            let fast = plain
                .add_expr(format!("p{i}"), source)
                .unwrap_or_else(|e| panic!("{source}: {e}"));
            assert!(Templates::is_plain(&fast), "{source} has a plain form");
            let slow = templated
                .add_expr(format!("p{i}"), source)
                .unwrap_or_else(|e| panic!("{source}: {e}"));
            assert!(!Templates::is_plain(&slow));
            for ctx in &contexts {
                let scope = Scope::borrowed(ctx);
                let expected = templated.eval(&slow, &scope);
                assert_eq!(plain.eval(&fast, &scope), expected, "`{source}` over {ctx}");
                // A lazy scope reads `args` directly and builds the rest when asked.
                if let Some(args) = ctx.get("args").and_then(serde_json::Value::as_object) {
                    let lazy = Scope::lazy(args, || ctx.clone());
                    assert_eq!(
                        plain.eval(&fast, &lazy),
                        expected,
                        "`{source}` lazily over {ctx}"
                    );
                    let lazy = Scope::lazy(args, || ctx.clone());
                    assert_eq!(
                        templated.eval(&slow, &lazy),
                        expected,
                        "`{source}` lazily over {ctx}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_lazy_scope_is_built_only_for_what_is_not_in_args() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let mut t = Templates::new(10_000);
        let limit = t.add_expr("l".into(), "args.limit").unwrap();
        let setting = t.add_expr("s".into(), "settings.folder").unwrap();
        let args = json!({"limit": 5});
        let args = args.as_object().unwrap();
        let built = AtomicUsize::new(0);
        let scope = Scope::lazy(args, || {
            built.fetch_add(1, Ordering::SeqCst);
            json!({"args": args, "settings": {"folder": "f"}})
        });
        assert_eq!(t.eval(&limit, &scope), Ok(Some(json!(5))));
        assert_eq!(built.load(Ordering::SeqCst), 0);
        assert_eq!(t.eval(&setting, &scope), Ok(Some(json!("f"))));
        assert_eq!(t.eval(&setting, &scope), Ok(Some(json!("f"))));
        assert_eq!(built.load(Ordering::SeqCst), 1, "built once");
    }

    #[test]
    fn other_expressions_are_templates_shared_by_source() {
        let mut t = Templates::new(10_000);
        for source in [
            "args.a or ctx.b",
            "args.items[0]",
            "args | pick(\"a\") | omit(\"b\")",
            "\"a\\\"b\"",
            "none",
            "args.if",
            "range",
            "dict.x",
            "99999999999999999999",
        ] {
            let e = t
                .add_expr("x".into(), source)
                .unwrap_or_else(|e| panic!("{source}: {e}"));
            assert!(!Templates::is_plain(&e), "{source} is not plain");
        }
        let a = t
            .add_expr("one".into(), "args.a or ctx.b")
            .unwrap_or_else(|e| panic!("{e}"));
        let b = t
            .add_expr("two".into(), "args.a or ctx.b")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.form, b.form, "one template for one source");
        assert_ne!(a.name, b.name, "each keeps its own place for messages");
    }

    #[test]
    fn printing_an_undefined_value_fails() {
        let mut t = Templates::new(10_000);
        t.add_template("x", "{{ missing }}")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(t.render("x", &Scope::new(json!({}))).is_err());
    }

    #[test]
    fn fuel_stops_runaway_templates() {
        let mut t = Templates::new(1_000);
        t.add_template("loop", "{% for i in range(100000) %}{{ i }}{% endfor %}")
            .unwrap_or_else(|e| panic!("{e}"));
        let err = t.render("loop", &Scope::new(json!({})));
        assert!(matches!(err, Err(RenderError { ref kind, .. }) if kind.contains("fuel")));
    }

    #[test]
    fn finds_included_templates() {
        assert_eq!(
            referenced_templates("{% include 'a.j2' %}x{%- import \"m.j2\" as m %}"),
            vec!["a.j2".to_string(), "m.j2".to_string()]
        );
    }
}
