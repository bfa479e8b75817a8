//! The export of a run's (or a batch's) spans by the OTLP exporter rules:
//! each span, once it ends, waits in a bounded queue ([`Queue`], the
//! specification's batch span processor: `OTEL_BSP_*`), and a worker
//! thread ([`Worker`]) sends it in batches through one exporter and one
//! reqwest client ([`super::http::LeashHttp`]), gzip when asked, each request within
//! `OTEL_EXPORTER_OTLP_TIMEOUT`; the rest goes at the end, within that
//! timeout and the run's timer. No retry. *Never* prints a header value,
//! the API key or what a collector answered.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_otlp::{Compression, Protocol, RetryPolicy, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter as _, SpanProcessor};
use tokio::sync::Notify;

use super::http::{client, shown_endpoint};
use super::settings::{Exporting, QueueSettings, Signal};

/// The SDK's span processor: each finished span joins a bounded queue
/// (past `OTEL_BSP_MAX_QUEUE_SIZE` it is dropped and counted), and a full
/// batch wakes the exporting task.
#[derive(Debug, Clone)]
pub struct Queue {
    inner: Arc<QueueInner>,
}

#[derive(Debug)]
struct QueueInner {
    spans: Mutex<VecDeque<SpanData>>,
    settings: QueueSettings,
    dropped: AtomicU64,
    ready: Notify,
    closing: AtomicBool,
}

impl Queue {
    /// An empty queue with these limits.
    pub fn new(settings: QueueSettings) -> Queue {
        Queue {
            inner: Arc::new(QueueInner {
                spans: Mutex::new(VecDeque::new()),
                settings,
                dropped: AtomicU64::new(0),
                ready: Notify::new(),
                closing: AtomicBool::new(false),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<SpanData>> {
        self.inner
            .spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Up to one batch of the spans waiting, taken.
    fn take_batch(&self) -> Vec<SpanData> {
        let mut spans = self.lock();
        let count = spans.len().min(self.inner.settings.batch);
        spans.drain(..count).collect()
    }

    /// How many spans wait.
    fn waiting(&self) -> usize {
        self.lock().len()
    }

    /// The spans dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        let full = {
            let mut spans = self.lock();
            if spans.len() >= self.inner.settings.max_queue {
                self.inner.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            spans.push_back(span);
            spans.len() >= self.inner.settings.batch
        };
        if full {
            self.inner.ready.notify_one();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// The exporter, built once: one OTLP exporter over one reqwest client.
pub struct Exporter {
    exporter: opentelemetry_otlp::SpanExporter,
    failure: Arc<Mutex<Option<String>>>,
    /// The first export that failed, as the line to say at the end.
    first_failure: Mutex<Option<String>>,
    shown: String,
    timeout: Duration,
}

impl Exporter {
    /// The exporter `exporting` asks for, or the line that says why there
    /// is none.
    pub fn new(exporting: &Exporting, resource: &Resource) -> Result<Exporter, String> {
        let shown = shown_endpoint(&exporting.endpoint);
        let (http, failure) = client(exporting, Signal::Traces)?;
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(http)
            .with_endpoint(exporting.endpoint.clone())
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(exporting.timeout)
            .with_retry_policy(RetryPolicy::disabled());
        if exporting.gzip {
            builder = builder.with_compression(Compression::Gzip);
        }
        let mut exporter = builder.build().map_err(|_| {
            // Its message may quote a header: only its kind is said.
            format!(
                "traces not exported to {shown}: the exporter refused its settings \
                 (check OTEL_EXPORTER_OTLP_* in the environment)"
            )
        })?;
        exporter.set_resource(resource);
        Ok(Exporter {
            exporter,
            failure,
            first_failure: Mutex::new(None),
            shown,
            timeout: exporting.timeout,
        })
    }

    /// Sends one batch within `budget` (`limit` is the bound said when it
    /// does not answer in time); a failure is remembered (the first one is
    /// said at the end).
    async fn send(&self, spans: Vec<SpanData>, budget: Duration, limit: Duration) -> bool {
        if spans.is_empty() {
            return true;
        }
        let sent = tokio::time::timeout(budget, self.exporter.export(spans)).await;
        let why = match sent {
            Ok(Ok(())) => return true,
            Ok(Err(_)) => self
                .failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .unwrap_or_else(|| "the export failed".to_owned()),
            Err(_) => format!("it did not answer within {} ms", limit.as_millis()),
        };
        self.first_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(|| format!("traces not exported to {}: {why}", self.shown));
        false
    }

    /// The line to say when an export failed.
    fn failed(&self) -> Option<String> {
        self.first_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The exporting worker: a thread of its own with a small runtime (the
/// specification's batch span processor), so spans leave as they end
/// however busy the run's own thread is. Started only when traces are on.
pub struct Worker {
    close: tokio::sync::oneshot::Sender<Duration>,
    done: tokio::sync::oneshot::Receiver<Option<String>>,
}

impl Worker {
    /// Starts the worker sending what `queue` holds through `exporter`;
    /// the line that says why it could not start.
    pub fn start(queue: Queue, exporter: Exporter) -> Result<Worker, String> {
        let (close, closed) = tokio::sync::oneshot::channel();
        let (finished, done) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|_| {
                format!(
                    "traces not exported to {}: cannot start their exporter",
                    exporter.shown
                )
            })?;
        std::thread::Builder::new()
            .name("leash-traces".to_owned())
            .spawn(move || runtime.block_on(work(queue, exporter, closed, finished)))
            .map_err(|_| "traces: cannot start their exporter's thread".to_owned())?;
        Ok(Worker { close, done })
    }

    /// Sends every span still waiting within `budget` (the timeout
    /// variable, capped by the run's timer) and stops the worker; the line
    /// that says why an export failed, or that spans were dropped.
    pub async fn finish(self, queue: &Queue, budget: Duration, shown: &str) -> Option<String> {
        queue.inner.closing.store(true, Ordering::Release);
        queue.inner.ready.notify_one();
        if self.close.send(budget).is_err() {
            return Some(format!(
                "traces not exported to {shown}: their exporter stopped"
            ));
        }
        // A batch under way when the end came may hold the worker past
        // the budget: then it is given up (the process does not wait).
        match tokio::time::timeout(budget + Duration::from_millis(20), self.done).await {
            Ok(Ok(line)) => line,
            _ => Some(format!(
                "traces not exported to {shown}: it did not answer within {} ms",
                budget.as_millis()
            )),
        }
    }
}

/// The worker: sends each batch as it fills (or once the schedule delay
/// passes) until told to close, then what is left within the budget.
async fn work(
    queue: Queue,
    exporter: Exporter,
    mut closed: tokio::sync::oneshot::Receiver<Duration>,
    finished: tokio::sync::oneshot::Sender<Option<String>>,
) {
    let delay = queue.inner.settings.delay;
    loop {
        tokio::select! {
            biased;
            budget = &mut closed => {
                let line = drain(&queue, &exporter, budget.unwrap_or_default()).await;
                let _ = finished.send(line);
                return;
            }
            _ = tokio::time::timeout(delay, queue.inner.ready.notified()) => {}
        }
        if queue.inner.closing.load(Ordering::Acquire) {
            continue;
        }
        while queue.waiting() > 0 {
            let batch = queue.take_batch();
            exporter
                .send(batch, exporter.timeout, exporter.timeout)
                .await;
            if queue.waiting() < queue.inner.settings.batch {
                break;
            }
        }
    }
}

/// Sends every span still waiting, all within `budget`.
async fn drain(queue: &Queue, exporter: &Exporter, budget: Duration) -> Option<String> {
    let deadline = tokio::time::Instant::now() + budget;
    loop {
        let batch = queue.take_batch();
        if batch.is_empty() {
            break;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() || !exporter.send(batch, left, budget).await {
            if exporter.failed().is_none() {
                return Some(format!(
                    "traces not exported to {}: it did not answer within {} ms",
                    exporter.shown,
                    budget.as_millis()
                ));
            }
            break;
        }
    }
    if let Some(failed) = exporter.failed() {
        return Some(failed);
    }
    match queue.dropped() {
        0 => None,
        dropped => Some(format!(
            "traces: {dropped} spans were dropped: more than OTEL_BSP_MAX_QUEUE_SIZE waited for \
             the collector"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shown_endpoint_has_no_credentials_or_query() {
        assert_eq!(
            shown_endpoint("https://user:tok@otel.example:4318/v1/traces?key=abc"),
            "https://otel.example:4318/v1/traces"
        );
        assert_eq!(
            shown_endpoint("http://127.0.0.1:4318/v1/traces"),
            "http://127.0.0.1:4318/v1/traces"
        );
    }
}
