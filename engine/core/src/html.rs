//! The look every page of the broker shares: the hub, the approval page and the
//! operator's console. Server-rendered HTML, one stylesheet (light and dark, from the
//! viewer's system setting), no asset from anywhere, and a strict
//! Content-Security-Policy: no script at all, or one inline script carrying the
//! answer's nonce (the console's, which shows times in the viewer's zone and sorts
//! tables; every page reads without it).
//!
//! Imports nothing of the crate: every stage that answers a page may use it.

/// An HTML answer.
#[derive(Debug)]
pub struct Page {
    /// HTTP status.
    pub status: u16,
    /// Extra headers (cookies, redirects).
    pub headers: Vec<(&'static str, String)>,
    /// The HTML.
    pub body: String,
}

/// The Content-Security-Policy of a page without script.
pub const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";

/// Headers every page carries (a page with a script replaces the CSP: [`csp_with_nonce`]).
pub const PAGE_HEADERS: [(&str, &str); 6] = [
    ("content-type", "text/html; charset=utf-8"),
    ("cache-control", "no-store"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "same-origin"),
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
];

/// The Content-Security-Policy of a page whose one script carries `nonce`.
pub fn csp_with_nonce(nonce: &str) -> String {
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
}

/// HTML-escapes text.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The one stylesheet. Colours meet WCAG AA contrast in both schemes.
pub const STYLE: &str = "\
:root{color-scheme:light dark;--bg:#f6f7f9;--fg:#15171c;--muted:#555b69;--card:#fff;--line:#d9dde4;\
--accent:#2445c8;--accent-fg:#fff;--warn:#9a2a00;--ok:#17663a;--code:#eef0f4;--bar:#4d6bf0}\
@media (prefers-color-scheme:dark){:root{--bg:#111318;--fg:#e6e8ee;--muted:#a3a9b7;--card:#1a1d23;\
--line:#2f343d;--accent:#8ea4ff;--accent-fg:#0a0c11;--warn:#ff9f7a;--ok:#72d69e;--code:#22252c;--bar:#8ea4ff}}\
*{box-sizing:border-box}\
body{margin:0;font:15px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;background:var(--bg);color:var(--fg)}\
.bar{display:flex;flex-wrap:wrap;gap:.25rem 1.25rem;align-items:center;padding:.55rem 1.25rem;background:var(--card);border-bottom:1px solid var(--line)}\
.bar .brand{font-weight:700;color:var(--fg);text-decoration:none;margin-right:.5rem}\
.bar nav{display:flex;flex-wrap:wrap;gap:.15rem}\
.bar nav a{color:var(--muted);text-decoration:none;padding:.3rem .6rem;border-radius:.4rem}\
.bar nav a:hover{color:var(--fg)}\
.bar nav a[aria-current=page]{color:var(--fg);background:var(--code);font-weight:600}\
.bar .who{margin-left:auto;color:var(--muted);display:flex;gap:.75rem;align-items:center}\
main{max-width:76rem;margin:1.5rem auto;padding:0 1.25rem}\
main.narrow{max-width:46rem}\
h1{font-size:1.45rem;margin:.25rem 0 1rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}\
a{color:var(--accent)}\
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}\
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line);border-radius:.4rem}\
th,td{text-align:left;padding:.45rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}\
th{font-weight:600;font-size:.82rem;color:var(--muted);white-space:nowrap}\
th button{all:unset;cursor:pointer}th button:focus-visible{outline:3px solid var(--accent)}\
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
.scroll{overflow-x:auto}\
pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.84rem}\
pre{background:var(--code);padding:.75rem;overflow:auto;white-space:pre-wrap;border-radius:.4rem;margin:.25rem 0}\
button,.button{font:inherit;padding:.4rem 1rem;border-radius:.4rem;border:1px solid var(--accent);background:var(--accent);color:var(--accent-fg);cursor:pointer;text-decoration:none;display:inline-block}\
button.secondary,.button.secondary{background:transparent;color:var(--accent)}\
.button.secondary[aria-current=page]{background:var(--accent);color:var(--accent-fg)}\
nav.filters{display:flex;flex-wrap:wrap;gap:.4rem;margin:0 0 1rem}\
button+button{margin-left:.5rem}\
button.small{padding:.1rem .5rem;font-size:.8rem}\
.note{padding:.6rem 1rem;border-left:4px solid var(--ok);background:var(--card);border-radius:.3rem}\
input,select{font:inherit;padding:.35rem .5rem;border:1px solid var(--muted);border-radius:.4rem;background:var(--card);color:var(--fg)}\
label{display:inline-flex;flex-direction:column;gap:.15rem;font-size:.85rem;color:var(--muted)}\
form.inline{display:inline}\
form.filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:flex-end;margin:0 0 1rem}\
.warn{color:var(--warn)}.ok{color:var(--ok)}.muted{color:var(--muted)}\
.card{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:1rem}\
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(13rem,1fr));gap:1rem;margin-bottom:1rem}\
.figure{font-size:1.6rem;font-weight:650;font-variant-numeric:tabular-nums}\
.empty{padding:2rem;text-align:center;color:var(--muted);background:var(--card);border:1px dashed var(--line);border-radius:.5rem}\
.tag{display:inline-block;padding:0 .45rem;border-radius:1rem;border:1px solid var(--line);font-size:.8rem}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.35rem 1.25rem}dt{font-weight:600}dd{margin:0;min-width:0}\
details>summary{cursor:pointer;color:var(--accent)}\
.pager{display:flex;gap:1rem;align-items:center;margin:1rem 0}\
svg.chart{width:100%;height:auto;background:var(--card);border:1px solid var(--line);border-radius:.5rem}\
svg.chart .bar{fill:var(--bar)}svg.chart .err{fill:var(--warn)}\
svg.chart text{fill:var(--muted);font-size:11px}svg.chart .grid{stroke:var(--line)}";

/// A labelled `<select>` named `name` whose first option, "any", is empty, then each
/// of `options`, `chosen` selected (a filter form's field).
pub fn select(name: &str, label: &str, options: &[&str], chosen: Option<&str>) -> String {
    let mut html = format!("<label>{label}<select name=\"{name}\"><option value=\"\">any</option>");
    for o in options {
        let selected = if chosen == Some(*o) { " selected" } else { "" };
        html.push_str(&format!("<option{selected}>{}</option>", escape(o)));
    }
    html.push_str("</select></label>");
    html
}

/// A whole page: the bar (`nav`: its HTML, escaped by the caller; empty for none), the
/// title as heading, then `body` (HTML, escaped by the caller). `script`: the console's
/// script and the answer's nonce, when the page has one.
pub fn document(
    title: &str,
    nav: &str,
    body: &str,
    wide: bool,
    script: Option<(&str, &str)>,
) -> String {
    let script = script
        .map(|(nonce, code)| format!("<script nonce=\"{}\">{code}</script>", escape(nonce)))
        .unwrap_or_default();
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<title>{title}</title><style>{STYLE}</style></head><body>\
<header class=\"bar\"><a class=\"brand\" href=\"{home}\">tool-broker</a>{nav}</header>\
<main class=\"{width}\" id=\"main\"><h1>{title}</h1>{body}</main>{script}</body></html>",
        title = escape(title),
        home = if nav.is_empty() { "/hub" } else { "/admin" },
        width = if wide { "wide" } else { "narrow" },
    )
}

/// A page of the hub or the approval page: the title as heading, then `body`.
pub fn layout(title: &str, body: &str) -> String {
    document(title, "", body, false, None)
}

/// A page answer.
pub fn page(status: u16, title: &str, body: &str) -> Page {
    Page {
        status,
        headers: Vec::new(),
        body: layout(title, body),
    }
}

/// A page of one paragraph of text.
pub fn message(status: u16, title: &str, text: &str) -> Page {
    page(status, title, &format!("<p>{}</p>", escape(text)))
}

/// A time as a person reads it: `<time>` with the exact UTC as its title; the
/// console's script writes it relative and in the viewer's zone.
pub fn time(rfc3339: &str) -> String {
    let shown = rfc3339
        .parse::<jiff::Timestamp>()
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| rfc3339.to_string());
    format!(
        "<time datetime=\"{0}\" title=\"{0}\">{1}</time>",
        escape(rfc3339),
        escape(&shown)
    )
}

/// A JSON value for a page: short ones inline, long ones folded under `summary`.
pub fn folded_json(value: &serde_json::Value, summary: &str) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    if text.lines().count() <= 12 {
        format!("<pre>{}</pre>", escape(&text))
    } else {
        format!(
            "<details><summary>{}</summary><pre>{}</pre></details>",
            escape(summary),
            escape(&text)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_times_are_shown_in_utc() {
        assert_eq!(
            escape("<a href='x'>&\""),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;"
        );
        assert_eq!(
            time("2026-11-28T17:30:05.123Z"),
            "<time datetime=\"2026-11-28T17:30:05.123Z\" title=\"2026-11-28T17:30:05.123Z\">2026-11-28 17:30:05 UTC</time>"
        );
        assert!(time("<not a time>").contains("&lt;not a time&gt;</time>"));
    }

    #[test]
    fn long_json_is_folded() {
        let short = serde_json::json!({ "a": 1 });
        assert!(folded_json(&short, "x").starts_with("<pre>"));
        let long: serde_json::Value = (0..20)
            .map(|i| (format!("k{i}"), i.into()))
            .collect::<serde_json::Map<_, _>>()
            .into();
        assert!(
            folded_json(&long, "20 fields").starts_with("<details><summary>20 fields</summary>")
        );
    }
}
