//! The compile-time check of every tool's argument and output schema.
//!
//! A served broker builds a tool's validator on the tool's first call
//! ([`crate::catalog::Tool::validator`]); the compiler must therefore know, before a request
//! arrives, that every schema builds. Building all of them is the largest part of a
//! start-up, so the check does the same work once where the catalog repeats itself:
//!
//! - identical schemas are built once (of 1,817 argument schemas 1,419 are distinct, of
//!   931 output schemas 612), and a problem is reported at every tool that has it;
//! - a `pattern` is compiled once per distinct pattern (1,502 patterns, 12 distinct):
//!   the check builds each schema with a `pattern` keyword that looks its regex up in a
//!   shared table, where the first schema to use a pattern builds `{"pattern": ...}` with
//!   the same options, so a pattern that would not build fails the check with the error a
//!   full build gives.
//!
//! The check's validators are dropped: they never validate a call.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use jsonschema::{Keyword, ValidationError, ValidationOptions};
use serde_json::{Map, Value, json};

use crate::catalog::Tool;

/// Which of a tool's schemas a distinct schema was found as; the two are built with
/// different options, so identical argument and output schemas are checked apart.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Role {
    Arguments,
    Output,
}

impl Role {
    /// The options a served broker builds this role's validators with.
    fn options(self) -> ValidationOptions<'static> {
        match self {
            Role::Arguments => crate::catalog::argument_options(),
            Role::Output => jsonschema::options(),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Role::Arguments => "argument",
            Role::Output => "output",
        }
    }
}

/// Whether each distinct pattern builds: `true` once it has. A pattern that failed is not
/// kept: the schema that uses it fails, and its error is rebuilt for the message.
type Patterns = Arc<Mutex<HashMap<String, bool>>>;

/// A compiled tool's schemas as parsed, kept for the check only (a tool keeps them as
/// text, [`crate::catalog::SchemaText`]).
#[derive(Debug)]
pub struct Schemas {
    /// The argument schema, the tool's argument sets merged in.
    pub arguments: Value,
    /// The output schema.
    pub output: Option<Value>,
    /// The line of the tool's `[tool.arguments]`.
    pub line: usize,
}

/// Every tool's argument and output schemas that are not valid JSON Schema, as
/// `(file, line, message)`, in tool order. `schemas[i]` are tool `i`'s.
pub fn problems(tools: &[Tool], schemas: &[Schemas]) -> Vec<(String, usize, String)> {
    let pairs: Vec<_> = schemas
        .iter()
        .map(|s| (&s.arguments, s.output.as_ref()))
        .collect();
    let mut found = Vec::new();
    for ((tool, parsed), (arguments, output)) in tools.iter().zip(schemas).zip(errors(&pairs)) {
        let args_line = parsed.line;
        let problems = [
            (Role::Arguments, arguments, args_line),
            (Role::Output, output, tool.source.1),
        ];
        for (role, error, line) in problems {
            if let Some(message) = error {
                found.push((
                    tool.source.0.clone(),
                    line,
                    format!(
                        "tool `{}`: the {} schema is not a valid JSON Schema: {message}",
                        tool.full_name,
                        role.label()
                    ),
                ));
            }
        }
    }
    found
}

/// For each `(argument schema, output schema)`, the error building each gives, if any.
/// Distinct schemas are built once, on as many threads as the machine has cores, up to
/// four.
fn errors<'s>(schemas: &[(&'s Value, Option<&'s Value>)]) -> Vec<(Option<String>, Option<String>)> {
    let mut distinct: Vec<(Role, &'s Value)> = Vec::new();
    // By (role, fingerprint), the indexes in `distinct` of the schemas with it.
    let mut index: HashMap<(Role, u64), Vec<usize>> = HashMap::new();
    let mut intern = |role: Role, schema: &'s Value| -> usize {
        let mut hasher = std::hash::DefaultHasher::new();
        fingerprint(schema, &mut hasher);
        let same = index.entry((role, hasher.finish())).or_default();
        if let Some(&at) = same.iter().find(|&&at| distinct[at].1 == schema) {
            return at;
        }
        distinct.push((role, schema));
        same.push(distinct.len() - 1);
        distinct.len() - 1
    };
    let at: Vec<(usize, Option<usize>)> = schemas
        .iter()
        .map(|&(arguments, output)| {
            let arguments = intern(Role::Arguments, arguments);
            (arguments, output.map(|o| intern(Role::Output, o)))
        })
        .collect();
    let built = check_all(&distinct);
    let error = |i: usize| built.get(i).cloned().flatten();
    at.into_iter()
        .map(|(arguments, output)| (error(arguments), output.and_then(error)))
        .collect()
}

/// Feeds a JSON value's structure to `hasher`, so equal values hash alike (serde_json's
/// maps keep their keys sorted). Cheaper than writing the value out as text.
fn fingerprint(value: &Value, hasher: &mut impl Hasher) {
    match value {
        Value::Null => hasher.write_u8(0),
        Value::Bool(b) => {
            hasher.write_u8(1);
            b.hash(hasher);
        }
        Value::Number(n) => {
            hasher.write_u8(2);
            n.hash(hasher);
        }
        Value::String(s) => {
            hasher.write_u8(3);
            s.hash(hasher);
        }
        Value::Array(items) => {
            hasher.write_u8(4);
            hasher.write_usize(items.len());
            for item in items {
                fingerprint(item, hasher);
            }
        }
        Value::Object(map) => {
            hasher.write_u8(5);
            hasher.write_usize(map.len());
            for (key, item) in map {
                key.hash(hasher);
                fingerprint(item, hasher);
            }
        }
    }
}

/// Builds every schema of `distinct`; the error message of each that does not build.
fn check_all(distinct: &[(Role, &Value)]) -> Vec<Option<String>> {
    let patterns: Patterns = Arc::default();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4));
    let size = distinct.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let running: Vec<_> = distinct
            .chunks(size)
            .map(|chunk| {
                let patterns = patterns.clone();
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|&(role, schema)| check(role, schema, &patterns))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        running
            .into_iter()
            .zip(distinct.chunks(size))
            .flat_map(|(r, chunk)| {
                r.join().unwrap_or_else(|_| {
                    vec![Some("the schema check stopped unexpectedly".into()); chunk.len()]
                })
            })
            .collect()
    })
}

/// Builds one schema as a served broker would, with each `pattern` looked up in
/// `patterns`; `None` when it builds.
fn check(role: Role, schema: &Value, patterns: &Patterns) -> Option<String> {
    let table = patterns.clone();
    let built = role
        .options()
        .with_keyword(
            "pattern",
            move |_: &Map<String, Value>, value: &Value, _| pattern_builds(role, value, &table),
        )
        .build(schema);
    built.err().map(|e| e.masked().to_string())
}

/// The stand-in for a `pattern` keyword during the check: accepts every instance once
/// its pattern is known to build; otherwise the error building the pattern alone gives.
fn pattern_builds<'a>(
    role: Role,
    pattern: &'a Value,
    patterns: &Patterns,
) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
    let known = |text: &str| {
        let table = patterns.lock().unwrap_or_else(PoisonError::into_inner);
        table.get(text).copied().unwrap_or(false)
    };
    if let Some(text) = pattern.as_str()
        && known(text)
    {
        return Ok(Box::new(Checked));
    }
    // Built outside the lock: two threads may build the same pattern once each.
    match role.options().build(&json!({ "pattern": pattern })) {
        Ok(_) => {
            if let Some(text) = pattern.as_str() {
                let mut table = patterns.lock().unwrap_or_else(PoisonError::into_inner);
                table.insert(text.to_string(), true);
            }
            Ok(Box::new(Checked))
        }
        Err(e) => Err(e.to_owned()),
    }
}

/// A `pattern` keyword whose regex is known to build; it checks nothing, since the
/// check's validators never validate a call.
struct Checked;

impl<'i> Keyword<'i> for Checked {
    fn validate(&self, _: &'i Value) -> Result<(), ValidationError<'i>> {
        Ok(())
    }

    fn is_valid(&self, _: &'i Value) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(schema: &Value) -> String {
        crate::catalog::argument_validator(schema)
            .err()
            .map(|e| e.masked().to_string())
            .unwrap_or_default()
    }

    #[test]
    fn a_bad_pattern_fails_every_schema_that_has_it_with_the_full_builds_message() {
        let bad =
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "([a-z"}}});
        let good = json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}});
        let other = json!({"type": "array", "items": {"pattern": "([a-z"}});
        let found = errors(&[
            (&good, None),
            (&bad, Some(&bad)),
            (&bad, None),
            (&other, Some(&good)),
        ]);
        let full = message(&bad);
        assert!(!full.is_empty());
        assert_eq!(found[0], (None, None));
        assert_eq!(found[1], (Some(full.clone()), Some(full.clone())));
        assert_eq!(found[2], (Some(full), None));
        assert_eq!(found[3], (Some(message(&other)), None));
    }

    #[test]
    fn other_problems_are_found_beside_known_patterns() {
        let ok = json!({"type": "string", "pattern": "^\\d{3}$"});
        let broken = json!({"type": "integr", "pattern": "^\\d{3}$"});
        let not_text = json!({"type": "string", "pattern": 5});
        let found = errors(&[(&ok, Some(&ok)), (&broken, None), (&not_text, None)]);
        assert_eq!(found[0], (None, None));
        assert_eq!(found[1].0, Some(message(&broken)));
        assert!(found[1].0.is_some());
        assert_eq!(found[2].0, Some(message(&not_text)));
        assert!(found[2].0.is_some());
    }
}
