//! Reading the engine's sources as the structure tests do: every crate's `src/`, its
//! Rust files, a file's code without comments, strings or `#[cfg(test)]` items, and the
//! modules a file imports through `crate::` (and `super::` paths that climb to the
//! crate root).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every crate's `src/` under `engine/`, by folder name.
pub fn crate_sources() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(engine_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path().join("src")))
        .filter(|src| src.is_dir())
        .collect();
    out.sort();
    out
}

/// A file's path inside its crate's `src/`: `engine/core/src/call/gate.rs` is
/// `call/gate.rs`.
pub fn relative(file: &Path) -> &Path {
    crate_sources()
        .iter()
        .find_map(|src| file.strip_prefix(src).ok())
        .unwrap_or(file)
}

/// The folder that holds the engine's crates.
pub fn engine_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine")
}

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.map(|e| e.path()).unwrap_or_default();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text with comments, string and character literals blanked out.
pub fn code_only(text: &str) -> String {
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
pub fn raw_string_start(rest: &str) -> Option<usize> {
    let r = rest.strip_prefix('b').unwrap_or(rest).strip_prefix('r')?;
    let hashes = r.bytes().take_while(|b| *b == b'#').count();
    r[hashes..]
        .starts_with('"')
        .then_some(hashes + usize::from(rest.starts_with('b')))
}

/// The code without `#[cfg(test)]` items: each attribute and the item after it, up to
/// its `;` or through its matching `}`.
pub fn without_tests(code: &str) -> String {
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

/// The top-level module names a file's code imports.
pub fn imports(text: &str, depth: usize) -> BTreeSet<String> {
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

/// The items of a `{...}` group (its text after the `{`), split at its top-level commas
/// up to its closing `}`.
pub fn group_items(group: &str) -> Vec<&str> {
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
}

/// The first segment of a path, or of each item of a `{...}` group.
pub fn first_segments(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let items = group_items(group);
        items
            .into_iter()
            .map(|item| ident(item.trim_start()))
            .filter(|s| !s.is_empty())
            .collect()
    } else {
        vec![ident(rest)]
    }
}

pub fn ident(s: &str) -> String {
    s.bytes()
        .take_while(|b| is_ident(*b))
        .map(char::from)
        .collect()
}

pub fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// How many `super::` from this file reach the crate root: `hooks/poll.rs` is
/// `crate::hooks::poll` (2), `hooks/mod.rs` is `crate::hooks` (1).
pub fn depth(relative: &Path) -> usize {
    let parts = relative.components().count();
    if relative.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}
