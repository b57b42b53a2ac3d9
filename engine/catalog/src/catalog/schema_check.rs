//! The compile-time check of every tool's argument and output schema.
//!
//! A served broker builds a tool's validator on the tool's first call
//! ([`crate::catalog::Tool::validator`]); the compiler must therefore know, before a request
//! arrives, that every schema builds. Building all of them is the largest part of a
//! start-up, so the check does the same work once where the catalog repeats itself, and
//! does it while the compile goes on ([`Checker`]):
//!
//! - identical schemas are built once (of 1,817 argument schemas 1,419 are distinct, of
//!   931 output schemas 612), and a problem is reported at every tool that has it. Two
//!   schemas are the same when their compact text is: the tool keeps that text anyway
//!   ([`crate::catalog::SchemaText`]), and serde_json writes a parsed schema's keys
//!   sorted, so equal schemas have equal text;
//! - each distinct schema goes, as parsed, to the check threads as soon as its tool is
//!   compiled, and is dropped there once built: the parsed schemas never all wait in
//!   memory together, and the check overlaps the compile instead of following it;
//! - a `pattern` is compiled once per distinct pattern (1,502 patterns, 12 distinct):
//!   the check builds each schema with a `pattern` keyword that looks its regex up in a
//!   shared table, where the first schema to use a pattern builds `{"pattern": ...}` with
//!   the same options, so a pattern that would not build fails the check with the error a
//!   full build gives.
//!
//! The check's validators are dropped: they never validate a call.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};

use jsonschema::{Keyword, ValidationError, ValidationOptions};
use serde_json::{Map, Value, json};

use crate::catalog::{SchemaText, Tool};

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

/// A compiled tool's schemas as parsed, handed to the check (a tool keeps them as text,
/// [`crate::catalog::SchemaText`]).
#[derive(Debug)]
pub struct Schemas {
    /// The argument schema, the tool's argument sets merged in.
    pub arguments: Value,
    /// The output schema.
    pub output: Option<Value>,
    /// The line of the tool's `[tool.arguments]`.
    pub line: usize,
}

/// A distinct schema to build: its number, role and parsed form.
type Job = (usize, Role, Value);

/// How many distinct schemas go to the check threads in one message: a check thread is
/// woken once per batch, not once per schema.
const BATCH: usize = 8;

/// The check of every tool's schemas, running beside the compile: [`Checker::submit`]
/// each compiled tool's schemas, in tool order, then [`Checker::finish`].
pub struct Checker {
    /// Distinct schemas to build, to the check threads; `None` once finishing.
    jobs: Option<mpsc::Sender<Vec<Job>>>,
    /// Distinct schemas gathered for the next batch.
    pending: Vec<Job>,
    /// `(distinct schema, its error)` from the check threads.
    results: mpsc::Receiver<(usize, Option<String>)>,
    workers: Vec<std::thread::JoinHandle<()>>,
    /// Set when there is no check thread to build a schema: then it is built here.
    inline: Option<Patterns>,
    /// `(distinct schema, its error)` of those built here.
    built_here: Vec<(usize, Option<String>)>,
    /// The number of each distinct schema, by its compact text.
    arguments: HashMap<String, usize>,
    outputs: HashMap<String, usize>,
    /// Each submitted tool's `(argument schema, output schema, line of its arguments)`.
    tools: Vec<(usize, Option<usize>, usize)>,
    distinct: usize,
}

impl Checker {
    /// Starts one check thread fewer than the machine has cores (at least one, at most
    /// four): the compiling thread and the file reader need a core between them, and on
    /// two cores a second check thread only takes turns with them.
    pub fn start() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| (n.get() - 1).clamp(1, 4));
        let (jobs, queue) = mpsc::channel::<Vec<Job>>();
        let queue = Arc::new(Mutex::new(queue));
        let (done, results) = mpsc::channel();
        let patterns: Patterns = Arc::default();
        let workers: Vec<_> = (0..threads)
            .filter_map(|i| {
                let (queue, done, patterns) = (queue.clone(), done.clone(), patterns.clone());
                std::thread::Builder::new()
                    .name(format!("schema-check-{i}"))
                    .spawn(move || {
                        loop {
                            let jobs = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                            // The sender is gone once every schema was handed out.
                            let Ok(jobs) = jobs else { return };
                            for (id, role, schema) in jobs {
                                let error = check(role, &schema, &patterns);
                                drop(schema);
                                if done.send((id, error)).is_err() {
                                    return;
                                }
                            }
                        }
                    })
                    .ok()
            })
            .collect();
        // Without a thread to build them, schemas are built as they are submitted.
        let inline = workers.is_empty().then_some(patterns);
        Self {
            jobs: (!workers.is_empty()).then_some(jobs),
            pending: Vec::with_capacity(BATCH),
            results,
            workers,
            inline,
            built_here: Vec::new(),
            arguments: HashMap::new(),
            outputs: HashMap::new(),
            tools: Vec::new(),
            distinct: 0,
        }
    }

    /// Hands over the next compiled tool's schemas, as parsed and as the compact text
    /// the tool keeps: each one not seen before goes to the check threads, the others
    /// are dropped here.
    pub fn submit(
        &mut self,
        arguments: &SchemaText,
        output: Option<&SchemaText>,
        schemas: Schemas,
    ) {
        let arguments = self.intern(Role::Arguments, arguments.as_str(), schemas.arguments);
        let output = output
            .zip(schemas.output)
            .map(|(text, parsed)| self.intern(Role::Output, text.as_str(), parsed));
        self.tools.push((arguments, output, schemas.line));
    }

    /// The number of the distinct schema with `text`, sending `parsed` to be built when
    /// it is new.
    fn intern(&mut self, role: Role, text: &str, parsed: Value) -> usize {
        let seen = match role {
            Role::Arguments => &mut self.arguments,
            Role::Output => &mut self.outputs,
        };
        if let Some(&id) = seen.get(text) {
            return id;
        }
        let id = self.distinct;
        self.distinct += 1;
        seen.insert(text.to_string(), id);
        self.pending.push((id, role, parsed));
        if self.pending.len() >= BATCH || self.inline.is_some() {
            self.hand_over();
        }
        id
    }

    /// Sends the gathered schemas to the check threads, or builds them here when there
    /// is no check thread (or every one stopped unexpectedly).
    fn hand_over(&mut self) {
        let batch = std::mem::replace(&mut self.pending, Vec::with_capacity(BATCH));
        let batch = match (&self.inline, &self.jobs) {
            (None, Some(jobs)) => match jobs.send(batch) {
                Ok(()) => return,
                Err(mpsc::SendError(batch)) => batch,
            },
            _ => batch,
        };
        let patterns = self.inline.get_or_insert_with(Patterns::default);
        for (id, role, parsed) in batch {
            let error = check(role, &parsed, patterns);
            self.built_here.push((id, error));
        }
    }

    /// Waits for the last schemas to be built; what the check found of each submitted
    /// tool, in the order they were submitted.
    pub fn finish(mut self) -> Vec<Found> {
        if !self.pending.is_empty() {
            self.hand_over();
        }
        drop(self.jobs.take());
        let mut errors: Vec<Option<Option<String>>> = vec![None; self.distinct];
        for (id, error) in self.built_here.drain(..).chain(self.results.iter()) {
            if let Some(slot) = errors.get_mut(id) {
                *slot = Some(error);
            }
        }
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        // A schema whose thread stopped before building it has no result.
        let error = |id: usize| -> Option<String> {
            match errors.get(id) {
                Some(Some(error)) => error.clone(),
                _ => Some("the schema check stopped unexpectedly".into()),
            }
        };
        self.tools
            .iter()
            .map(|&(arguments, output, line)| Found {
                arguments: error(arguments),
                output: output.and_then(error),
                line,
            })
            .collect()
    }
}

/// What the check found of one tool's schemas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Why the argument schema does not build, if it does not.
    pub arguments: Option<String>,
    /// Why the output schema does not build, if it does not.
    pub output: Option<String>,
    /// The line of the tool's `[tool.arguments]`.
    pub line: usize,
}

/// Every tool's argument and output schemas that are not valid JSON Schema, as
/// `(file, line, message)`, in tool order. `checked[i]` is what the check found of
/// tool `i`.
pub fn problems(tools: &[Tool], checked: Vec<Found>) -> Vec<(String, usize, String)> {
    let mut found = Vec::new();
    for (tool, checked) in tools.iter().zip(checked) {
        let problems = [
            (Role::Arguments, checked.arguments, checked.line),
            (Role::Output, checked.output, tool.source.1),
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

    /// Each pair's `(argument error, output error)`, checked as the compiler checks them.
    fn errors(pairs: &[(&Value, Option<&Value>)]) -> Vec<(Option<String>, Option<String>)> {
        let mut checker = Checker::start();
        for (arguments, output) in pairs {
            let schemas = Schemas {
                arguments: (*arguments).clone(),
                output: output.cloned(),
                line: 1,
            };
            let output = output.map(SchemaText::new);
            checker.submit(&SchemaText::new(arguments), output.as_ref(), schemas);
        }
        checker
            .finish()
            .into_iter()
            .map(|c| (c.arguments, c.output))
            .collect()
    }

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
