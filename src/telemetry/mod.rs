//! OpenTelemetry traces of runs and batches (docs/src/tracing.md): the
//! standard `OTEL_*` settings ([`settings`]), spans after the GenAI
//! semantic conventions built from the run's own events ([`run_span`]), a
//! batch as one trace, and the one bounded export at the end ([`export`]).
//!
//! Off means off: with no endpoint set nothing here is constructed — no
//! provider, no exporter, no thread, no connection. *Never* exports a
//! prompt, a reply, a tool's arguments or result, a file's content, a
//! header value or a known key; never changes how a run ends.

pub mod export;
pub mod run_span;
pub mod settings;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use crate::secret::ApiKey;
use crate::secret::{holds_a_key, redact_keys};

pub use run_span::RunTrace;
pub use settings::TraceSettings;

use export::Collect;
use settings::Exporting;

/// The instrumentation scope every span is recorded under.
const SCOPE: &str = "leash";

/// A tracer that exports: built once per process (a run, or a batch for
/// all its items), only when the settings say so.
pub struct Telemetry {
    /// Kept alive while spans are made; holds [`Collect`].
    _provider: SdkTracerProvider,
    tracer: SdkTracer,
    collect: Collect,
    exporting: Exporting,
    resource: Resource,
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
    /// The tracer the settings ask for, or `None` (with the line that says
    /// why, when traces were asked for but cannot be exported). Nothing is
    /// built when they are off.
    pub fn start(
        settings: &TraceSettings,
        keys: Arc<[ApiKey]>,
    ) -> (Option<Arc<Telemetry>>, Vec<String>) {
        let exporting = match settings {
            TraceSettings::Off | TraceSettings::Disabled => return (None, Vec::new()),
            TraceSettings::Unusable(why) => return (None, vec![why.clone()]),
            TraceSettings::On(exporting) => exporting,
        };
        let mut notices = Vec::new();
        let mut exporting = exporting.clone();
        // A variable that holds a key is not sent anywhere.
        let before = exporting.headers.len() + exporting.resource.len();
        exporting
            .headers
            .retain(|(_, value)| !holds_a_key(value, &keys));
        exporting
            .resource
            .retain(|(_, value)| !holds_a_key(value, &keys));
        if exporting.headers.len() + exporting.resource.len() < before {
            notices.push(
                "an OTEL_EXPORTER_OTLP_HEADERS or OTEL_RESOURCE_ATTRIBUTES value holds an API \
                 key: it is left out of the traces"
                    .to_owned(),
            );
        }
        if holds_a_key(&exporting.service_name, &keys) {
            exporting.service_name = settings::DEFAULT_SERVICE_NAME.to_owned();
        }
        let resource = Resource::builder_empty()
            .with_attributes(
                exporting
                    .resource
                    .iter()
                    .map(|(name, value)| KeyValue::new(name.clone(), value.clone())),
            )
            .with_service_name(exporting.service_name.clone())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let collect = Collect::default();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(collect.clone())
            .with_resource(resource.clone())
            .build();
        let tracer = provider.tracer(SCOPE);
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
            collect,
            exporting,
            resource,
            keys,
            caller,
        };
        (Some(Arc::new(telemetry)), notices)
    }

    /// A span named `name` under `parent`, begun now.
    fn begin(
        &self,
        name: String,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
        parent: &Context,
    ) -> opentelemetry_sdk::trace::Span {
        self.tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent)
    }

    /// An internal span under `parent` that began at `started`.
    fn begin_at(
        &self,
        name: String,
        attributes: Vec<KeyValue>,
        parent: &Context,
        started: std::time::SystemTime,
    ) -> opentelemetry_sdk::trace::Span {
        self.tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .with_start_time(started)
            .start_with_context(&self.tracer, parent)
    }

    /// A text for an attribute: every known key made `***`.
    fn clean(&self, text: &str) -> String {
        redact_keys(text, &self.keys)
    }

    /// Sends every finished span, within [`export::FLUSH_BUDGET`] and
    /// `left` (the run's timer); the line that says why it failed.
    async fn flush(&self, left: Option<Duration>) -> Option<String> {
        let budget = left.map_or(export::FLUSH_BUDGET, |left| left.min(export::FLUSH_BUDGET));
        export::export(self.collect.take(), &self.exporting, &self.resource, budget)
            .await
            .err()
    }
}

/// A batch's trace: its root span, the parent of every item's.
pub struct BatchTrace {
    telemetry: Arc<Telemetry>,
    root: Context,
}

impl BatchTrace {
    /// The batch's root span, begun now, when the settings trace; the
    /// lines to say before the batch runs.
    pub fn start(
        settings: &TraceSettings,
        keys: Arc<[ApiKey]>,
        attributes: Vec<(&'static str, String)>,
    ) -> (Option<BatchTrace>, Vec<String>) {
        let (telemetry, notices) = Telemetry::start(settings, keys);
        let trace = telemetry.map(|telemetry| {
            let attributes = attributes
                .into_iter()
                .map(|(name, value)| KeyValue::new(name, value))
                .chain([KeyValue::new("gen_ai.operation.name", "invoke_workflow")])
                .collect();
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
    /// 0, with `why`) and exports the trace; the line that says why the
    /// export failed.
    pub async fn finish(self, code: u8, status: &str, why: Option<&str>) -> Option<String> {
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
