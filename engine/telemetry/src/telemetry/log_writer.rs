//! Log lines written off the request path. A call formats its line where it runs (the
//! fields are its own) and appends it to a shared buffer: no system call and no wake-up
//! of another thread per line. A writer thread of its own takes the whole buffer every
//! [`INTERVAL`] (sooner once it holds [`EAGER_BYTES`]) and writes it to stderr in one
//! `write`, so a busy broker makes one system call for hundreds of lines and no call
//! waits on stderr (a slow terminal, a full pipe to a collector). Nothing is dropped:
//! a buffer past [`MAX_BYTES`] (a writer far behind) makes the call wait for the writer,
//! as it would have waited on its own write. The [`Flush`] guard kept by `main` writes
//! what is buffered before the process exits. A line reaches stderr at most [`INTERVAL`]
//! after it was logged.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How often the writer thread takes what is buffered.
pub const INTERVAL: Duration = Duration::from_millis(50);
/// A buffer this full is taken at once.
pub const EAGER_BYTES: usize = 256 * 1024;
/// A buffer this full makes callers wait for the writer.
pub const MAX_BYTES: usize = 8 * 1024 * 1024;

#[derive(Default)]
struct State {
    buf: Vec<u8>,
    /// Flushes asked for and not yet done.
    flushes: u64,
    /// Flushes done.
    flushed: u64,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// The writer waits on it; rung when the buffer is eager or a flush is asked for.
    wake: Condvar,
    /// Callers wait on it for room, or for a flush.
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Makes a writer per log event (`tracing_subscriber`'s `MakeWriter`); cheap to clone.
#[derive(Clone)]
pub struct Lines {
    shared: Arc<Shared>,
}

/// One event's line, appended to the buffer when the event is done.
pub struct Line {
    buf: Vec<u8>,
    shared: Arc<Shared>,
}

impl Write for Line {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let mut state = self.shared.lock();
        while state.buf.len() >= MAX_BYTES {
            self.shared.wake.notify_one();
            state = self
                .shared
                .done
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        state.buf.extend_from_slice(&self.buf);
        if state.buf.len() >= EAGER_BYTES {
            self.shared.wake.notify_one();
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Lines {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            buf: Vec::with_capacity(256),
            shared: Arc::clone(&self.shared),
        }
    }
}

/// Writes what is buffered when dropped (waiting at most a second).
pub struct Flush {
    shared: Arc<Shared>,
}

impl Drop for Flush {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.flushes += 1;
        let asked = state.flushes;
        self.shared.wake.notify_one();
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while state.flushed < asked {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            state = match self.shared.done.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

/// A writer thread writing lines to `out`: the writer for the subscriber and the guard
/// that flushes at exit; an error when the thread cannot be started.
pub fn spawn<W: Write + Send + 'static>(out: W) -> std::io::Result<(Lines, Flush)> {
    let shared = Arc::new(Shared::default());
    let writer = Arc::clone(&shared);
    std::thread::Builder::new()
        .name("tool-broker-log".into())
        .spawn(move || write_lines(&writer, out))?;
    Ok((
        Lines {
            shared: Arc::clone(&shared),
        },
        Flush { shared },
    ))
}

/// The writer thread: takes the buffer every interval (or when rung) and writes it.
fn write_lines<W: Write>(shared: &Shared, mut out: W) {
    let mut spare = Vec::new();
    loop {
        let mut state = shared.lock();
        if state.buf.len() < EAGER_BYTES && state.flushed == state.flushes {
            state = match shared.wake.wait_timeout(state, INTERVAL) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        std::mem::swap(&mut state.buf, &mut spare);
        let flushes = state.flushes;
        drop(state);
        shared.done.notify_all();
        if !spare.is_empty() {
            let _ = out.write_all(&spare);
            let _ = out.flush();
            spare.clear();
            // A buffer a burst made large is not kept.
            if spare.capacity() > 4 * EAGER_BYTES {
                spare = Vec::new();
            }
        }
        let mut state = shared.lock();
        state.flushed = flushes;
        drop(state);
        shared.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>, Arc<Mutex<usize>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            *self.1.lock().unwrap() += 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_arrives_whole_in_order_and_the_guard_flushes() {
        let sink = Sink::default();
        let (lines, flush) = spawn(sink.clone()).unwrap();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(lines)
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            for n in 0..1000 {
                tracing::info!(n, "line");
            }
        });
        drop(flush);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let numbers: Vec<usize> = text
            .lines()
            .map(|l| l.rsplit("n=").next().unwrap().trim().parse().unwrap())
            .collect();
        assert_eq!(numbers, (0..1000).collect::<Vec<_>>());
        assert!(
            *sink.1.lock().unwrap() < 100,
            "lines are written in batches, not one write each"
        );
    }

    #[test]
    fn a_writer_far_behind_holds_the_callers_and_loses_nothing() {
        /// A sink that takes its time.
        #[derive(Clone, Default)]
        struct Slow(Arc<Mutex<usize>>);
        impl Write for Slow {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                std::thread::sleep(Duration::from_millis(5));
                *self.0.lock().unwrap() += buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Slow::default();
        let (lines, flush) = spawn(sink.clone()).unwrap();
        let line = vec![b'x'; 64 * 1024];
        use tracing_subscriber::fmt::MakeWriter as _;
        for _ in 0..(3 * MAX_BYTES / line.len()) {
            let mut w = lines.make_writer();
            w.write_all(&line).unwrap();
        }
        drop(flush);
        assert_eq!(*sink.0.lock().unwrap(), 3 * MAX_BYTES);
    }
}
