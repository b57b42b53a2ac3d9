//! What the load examples share: their workers' latencies, gathered and sorted.
#![allow(dead_code, reason = "each example uses part of it")]

/// Every worker's latencies (µs) in order, and the failed requests.
pub struct Latencies {
    sorted: Vec<u64>,
    /// Requests that failed (transport error or a non-2xx status).
    pub errors: u64,
}

impl Latencies {
    /// Waits for the workers, each answering `(latencies in µs, errors)`.
    pub async fn gather(workers: Vec<tokio::task::JoinHandle<(Vec<u64>, u64)>>) -> Self {
        let (mut sorted, mut errors) = (Vec::new(), 0);
        for w in workers {
            let (l, e) = w.await.expect("a load worker stopped");
            sorted.extend(l);
            errors += e;
        }
        sorted.sort_unstable();
        Self { sorted, errors }
    }

    /// Requests answered.
    pub fn count(&self) -> usize {
        self.sorted.len()
    }

    /// The latency below which a share `p` (0..1) of the answered requests fall; 0 when
    /// none was answered.
    pub fn percentile(&self, p: f64) -> u64 {
        let last = self.sorted.len().saturating_sub(1);
        self.sorted
            .get(((self.sorted.len() as f64 * p) as usize).min(last))
            .copied()
            .unwrap_or(0)
    }

    /// The slowest answered request.
    pub fn max(&self) -> u64 {
        self.sorted.last().copied().unwrap_or(0)
    }
}
