//! Catalog diagnostics: every problem found while compiling, with its file and line,
//! collected together so an author sees all of them in one run.
//!
//! Messages follow one style: lowercase, no trailing period, names in backticks, and a
//! `help` with "did you mean `x`?" where a name is close to a real one.

use std::fmt;

/// One problem in a catalog, rules or template file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// Path relative to the catalog root, e.g. `catalog/hosting/dns.toml`.
    pub file: String,
    /// 1-based line, 0 when the problem concerns the file as a whole.
    pub line: usize,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub help: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "error: {}:{}: {}", self.file, self.line, self.message)?;
        } else {
            write!(f, "error: {}: {}", self.file, self.message)?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// All problems of one compile, in file and line order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Records a problem.
    pub fn push(&mut self, file: &str, line: usize, message: impl Into<String>) {
        self.push_help(file, line, message, None);
    }

    /// Records a problem with a hint.
    pub fn push_help(
        &mut self,
        file: &str,
        line: usize,
        message: impl Into<String>,
        help: Option<String>,
    ) {
        self.0.push(Diagnostic {
            file: file.to_string(),
            line,
            message: message.into(),
            help,
        });
    }

    /// Whether nothing went wrong.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sorts by file and line, for stable output.
    pub fn sort(&mut self) {
        self.0.sort();
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            writeln!(f, "{d}")?;
        }
        write!(
            f,
            "{} problem{} found",
            self.0.len(),
            if self.0.len() == 1 { "" } else { "s" }
        )
    }
}

impl std::error::Error for Diagnostics {}

/// 1-based line of a byte offset in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Line starts of a text, for turning many byte offsets into lines without rescanning
/// the text each time (generated tool files are megabytes long).
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes a text.
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Self { starts }
    }

    /// 1-based line of a byte offset.
    pub fn line(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }
}

/// "did you mean `x`?" for the candidate closest to `name`, when one is close enough.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let mut best: Option<(f64, &str)> = None;
    for candidate in candidates {
        let score = strsim::jaro_winkler(name, candidate);
        if score >= 0.8 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, c)| format!("did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_count_from_one() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }

    #[test]
    fn the_index_agrees_with_line_of() {
        let text = "a\nbb\n\nccc\n";
        let index = LineIndex::new(text);
        for offset in 0..=text.len() + 2 {
            assert_eq!(index.line(offset), line_of(text, offset), "{offset}");
        }
    }

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(
            did_you_mean("portal.call_read_tol", ["portal.call_read_tool", "x"]),
            Some("did you mean `portal.call_read_tool`?".into())
        );
        assert_eq!(did_you_mean("zzz", ["portal.call_read_tool"]), None);
    }
}
