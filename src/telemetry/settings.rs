//! Where traces go, read from the standard OpenTelemetry variables of the
//! process environment (never a checkout's `.env`: a checkout must not be
//! able to send a run's traces anywhere). Reading them builds nothing: with
//! no endpoint, or `OTEL_SDK_DISABLED=true`, the answer is [`TraceSettings::Off`]
//! and no OpenTelemetry object is ever made.

use std::time::Duration;

use super::sampling::sampler;
pub use super::sampling::{ParentRoot, SamplerChoice};

/// The signal a reading is for: its variables (`OTEL_EXPORTER_OTLP_{S}_…`,
/// `OTEL_{S}_EXPORTER`), the OTLP path appended to
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (the signal's own endpoint is used as is)
/// and the word the lines use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Spans, to `v1/traces`.
    Traces,
    /// The GenAI client metrics, to `v1/metrics`.
    Metrics,
}

impl Signal {
    /// `traces` or `metrics`, as the lines say it.
    pub fn noun(self) -> &'static str {
        match self {
            Signal::Traces => "traces",
            Signal::Metrics => "metrics",
        }
    }

    fn upper(self) -> &'static str {
        match self {
            Signal::Traces => "TRACES",
            Signal::Metrics => "METRICS",
        }
    }
}

/// Where a run's metrics go: the same settings as the traces', read from
/// the metrics' variables.
pub type MetricSettings = TraceSettings;

/// The service name when neither `OTEL_SERVICE_NAME` nor
/// `OTEL_RESOURCE_ATTRIBUTES` names one.
pub const DEFAULT_SERVICE_NAME: &str = "leash";

/// Whether and where a run's traces are exported.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TraceSettings {
    /// No endpoint is set: nothing is built, nothing connects.
    #[default]
    Off,
    /// `OTEL_SDK_DISABLED=true`: the same, whatever else is set.
    Disabled,
    /// `OTEL_TRACES_EXPORTER=none` (or `OTEL_METRICS_EXPORTER=none`): the same.
    NoExporter,
    /// An endpoint is set but leash cannot export there (a protocol it
    /// does not speak, an endpoint that is no http(s) URL): one stderr
    /// line, and the run goes on without traces.
    Unusable(String),
    /// Traces are exported.
    On(Box<Exporting>),
}

/// An exporting configuration, complete.
#[derive(Clone, PartialEq, Eq)]
pub struct Exporting {
    /// The URL spans are POSTed to (`…/v1/traces`).
    pub endpoint: String,
    /// The variable it came from.
    pub endpoint_from: String,
    /// `OTEL_EXPORTER_OTLP_HEADERS` (and `_TRACES_HEADERS`), decoded.
    pub headers: Vec<(String, String)>,
    /// `service.name`.
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, decoded (`service.name` among them).
    pub resource: Vec<(String, String)>,
    /// `TRACEPARENT` and `TRACESTATE`: the caller's span, if any.
    pub parent: Option<(String, String)>,
    /// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` (or `_TIMEOUT`): the longest one
    /// export may take (10 s by default); the run's timer caps it.
    pub timeout: Duration,
    /// `OTEL_EXPORTER_OTLP_TRACES_COMPRESSION` (or `_COMPRESSION`) `gzip`.
    pub gzip: bool,
    /// `OTEL_EXPORTER_OTLP_{,TRACES_}CERTIFICATE`, `_CLIENT_CERTIFICATE`,
    /// `_CLIENT_KEY`: each variable's name and the file it names.
    pub tls: TlsFiles,
    /// `OTEL_TRACES_SAMPLER` and `_ARG`.
    pub sampler: SamplerChoice,
    /// `OTEL_BSP_*`: how spans wait for their export.
    pub queue: QueueSettings,
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
    pub capture_content: bool,
    /// Whether `OTEL_SEMCONV_STABILITY_OPT_IN` lists `gen_ai_latest_experimental`.
    pub latest_experimental: bool,
    /// `OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE` `delta` or
    /// `lowmemory`: a histogram's points are deltas (metrics only).
    pub delta: bool,
    /// What was set but not understood: one line each, said at the start.
    pub warnings: Vec<String>,
}

/// The batch span processor's settings (`OTEL_BSP_*`, the specification's
/// defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSettings {
    /// `OTEL_BSP_MAX_QUEUE_SIZE` (2048): spans past it are dropped.
    pub max_queue: usize,
    /// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (512): spans per request.
    pub batch: usize,
    /// `OTEL_BSP_SCHEDULE_DELAY` (5000 ms): the longest a finished span
    /// waits before its export starts.
    pub delay: Duration,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            max_queue: 2048,
            batch: 512,
            delay: Duration::from_millis(5000),
        }
    }
}

/// The TLS files of the exporter's variables: (variable, path).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA certificates (PEM) the collector's certificate is checked
    /// against, besides the system's.
    pub certificate: Option<(String, String)>,
    /// The client's certificate chain (PEM), for mutual TLS.
    pub client_certificate: Option<(String, String)>,
    /// The client's private key (PEM), for mutual TLS.
    pub client_key: Option<(String, String)>,
}

/// The specification's default export timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

// The header values may carry tokens: never in a debug print.
impl std::fmt::Debug for Exporting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporting")
            .field("endpoint", &self.endpoint)
            .field("headers", &self.header_names())
            .field("service_name", &self.service_name)
            .finish_non_exhaustive()
    }
}

impl Exporting {
    /// The headers' names, their values withheld.
    pub fn header_names(&self) -> Vec<&str> {
        self.headers.iter().map(|(name, _)| name.as_str()).collect()
    }
}

impl TraceSettings {
    /// Reads the settings through `exported`, the process environment's
    /// lookup (a `.env` is never consulted).
    pub fn from_env(exported: &dyn Fn(&str) -> Option<String>) -> TraceSettings {
        TraceSettings::read(exported, Signal::Traces)
    }

    /// Reads the settings of `signal`'s export through `exported`.
    pub fn read(exported: &dyn Fn(&str) -> Option<String>, signal: Signal) -> TraceSettings {
        let set = |name: &str| exported(name).filter(|value| !value.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|value| value.trim().eq_ignore_ascii_case("true")) {
            return TraceSettings::Disabled;
        }
        let (noun, upper) = (signal.noun(), signal.upper());
        let own = format!("OTEL_EXPORTER_OTLP_{upper}_ENDPOINT");
        let (endpoint, endpoint_from) = match (set(&own), set("OTEL_EXPORTER_OTLP_ENDPOINT")) {
            (Some(url), _) => (url.trim().to_owned(), own),
            (None, Some(base)) => (
                format!("{}/v1/{noun}", base.trim().trim_end_matches('/')),
                "OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(),
            ),
            (None, None) => return TraceSettings::Off,
        };
        let exporter = format!("OTEL_{upper}_EXPORTER");
        match set(&exporter).map(|value| value.trim().to_ascii_lowercase()) {
            Some(value) if value == "none" => return TraceSettings::NoExporter,
            Some(value) if value != "otlp" => {
                return TraceSettings::Unusable(format!(
                    "{exporter}={}: leash exports {noun} over OTLP only; the run goes on \
                     without {noun}",
                    value.escape_debug()
                ));
            }
            _ => {}
        }
        // A general variable's line is the same for both signals (said once).
        let without = |variable: &str| match variable.contains(&format!("_{upper}_")) {
            true => noun,
            false => "traces or metrics",
        };
        let (variable, protocol) = signal_variable(&set, signal, "PROTOCOL")
            .unwrap_or_else(|| (String::new(), "http/protobuf".to_owned()));
        if protocol.trim() != "http/protobuf" {
            return TraceSettings::Unusable(format!(
                "{variable}={}: leash speaks OTLP over http/protobuf only; the run goes on \
                 without {}",
                protocol.trim().escape_debug(),
                without(&variable)
            ));
        }
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return TraceSettings::Unusable(format!(
                "{endpoint_from} is not an http:// or https:// URL; the run goes on without {}",
                without(&endpoint_from)
            ));
        }
        let mut headers = pairs(&set("OTEL_EXPORTER_OTLP_HEADERS").unwrap_or_default());
        let own_headers = format!("OTEL_EXPORTER_OTLP_{upper}_HEADERS");
        for (name, value) in pairs(&set(&own_headers).unwrap_or_default()) {
            headers.retain(|(known, _)| !known.eq_ignore_ascii_case(&name));
            headers.push((name, value));
        }
        let resource = pairs(&set("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default());
        let service_name = set("OTEL_SERVICE_NAME")
            .map(|name| name.trim().to_owned())
            .or_else(|| {
                resource
                    .iter()
                    .find(|(name, _)| name == "service.name")
                    .map(|(_, value)| value.clone())
            })
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
        let parent = set("TRACEPARENT").map(|parent| {
            (
                parent.trim().to_owned(),
                set("TRACESTATE").unwrap_or_default().trim().to_owned(),
            )
        });
        let mut warnings = Vec::new();
        let timeout = signal_variable(&set, signal, "TIMEOUT")
            .map(|(name, value)| match value.trim().parse::<u64>() {
                Ok(ms) => Duration::from_millis(ms),
                Err(_) => {
                    warnings.push(format!(
                        "{name} is not a number of milliseconds; the default 10000 is used"
                    ));
                    DEFAULT_TIMEOUT
                }
            })
            .unwrap_or(DEFAULT_TIMEOUT);
        let gzip = match signal_variable(&set, signal, "COMPRESSION") {
            Some((_, value)) if value.trim().eq_ignore_ascii_case("gzip") => true,
            Some((_, value)) if value.trim().eq_ignore_ascii_case("none") => false,
            Some((name, _)) => {
                warnings.push(format!(
                    "{name} is neither gzip nor none; bodies go uncompressed"
                ));
                false
            }
            None => false,
        };
        let tls = TlsFiles {
            certificate: signal_variable(&set, signal, "CERTIFICATE"),
            client_certificate: signal_variable(&set, signal, "CLIENT_CERTIFICATE"),
            client_key: signal_variable(&set, signal, "CLIENT_KEY"),
        };
        let sampler = sampler(&set, &mut warnings);
        let queue = QueueSettings {
            max_queue: count(&set, "OTEL_BSP_MAX_QUEUE_SIZE", &mut warnings).unwrap_or(2048),
            batch: count(&set, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &mut warnings).unwrap_or(512),
            delay: count(&set, "OTEL_BSP_SCHEDULE_DELAY", &mut warnings)
                .map_or(Duration::from_millis(5000), |ms| {
                    Duration::from_millis(ms as u64)
                }),
        };
        let capture_content = set("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
            .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"));
        let preference = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE";
        let delta = match set(preference)
            .filter(|_| signal == Signal::Metrics)
            .map(|value| (preference, value))
        {
            None => false,
            Some((_, value)) if value.trim().eq_ignore_ascii_case("cumulative") => false,
            Some((_, value))
                if ["delta", "lowmemory"]
                    .iter()
                    .any(|known| value.trim().eq_ignore_ascii_case(known)) =>
            {
                true
            }
            Some((name, _)) => {
                warnings.push(format!(
                    "{name} is not cumulative, delta or lowmemory; cumulative is used"
                ));
                false
            }
        };
        let latest_experimental = set("OTEL_SEMCONV_STABILITY_OPT_IN").is_some_and(|value| {
            value
                .split(',')
                .any(|part| part.trim() == "gen_ai_latest_experimental")
        });
        TraceSettings::On(Box::new(Exporting {
            endpoint,
            endpoint_from,
            headers,
            service_name,
            resource,
            parent,
            timeout,
            gzip,
            tls,
            sampler,
            queue,
            capture_content,
            latest_experimental,
            delta,
            warnings,
        }))
    }

    /// The lines `leash config` shows: where traces go, header values
    /// withheld (they often carry tokens).
    pub fn describe(&self) -> Vec<String> {
        match self {
            TraceSettings::Off => vec![
                "traces: off (no OTEL_EXPORTER_OTLP_ENDPOINT or _TRACES_ENDPOINT in the environment)"
                    .to_owned(),
            ],
            TraceSettings::Disabled => vec!["traces: off (OTEL_SDK_DISABLED=true)".to_owned()],
            TraceSettings::NoExporter => {
                vec!["traces: off (OTEL_TRACES_EXPORTER=none)".to_owned()]
            }
            TraceSettings::Unusable(why) => vec![format!("traces: off: {why}")],
            TraceSettings::On(exporting) => {
                let mut lines = vec![
                    format!(
                        "traces: {} (http/protobuf, from {})",
                        exporting.endpoint, exporting.endpoint_from
                    ),
                    format!("traces service.name: {}", exporting.service_name),
                ];
                if !exporting.headers.is_empty() {
                    lines.push(format!(
                        "traces headers: {} (values not shown)",
                        exporting.header_names().join(", ")
                    ));
                }
                if let Some((parent, _)) = &exporting.parent {
                    lines.push(format!("traces parent: {parent} (TRACEPARENT)"));
                }
                let tls = &exporting.tls;
                let files: Vec<&str> = [&tls.certificate, &tls.client_certificate, &tls.client_key]
                    .into_iter()
                    .flatten()
                    .map(|(variable, _)| variable.as_str())
                    .collect();
                if !files.is_empty() {
                    lines.push(format!("traces TLS: {}", files.join(", ")));
                }
                lines.push(format!(
                    "traces sampler: {}, timeout {} ms{}",
                    exporting.sampler.describe(),
                    exporting.timeout.as_millis(),
                    if exporting.gzip { ", gzip" } else { "" }
                ));
                if exporting.exports_nothing() {
                    lines.push(
                        "traces: nothing is exported: TRACEPARENT says its trace is not sampled \
                         (flags 00) and the sampler follows the parent"
                            .to_owned(),
                    );
                } else if matches!(
                    exporting.sampler,
                    SamplerChoice::AlwaysOff | SamplerChoice::ParentBased(ParentRoot::AlwaysOff)
                ) && exporting.parent.is_none()
                {
                    lines.push("traces: nothing is exported: the sampler is always_off".to_owned());
                }
                lines.push(format!(
                    "traces conventions: OpenTelemetry GenAI semantic conventions {SEMCONV_VERSION}{}; \
                     message content {}",
                    if exporting.latest_experimental {
                        " (OTEL_SEMCONV_STABILITY_OPT_IN: gen_ai_latest_experimental, the same)"
                    } else {
                        ""
                    },
                    if exporting.capture_content {
                        "captured (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, keys redacted)"
                    } else {
                        "not captured"
                    }
                ));
                lines.extend(exporting.warnings.iter().map(|w| format!("traces: {w}")));
                lines
            }
        }
    }
}

/// The version of the OpenTelemetry semantic conventions leash follows.
pub const SEMCONV_VERSION: &str = "1.41.0";

impl Exporting {
    /// Whether the caller's `TRACEPARENT` says "not sampled" to a sampler
    /// that follows it: then no span is recorded or exported.
    pub fn exports_nothing(&self) -> bool {
        let unsampled = self.parent.as_ref().is_some_and(|(parent, _)| {
            let parts: Vec<&str> = parent.split('-').collect();
            parts.len() == 4
                && parts[1].len() == 32
                && u8::from_str_radix(parts[3], 16).is_ok_and(|flags| flags & 1 == 0)
        });
        unsampled && matches!(self.sampler, SamplerChoice::ParentBased(_))
    }
}

/// The signal's variable `OTEL_EXPORTER_OTLP_{SIGNAL}_{suffix}`, or the
/// general `OTEL_EXPORTER_OTLP_{suffix}`: its name and value.
fn signal_variable(
    set: &dyn Fn(&str) -> Option<String>,
    signal: Signal,
    suffix: &str,
) -> Option<(String, String)> {
    [
        format!("OTEL_EXPORTER_OTLP_{}_{suffix}", signal.upper()),
        format!("OTEL_EXPORTER_OTLP_{suffix}"),
    ]
    .into_iter()
    .find_map(|name| set(&name).map(|value| (name, value)))
}

/// A positive whole number variable; a bad one is a warning.
fn count(
    set: &dyn Fn(&str) -> Option<String>,
    name: &str,
    warnings: &mut Vec<String>,
) -> Option<usize> {
    let value = set(name)?;
    match value.trim().parse::<usize>() {
        Ok(number) if number > 0 => Some(number.min(1 << 20)),
        _ => {
            warnings.push(format!(
                "{name} is not a positive number; its default is used"
            ));
            None
        }
    }
}

/// `name=value,name=value` (the W3C baggage form the OTel variables use),
/// each part trimmed and percent-decoded; a part without `=` is skipped.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|part| part.split_once('='))
        .map(|(name, value)| (percent_decoded(name.trim()), percent_decoded(value.trim())))
        .filter(|(name, _)| !name.is_empty())
        .collect()
}

/// `%20` and the like decoded; a `%` not followed by two hex digits kept.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |i: usize| bytes.get(i).and_then(|b| (*b as char).to_digit(16));
        match (bytes[at], hex(at + 1), hex(at + 2)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                at += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> TraceSettings {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        TraceSettings::from_env(&move |name| {
            pairs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        })
    }

    fn on(settings: TraceSettings) -> Exporting {
        match settings {
            TraceSettings::On(exporting) => *exporting,
            other => panic!("not on: {other:?}"),
        }
    }

    fn metrics(pairs: &[(&str, &str)]) -> MetricSettings {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        TraceSettings::read(
            &move |name| {
                pairs
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
            },
            Signal::Metrics,
        )
    }

    #[test]
    fn the_metrics_read_their_own_variables_first() {
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318/");
        let plain = on(metrics(&[base]));
        assert_eq!(plain.endpoint, "http://h:4318/v1/metrics");
        assert!(!plain.delta);
        let own = on(metrics(&[
            base,
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://m/x"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "100"),
            ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "300"),
            ("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip"),
            (
                "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
                "LowMemory",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "7"),
        ]));
        assert_eq!(own.endpoint, "https://m/x");
        assert_eq!(own.endpoint_from, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
        assert_eq!(own.timeout, Duration::from_millis(300));
        assert!(own.gzip && own.delta);
        // The traces never read the metrics' variables, nor the reverse.
        let traces = on(read(&[
            base,
            ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "300"),
            ("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta"),
        ]));
        assert_eq!(traces.timeout, DEFAULT_TIMEOUT);
        assert!(!traces.delta);
        // None, another exporter, a bad preference, a bad URL.
        assert_eq!(
            metrics(&[base, ("OTEL_METRICS_EXPORTER", "none")]),
            TraceSettings::NoExporter
        );
        assert_eq!(
            read(&[base, ("OTEL_METRICS_EXPORTER", "none")]),
            read(&[base])
        );
        let prometheus = metrics(&[base, ("OTEL_METRICS_EXPORTER", "prometheus\u{1b}[2J")]);
        assert!(
            matches!(&prometheus, TraceSettings::Unusable(why)
                if why.contains("OTEL_METRICS_EXPORTER=prometheus\\u{1b}") && !why.contains('\u{1b}')),
            "{prometheus:?}"
        );
        let odd = on(metrics(&[
            base,
            (
                "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
                "sometimes",
            ),
        ]));
        assert!(!odd.delta);
        assert!(odd.warnings[0].contains("not cumulative, delta or lowmemory"));
        let ftp = metrics(&[("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "ftp://m")]);
        assert!(
            matches!(&ftp, TraceSettings::Unusable(why) if why.ends_with("without metrics")),
            "{ftp:?}"
        );
        let general = metrics(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "h:4318")]);
        assert!(
            matches!(&general, TraceSettings::Unusable(why) if why.ends_with("without traces or metrics")),
            "{general:?}"
        );
        assert!(
            metrics(&[base])
                .describe_metrics()
                .starts_with("metrics: http://h:4318/v1/metrics")
        );
    }

    #[test]
    fn nothing_set_is_off_and_disabled_wins() {
        assert_eq!(read(&[]), TraceSettings::Off);
        assert_eq!(read(&[("OTEL_SERVICE_NAME", "x")]), TraceSettings::Off);
        assert_eq!(
            read(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_SDK_DISABLED", "TRUE"),
            ]),
            TraceSettings::Disabled
        );
    }

    #[test]
    fn the_base_endpoint_gets_the_traces_path_the_traces_one_is_kept() {
        let base = on(read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318/")]));
        assert_eq!(base.endpoint, "http://h:4318/v1/traces");
        assert_eq!(base.service_name, "leash");
        let exact = on(read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://c/x"),
        ]));
        assert_eq!(exact.endpoint, "https://c/x");
        assert_eq!(exact.endpoint_from, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    }

    #[test]
    fn grpc_and_a_bad_url_are_unusable() {
        let grpc = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        assert!(matches!(grpc, TraceSettings::Unusable(why) if why.contains("grpc")));
        let url = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "h:4318")]);
        assert!(matches!(url, TraceSettings::Unusable(_)));
    }

    #[test]
    fn headers_resource_and_service_name_are_decoded_and_values_never_shown() {
        let exporting = on(read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20tok123, x-a=1",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-a=2"),
            ("OTEL_RESOURCE_ATTRIBUTES", "service.name=ci,team=ops"),
        ]));
        assert_eq!(
            exporting.headers,
            vec![
                ("authorization".to_owned(), "Bearer tok123".to_owned()),
                ("x-a".to_owned(), "2".to_owned())
            ]
        );
        assert_eq!(exporting.service_name, "ci");
        let shown = TraceSettings::On(Box::new(exporting.clone()))
            .describe()
            .join("\n");
        assert!(
            shown.contains("authorization, x-a (values not shown)"),
            "{shown}"
        );
        assert!(!shown.contains("tok123"), "{shown}");
        assert!(!format!("{exporting:?}").contains("tok123"));
    }

    #[test]
    fn the_exporter_variables_and_their_bad_values() {
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318");
        let plain = on(read(&[base]));
        assert_eq!(plain.timeout, DEFAULT_TIMEOUT);
        assert!(!plain.gzip && !plain.capture_content);
        assert_eq!(
            plain.sampler,
            SamplerChoice::ParentBased(ParentRoot::AlwaysOn)
        );
        assert_eq!(plain.queue, QueueSettings::default());
        let set = on(read(&[
            base,
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "30000"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", " 2500 "),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "GZIP"),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "64"),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "True"),
            (
                "OTEL_SEMCONV_STABILITY_OPT_IN",
                "http, gen_ai_latest_experimental",
            ),
        ]));
        assert_eq!(set.timeout, Duration::from_millis(2500));
        assert!(set.gzip && set.capture_content && set.latest_experimental);
        assert_eq!(
            set.sampler,
            SamplerChoice::ParentBased(ParentRoot::Ratio(0.25))
        );
        assert_eq!(set.queue.batch, 64);
        assert!(set.warnings.is_empty(), "{:?}", set.warnings);
        // Hostile or broken values: the default, and one line each.
        let bad = on(read(&[
            base,
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "-5"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"),
            ("OTEL_TRACES_SAMPLER", "always_on\u{1b}[2J"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "0"),
            ("OTEL_BSP_SCHEDULE_DELAY", "99999999999999999999999"),
        ]));
        assert_eq!(bad.timeout, DEFAULT_TIMEOUT);
        assert!(!bad.gzip);
        assert_eq!(
            bad.sampler,
            SamplerChoice::ParentBased(ParentRoot::AlwaysOn)
        );
        assert_eq!(bad.queue, QueueSettings::default());
        assert_eq!(bad.warnings.len(), 5, "{:?}", bad.warnings);
        assert!(
            bad.warnings.iter().all(|line| !line.contains('\u{1b}')),
            "{:?}",
            bad.warnings
        );
        let ratio = on(read(&[
            base,
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "NaN"),
        ]));
        assert_eq!(ratio.sampler, SamplerChoice::Ratio(1.0));
        assert_eq!(ratio.warnings.len(), 1);
        assert_eq!(
            read(&[base, ("OTEL_TRACES_EXPORTER", "none")]),
            TraceSettings::NoExporter
        );
        assert!(matches!(
            read(&[base, ("OTEL_TRACES_EXPORTER", "zipkin")]),
            TraceSettings::Unusable(why) if why.contains("zipkin")
        ));
    }

    #[test]
    fn an_unsampled_caller_under_a_parent_based_sampler_exports_nothing() {
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318");
        let off = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let on_flag = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(on(read(&[base, ("TRACEPARENT", off)])).exports_nothing());
        assert!(!on(read(&[base, ("TRACEPARENT", on_flag)])).exports_nothing());
        assert!(!on(read(&[base, ("TRACEPARENT", "garbage-00")])).exports_nothing());
        let always = on(read(&[
            base,
            ("TRACEPARENT", off),
            ("OTEL_TRACES_SAMPLER", "always_on"),
        ]));
        assert!(!always.exports_nothing());
    }
}
