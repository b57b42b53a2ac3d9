//! Where a command's output goes: stdout (a reader that closes the pipe early ends it
//! quietly), stderr for what it says along the way, and the exit code.

use std::process::ExitCode;

/// Writes command output to stdout. A reader that closed the pipe early (`| head`) is
/// not an error: the rest of the output is dropped quietly.
pub(super) fn write_stdout(text: &str) -> std::io::Result<()> {
    write_quietly(&mut std::io::stdout().lock(), text)
}

/// Writes all of `text`; a closed pipe ends the output without an error.
pub fn write_quietly(out: &mut impl std::io::Write, text: &str) -> std::io::Result<()> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

pub(super) fn write_stderr(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// Runs a command's work on a runtime of its own (the commands other than `serve`).
pub(super) fn on_runtime<F>(work: F) -> Result<String, String>
where
    F: std::future::Future<Output = Result<String, String>>,
{
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?
        .block_on(work)
}

/// Appends `value` as indented JSON and a line break.
pub(super) fn pretty(out: &mut String, value: &impl serde::Serialize) {
    out.push_str(&serde_json::to_string_pretty(value).unwrap_or_default());
    out.push('\n');
}

/// Prints a command's output, or its error prefixed with `tool-broker:`; the exit code.
pub(super) fn printed(result: Result<String, String>) -> ExitCode {
    print(result.map_err(|message| format!("tool-broker: {message}")))
}

/// Prints a command's output to stdout, or its error (as it is) to stderr; the exit code.
pub(super) fn print(result: Result<String, String>) -> ExitCode {
    match result {
        Ok(out) => match write_stdout(&out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                write_stderr(&format!("tool-broker: cannot write the output: {e}"));
                ExitCode::FAILURE
            }
        },
        Err(message) => {
            write_stderr(&message);
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that takes `room` bytes and then closes the pipe (`| head -c room`).
    struct ClosingPipe {
        room: usize,
    }

    impl std::io::Write for ClosingPipe {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_ends_output_quietly() {
        let text = "x".repeat(10_000);
        assert!(write_quietly(&mut ClosingPipe { room: 10 }, &text).is_ok());
        assert!(write_quietly(&mut ClosingPipe { room: 0 }, &text).is_ok());
        assert!(write_quietly(&mut ClosingPipe { room: 20_000 }, &text).is_ok());
    }
}
