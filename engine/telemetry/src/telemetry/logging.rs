//! Where the broker's log lines go and in what form: stderr, filtered by
//! `TOOL_BROKER_LOG` (an `EnvFilter`, default `info`), as text (default) or as one JSON
//! object per line (`TOOL_BROKER_LOG_FORMAT=json`: `timestamp`, `level`, `target`, the
//! event's fields flattened, among them `trace_id` on every tool call line). Colour codes
//! only when stderr is a terminal, so a log file or a collector never sees them. What is
//! logged is the same in both forms, and never a key, a token or a header value.

use std::io::IsTerminal;

/// The form of log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (the default).
    Text,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// From `TOOL_BROKER_LOG_FORMAT` (absent or empty: text).
    pub fn parse(value: Option<&str>) -> Result<Self, String> {
        match value.map(str::trim) {
            None | Some("") => Ok(Self::Text),
            Some(v) if v.eq_ignore_ascii_case("text") => Ok(Self::Text),
            Some(v) if v.eq_ignore_ascii_case("json") => Ok(Self::Json),
            Some(other) => Err(format!(
                "TOOL_BROKER_LOG_FORMAT = `{other}`: use `text` or `json`"
            )),
        }
    }
}

/// A subscriber writing `format` lines to `writer`; `ansi` turns colour codes on.
pub fn subscriber<W>(
    format: LogFormat,
    filter: tracing_subscriber::EnvFilter,
    writer: W,
    ansi: bool,
) -> Box<dyn tracing::Subscriber + Send + Sync>
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_env_filter(filter);
    match format {
        LogFormat::Text => Box::new(builder.with_ansi(ansi).finish()),
        LogFormat::Json => Box::new(
            builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .finish(),
        ),
    }
}

/// Installs the process's logger from the environment; an unknown format is an error.
/// Lines are written to stderr by a thread of their own ([`crate::telemetry::log_writer`]):
/// keep the guard until the process ends, so what is queued is written.
pub fn init() -> Result<crate::telemetry::log_writer::Flush, String> {
    let format = LogFormat::parse(std::env::var("TOOL_BROKER_LOG_FORMAT").ok().as_deref())?;
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOL_BROKER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::stderr().is_terminal();
    let (lines, flush) = crate::telemetry::log_writer::spawn(std::io::stderr())
        .map_err(|e| format!("the log writer thread could not be started: {e}"))?;
    tracing::subscriber::set_global_default(subscriber(format, filter, lines, ansi))
        .map_err(|e| format!("the logger could not be installed: {e}"))?;
    Ok(flush)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Collects what a subscriber writes.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::ErrorKind::Other)?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn logged(format: LogFormat, ansi: bool) -> String {
        let buffer = Buffer::default();
        let out = buffer.clone();
        let subscriber = subscriber(
            format,
            tracing_subscriber::EnvFilter::new("info"),
            move || out.clone(),
            ansi,
        );
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(
                tool = "crm.create_contact",
                trace_id = "0123456789abcdef-7",
                duration_ms = 3u64,
                "tool call"
            );
        });
        let bytes = buffer.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn json_lines_carry_the_fields_flat() {
        let text = logged(LogFormat::Json, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let line: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["message"], "tool call");
        assert_eq!(line["trace_id"], "0123456789abcdef-7");
        assert_eq!(line["tool"], "crm.create_contact");
        assert_eq!(line["duration_ms"], 3);
        assert!(line["timestamp"].is_string());
    }

    #[test]
    fn text_has_colour_codes_only_when_asked() {
        assert!(!logged(LogFormat::Text, false).contains('\u{1b}'));
        assert!(logged(LogFormat::Text, true).contains('\u{1b}'));
    }

    #[test]
    fn the_format_is_text_or_json() {
        assert_eq!(LogFormat::parse(None), Ok(LogFormat::Text));
        assert_eq!(LogFormat::parse(Some("JSON")), Ok(LogFormat::Json));
        assert!(
            LogFormat::parse(Some("yaml"))
                .unwrap_err()
                .contains("`text` or `json`")
        );
    }
}
