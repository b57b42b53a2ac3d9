//! Reading a tool file one `[[tool]]` table at a time.
//!
//! A generated tool file holds hundreds of tools (`catalog/crm/openapi.toml` is 2.4 MB of
//! TOML); parsing it whole builds a document of about 47 MB before the first tool is
//! compiled, and the allocator keeps those pages after they are freed. The compiler
//! instead cuts the file at its top-level `[[tool]]` header lines and parses each part on
//! its own, so only one tool's document is alive at a time.
//!
//! Cutting text is only safe where the cut is a real header, and a line reading
//! `[[tool]]` may sit inside a multi-line string. Such a line is never mistaken for a
//! header: the part that opens the string ends before the string closes, so that part
//! does not parse. The reader therefore takes parts in order while they parse and, at
//! the first that does not, parses the rest of the file from that part's start as one
//! document (every cut before it is a real header, so the rest is a document of its
//! own). The rest either parses, or its error is the error a whole-file parse reports,
//! at the same line.
//!
//! [`read_all`] parses the files on a second thread while the compiler compiles the tools
//! already read (parsing is about a third of the compile), handing them over in order
//! through a bounded channel. Where a start cache holds a file's tools as an earlier
//! start parsed them ([`crate::catalog::start_cache`]), the thread reads them from its
//! JSON instead, five times faster than the TOML, one tool at a time as well.

use crate::catalog::descriptor::{RawTool, ToolFile};
use crate::catalog::diag::LineIndex;

/// A part of a tool file: its byte offset in the file and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part<'a> {
    /// Byte offset of the part's first character in the file.
    pub offset: usize,
    /// The part's text (a header line and the lines up to the next header).
    pub text: &'a str,
}

/// The file cut before every line that is a top-level `[[tool]]` header (optionally
/// indented, optionally followed by a comment). The first part holds what comes before
/// the first header (comments, the `#:schema` line) and may be empty.
pub fn split(text: &str) -> Vec<Part<'_>> {
    let mut cuts = vec![0];
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if start > 0 && is_tool_header(line) {
            cuts.push(start);
        }
        start += line.len();
    }
    let mut parts = Vec::with_capacity(cuts.len());
    for (i, &offset) in cuts.iter().enumerate() {
        let end = cuts.get(i + 1).copied().unwrap_or(text.len());
        parts.push(Part {
            offset,
            text: &text[offset..end],
        });
    }
    parts
}

fn is_tool_header(line: &str) -> bool {
    line.trim_start()
        .strip_prefix("[[tool]]")
        .is_some_and(|rest| {
            let rest = rest.trim_start();
            rest.is_empty() || rest.starts_with('#')
        })
}

/// Reads the tools of a file part by part, handing each to `each` with the offset its
/// spans are relative to as soon as it is parsed. On a parse error, returns it with the
/// offset its span is relative to; the tools handed out before belong to the file (see
/// the module notes).
pub fn read(
    text: &str,
    mut each: impl FnMut(usize, RawTool),
) -> Result<(), (usize, toml::de::Error)> {
    let parts = split(text);
    for part in &parts {
        match toml::from_str::<ToolFile>(part.text) {
            Ok(file) => file.tool.into_iter().for_each(|t| each(part.offset, t)),
            Err(_) => {
                // Not a document on its own: the rest of the file is one.
                let rest = &text[part.offset..];
                let file = toml::from_str::<ToolFile>(rest).map_err(|e| (part.offset, e))?;
                file.tool.into_iter().for_each(|t| each(part.offset, t));
                return Ok(());
            }
        }
    }
    Ok(())
}

/// What the reading thread hands the compiler, file by file and in order.
pub enum Parsed {
    /// A file begins: the index of its lines (every file sends one, first).
    File(LineIndex),
    /// A tool and the byte offset its spans are relative to.
    Tool(usize, Box<RawTool>),
    /// The file's parse error and the byte offset its span is relative to (the file's
    /// last message).
    Error(usize, toml::de::Error),
    /// The file's tools as an earlier start kept them could not be read (the file's last
    /// message; see [`crate::catalog::start_cache`]).
    Unreadable(String),
}

/// A tool file to read: its text, and its tools as an earlier start of this binary
/// parsed them, where a start cache holds them (read instead of the text).
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The file's text (its lines are always indexed from it).
    pub text: &'a str,
    /// The file's tools as kept: a JSON array of `[offset, tool]`.
    pub kept: Option<&'a str>,
}

/// Hands each `(offset, tool)` of a kept JSON array to `each` as it is read, so that a
/// file's tools are never all in memory at once; `each` returns `false` to stop.
struct EachKept<'f>(&'f mut dyn FnMut(usize, RawTool) -> bool);

impl<'de> serde::de::Visitor<'de> for EachKept<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of [offset, tool]")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some((offset, tool)) = seq.next_element::<(usize, RawTool)>()? {
            if !(self.0)(offset, tool) {
                // The compiler stopped listening; the rest is not read.
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                return Ok(());
            }
        }
        Ok(())
    }
}

/// Reads a kept JSON array of a file's tools (see [`Input::kept`]).
fn read_kept(json: &str, each: &mut dyn FnMut(usize, RawTool) -> bool) -> Result<(), String> {
    use serde::Deserializer as _;
    let mut de = serde_json::Deserializer::from_str(json);
    de.deserialize_seq(EachKept(each))
        .and_then(|()| de.end())
        .map_err(|e| e.to_string())
}

/// How many parsed tools go over in one message: the compiler and the reader each wake
/// the other once per batch, not once per tool.
const BATCH: usize = 16;

/// How many batches may wait for the compiler (with [`BATCH`], bounds the memory read
/// ahead to 64 tools).
const AHEAD: usize = 4;

/// Reads `inputs` on a second thread, handing what it read to `each` on this thread as
/// `(index of the input, what)`, in order; the compile runs while the next tools parse.
/// With `record`, also returns each file's tools as JSON (see [`Input::kept`]), written
/// as they are parsed, for a start cache to keep; `None` without it.
pub fn read_all(
    inputs: &[Input<'_>],
    record: bool,
    mut each: impl FnMut(usize, Parsed),
) -> Option<Vec<String>> {
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(usize, Parsed)>>(AHEAD);
        let reader = scope.spawn(move || {
            let mut recorded: Vec<String> = Vec::new();
            let mut batch = Vec::with_capacity(BATCH);
            // A send fails only when the compiler stopped listening: then stop too.
            let pass = |batch: &mut Vec<(usize, Parsed)>, item: (usize, Parsed)| {
                batch.push(item);
                batch.len() < BATCH
                    || tx
                        .send(std::mem::replace(batch, Vec::with_capacity(BATCH)))
                        .is_ok()
            };
            for (i, input) in inputs.iter().enumerate() {
                if !pass(&mut batch, (i, Parsed::File(LineIndex::new(input.text)))) {
                    return recorded;
                }
                let mut open = true;
                let mut json = String::new();
                let mut hand = |offset: usize, raw: RawTool| {
                    if record {
                        json.push(if json.is_empty() { '[' } else { ',' });
                        // A tool parsed from TOML always serializes.
                        if let Ok(text) = serde_json::to_string(&(offset, &raw)) {
                            json.push_str(&text);
                        }
                    }
                    open = open && pass(&mut batch, (i, Parsed::Tool(offset, Box::new(raw))));
                    open
                };
                let failed = match input.kept {
                    Some(kept) => read_kept(kept, &mut hand).err().map(Parsed::Unreadable),
                    None => read(input.text, |offset, raw| {
                        hand(offset, raw);
                    })
                    .err()
                    .map(|(offset, e)| Parsed::Error(offset, e)),
                };
                if let Some(failed) = failed {
                    open = open && pass(&mut batch, (i, failed));
                }
                if !open {
                    return recorded;
                }
                if record {
                    json.push_str(if json.is_empty() { "[]" } else { "]" });
                    recorded.push(json);
                }
            }
            if !batch.is_empty() {
                let _ = tx.send(batch);
            }
            recorded
        });
        for batch in rx {
            for (i, parsed) in batch {
                each(i, parsed);
            }
        }
        let recorded = reader.join().ok();
        recorded.filter(|_| record)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(part offset, name, name's file offset)` of each tool read.
    type Read = Vec<(usize, String, usize)>;

    /// The tools read, or the error's file offset and message.
    fn names(text: &str) -> Result<Read, (usize, String)> {
        let mut out = Vec::new();
        read(text, |offset, t| {
            out.push((
                offset,
                t.name.get_ref().clone(),
                offset + t.name.span().start,
            ));
        })
        .map_err(|(offset, e)| {
            (
                offset + e.span().map_or(0, |s| s.start),
                e.message().to_string(),
            )
        })?;
        Ok(out)
    }

    /// A tool after its name and description.
    const BODY: &str = "title = \"T\"\ntier = \"agent_ready\"\nrisk = \"read\"\n[tool.arguments]\ntype = \"object\"\n[tool.http]\nmethod = \"GET\"\npath = \"/x\"\n";
    /// A tool after its name.
    const TOOL: &str = concat!(
        "description = \"d\"\n",
        "title = \"T\"\ntier = \"agent_ready\"\nrisk = \"read\"\n[tool.arguments]\ntype = \"object\"\n[tool.http]\nmethod = \"GET\"\npath = \"/x\"\n"
    );

    #[test]
    fn cuts_before_each_header_line_only() {
        let text = "# preamble\n[[tool]]\nname = \"a\"\n  [[tool]] # second\nname = \"b\"\n[[tool.x]]\n[[ tool ]]\n";
        let parts: Vec<usize> = split(text).iter().map(|p| p.offset).collect();
        assert_eq!(parts, vec![0, 11, 31]);
        assert_eq!(split("[[tool]]\nname = \"a\"\n")[0].offset, 0);
        assert_eq!(split("[[tool]]\nname = \"a\"\n").len(), 1);
        assert_eq!(split("").len(), 1);
        let joined: String = split(text).iter().map(|p| p.text).collect();
        assert_eq!(joined, text);
    }

    #[test]
    fn spans_are_file_offsets_and_parts_match_a_whole_parse() {
        let text =
            format!("#:schema x\n[[tool]]\nname = \"a\"\n{TOOL}\n[[tool]]\nname = \"b\"\n{TOOL}");
        let got = names(&text).unwrap();
        let whole: ToolFile = toml::from_str(&text).unwrap();
        assert_eq!(got.len(), 2);
        for ((_, name, at), t) in got.iter().zip(&whole.tool) {
            assert_eq!(name, t.name.get_ref());
            assert_eq!(*at, t.name.span().start, "{name}");
        }
    }

    #[test]
    fn a_header_line_inside_a_multiline_string_is_not_a_cut() {
        for quote in ["\"\"\"", "'''"] {
            let text = format!(
                "[[tool]]\nname = \"a\"\n{TOOL}\n[[tool]]\nname = \"b\"\ndescription = {quote}\nfirst line\n[[tool]]\nname = \"c\"\n{quote}\n{BODY}"
            );
            let whole: ToolFile = toml::from_str(&text).unwrap();
            let got = names(&text).unwrap();
            let want: Vec<(String, usize)> = whole
                .tool
                .iter()
                .map(|t| (t.name.get_ref().clone(), t.name.span().start))
                .collect();
            let got: Vec<(String, usize)> = got.into_iter().map(|(_, n, at)| (n, at)).collect();
            assert_eq!(got, want, "{quote}");
            assert_eq!(got.len(), 2);
        }
    }

    #[test]
    fn an_error_is_reported_where_a_whole_parse_reports_it() {
        let text = format!(
            "[[tool]]\nname = \"a\"\n{TOOL}\n[[tool]]\nname = \"b\"\nnot toml here\n{TOOL}"
        );
        let whole = toml::from_str::<ToolFile>(&text).unwrap_err();
        let (at, message) = names(&text).unwrap_err();
        assert_eq!(at, whole.span().unwrap().start);
        assert_eq!(message, whole.message());
        let unknown = format!("[[tool]]\nname = \"a\"\n{TOOL}\nsurprise = 1\n");
        let whole = toml::from_str::<ToolFile>(&unknown).unwrap_err();
        let (at, message) = names(&unknown).unwrap_err();
        assert_eq!(
            (at, message.as_str()),
            (whole.span().unwrap().start, whole.message())
        );
    }
}
