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

use minijinja::value::Serde;
use minijinja::{Environment, ErrorKind, UndefinedBehavior, Value};

/// The compiled templates and expressions of a catalog.
#[derive(Debug)]
pub struct Templates {
    env: Environment<'static>,
}

/// Name of a compiled expression in the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    /// Generated template name, e.g. `tool:hosting.x:query.category`.
    pub name: String,
    /// The expression as written, for hashes and messages.
    pub source: String,
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
        Self { env }
    }

    /// Parses a text template.
    pub fn add_template(&mut self, name: &str, source: &str) -> Result<(), minijinja::Error> {
        self.env
            .add_template_owned(name.to_string(), source.to_string())
    }

    /// Parses an expression and stores it under `name`.
    pub fn add_expr(&mut self, name: String, source: &str) -> Result<Expr, minijinja::Error> {
        // Parse the expression on its own first, so a syntax error points at it and not
        // at the wrapper, and so `{% ... %}` cannot be smuggled into the wrapper.
        self.env.compile_expression(source)?;
        self.env
            .add_template_owned(name.clone(), format!("{{% set value = ({source}) %}}"))?;
        Ok(Expr {
            name,
            source: source.to_string(),
        })
    }

    /// Whether a template of that name exists.
    pub fn has(&self, name: &str) -> bool {
        self.env.get_template(name).is_ok()
    }

    /// Builds the context value once per call; reuse it for every evaluation.
    pub fn context(json: &serde_json::Value) -> Value {
        Value::from(Serde(json))
    }

    /// Evaluates an expression; `None` when it is undefined or `none`.
    pub fn eval(&self, expr: &Expr, ctx: &Value) -> Result<Option<serde_json::Value>, RenderError> {
        let template = self
            .env
            .get_template(&expr.name)
            .map_err(|e| render_error(&expr.name, &e))?;
        let captured = template
            .render_captured(ctx.clone())
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
    pub fn truthy(&self, expr: &Expr, ctx: &Value) -> Result<bool, RenderError> {
        Ok(match self.eval(expr, ctx)? {
            None | Some(serde_json::Value::Bool(false)) => false,
            Some(serde_json::Value::String(s)) => !s.is_empty(),
            Some(serde_json::Value::Array(a)) => !a.is_empty(),
            Some(serde_json::Value::Object(o)) => !o.is_empty(),
            Some(serde_json::Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
            Some(_) => true,
        })
    }

    /// Renders a text template.
    pub fn render(&self, name: &str, ctx: &Value) -> Result<String, RenderError> {
        let template = self
            .env
            .get_template(name)
            .map_err(|e| render_error(name, &e))?;
        template
            .render(ctx.clone())
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
        let ctx = Templates::context(&json!({"args": {"limit": 5}}));
        assert_eq!(t.eval(&a, &ctx), Ok(Some(json!(5))));
        assert_eq!(t.eval(&b, &ctx), Ok(None));
        assert_eq!(t.eval(&c, &ctx), Ok(Some(json!({}))));
        let d = t
            .add_expr("d".into(), "args.missing or settings.folder")
            .unwrap_or_else(|e| panic!("{e}"));
        let ctx2 = Templates::context(&json!({"args": {}, "settings": {"folder": "f"}}));
        assert_eq!(t.eval(&d, &ctx2), Ok(Some(json!("f"))));
        let e = t
            .add_expr("e".into(), "args | pick('a', 'b', 'z')")
            .unwrap_or_else(|e| panic!("{e}"));
        let f = t
            .add_expr("f".into(), "args | omit('a')")
            .unwrap_or_else(|e| panic!("{e}"));
        let ctx3 = Templates::context(&json!({"args": {"a": 1, "b": null, "c": [1]}}));
        assert_eq!(t.eval(&e, &ctx3), Ok(Some(json!({"a": 1}))));
        assert_eq!(t.eval(&f, &ctx3), Ok(Some(json!({"c": [1]}))));
    }

    #[test]
    fn printing_an_undefined_value_fails() {
        let mut t = Templates::new(10_000);
        t.add_template("x", "{{ missing }}")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(t.render("x", &Templates::context(&json!({}))).is_err());
    }

    #[test]
    fn fuel_stops_runaway_templates() {
        let mut t = Templates::new(1_000);
        t.add_template("loop", "{% for i in range(100000) %}{{ i }}{% endfor %}")
            .unwrap_or_else(|e| panic!("{e}"));
        let err = t.render("loop", &Templates::context(&json!({})));
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
