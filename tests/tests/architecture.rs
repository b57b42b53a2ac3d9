//! The engine's layout is its pipeline (issue 32): each top-level module of `engine/src`
//! may import only the modules below it. This test reads every `crate::` path (and every
//! `super::` path that climbs to the crate root) in the engine's code, outside comments,
//! strings and `#[cfg(test)]` items, and fails on an edge the table does not allow.
//!
//! The table is printed in `engine/DESIGN.md` ("Who may import whom"); the test fails if
//! the two differ, and prints the text to paste. A last test holds the files' length.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module and the modules it may import, lowest first. Acyclic by
/// construction: a module may only name modules listed above it.
const ALLOWED: &[(&str, &[&str])] = &[
    ("error", &[]),
    ("net", &[]),
    ("catalog", &["error"]),
    ("config", &["catalog", "error"]),
    ("telemetry", &["error", "net"]),
    ("store", &["catalog", "error"]),
    ("caller", &["catalog", "config", "error", "net"]),
    ("upstream", &["catalog", "config", "error", "telemetry"]),
    ("answer", &["catalog", "error", "upstream"]),
    (
        "run",
        &[
            "answer",
            "caller",
            "catalog",
            "config",
            "error",
            "store",
            "telemetry",
            "upstream",
        ],
    ),
    (
        "webhook",
        &[
            "answer",
            "caller",
            "catalog",
            "config",
            "error",
            "run",
            "store",
            "telemetry",
            "upstream",
        ],
    ),
    (
        "confirm",
        &[
            "answer",
            "caller",
            "catalog",
            "config",
            "error",
            "run",
            "store",
            "telemetry",
            "upstream",
        ],
    ),
    (
        "hub",
        &[
            "caller", "catalog", "config", "confirm", "error", "net", "run", "store",
        ],
    ),
    (
        "hooks",
        &[
            "answer",
            "caller",
            "catalog",
            "config",
            "error",
            "run",
            "store",
            "telemetry",
            "upstream",
            "webhook",
        ],
    ),
    (
        "call",
        &[
            "answer",
            "caller",
            "catalog",
            "config",
            "confirm",
            "error",
            "hooks",
            "hub",
            "run",
            "store",
            "telemetry",
            "upstream",
            "webhook",
        ],
    ),
    (
        "mcp",
        &[
            "answer",
            "call",
            "caller",
            "catalog",
            "config",
            "confirm",
            "error",
            "hooks",
            "hub",
            "run",
            "store",
            "telemetry",
            "upstream",
        ],
    ),
    (
        "serve",
        &[
            "answer",
            "call",
            "caller",
            "catalog",
            "config",
            "confirm",
            "error",
            "hooks",
            "hub",
            "mcp",
            "run",
            "store",
            "telemetry",
            "upstream",
            "webhook",
        ],
    ),
    (
        "oracle",
        &["answer", "catalog", "error", "mcp", "serve", "upstream"],
    ),
    ("import", &["catalog", "error"]),
    (
        "cli",
        &[
            "answer",
            "call",
            "caller",
            "catalog",
            "config",
            "confirm",
            "error",
            "hooks",
            "hub",
            "import",
            "mcp",
            "run",
            "serve",
            "store",
            "telemetry",
            "upstream",
            "webhook",
        ],
    ),
];

#[test]
fn every_import_goes_down_the_table() {
    let src = engine_src();
    let modules = top_modules(&src);
    let listed: BTreeSet<&str> = ALLOWED.iter().map(|(m, _)| *m).collect();
    let named: BTreeSet<&str> = modules.keys().map(String::as_str).collect();
    assert_eq!(
        listed, named,
        "the table must list exactly the top-level modules of engine/src"
    );
    let edges = edges(&modules);
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for ((from, to), places) in &edges {
        if !allowed[from.as_str()].contains(&to.as_str()) {
            wrong.push(format!(
                "{from} -> {to} (in {}): {from} may import only {:?}",
                places.iter().cloned().collect::<Vec<_>>().join(", "),
                allowed[from.as_str()]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that go up or sideways (move the code to the stage that owns it, or \
         define what is shared below both):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_table_has_no_cycle_and_is_printed_in_design_md() {
    let mut below: BTreeSet<&str> = BTreeSet::new();
    for (module, may) in ALLOWED {
        for m in *may {
            assert!(
                below.contains(m),
                "`{module}` may import `{m}`, which is not listed above it: the table \
                 must list a module after everything it imports"
            );
        }
        below.insert(module);
    }
    let design = std::fs::read_to_string(engine_src().join("../DESIGN.md"))
        .unwrap_or_else(|e| panic!("engine/DESIGN.md: {e}"));
    let table = markdown_table();
    assert!(
        design.contains(&table),
        "engine/DESIGN.md must print the table this test holds; paste:\n{table}"
    );
}

/// A file longer than this says why at its top, in a line of its module doc that starts
/// `//! Longer than`.
const MAX_LINES: usize = 1_200;

#[test]
fn no_file_is_long_without_a_reason_at_its_top() {
    let src = engine_src();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).ok()?;
            let lines = text.lines().count();
            let reason = text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .any(|l| l.starts_with("//! Longer than"));
            let name = file.strip_prefix(&src).unwrap_or(file).display();
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

fn engine_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/src")
}

/// Each top-level module with its files (`name.rs`, or a folder with `mod.rs`).
fn top_modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap_or_else(|e| panic!("{}: {e}", src.display())) {
        let path = entry.map(|e| e.path()).unwrap_or_default();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() && path.join("mod.rs").is_file() {
            let mut files = Vec::new();
            rust_files(&path, &mut files);
            out.insert(name, files);
        } else if let Some(stem) = name.strip_suffix(".rs")
            && stem != "lib"
            && stem != "main"
        {
            out.insert(stem.to_string(), vec![path]);
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.map(|e| e.path()).unwrap_or_default();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every edge between two top-level modules, with the files that make it.
fn edges(modules: &BTreeMap<String, Vec<PathBuf>>) -> BTreeMap<(String, String), BTreeSet<String>> {
    let src = engine_src();
    let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (module, files) in modules {
        for file in files {
            let text =
                std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let relative = file.strip_prefix(&src).unwrap_or(file);
            for to in imports(&text, depth(relative)) {
                if &to != module && modules.contains_key(&to) {
                    out.entry((module.clone(), to))
                        .or_default()
                        .insert(relative.display().to_string());
                }
            }
        }
    }
    out
}

/// How many `super::` from this file reach the crate root: `hooks/poll.rs` is
/// `crate::hooks::poll` (2), `hooks/mod.rs` is `crate::hooks` (1).
fn depth(relative: &Path) -> usize {
    let parts = relative.components().count();
    if relative.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// The top-level module names a file's code imports.
fn imports(text: &str, depth: usize) -> BTreeSet<String> {
    let code = without_tests(&code_only(text));
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let word_start = i == 0 || !is_ident(bytes[i - 1]);
        if word_start && code[i..].starts_with("crate::") {
            i += "crate::".len();
            out.extend(first_segments(&code[i..]));
            continue;
        }
        if word_start && code[i..].starts_with("super::") {
            let mut n = 0;
            while code[i..].starts_with("super::") {
                n += 1;
                i += "super::".len();
            }
            if n >= depth {
                out.extend(first_segments(&code[i..]));
            }
            continue;
        }
        i += 1;
    }
    out
}

/// The first segment of a path, or of each item of a `{...}` group.
fn first_segments(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let mut items = Vec::new();
        let (mut level, mut start) = (0usize, 0usize);
        for (k, c) in group.char_indices() {
            match c {
                '{' => level += 1,
                '}' if level == 0 => {
                    items.push(&group[start..k]);
                    break;
                }
                '}' => level -= 1,
                ',' if level == 0 => {
                    items.push(&group[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        items
            .into_iter()
            .map(|item| ident(item.trim_start()))
            .filter(|s| !s.is_empty())
            .collect()
    } else {
        vec![ident(rest)]
    }
}

fn ident(s: &str) -> String {
    s.bytes()
        .take_while(|b| is_ident(*b))
        .map(char::from)
        .collect()
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The text with comments, string and character literals blanked out.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').map_or(b.len(), |n| i + n);
            i = end;
        } else if rest.starts_with("/*") {
            let mut level = 0;
            while i < b.len() {
                if text[i..].starts_with("/*") {
                    level += 1;
                    i += 2;
                } else if text[i..].starts_with("*/") {
                    level -= 1;
                    i += 2;
                    if level == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if let Some(hashes) = raw_string_start(rest) {
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + 2 + hashes;
            i = text[body..]
                .find(&close)
                .map_or(b.len(), |n| body + n + close.len());
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '"'); otherwise a lifetime.
            let len = if rest.as_bytes().get(1) == Some(&b'\\') {
                rest.get(3..).and_then(|r| r.find('\'')).map(|n| n + 4)
            } else {
                rest.char_indices()
                    .nth(2)
                    .filter(|(_, c)| *c == '\'')
                    .map(|(n, _)| n + 1)
            };
            match len {
                Some(len) => {
                    i += len;
                    out.push_str("' '");
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `r"`, `r#"`, `br##"`...: the number of `#`.
fn raw_string_start(rest: &str) -> Option<usize> {
    let r = rest.strip_prefix('b').unwrap_or(rest).strip_prefix('r')?;
    let hashes = r.bytes().take_while(|b| *b == b'#').count();
    r[hashes..]
        .starts_with('"')
        .then_some(hashes + usize::from(rest.starts_with('b')))
}

/// The code without `#[cfg(test)]` items: each attribute and the item after it, up to
/// its `;` or through its matching `}`.
fn without_tests(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        let end = match (item.find(';'), item.find('{')) {
            (Some(semi), brace) if brace.is_none_or(|b| semi < b) => semi + 1,
            (_, Some(open)) => {
                let mut level = 0usize;
                let mut end = item.len();
                for (k, c) in item[open..].char_indices() {
                    match c {
                        '{' => level += 1,
                        '}' => {
                            level -= 1;
                            if level == 0 {
                                end = open + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            _ => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The table as `engine/DESIGN.md` prints it.
fn markdown_table() -> String {
    let mut out = String::from("| module | may import |\n|---|---|\n");
    for (module, may) in ALLOWED {
        let may = if may.is_empty() {
            "nothing".to_string()
        } else {
            may.iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!("| `{module}` | {may} |\n"));
    }
    out
}
