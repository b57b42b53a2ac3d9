//! The batching exporter: finished spans wait in a bounded queue, and one background
//! task posts them to the collector every `schedule_delay`, or sooner when a batch is
//! full. A call only pushes onto the queue (a lock held for a `Vec::push`); a full queue
//! drops the span and counts it, so a slow collector never slows a call. At stop, what
//! is queued is posted once more ([`Exporter::flush`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;

use super::config::{ExportConfig, Protocol};
use super::encode;
use crate::telemetry::metrics::SpanCounts;
use crate::telemetry::span::Span;

/// Spans waiting for the collector, and how they go there.
#[derive(Debug)]
pub struct Exporter {
    config: ExportConfig,
    queue: Mutex<Vec<Span>>,
    wake: tokio::sync::Notify,
    spawned: AtomicBool,
    /// Spans dropped because the queue was full.
    pub dropped: AtomicU64,
    /// Spans the collector accepted.
    pub exported: AtomicU64,
    /// Spans lost to a failed export.
    pub failed: AtomicU64,
}

type HttpsClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
>;

impl Exporter {
    /// An exporter for `config`; nothing is sent until [`Exporter::spawn`].
    pub fn new(config: ExportConfig) -> Self {
        Self {
            config,
            queue: Mutex::new(Vec::new()),
            wake: tokio::sync::Notify::new(),
            spawned: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            exported: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// Queues a finished span (dropped and counted when the queue is full).
    pub fn push(&self, span: Span) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.len() >= self.config.max_queue {
            drop(queue);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        queue.push(span);
        let full = queue.len() >= self.config.max_batch;
        drop(queue);
        if full {
            self.wake.notify_one();
        }
    }

    /// What became of the finished spans so far (for `/metrics`).
    pub fn counts(&self) -> SpanCounts {
        SpanCounts {
            exported: self.exported.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }

    /// Starts the background task on the current runtime (once; later calls do nothing).
    pub fn spawn(self: &Arc<Self>) {
        if self.spawned.swap(true, Ordering::AcqRel) {
            return;
        }
        let exporter = self.clone();
        tokio::spawn(async move {
            let client = match exporter.client() {
                Ok(client) => client,
                Err(e) => {
                    tracing::error!(error = %e, "traces cannot be exported");
                    return;
                }
            };
            loop {
                tokio::select! {
                    () = tokio::time::sleep(exporter.config.schedule_delay) => {}
                    () = exporter.wake.notified() => {}
                }
                exporter.send_queued(&client).await;
            }
        });
    }

    /// Posts everything queued now (at stop: the spans of the last calls).
    pub async fn flush(&self) {
        match self.client() {
            Ok(client) => self.send_queued(&client).await,
            Err(e) => tracing::error!(error = %e, "traces cannot be exported"),
        }
    }

    /// What is queued, taken (tests read what a call recorded).
    #[cfg(test)]
    pub fn take_for_test(&self) -> Vec<Span> {
        std::mem::take(&mut *self.queue.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn client(&self) -> Result<HttpsClient, String> {
        crate::net::unpooled_client(self.config.timeout)
    }

    async fn send_queued(&self, client: &HttpsClient) {
        loop {
            let batch: Vec<Span> = {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                let n = queue.len().min(self.config.max_batch);
                queue.drain(..n).collect()
            };
            if batch.is_empty() {
                return;
            }
            let count = batch.len() as u64;
            if self.post(client, &batch).await {
                self.exported.fetch_add(count, Ordering::Relaxed);
            } else {
                self.failed.fetch_add(count, Ordering::Relaxed);
            }
        }
    }

    /// One batch to the collector, retried twice (after 1 s, then 2 s) on a refused
    /// connection, 429, 502, 503 or 504, as OTLP/HTTP asks. Whether it was accepted.
    async fn post(&self, client: &HttpsClient, batch: &[Span]) -> bool {
        let (body, content_type) = match self.config.protocol {
            Protocol::Protobuf => (
                encode::protobuf(&self.config.resource, batch),
                "application/x-protobuf",
            ),
            Protocol::Json => (
                encode::json(&self.config.resource, batch),
                "application/json",
            ),
        };
        let body = Bytes::from(body);
        for attempt in 0..3u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_secs(u64::from(attempt))).await;
            }
            let mut request = hyper::Request::post(self.config.endpoint.clone())
                .header(hyper::header::CONTENT_TYPE, content_type)
                .header(hyper::header::USER_AGENT, crate::telemetry::USER_AGENT);
            for (name, value) in &self.config.headers {
                request = request.header(name.as_str(), value.as_str());
            }
            let Ok(request) = request.body(Full::new(body.clone())) else {
                tracing::error!("an OTLP export request could not be built");
                return false;
            };
            let sent = tokio::time::timeout(self.config.timeout, client.request(request)).await;
            let status = match sent {
                Ok(Ok(response)) => response.status().as_u16(),
                Ok(Err(_)) => 0,
                Err(_) => {
                    tracing::warn!(
                        spans = batch.len(),
                        "the OTLP collector did not answer within the export timeout; spans dropped"
                    );
                    return false;
                }
            };
            if (200..300).contains(&status) {
                return true;
            }
            if !matches!(status, 0 | 429 | 502 | 503 | 504) {
                tracing::warn!(
                    status,
                    spans = batch.len(),
                    "the OTLP collector refused an export; spans dropped"
                );
                return false;
            }
        }
        tracing::warn!(
            spans = batch.len(),
            "the OTLP collector could not be reached; spans dropped"
        );
        false
    }
}
