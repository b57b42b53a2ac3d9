//! An MCP server the broker runs itself, spoken to over its stdin and stdout (one JSON
//! message a line).
//!
//! The process is started without a shell, with only the environment `[mcp] env` names
//! (and `PATH`, `HOME`, `LANG`, `TMPDIR`), on the first call that needs it. Two threads
//! of its own read its stdout (answers routed to the calls waiting for them, by id; a
//! line that is not JSON-RPC logged and skipped; a line over the size bound fails the
//! call it answers) and its stderr (each line to the broker's log, the passed values
//! scrubbed). When it exits, every call waiting on it fails `upstream_unavailable`, and
//! the next call starts it again, not before a backoff that doubles with each exit in
//! a row (250 ms to 30 s). At most `max_in_flight` calls are in flight to it; more
//! wait their turn within their time. It is killed when the broker drops it (shutdown).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::oneshot;

use super::relay::{self, Relay};
use super::wire::{self, Failure, Message};
use super::{Events, Exchange};

/// The longest stderr line kept in the log.
const STDERR_LINE: usize = 2048;
/// The first wait after an exit; doubled with each exit in a row.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between two starts.
const MOST_BACKOFF: Duration = Duration::from_secs(30);
/// A process that lived this long before it exited restarts after the first backoff.
const HEALTHY: Duration = Duration::from_secs(30);

type Waiters = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, Failure>>>>>;

/// One stdio server: how to start it, and the process now running, if any.
pub(super) struct Supervisor {
    service: String,
    command: Vec<String>,
    env: Vec<(String, String)>,
    cwd: Option<String>,
    /// Values of the passed environment, scrubbed from its stderr lines.
    secrets: Arc<Vec<String>>,
    max_line: usize,
    events: Arc<Events>,
    permits: Arc<tokio::sync::Semaphore>,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    live: Option<Arc<Process>>,
    exits_in_a_row: u32,
    not_before: Option<Instant>,
}

/// A running process.
struct Process {
    child: Mutex<Child>,
    stdin: Arc<Mutex<ChildStdin>>,
    waiters: Waiters,
    next_id: AtomicU64,
    alive: Arc<AtomicBool>,
    started: Instant,
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Process {
    /// Writes one message as a line.
    fn write(&self, message: &Value) -> Result<(), Failure> {
        write_line(&self.stdin, message)
    }

    /// Sends a request and waits for its answer (the time its caller spends answering
    /// the server's questions not counted).
    async fn ask(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        relay: Option<&Relay>,
    ) -> Result<Value, Failure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut waiters) = self.waiters.lock() {
            waiters.insert(id, tx);
        }
        if let Err(e) = self.write(&wire::request(id, method, params)) {
            self.forget(id);
            return Err(e);
        }
        match relay::within(timeout, relay, std::pin::pin!(rx)).await {
            Some(Ok(answer)) => answer,
            Some(Err(_)) => Err(Failure::Unavailable(
                "the process exited before it answered".into(),
            )),
            None => {
                self.forget(id);
                Err(Failure::Timeout)
            }
        }
    }

    fn forget(&self, id: u64) {
        if let Ok(mut waiters) = self.waiters.lock() {
            waiters.remove(&id);
        }
    }
}

impl Supervisor {
    /// A supervisor for `command`; nothing starts until the first call.
    pub(super) fn new(
        service: &str,
        server: &crate::catalog::mcp::Server,
        lookup: &dyn Fn(&str) -> Option<String>,
        max_line: usize,
        events: Arc<Events>,
    ) -> Option<Self> {
        let crate::catalog::mcp::Transport::Stdio { command, env, cwd } = &server.transport else {
            return None;
        };
        let mut passed = Vec::new();
        let mut secrets = Vec::new();
        for name in crate::catalog::mcp::BASE_ENV {
            if let Some(value) = lookup(name) {
                passed.push((name.to_string(), value));
            }
        }
        for name in env {
            if let Some(value) = lookup(name) {
                if value.len() >= 4 {
                    secrets.push(value.clone());
                }
                passed.push((name.clone(), value));
            }
        }
        Some(Self {
            service: service.to_string(),
            command: command.clone(),
            env: passed,
            cwd: cwd.clone(),
            secrets: Arc::new(secrets),
            max_line,
            events,
            permits: Arc::new(tokio::sync::Semaphore::new(server.max_in_flight)),
            state: tokio::sync::Mutex::new(State::default()),
        })
    }

    /// The values of the environment it is passed (scrubbed from its answers and log).
    pub(super) fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// One request, answered within `exchange.timeout`: the process started (or
    /// started again) if it is not running.
    pub(super) async fn request(
        &self,
        method: &str,
        params: Value,
        exchange: &Exchange<'_>,
    ) -> Result<Value, Failure> {
        let deadline = Instant::now() + exchange.timeout;
        let _permit = tokio::time::timeout(exchange.timeout, self.permits.acquire())
            .await
            .map_err(|_| Failure::Timeout)?
            .map_err(|_| Failure::Unavailable("the server is shut down".into()))?;
        let process = self.running(exchange.timeout).await?;
        let left = deadline.saturating_duration_since(Instant::now());
        process.ask(method, params, left, exchange.relay).await
    }

    /// The running process, started (and initialized) if none is.
    async fn running(&self, timeout: Duration) -> Result<Arc<Process>, Failure> {
        let mut state = self.state.lock().await;
        if let Some(live) = &state.live {
            if live.alive.load(Ordering::Acquire) {
                return Ok(live.clone());
            }
            let lived = live.started.elapsed();
            state.live = None;
            state.exits_in_a_row = if lived >= HEALTHY {
                1
            } else {
                state.exits_in_a_row + 1
            };
            let wait = FIRST_BACKOFF
                .saturating_mul(1 << state.exits_in_a_row.saturating_sub(1).min(7))
                .min(MOST_BACKOFF);
            state.not_before = Some(Instant::now() + wait);
            tracing::warn!(service = %self.service, restart_in_ms = wait.as_millis() as u64, "mcp server process exited");
        }
        if let Some(at) = state.not_before
            && Instant::now() < at
        {
            let secs = at.saturating_duration_since(Instant::now()).as_secs_f64();
            return Err(Failure::Unavailable(format!(
                "its process exited and is started again in {secs:.1} s"
            )));
        }
        let process = Arc::new(self.start()?);
        let initialized = process
            .ask(
                "initialize",
                wire::initialize_params(wire::HANDSHAKE_VERSION),
                timeout,
                None,
            )
            .await;
        match initialized {
            Ok(result) => {
                let version = result
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !wire::HANDSHAKE_ACCEPTED.contains(&version) {
                    tracing::warn!(service = %self.service, version, "mcp server answered a protocol version the broker does not speak");
                    state.not_before = Some(Instant::now() + MOST_BACKOFF);
                    return Err(Failure::Unavailable(format!(
                        "the server speaks MCP `{version}`, which the broker does not"
                    )));
                }
                process.write(&wire::notification("notifications/initialized"))?;
            }
            Err(e) => {
                state.exits_in_a_row += 1;
                state.not_before = Some(Instant::now() + FIRST_BACKOFF);
                return Err(e);
            }
        }
        tracing::info!(service = %self.service, "mcp server process started");
        state.live = Some(process.clone());
        Ok(process)
    }

    /// Starts the process and its two reading threads.
    fn start(&self) -> Result<Process, Failure> {
        let Some((program, args)) = self.command.split_first() else {
            return Err(Failure::Unavailable("no command".into()));
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(|e| {
            tracing::error!(service = %self.service, error = %e.kind(), "mcp server process did not start");
            Failure::Unavailable(format!("its process did not start ({})", e.kind()))
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(Failure::Unavailable("its pipes could not be opened".into()));
        };
        let process = Process {
            child: Mutex::new(child),
            stdin: Arc::new(Mutex::new(stdin)),
            waiters: Arc::default(),
            next_id: AtomicU64::new(1),
            alive: Arc::new(AtomicBool::new(true)),
            started: Instant::now(),
        };
        let reader = Reader {
            service: self.service.clone(),
            waiters: process.waiters.clone(),
            stdin: process.stdin.clone(),
            alive: process.alive.clone(),
            events: self.events.clone(),
            max_line: self.max_line,
            runtime: tokio::runtime::Handle::try_current().ok(),
            secrets: self.secrets.clone(),
        };
        let service = self.service.clone();
        let secrets = self.secrets.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("mcp-{}-out", self.service))
            .spawn(move || reader.run(stdout))
            .and_then(|_| {
                std::thread::Builder::new()
                    .name(format!("mcp-{service}-err"))
                    .spawn(move || log_stderr(&service, &secrets, stderr))
            });
        if spawned.is_err() {
            return Err(Failure::Unavailable("no thread to read it".into()));
        }
        Ok(process)
    }
}

/// Writes one message as a line on a process's input.
fn write_line(stdin: &Mutex<ChildStdin>, message: &Value) -> Result<(), Failure> {
    let mut line = serde_json::to_vec(message)
        .map_err(|_| Failure::Unavailable("a request could not be written".into()))?;
    line.push(b'\n');
    let mut stdin = stdin
        .lock()
        .map_err(|_| Failure::Unavailable("its input is broken".into()))?;
    stdin
        .write_all(&line)
        .and_then(|()| stdin.flush())
        .map_err(|_| {
            Failure::Unavailable("the process does not read its input (it exited?)".into())
        })
}

/// What the stdout thread needs.
struct Reader {
    service: String,
    waiters: Waiters,
    stdin: Arc<Mutex<ChildStdin>>,
    alive: Arc<AtomicBool>,
    events: Arc<Events>,
    max_line: usize,
    /// Where a question's wait for its answer runs.
    runtime: Option<tokio::runtime::Handle>,
    /// Swept from a question before the caller reads it.
    secrets: Arc<Vec<String>>,
}

impl Reader {
    /// Reads lines until the process closes its output, then fails every waiting call.
    fn run(self, stdout: std::process::ChildStdout) {
        let mut input = BufReader::with_capacity(64 * 1024, stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line(&mut input, &mut line, self.max_line) {
                Ok(Line::End) | Err(_) => break,
                Ok(Line::Whole) => {}
                Ok(Line::TooLong { head, tail }) => {
                    match wire::id_in(&head, &tail) {
                        Some(id) => self.settle(id, Err(Failure::TooLarge)),
                        None => {
                            tracing::warn!(service = %self.service, "mcp server wrote a line over the size bound that answers nothing the broker asked; skipped")
                        }
                    }
                    continue;
                }
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                tracing::warn!(service = %self.service, bytes = line.len(), "mcp server wrote a line that is not JSON on its output; skipped");
                continue;
            };
            match wire::classify(message) {
                Message::Response { id, outcome } => self.settle(id, outcome.map_err(Failure::Rpc)),
                Message::Notification { method, params } => self.events.notified(&method, &params),
                Message::Request { id, method, params } if method == wire::ELICIT => {
                    self.question(id, params);
                }
                Message::Request { id, method, .. } => {
                    tracing::info!(service = %self.service, method = %method, "mcp server asked the broker; refused");
                    let _ = write_line(&self.stdin, &wire::answer_server_request(&id, &method));
                }
                Message::Garbage => {
                    tracing::warn!(service = %self.service, "mcp server wrote a message that is not JSON-RPC; skipped");
                }
            }
        }
        self.alive.store(false, Ordering::Release);
        if let Ok(mut waiters) = self.waiters.lock() {
            for (_, waiter) in waiters.drain() {
                let _ = waiter.send(Err(Failure::Unavailable(
                    "its process exited before it answered".into(),
                )));
            }
        }
    }

    /// A question of the server's: put to the caller of the one call in flight (a
    /// line names no call, so with more than one in flight nobody is asked), its
    /// answer written back when it comes; refused otherwise.
    fn question(&self, id: Value, mut params: Value) {
        let in_flight = self.waiters.lock().map(|w| w.len()).unwrap_or(0);
        let relay = (in_flight == 1).then(|| self.events.only_relay()).flatten();
        let (Some(relay), Some(runtime)) = (relay, &self.runtime) else {
            let refusal = if in_flight > 1 {
                wire::RpcError {
                    code: -32603,
                    message: format!(
                        "{in_flight} calls are in flight to this server and its question names none of them: nobody was asked"
                    ),
                }
            } else {
                relay::cannot_ask()
            };
            tracing::info!(service = %self.service, in_flight, "mcp server asked a question nobody can answer; refused");
            let _ = write_line(&self.stdin, &wire::answer(&id, Err(refusal)));
            return;
        };
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        super::sweep(&mut params, &secrets);
        let stdin = self.stdin.clone();
        tracing::info!(service = %self.service, "mcp server asked the caller a question; passed on");
        runtime.spawn(async move {
            let answer = relay.ask(params).await;
            let _ = write_line(&stdin, &wire::answer(&id, answer));
        });
    }

    fn settle(&self, id: u64, outcome: Result<Value, Failure>) {
        let waiter = self.waiters.lock().ok().and_then(|mut w| w.remove(&id));
        if let Some(waiter) = waiter {
            let _ = waiter.send(outcome);
        }
    }
}

/// What one line read was.
enum Line {
    /// The process closed its output.
    End,
    /// A whole line (its newline taken off) is in the buffer.
    Whole,
    /// A line over the bound: skipped to its end, its first and last bytes kept.
    TooLong { head: Vec<u8>, tail: Vec<u8> },
}

/// Reads one line of at most `max` bytes into `line`.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> std::io::Result<Line> {
    let mut tail: Vec<u8> = Vec::new();
    let mut over = false;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(if line.is_empty() && !over {
                Line::End
            } else {
                finish(line, over, tail)
            });
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(at) => (at, true),
            None => (buf.len(), false),
        };
        if over {
            tail.extend_from_slice(&buf[..take]);
            let keep = tail.len().saturating_sub(256);
            tail.drain(..keep);
        } else if line.len() + take > max {
            over = true;
            line.truncate(256);
            tail.extend_from_slice(&buf[take.saturating_sub(256)..take]);
        } else {
            line.extend_from_slice(&buf[..take]);
        }
        input.consume(if done { take + 1 } else { take });
        if done {
            return Ok(finish(line, over, tail));
        }
    }
}

fn finish(line: &mut Vec<u8>, over: bool, tail: Vec<u8>) -> Line {
    if over {
        Line::TooLong {
            head: std::mem::take(line),
            tail,
        }
    } else {
        Line::Whole
    }
}

/// Each stderr line into the log, the passed environment's values scrubbed.
fn log_stderr(service: &str, secrets: &[String], stderr: std::process::ChildStderr) {
    let mut input = BufReader::new(stderr);
    let mut raw = Vec::new();
    loop {
        raw.clear();
        match input.by_ref().take(64 * 1024).read_until(b'\n', &mut raw) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut text = String::from_utf8_lossy(&raw).trim_end().to_string();
        for secret in secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "[REDACTED]");
            }
        }
        if text.len() > STDERR_LINE {
            let mut cut = STDERR_LINE;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        if !text.is_empty() {
            tracing::info!(service, line = %text, "mcp server stderr");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_within_their_bound() {
        let text = format!("{{\"id\":1}}\n{}\n\n{{\"id\":2}}", "x".repeat(1000));
        let mut input = BufReader::with_capacity(16, text.as_bytes());
        let mut line = Vec::new();
        assert!(matches!(
            read_line(&mut input, &mut line, 100),
            Ok(Line::Whole)
        ));
        assert_eq!(line, b"{\"id\":1}");
        line.clear();
        assert!(matches!(
            read_line(&mut input, &mut line, 100),
            Ok(Line::TooLong { .. })
        ));
        line.clear();
        assert!(matches!(
            read_line(&mut input, &mut line, 100),
            Ok(Line::Whole)
        ));
        assert!(line.is_empty());
        line.clear();
        assert!(matches!(
            read_line(&mut input, &mut line, 100),
            Ok(Line::Whole)
        ));
        assert_eq!(line, b"{\"id\":2}");
        line.clear();
        assert!(matches!(
            read_line(&mut input, &mut line, 100),
            Ok(Line::End)
        ));
    }
}
