//! Rules every engine file keeps, whatever its floor: every upstream request leaves
//! through the gate; no parameter is a tuple; test modules share helpers through
//! `support/` only; a long file says why at its top; and the reader these tests use
//! sees code only.

use std::collections::BTreeSet;
use std::path::Path;

use crate::support::source::{
    code_only, crate_sources, engine_dir, imports, is_ident, relative, rust_files, without_tests,
};

/// No function takes a tuple pattern where a struct or separate parameters belong
/// (`(a, b): (A, B)`, a way round the argument-count lint): a parameter says what it
/// is by its name and type. Tests are free to.
#[test]
fn no_parameter_is_a_tuple_standing_in_for_a_struct() {
    let mut files = Vec::new();
    for src in crate_sources() {
        rust_files(&src, &mut files);
    }
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let code = without_tests(&code_only(&text));
        for (n, line) in code.lines().enumerate() {
            if tuple_parameter(line) {
                found.push(format!(
                    "{}:{}: {}",
                    relative(file).display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "parameters that are tuples (name them, or make a struct that says what they are):\n{}",
        found.join("\n")
    );
    for (line, tuple) in [
        ("    (a, b): (&str, Site),", true),
        ("fn f(x: u8, (a, b): (u8, u8)) {}", true),
        ("    let (a, b): (u8, u8) = (1, 2);", false),
        ("    a: (u8, u8),", false),
        ("    for (a, b) in pairs {", false),
    ] {
        assert_eq!(tuple_parameter(line), tuple, "{line}");
    }
}

/// Whether `line` holds a tuple pattern as a parameter: `(ident, ident...): (` at the
/// start of the line or after `(` or `, `, not after `let`.
fn tuple_parameter(line: &str) -> bool {
    let mut rest = line;
    while let Some(at) = rest.find("): (") {
        let before = &rest[..at];
        if let Some(open) = before.rfind('(') {
            let inside = &before[open + 1..];
            let names = !inside.is_empty()
                && inside.contains(',')
                && inside
                    .split(',')
                    .all(|n| !n.trim().is_empty() && n.trim().bytes().all(is_ident));
            let lead = before[..open].trim_end();
            let starts = lead.is_empty() || lead.ends_with('(') || lead.ends_with(',');
            if names && starts {
                return true;
            }
        }
        rest = &rest[at + 4..];
    }
    false
}

/// Every request the broker sends upstream leaves through the one gate (decision 017):
/// the upstream client (`Upstream`) is named, made and sent through only in
/// `call/gate.rs`, where a send takes a permit; no other code outside the `upstream`
/// module itself holds one. The broker's own rare requests (identity provider, OTLP
/// collector, `net.rs`) are not upstream requests of a tool.
#[test]
fn only_the_gate_holds_the_upstream_client() {
    let mut files = Vec::new();
    for src in crate_sources() {
        rust_files(&src, &mut files);
    }
    let mut found = Vec::new();
    for file in &files {
        let relative = relative(file);
        let name = relative.to_string_lossy().replace('\\', "/");
        if name.starts_with("upstream/") || name == "call/gate.rs" || name.starts_with("oracle/") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let code = without_tests(&code_only(&text));
        // Making a client, holding one, or reaching around it to a connection.
        for needle in [
            "Upstream::new",
            ": Upstream,",
            ": Upstream)",
            ": &Upstream",
            "<Upstream>",
            "Upstream::build",
            "held::exchange",
            "upstream::client",
        ] {
            if code.contains(needle) {
                found.push(format!("{name}: `{needle}`"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "only call/gate.rs may hold the upstream client (every request leaves through the gate, with a permit):\n{}",
        found.join("\n")
    );
    let gate = std::fs::read_to_string(engine_dir().join("core/src/call/gate.rs")).unwrap();
    let gate = without_tests(&code_only(&gate));
    assert_eq!(
        gate.matches("self.client.send(").count(),
        1,
        "the gate sends in one place"
    );
    assert!(
        gate.contains("permit: &'s Permit<'_>"),
        "the gate's send takes a permit"
    );
    // An MCP server's tool leaves the same way: one call, with a permit.
    assert_eq!(
        gate.matches("self.mcp.call(").count(),
        1,
        "the gate calls MCP servers in one place"
    );
    assert!(
        gate.contains("_permit: &Permit<'_>,\n        plan: &crate::catalog::mcp::McpPlan"),
        "the gate's MCP send takes a permit"
    );
}

/// Test modules share helpers through `support/` only: a story's file names no other
/// story's items, so each can be read, moved or split alone.
#[test]
fn test_modules_share_helpers_through_support_only() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.extension().is_none_or(|e| e != "rs") || name == "broker.rs" {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&path).unwrap());
        for to in imports(&code, 1) {
            if to != "support" {
                found.push(format!("{name} names crate::{to}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "move what two test modules share into tests/tests/support/:\n{}",
        found.join("\n")
    );
}

/// A file longer than this says why at its top, in a line of its module doc that starts
/// `//! Longer than`.
const MAX_LINES: usize = 1_200;

#[test]
fn no_file_is_long_without_a_reason_at_its_top() {
    let mut files = Vec::new();
    for src in crate_sources() {
        rust_files(&src, &mut files);
    }
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).ok()?;
            let lines = text.lines().count();
            let reason = text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .any(|l| l.starts_with("//! Longer than"));
            let name = file.strip_prefix(engine_dir()).unwrap_or(file).display();
            (lines > MAX_LINES && !reason).then(|| format!("{name} ({lines} lines)"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these files by what they do, or say at the top why not \
         (`//! Longer than {MAX_LINES} lines because ...`): {long:?}"
    );
}

#[test]
fn the_reader_sees_code_only() {
    let text = r##"
//! [`crate::cli`] in a doc comment
use crate::catalog::Tool; // crate::serve in a comment
use crate::{error::CallError, store::{Store, jobs}};
/* crate::mcp /* nested */ crate::mcp */
const S: &str = "crate::hooks";
const R: &str = r#"crate::hooks "quoted" "#;
const C: char = '"';
const D: [char; 2] = ['\'', '\u{22}'];
fn f<'a>(x: &'a str) -> &'a str { crate::upstream::send(x) }
#[cfg(test)]
mod tests { use crate::call::Broker; }
#[cfg(test)]
use crate::confirm::flag;
fn g() { super::super::answer::envelope(); }
"##;
    let seen = imports(text, 1);
    let seen: BTreeSet<&str> = seen.iter().map(String::as_str).collect();
    assert_eq!(
        seen,
        BTreeSet::from(["catalog", "error", "store", "upstream", "answer"])
    );
    // One level down, a single `super::` is the module's own root, not the crate's.
    assert!(imports("fn g() { super::x(); }", 2).is_empty());
}

/// Every refusal outside a call's envelope and JSON-RPC is `reply::Reply::error`: no
/// other code writes an `"error"` body, and each classification it names is the
/// contract's (rules/errors.toml) or one of the surfaces' own two (`not_found`,
/// `store_unavailable`; docs/behaviour.md, "Error bodies").
#[test]
fn every_error_body_has_one_shape_and_a_known_classification() {
    let errors: toml::Table = toml::from_str(
        &std::fs::read_to_string(engine_dir().join("../rules/errors.toml")).unwrap(),
    )
    .unwrap();
    let mut known: BTreeSet<&str> = errors.keys().map(String::as_str).collect();
    known.extend(["not_found", "store_unavailable"]);
    let mut files = Vec::new();
    for src in crate_sources() {
        rust_files(&src, &mut files);
    }
    let mut found = Vec::new();
    let mut named = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let code = without_tests(&text);
        let at = |offset: usize| {
            format!(
                "{}:{}",
                relative(file).display(),
                code[..offset].lines().count()
            )
        };
        for (offset, _) in code.match_indices("json!({ \"error\"") {
            let line = &code[offset..code[offset..].find('\n').map_or(code.len(), |n| offset + n)];
            if !line.contains("jsonrpc") && !relative(file).ends_with("reply.rs") {
                found.push(format!("{}: an error body of its own: {line}", at(offset)));
            }
        }
        for (offset, _) in code.match_indices("Reply::error(") {
            let args = &code[offset + "Reply::error(".len()..];
            let Some(second) = args.split(',').nth(1) else {
                continue;
            };
            let word = second.trim();
            if let Some(literal) = word.strip_prefix('"').and_then(|w| w.strip_suffix('"')) {
                named += 1;
                if !known.contains(literal) {
                    found.push(format!("{}: classification `{literal}`", at(offset)));
                }
            }
        }
    }
    assert!(named > 20, "the scan reads the calls ({named} found)");
    assert!(
        found.is_empty(),
        "error bodies outside the one shape or its words:\n{}",
        found.join("\n")
    );
}
