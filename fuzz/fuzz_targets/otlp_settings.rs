//! The OpenTelemetry settings (docs/src/tracing.md) read from any values
//! of the variables leash reads, NUL-separated in a fixed order: no panic,
//! and `leash config`'s description of them never shows a header's value
//! (headers often carry tokens).

#![no_main]

use leash::internals::otlp::TraceSettings;
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 20] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_TRACES_SAMPLER",
    "OTEL_TRACES_SAMPLER_ARG",
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
    "OTEL_BSP_SCHEDULE_DELAY",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SERVICE_NAME",
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_SEMCONV_STABILITY_OPT_IN",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
];

/// A header value no other input holds, to look for in the description.
const SECRET: &str = "Zq9-secret-Xw4";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut values: Vec<String> = text.split('\0').map(str::to_owned).collect();
    values.resize(NAMES.len(), String::new());
    // The headers carry the secret as one more value.
    for at in [1, 3] {
        if !values[at].is_empty() {
            values[at] = format!("{},x-token={SECRET}", values[at]);
        }
    }
    let set = |name: &str| {
        NAMES
            .iter()
            .position(|known| *known == name)
            .map(|at| values[at].clone())
            .filter(|value| !value.is_empty())
    };
    let settings = TraceSettings::from_env(&set);
    for line in settings.describe() {
        let shown_elsewhere = values
            .iter()
            .enumerate()
            .any(|(at, value)| at != 1 && at != 3 && value.contains(SECRET));
        assert!(shown_elsewhere || !line.contains(SECRET), "{line}");
    }
});
