//! The GenAI client metrics of the semantic conventions (docs/src/tracing.md
//! "Metrics"): `gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration` and (streaming requests)
//! `gen_ai.client.operation.time_to_first_chunk`, histograms with the
//! conventions' advised buckets, one point per model request. They are aggregated in
//! memory by the SDK (a manual reader: no thread, no timer) and exported
//! once, at the end of the run or batch, within the same budget as the
//! traces' last export. Built only when the metrics' settings say so.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Compression, Protocol, RetryPolicy, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{
    InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality,
};

use super::http::{client, shown_endpoint};
use super::semconv::{SCHEMA_URL, SCOPE};
use super::settings::{Exporting, MetricSettings, Signal, TraceSettings};

/// `gen_ai.client.token.usage`'s advised bucket boundaries (gen-ai-metrics.md).
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// `gen_ai.client.operation.duration`'s and `….time_to_first_chunk`'s
/// advised bucket boundaries.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The manual reader, shared: the provider holds one handle, the export
/// collects through the other.
#[derive(Debug, Clone)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }

    fn collect(&self, metrics: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(metrics)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// One model request as the metrics record it.
pub struct ChatPoint<'a> {
    /// The attributes of both metrics (operation, provider, models, server).
    pub attributes: Vec<KeyValue>,
    /// From the request's start to its reply's end (or its failure).
    pub seconds: f64,
    /// `error.type` of a request that failed (the duration only).
    pub error: Option<&'a str>,
    /// Input tokens (cached ones included) and output tokens, when the
    /// provider reported them.
    pub tokens: Option<(u64, u64)>,
    /// Seconds to the first streamed chunk (a streaming request that got one).
    pub first_chunk: Option<f64>,
}

/// The run's (or batch's) meters and their exporter.
pub struct Metrics {
    /// Kept alive while points are recorded (the reader's pipeline).
    _provider: SdkMeterProvider,
    reader: SharedReader,
    exporter: opentelemetry_otlp::MetricExporter,
    failure: Arc<Mutex<Option<String>>>,
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
    first_chunk: Histogram<f64>,
    shown: String,
    timeout: Duration,
}

impl Metrics {
    /// The meters `exporting` (the metrics' settings) asks for, or the
    /// line that says why there are none.
    pub fn start(exporting: &Exporting, resource: Resource) -> Result<Metrics, String> {
        let shown = shown_endpoint(&exporting.endpoint);
        let (http, failure) = client(exporting, Signal::Metrics)?;
        let temporality = match exporting.delta {
            true => Temporality::Delta,
            false => Temporality::Cumulative,
        };
        let mut builder = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(http)
            .with_endpoint(exporting.endpoint.clone())
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(exporting.timeout)
            .with_retry_policy(RetryPolicy::disabled())
            .with_temporality(temporality);
        if exporting.gzip {
            builder = builder.with_compression(Compression::Gzip);
        }
        let exporter = builder.build().map_err(|_| {
            format!(
                "metrics not exported to {shown}: the exporter refused its settings \
                 (check OTEL_EXPORTER_OTLP_* in the environment)"
            )
        })?;
        let reader = SharedReader(Arc::new(
            ManualReader::builder()
                .with_temporality(temporality)
                .build(),
        ));
        let provider = SdkMeterProvider::builder()
            .with_reader(reader.clone())
            .with_resource(resource)
            .build();
        let meter = provider.meter_with_scope(
            InstrumentationScope::builder(SCOPE)
                .with_version(env!("CARGO_PKG_VERSION"))
                .with_schema_url(SCHEMA_URL)
                .build(),
        );
        let duration = meter
            .f64_histogram("gen_ai.client.operation.duration")
            .with_description("GenAI operation duration.")
            .with_unit("s")
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build();
        let tokens = meter
            .u64_histogram("gen_ai.client.token.usage")
            .with_description("Number of input and output tokens used.")
            .with_unit("{token}")
            .with_boundaries(TOKEN_BUCKETS.to_vec())
            .build();
        let first_chunk = meter
            .f64_histogram("gen_ai.client.operation.time_to_first_chunk")
            .with_description(
                "Time to receive the first chunk, measured from when the client issues the \
                 generation request to when the first chunk is received in the response stream.",
            )
            .with_unit("s")
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build();
        Ok(Metrics {
            _provider: provider,
            reader,
            exporter,
            failure,
            duration,
            tokens,
            first_chunk,
            shown,
            timeout: exporting.timeout,
        })
    }

    /// `OTEL_EXPORTER_OTLP_METRICS_TIMEOUT` (or `_TIMEOUT`): the longest
    /// the export may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Records one model request.
    pub fn chat(&self, point: ChatPoint<'_>) {
        let mut attributes = point.attributes;
        if let Some((input, output)) = point.tokens {
            for (kind, count) in [("input", input), ("output", output)] {
                let mut with_type = attributes.clone();
                with_type.push(KeyValue::new("gen_ai.token.type", kind));
                self.tokens.record(count, &with_type);
            }
        }
        if let Some(seconds) = point.first_chunk {
            self.first_chunk.record(seconds.max(0.0), &attributes);
        }
        if let Some(error) = point.error {
            attributes.push(KeyValue::new("error.type", error.to_owned()));
        }
        self.duration.record(point.seconds.max(0.0), &attributes);
    }

    /// Sends what was recorded, once, within `budget` (the export timeout
    /// capped by the run's timer); nothing when nothing was. The line
    /// that says why it failed.
    pub async fn export(&self, budget: Duration) -> Option<String> {
        let mut collected = ResourceMetrics::default();
        if self.reader.collect(&mut collected).is_err() {
            return Some(format!(
                "metrics not exported to {}: they could not be collected",
                self.shown
            ));
        }
        let points = collected
            .scope_metrics()
            .flat_map(|scope| scope.metrics())
            .count();
        if points == 0 {
            return None;
        }
        let why = match tokio::time::timeout(budget, self.exporter.export(&collected)).await {
            Ok(Ok(())) => return None,
            Ok(Err(_)) => self
                .failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .unwrap_or_else(|| "the export failed".to_owned()),
            Err(_) => format!("it did not answer within {} ms", budget.as_millis()),
        };
        Some(format!("metrics not exported to {}: {why}", self.shown))
    }
}

impl MetricSettings {
    /// The line `leash config` shows for the metrics: where they go, or
    /// why they are off.
    pub fn describe_metrics(&self) -> String {
        match self {
            TraceSettings::Off => "metrics: off (no OTEL_EXPORTER_OTLP_ENDPOINT or \
                                   _METRICS_ENDPOINT in the environment)"
                .to_owned(),
            TraceSettings::Disabled => "metrics: off (OTEL_SDK_DISABLED=true)".to_owned(),
            TraceSettings::NoExporter => "metrics: off (OTEL_METRICS_EXPORTER=none)".to_owned(),
            TraceSettings::Unusable(why) => format!("metrics: off: {why}"),
            TraceSettings::On(exporting) => format!(
                "metrics: {} (http/protobuf, from {}), timeout {} ms{}, {}; \
                 gen_ai.client.{{token.usage, operation.duration, operation.time_to_first_chunk}}",
                exporting.endpoint,
                exporting.endpoint_from,
                exporting.timeout.as_millis(),
                if exporting.gzip { ", gzip" } else { "" },
                if exporting.delta {
                    "delta"
                } else {
                    "cumulative"
                }
            ),
        }
    }
}
