//! Where traces go, read from the standard OpenTelemetry variables of the
//! process environment (never a checkout's `.env`: a checkout must not be
//! able to send a run's traces anywhere). Reading them builds nothing: with
//! no endpoint, or `OTEL_SDK_DISABLED=true`, the answer is [`TraceSettings::Off`]
//! and no OpenTelemetry object is ever made.

/// The OTLP path of traces, appended to `OTEL_EXPORTER_OTLP_ENDPOINT`
/// (the signal-specific `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as is).
const TRACES_PATH: &str = "v1/traces";

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
    /// An endpoint is set but leash cannot export there (a protocol it
    /// does not speak, an endpoint that is no http(s) URL): one stderr
    /// line, and the run goes on without traces.
    Unusable(String),
    /// Traces are exported.
    On(Exporting),
}

/// An exporting configuration, complete.
#[derive(Clone, PartialEq, Eq)]
pub struct Exporting {
    /// The URL spans are POSTed to (`…/v1/traces`).
    pub endpoint: String,
    /// The variable it came from.
    pub endpoint_from: &'static str,
    /// `OTEL_EXPORTER_OTLP_HEADERS` (and `_TRACES_HEADERS`), decoded.
    pub headers: Vec<(String, String)>,
    /// `service.name`.
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, decoded (`service.name` among them).
    pub resource: Vec<(String, String)>,
    /// `TRACEPARENT` and `TRACESTATE`: the caller's span, if any.
    pub parent: Option<(String, String)>,
}

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
        let set = |name: &str| exported(name).filter(|value| !value.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|value| value.trim().eq_ignore_ascii_case("true")) {
            return TraceSettings::Disabled;
        }
        let (endpoint, endpoint_from) = match (
            set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            set("OTEL_EXPORTER_OTLP_ENDPOINT"),
        ) {
            (Some(url), _) => (url.trim().to_owned(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            (None, Some(base)) => (traces_url(base.trim()), "OTEL_EXPORTER_OTLP_ENDPOINT"),
            (None, None) => return TraceSettings::Off,
        };
        let protocol = set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .unwrap_or_else(|| "http/protobuf".to_owned());
        if protocol.trim() != "http/protobuf" {
            return TraceSettings::Unusable(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={}: leash exports traces over http/protobuf only; \
                 the run goes on without traces",
                protocol.trim()
            ));
        }
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return TraceSettings::Unusable(format!(
                "{endpoint_from} is not an http:// or https:// URL; the run goes on without traces"
            ));
        }
        let mut headers = pairs(&set("OTEL_EXPORTER_OTLP_HEADERS").unwrap_or_default());
        for (name, value) in pairs(&set("OTEL_EXPORTER_OTLP_TRACES_HEADERS").unwrap_or_default()) {
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
        TraceSettings::On(Exporting {
            endpoint,
            endpoint_from,
            headers,
            service_name,
            resource,
            parent,
        })
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
                lines
            }
        }
    }
}

/// `OTEL_EXPORTER_OTLP_ENDPOINT` with the traces path, one slash between.
fn traces_url(base: &str) -> String {
    format!("{}/{TRACES_PATH}", base.trim_end_matches('/'))
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
            TraceSettings::On(exporting) => exporting,
            other => panic!("not on: {other:?}"),
        }
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
        let shown = TraceSettings::On(exporting.clone()).describe().join("\n");
        assert!(
            shown.contains("authorization, x-a (values not shown)"),
            "{shown}"
        );
        assert!(!shown.contains("tok123"), "{shown}");
        assert!(!format!("{exporting:?}").contains("tok123"));
    }
}
