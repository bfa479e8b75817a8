//! The values the OpenTelemetry GenAI semantic conventions (the version in
//! [`super::settings::SEMCONV_VERSION`]) define, from leash's own: finish
//! reasons, token counts, `error.type`, `server.address`/`server.port`.
//! tests/suite/otel/registry.rs checks every attribute leash emits against
//! the conventions' registry, vendored in tests/data/semconv.

use opentelemetry::{Array, KeyValue, StringValue, Value};

use leash_protocol::{StopReason, Usage};

/// `error.type` when no more precise value applies.
pub const OTHER: &str = "_OTHER";

/// `error.type` of an operation the run's timer cut.
pub const TIMEOUT: &str = "timeout";

/// `error.type` of a tool call that failed (the conventions' MCP value).
pub const TOOL_ERROR: &str = "tool_error";

/// A stop reason as the conventions' finish reason (`stop`, `length`,
/// `content_filter`, `tool_call`, `error`); none for a request the run
/// stopped (the model did not finish).
pub fn finish_reason(reason: StopReason) -> Option<&'static str> {
    match reason {
        StopReason::Stop => Some("stop"),
        StopReason::Length => Some("length"),
        StopReason::ToolUse => Some("tool_call"),
        StopReason::Error => Some("error"),
        StopReason::Aborted => None,
    }
}

/// `gen_ai.response.finish_reasons` holding `reason`.
pub fn finish_reasons(reason: &'static str) -> KeyValue {
    KeyValue::new(
        "gen_ai.response.finish_reasons",
        Value::Array(Array::String(vec![StringValue::from(reason)])),
    )
}

/// The most of an identifier a server chose (a response, request or
/// session id, a protocol version) recorded.
pub const ID_CAP: usize = 256;

/// `text` cut at `cap` bytes, on a character boundary.
pub fn cut(mut text: String, cap: usize) -> String {
    if text.len() > cap {
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// A count as an attribute (OTLP integers are signed).
pub fn clamp(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The instrumentation scope every span and metric is recorded under.
pub const SCOPE: &str = "leash";

/// The schema URL of the conventions' version leash follows.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";

/// The token counts under the conventions' names: the input count holds
/// every input token, those read from and written to the cache too.
pub fn usage_attributes(usage: &Usage) -> Vec<KeyValue> {
    let input = usage
        .input
        .saturating_add(usage.cache_read)
        .saturating_add(usage.cache_write);
    vec![
        KeyValue::new("gen_ai.usage.input_tokens", clamp(input)),
        KeyValue::new("gen_ai.usage.output_tokens", clamp(usage.output)),
        KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            clamp(usage.cache_read),
        ),
        KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            clamp(usage.cache_write),
        ),
    ]
}

/// The input (every input token, the cached ones too, as
/// `gen_ai.usage.input_tokens` counts them) and output tokens of a
/// request; none when the provider counted none (the conventions: no
/// usage metric without a count).
pub fn token_counts(usage: &Usage) -> Option<(u64, u64)> {
    let input = usage
        .input
        .saturating_add(usage.cache_read)
        .saturating_add(usage.cache_write);
    (input > 0 || usage.output > 0).then_some((input, usage.output))
}

/// The attributes of a `chat` operation's metric points (the GenAI
/// metrics' attribute group): operation, provider, request model, server
/// and, when the reply named one, the response model.
pub fn metric_attributes(
    provider: &str,
    model: &str,
    server: &Option<(String, u16)>,
    answered: Option<String>,
) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", provider.to_owned()),
        KeyValue::new("gen_ai.request.model", model.to_owned()),
    ];
    attributes.extend(server_attributes(server));
    if let Some(answered) = answered {
        attributes.push(KeyValue::new("gen_ai.response.model", answered));
    }
    attributes
}

/// `error.type` of a failed model request: its HTTP status, or `_OTHER`.
pub fn request_error(status: Option<i64>) -> String {
    status.map_or_else(|| OTHER.to_owned(), |status| status.to_string())
}

/// `server.address` and `server.port` of an `http(s)://host[:port]/…` URL
/// (the scheme's port when none is written); none for anything else.
pub fn server_of(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    let (host, port) = match host_port.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']')?;
            (host, after.strip_prefix(':'))
        }
        None => match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some(port) => port.parse().ok()?,
        None => default,
    };
    Some((host.to_ascii_lowercase(), port))
}

/// The attributes of a server's address.
pub fn server_attributes(server: &Option<(String, u16)>) -> Vec<KeyValue> {
    match server {
        Some((host, port)) => vec![
            KeyValue::new("server.address", host.clone()),
            KeyValue::new("server.port", i64::from(*port)),
        ],
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_count_holds_the_cached_tokens() {
        let usage = Usage {
            input: 10,
            output: 5,
            cache_read: 100,
            cache_write: 7,
            ..Usage::default()
        };
        let attributes = usage_attributes(&usage);
        assert_eq!(attributes[0].value, Value::I64(117));
        assert_eq!(attributes[2].value, Value::I64(100));
    }

    #[test]
    fn a_servers_long_identifier_is_cut() {
        assert_eq!(cut("é".repeat(200), ID_CAP).len(), ID_CAP);
        assert_eq!(cut("abc".to_owned(), 2), "ab");
    }

    #[test]
    fn finish_reasons_are_the_conventions_enum() {
        assert_eq!(finish_reason(StopReason::ToolUse), Some("tool_call"));
        assert_eq!(finish_reason(StopReason::Aborted), None);
    }

    #[test]
    fn a_servers_address_and_port() {
        assert_eq!(
            server_of("https://api.groq.com/openai/v1"),
            Some(("api.groq.com".to_owned(), 443))
        );
        assert_eq!(
            server_of("http://user:pw@127.0.0.1:8080/v1?x=1"),
            Some(("127.0.0.1".to_owned(), 8080))
        );
        assert_eq!(server_of("http://[::1]:9/"), Some(("::1".to_owned(), 9)));
        assert_eq!(server_of("http://h:99999/"), None);
        assert_eq!(server_of("ftp://h/"), None);
        assert_eq!(server_of("http:///x"), None);
    }
}
