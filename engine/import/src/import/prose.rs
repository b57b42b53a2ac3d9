//! Upstream prose made plain text: what the importer keeps of an operation's
//! `description` and `summary` and of its parameters' descriptions.
//!
//! Upstream documents write HTML (`<p>Retrieves the details of an account.</p>`) or
//! markdown (headings, `**bold**`, `[links](url)`, code spans). [`plain`] turns either
//! into paragraphs of plain text: tags dropped (a link keeps its label), `<br>` and
//! `</p>` end paragraphs, entities decoded, markdown marks and link targets removed,
//! headings and bold-label lines (`**Credit usage:** ...`, metadata rather than what the
//! operation does) dropped. [`lead`] is the opening a description keeps, [`first_sentence`]
//! what a title is made of.

/// The longest opening a tool description keeps of the upstream text.
pub const LEAD_CHARS: usize = 300;

/// The longest upstream text kept whole for `get_tool_reference`.
pub const DOCUMENTATION_CHARS: usize = 4000;

/// Paragraphs of plain text, in order, each on one line.
pub fn paragraphs(text: &str, skip_prefixes: &[String]) -> Vec<String> {
    let text = strip_html(text);
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut lines: Vec<String> = Vec::new();
        for line in block.lines() {
            let line = line.trim();
            // Headings and table rules are structure, not prose.
            if line.starts_with('#') || line.starts_with('|') || line.starts_with("---") {
                continue;
            }
            lines.push(line.to_string());
        }
        let joined = markdown_inline(&lines.join(" "));
        let joined = joined.split_whitespace().collect::<Vec<_>>().join(" ");
        if joined.is_empty()
            || is_label_line(block.trim())
            || skip_prefixes.iter().any(|p| joined.starts_with(p.as_str()))
        {
            continue;
        }
        out.push(joined);
    }
    out
}

/// The whole text as plain paragraphs separated by blank lines, cut at
/// [`DOCUMENTATION_CHARS`] on a sentence end.
pub fn plain(text: &str, skip_prefixes: &[String]) -> String {
    let whole = paragraphs(text, skip_prefixes).join("\n\n");
    cut_at_sentence(&whole, DOCUMENTATION_CHARS)
}

/// What a description keeps: the opening paragraphs up to about [`LEAD_CHARS`], cut
/// after a sentence.
pub fn lead(text: &str, skip_prefixes: &[String]) -> String {
    let mut out = String::new();
    for p in paragraphs(text, skip_prefixes) {
        if !out.is_empty() {
            // A short opening (a definition, one sentence) reads on into the next.
            if out.chars().count() >= 120 {
                break;
            }
            out.push(' ');
        }
        out.push_str(&p);
    }
    cut_at_sentence(&out, LEAD_CHARS)
}

/// The first sentence of the text, without its full stop ("Update a specified
/// refund"); `None` when there is no prose or it is longer than `max` characters.
pub fn first_sentence(text: &str, max: usize) -> Option<String> {
    let first = paragraphs(text, &[]).into_iter().next()?;
    let end = sentence_ends(&first).next().unwrap_or(first.len());
    let mut sentence = first[..end].trim().trim_end_matches(['.', ':']).trim();
    // "You can list all invoices" says "List all invoices".
    let mut owned = String::new();
    for lead in ["You can ", "You may "] {
        if let Some(rest) = sentence.strip_prefix(lead) {
            let mut chars = rest.chars();
            owned = chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default();
        }
    }
    if !owned.is_empty() {
        sentence = &owned;
    }
    // A long sentence keeps its opening clause ("Retrieves the current account
    // balance, based on ...").
    if sentence.chars().count() > max
        && let Some(comma) = sentence.find(", ")
    {
        sentence = &sentence[..comma];
    }
    (!sentence.is_empty() && sentence.chars().count() <= max).then(|| sentence.to_string())
}

/// Verbs an operation's first sentence opens with when it says what the operation does
/// ("Retrieves the details of an account", "Update a specified refund"); a sentence that
/// opens otherwise ("With Connect, you can delete accounts") makes no title.
const OPENING_VERBS: [&str; 62] = [
    "accept",
    "activate",
    "add",
    "apply",
    "approve",
    "archive",
    "attach",
    "cancel",
    "capture",
    "change",
    "check",
    "close",
    "complete",
    "confirm",
    "create",
    "deactivate",
    "decline",
    "delete",
    "detach",
    "disable",
    "download",
    "enable",
    "expire",
    "export",
    "fetch",
    "finalize",
    "find",
    "generate",
    "get",
    "import",
    "increment",
    "invalidate",
    "issue",
    "list",
    "mark",
    "pause",
    "pay",
    "publish",
    "reactivate",
    "redact",
    "refund",
    "reject",
    "release",
    "remove",
    "replace",
    "reset",
    "resume",
    "retrieve",
    "return",
    "reverse",
    "run",
    "schedule",
    "search",
    "send",
    "set",
    "start",
    "stop",
    "submit",
    "test",
    "update",
    "upload",
    "verify",
];

/// Whether a sentence opens with a verb saying what the operation does (either form:
/// "Creates" or "Create").
pub fn opens_with_verb(sentence: &str) -> bool {
    let mut words = sentence.split_whitespace().map(str::to_ascii_lowercase);
    let mut first = words.next().unwrap_or_default();
    // "Permanently deletes a customer": an adverb before the verb.
    if first.ends_with("ly") {
        first = words.next().unwrap_or_default();
    }
    let bare = first
        .strip_suffix("es")
        .filter(|b| OPENING_VERBS.contains(b))
        .or_else(|| first.strip_suffix('s'))
        .unwrap_or(&first);
    OPENING_VERBS.contains(&bare) || OPENING_VERBS.contains(&first.as_str())
}

/// The first sentence, or the first `max` characters cut at a word, of the text's first
/// paragraph: what a parameter's description keeps.
pub fn short(text: &str, max: usize) -> String {
    let first = paragraphs(text, &[]).into_iter().next().unwrap_or_default();
    let end = sentence_ends(&first).next().unwrap_or(first.len());
    let sentence = first[..end].trim();
    if sentence.chars().count() <= max {
        return sentence.to_string();
    }
    cut_at_word(sentence, max)
}

/// A paragraph that is only a bold label and its value (`**OAuth scopes:** ...`).
fn is_label_line(block: &str) -> bool {
    block.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || (l.starts_with("**") && l[2..].contains(":**"))
    })
}

/// Byte offsets just after each sentence end (`.`, `!` or `?` before a space or the end).
fn sentence_ends(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.char_indices().filter_map(move |(i, c)| {
        let after = &text[i + c.len_utf8()..];
        (matches!(c, '.' | '!' | '?')
            && (after.is_empty() || after.starts_with(' '))
            // "e.g. x", "i.e. y" and "vs. z" do not end a sentence.
            && !text[..i].ends_with(" e.g")
            && !text[..i].ends_with(" i.e")
            && !text[..i].ends_with(" vs"))
        .then_some(i + c.len_utf8())
    })
}

/// At most `max` characters, ending after the last sentence that fits (or at a word,
/// with an ellipsis, when not even one does).
fn cut_at_sentence(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let limit = byte_at(text, max);
    match sentence_ends(text).take_while(|&e| e <= limit).last() {
        Some(end) => text[..end].trim().to_string(),
        None => cut_at_word(text, max),
    }
}

fn cut_at_word(text: &str, max: usize) -> String {
    let limit = byte_at(text, max.saturating_sub(1));
    let cut = text[..limit].rfind(' ').unwrap_or(limit);
    format!("{}…", text[..cut].trim_end_matches([',', ';', ':', ' ']))
}

/// The byte offset of the `n`th character (or the end).
fn byte_at(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// HTML tags dropped (paragraph ends kept as blank lines), entities decoded.
fn strip_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        // Only a tag-like `<x...>`: "a < b" stays.
        let is_tag = after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!');
        match after.find('>').filter(|_| is_tag) {
            Some(end) => {
                let tag = after[..end]
                    .trim_start_matches('/')
                    .split(|c: char| c.is_whitespace() || c == '/')
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                match tag.as_str() {
                    "br" | "p" | "ul" | "ol" | "div" | "table" | "h1" | "h2" | "h3" | "h4" => {
                        out.push_str("\n\n")
                    }
                    "li" | "tr" => out.push('\n'),
                    _ => {}
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    decode_entities(&out)
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&rsquo;", "'")
        .replace("&lsquo;", "'")
        .replace("&ldquo;", "\"")
        .replace("&rdquo;", "\"")
        .replace("&mdash;", "—")
        .replace("&ndash;", "–")
        .replace("&amp;", "&")
}

/// Markdown marks of one line removed: `[label](url)` -> label, `**x**` -> x, code
/// spans -> their text.
fn markdown_inline(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('[') {
        let after = &rest[start + 1..];
        match after.find("](").and_then(|mid| {
            // The target ends at its matching `)`: URLs may hold parentheses.
            let target = &after[mid + 2..];
            let mut depth = 0usize;
            let close = target.char_indices().find_map(|(i, c)| match c {
                '(' => {
                    depth += 1;
                    None
                }
                ')' if depth == 0 => Some(i),
                ')' => {
                    depth -= 1;
                    None
                }
                _ => None,
            })?;
            Some((mid, mid + 2 + close))
        }) {
            Some((mid, close)) => {
                out.push_str(&rest[..start]);
                out.push_str(&after[..mid]);
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&rest[..start + 1]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace("**", "").replace('`', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_and_markdown_become_plain_paragraphs() {
        let cases: [(&str, &str); 5] = [
            (
                "<p>Retrieves the details of an account.</p>",
                "Retrieves the details of an account.",
            ),
            (
                "<p>Updates the <code>metadata</code> on a <a href=\"/x\">refund</a>.</p><p>Other.</p>",
                "Updates the metadata on a refund.\n\nOther.",
            ),
            (
                "## Endpoint essentials\n\n**API key access:** `x` or `Master API key`\n\n**Credit usage:** `0 credits`\n\nUse the [People Search](https://x.y/z_(1)) endpoint to find people.<br><br>More &amp; more.",
                "Use the People Search endpoint to find people.\n\nMore & more.",
            ),
            (
                "Lists tasks. Use [project.list](https://x/y) to find ids.\nMore.",
                "Lists tasks. Use project.list to find ids. More.",
            ),
            ("a < b and <br/>c", "a < b and\n\nc"),
        ];
        for (text, want) in cases {
            assert_eq!(plain(text, &[]), want, "{text}");
        }
        assert_eq!(
            plain("Credits are charged.\n\nDoes it.", &["Credits".into()]),
            "Does it."
        );
    }

    #[test]
    fn a_lead_reads_past_a_short_opening_and_stops_at_a_sentence() {
        let text = "People are prospects.<br><br>Use this endpoint to find people. ".to_string()
            + &"It filters by many things. ".repeat(20);
        let lead = lead(&text, &[]);
        assert!(lead.starts_with("People are prospects. Use this endpoint to find people."));
        assert!(
            lead.ends_with('.') && lead.chars().count() <= LEAD_CHARS,
            "{lead}"
        );
    }

    #[test]
    fn titles_are_first_sentences_and_parameters_short() {
        assert_eq!(
            first_sentence("<p>Update a specified refund.</p>", 80).as_deref(),
            Some("Update a specified refund")
        );
        assert_eq!(
            first_sentence("Lists all e.g. cards. More.", 80).as_deref(),
            Some("Lists all e.g. cards")
        );
        assert_eq!(first_sentence(&"word ".repeat(30), 80), None);
        let long = format!("Retrieves the balance, based on {}.", "the key ".repeat(10));
        assert_eq!(
            first_sentence(&long, 80).as_deref(),
            Some("Retrieves the balance")
        );
        assert_eq!(
            first_sentence("<p>You can list all invoices, or some.</p>", 80).as_deref(),
            Some("List all invoices, or some")
        );
        assert_eq!(first_sentence("", 80), None);
        for (sentence, verb) in [
            ("Retrieves the details of an account", true),
            ("Update a specified refund", true),
            ("Searches for charges", true),
            ("Finalizes an invoice", true),
            ("Lists all refunds", true),
            ("Permanently deletes a customer", true),
            ("With Connect, you can delete accounts", false),
            ("Settings for the account", false),
        ] {
            assert_eq!(opens_with_verb(sentence), verb, "{sentence}");
        }
        assert_eq!(short("The id. More text.", 200), "The id.");
        let long = short(&"word ".repeat(100), 50);
        assert!(long.ends_with('…') && long.chars().count() <= 50, "{long}");
    }
}
