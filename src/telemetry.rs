//! OpenTelemetry traces of runs and batches (docs/src/tracing.md): the
//! standard `OTEL_*` settings ([`settings`]), spans after the GenAI
//! semantic conventions built from the run's own events ([`run_span`],
//! [`semconv`], [`observed`]), a batch as one trace, the run's trace context for the
//! code below ([`ambient`]), the export by the OTLP exporter rules
//! ([`export`], [`http`]), and the GenAI client metrics beside them
//! ([`metrics`]).
//!
//! Off means off: with no endpoint set nothing here is constructed — no
//! provider, no exporter, no thread, no connection. *Never* exports a
//! prompt, a reply, a tool's arguments or result, a file's content, a
//! header value or a known key; never changes how a run ends.

pub mod ambient;
pub mod content;
pub mod export;
pub mod http;
mod measured;
pub mod metrics;
pub mod observed;
pub mod run_span;
pub mod sampling;
pub mod semconv;
pub mod settings;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceId, Tracer, TracerProvider as _,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::resource::TelemetryResourceDetector;
use opentelemetry_sdk::trace::{
    IdGenerator, RandomIdGenerator, Sampler, SdkTracer, SdkTracerProvider,
};

use leash_protocol::secret::ApiKey;
use leash_protocol::secret::{holds_a_key, redact_keys};

pub use run_span::RunTrace;
pub use settings::{MetricSettings, TraceSettings};

use export::{Exporter, Queue, Worker};
use metrics::Metrics;
pub use semconv::SCHEMA_URL;
use semconv::SCOPE;
use settings::{Exporting, ParentRoot, SamplerChoice};

/// The export's time when the run's timer has (nearly) run out: a run cut
/// by its timer still says so to the collector, at most this late.
pub const LAST_WORD: Duration = Duration::from_millis(250);

/// Span ids: random, except the one reserved for the next span begun
/// under [`Telemetry::ids`]'s lock (a child process's span, whose id its
/// `TRACEPARENT` named before the span was made).
#[derive(Debug, Default)]
struct Ids {
    /// Held while a span is begun, so a reserved id goes to its own span.
    building: Mutex<()>,
    next: Mutex<Option<SpanId>>,
    random: RandomIdGenerator,
}

/// The generator the SDK holds: shares [`Ids`].
#[derive(Debug, Clone, Default)]
struct SharedIds(Arc<Ids>);

impl IdGenerator for SharedIds {
    fn new_trace_id(&self) -> TraceId {
        self.0.random.new_trace_id()
    }

    fn new_span_id(&self) -> SpanId {
        let reserved = self
            .0
            .next
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        reserved.unwrap_or_else(|| self.0.random.new_span_id())
    }
}

/// The SDK's sampler for the settings' choice.
fn sdk_sampler(choice: SamplerChoice) -> Sampler {
    let root = |root: ParentRoot| match root {
        ParentRoot::AlwaysOn => Sampler::AlwaysOn,
        ParentRoot::AlwaysOff => Sampler::AlwaysOff,
        ParentRoot::Ratio(ratio) => Sampler::TraceIdRatioBased(ratio),
    };
    match choice {
        SamplerChoice::AlwaysOn => Sampler::AlwaysOn,
        SamplerChoice::AlwaysOff => Sampler::AlwaysOff,
        SamplerChoice::Ratio(ratio) => Sampler::TraceIdRatioBased(ratio),
        SamplerChoice::ParentBased(inner) => Sampler::ParentBased(Box::new(root(inner))),
    }
}

/// The W3C `traceparent` of a span.
pub fn traceparent_of(context: &SpanContext) -> Option<String> {
    context.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        )
    })
}

/// A tracer that exports: built once per process (a run, or a batch for
/// all its items), only when the settings say so.
pub struct Telemetry {
    /// Kept alive while spans are made; holds [`Queue`].
    _provider: SdkTracerProvider,
    tracer: SdkTracer,
    queue: Queue,
    /// The worker that exports as spans end; taken by the end's flush.
    worker: Mutex<Option<Worker>>,
    /// The endpoint as it may be shown.
    shown: String,
    /// Whether spans are exported (else only metrics are, and the tracer
    /// records nothing).
    pub(crate) traces: bool,
    /// The GenAI client metrics, when they are exported.
    metrics: Option<Metrics>,
    ids: SharedIds,
    exporting: Exporting,
    keys: Arc<[ApiKey]>,
    /// `TRACEPARENT`/`TRACESTATE`: the caller's span, or an empty context.
    caller: Context,
}

/// How a run is traced, as `run::job::Shared` hands it over.
#[derive(Clone, Default)]
pub enum Tracing {
    /// A run of its own: its plan's settings decide.
    #[default]
    FromPlan,
    /// A batch's item whose batch is not traced.
    Off,
    /// A batch's item: its span is a child of the batch's, and the batch
    /// exports once at its end.
    Under(Parent),
}

impl Tracing {
    /// The same tracing, for the batch's item `id`.
    pub fn for_item(&self, id: &str) -> Tracing {
        match self {
            Tracing::Under(parent) => Tracing::Under(parent.for_item(id)),
            other => other.clone(),
        }
    }
}

/// Where a batch item's span goes.
#[derive(Clone)]
pub struct Parent {
    telemetry: Arc<Telemetry>,
    context: Context,
    item: Option<String>,
}

impl Parent {
    /// The same parent, for the item `id`.
    pub fn for_item(&self, id: &str) -> Parent {
        Parent {
            item: Some(id.to_owned()),
            ..self.clone()
        }
    }
}

impl Telemetry {
    /// The tracer and meters the settings ask for, or `None` (with the
    /// lines that say why, when traces or metrics were asked for but
    /// cannot be exported). Nothing is built when both are off.
    pub fn start(
        settings: &TraceSettings,
        metric_settings: &MetricSettings,
        keys: Arc<[ApiKey]>,
    ) -> (Option<Arc<Telemetry>>, Vec<String>) {
        let mut notices = Vec::new();
        let mut on = |settings: &TraceSettings| match settings {
            TraceSettings::On(exporting) => Some(cleaned(exporting, &keys, &mut notices)),
            TraceSettings::Unusable(why) => {
                notices.push(why.clone());
                None
            }
            _ => None,
        };
        let (traced, metered) = (on(settings), on(metric_settings));
        let Some(first) = traced.as_ref().or(metered.as_ref()) else {
            return (None, dedup(notices));
        };
        let resource = Resource::builder_empty()
            .with_detector(Box::new(TelemetryResourceDetector))
            .with_attributes(
                first
                    .resource
                    .iter()
                    .map(|(name, value)| KeyValue::new(name.clone(), value.clone())),
            )
            .with_service_name(first.service_name.clone())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let metrics = metered.as_ref().and_then(|exporting| {
            Metrics::start(exporting, resource.clone())
                .map_err(|why| notices.push(why))
                .ok()
        });
        let queue = Queue::new(traced.as_ref().map(|t| t.queue).unwrap_or_default());
        let worker = traced.as_ref().and_then(|exporting| {
            Exporter::new(exporting, &resource)
                .and_then(|exporter| Worker::start(queue.clone(), exporter))
                .map_err(|why| notices.push(why))
                .ok()
        });
        let traces = worker.is_some();
        let exporting = match (traced, metered) {
            (Some(traced), _) if traces => traced,
            (_, Some(metered)) if metrics.is_some() => Exporting {
                capture_content: false,
                parent: None,
                ..metered
            },
            _ => return (None, dedup(notices)),
        };
        let ids = SharedIds::default();
        let mut provider = SdkTracerProvider::builder()
            .with_resource(resource)
            .with_id_generator(ids.clone());
        provider = match traces {
            true => provider
                .with_span_processor(queue.clone())
                .with_sampler(sdk_sampler(exporting.sampler)),
            false => provider.with_sampler(Sampler::AlwaysOff),
        };
        let provider = provider.build();
        let tracer = provider.tracer_with_scope(
            InstrumentationScope::builder(SCOPE)
                .with_version(env!("CARGO_PKG_VERSION"))
                .with_schema_url(SCHEMA_URL)
                .build(),
        );

        let caller = match &exporting.parent {
            Some((parent, state)) => {
                let carrier = HashMap::from([
                    ("traceparent".to_owned(), parent.clone()),
                    ("tracestate".to_owned(), state.clone()),
                ]);
                TraceContextPropagator::new().extract(&carrier)
            }
            None => Context::new(),
        };
        let telemetry = Telemetry {
            _provider: provider,
            tracer,
            queue,
            worker: Mutex::new(worker),
            shown: http::shown_endpoint(&exporting.endpoint),
            traces,
            metrics,
            ids,
            exporting,
            keys,
            caller,
        };
        (Some(Arc::new(telemetry)), dedup(notices))
    }

    /// The metrics, when they are exported.
    pub(crate) fn metrics(&self) -> Option<&Metrics> {
        self.metrics.as_ref()
    }

    /// A span named `name` under `parent`, begun now.
    fn begin(
        &self,
        name: String,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
        parent: &Context,
    ) -> opentelemetry_sdk::trace::Span {
        let _building = self
            .ids
            .0
            .building
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent)
    }

    /// A span under `parent` that began at `started`, under the span id
    /// `reserved` named (when it did).
    fn begin_reserved(
        &self,
        name: String,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
        parent: &Context,
        started: std::time::SystemTime,
        reserved: Option<u64>,
    ) -> opentelemetry_sdk::trace::Span {
        let builder = self
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes)
            .with_start_time(started);
        let _building = self
            .ids
            .0
            .building
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // The generator takes the reserved id while `building` is held: no
        // other span can be begun in between.
        *self
            .ids
            .0
            .next
            .lock()
            .unwrap_or_else(PoisonError::into_inner) =
            reserved.map(|id| SpanId::from_bytes(id.to_be_bytes()));
        let span = builder.start_with_context(&self.tracer, parent);
        *self
            .ids
            .0
            .next
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        span
    }

    /// A new span id under `parent`'s trace, for a child process: its
    /// `TRACEPARENT` and the id its span will have.
    fn reserve(&self, parent: &Context) -> Option<leash_protocol::trace_context::Reserved> {
        if !self.traces {
            return None;
        }
        let parent = parent.span().span_context().clone();
        let id = self.ids.0.random.new_span_id();
        let context = SpanContext::new(
            parent.trace_id(),
            id,
            parent.trace_flags(),
            false,
            parent.trace_state().clone(),
        );
        Some(leash_protocol::trace_context::Reserved {
            traceparent: traceparent_of(&context)?,
            span_id: u64::from_be_bytes(id.to_bytes()),
        })
    }

    /// A text for an attribute: every known key made `***`.
    fn clean(&self, text: &str) -> String {
        redact_keys(text, &self.keys)
    }

    /// Sends every span still waiting and the metrics, side by side,
    /// within the export timeout and `left` (the run's timer, but at least
    /// [`LAST_WORD`]); the lines that say why an export failed.
    async fn flush(&self, left: Option<Duration>) -> Vec<String> {
        // Each signal within its own timeout, both within the run's timer.
        let within =
            |timeout: Duration| left.map_or(timeout, |left| left.max(LAST_WORD).min(timeout));
        let budget = within(self.exporting.timeout);
        let worker = self
            .worker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let traces = async {
            match worker {
                Some(worker) => worker.finish(&self.queue, budget, &self.shown).await,
                None => None,
            }
        };
        let metrics = async {
            match &self.metrics {
                Some(metrics) => metrics.export(within(metrics.timeout())).await,
                None => None,
            }
        };
        let (traces, metrics) = tokio::join!(traces, metrics);
        traces.into_iter().chain(metrics).collect()
    }
}

/// A batch's trace: its root span, the parent of every item's.
pub struct BatchTrace {
    telemetry: Arc<Telemetry>,
    root: Context,
}

impl BatchTrace {
    /// The batch's root span, begun now, when the settings trace; the
    /// lines to say before the batch runs. `shard` is `K/N`.
    pub fn start(
        (settings, metric_settings): (&TraceSettings, &MetricSettings),
        keys: Arc<[ApiKey]>,
        (items, parallel): (u64, u64),
        shard: Option<String>,
    ) -> (Option<BatchTrace>, Vec<String>) {
        let (telemetry, notices) = Telemetry::start(settings, metric_settings, keys);
        let trace = telemetry.map(|telemetry| {
            let mut attributes = vec![
                KeyValue::new("gen_ai.operation.name", "invoke_workflow"),
                KeyValue::new("gen_ai.workflow.name", "leash batch"),
                KeyValue::new("leash.batch.items", semconv::clamp(items)),
                KeyValue::new("leash.batch.parallel", semconv::clamp(parallel)),
            ];
            if let Some(shard) = shard {
                attributes.push(KeyValue::new("leash.batch.shard", shard));
            }
            let span = telemetry.begin(
                "invoke_workflow leash batch".to_owned(),
                SpanKind::Internal,
                attributes,
                &telemetry.caller,
            );
            let root = telemetry.caller.with_span(span);
            BatchTrace { telemetry, root }
        });
        (trace, notices)
    }

    /// What every item's run is handed.
    pub fn parent(&self) -> Parent {
        Parent {
            telemetry: Arc::clone(&self.telemetry),
            context: self.root.clone(),
            item: None,
        }
    }

    /// Ends the batch's span with its exit code (status ERROR on any but
    /// 0, with `why`) and exports the trace and the metrics; the lines that
    /// say why an export failed.
    pub async fn finish(self, code: u8, status: &str, why: Option<&str>) -> Vec<String> {
        let span = self.root.span();
        span.set_attribute(KeyValue::new("leash.exit_code", i64::from(code)));
        span.set_attribute(KeyValue::new("leash.status", status.to_owned()));
        if code != 0 {
            span.set_attribute(KeyValue::new("error.type", status.to_owned()));
            span.set_status(Status::error(self.telemetry.clean(why.unwrap_or(status))));
        }
        span.end();
        self.telemetry.flush(None).await
    }
}

/// `exporting` without what holds a key: a header or resource attribute
/// that does is left out (said once), a service name that does is the
/// default.
fn cleaned(exporting: &Exporting, keys: &[ApiKey], notices: &mut Vec<String>) -> Exporting {
    let mut exporting = exporting.clone();
    notices.extend(exporting.warnings.iter().cloned());
    let before = exporting.headers.len() + exporting.resource.len();
    exporting
        .headers
        .retain(|(_, value)| !holds_a_key(value, keys));
    exporting
        .resource
        .retain(|(_, value)| !holds_a_key(value, keys));
    if exporting.headers.len() + exporting.resource.len() < before {
        notices.push(
            "an OTEL_EXPORTER_OTLP_HEADERS or OTEL_RESOURCE_ATTRIBUTES value holds an API \
             key: it is left out of the traces and metrics"
                .to_owned(),
        );
    }
    if holds_a_key(&exporting.service_name, keys) {
        exporting.service_name = settings::DEFAULT_SERVICE_NAME.to_owned();
    }
    exporting
}

/// The lines without repeats (the two signals share most variables).
fn dedup(mut lines: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    lines.retain(|line| seen.insert(line.clone()));
    lines
}
