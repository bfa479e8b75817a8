//! What a built-in provider hands the run's observer of its own
//! (`StreamEvent::Provider`, Pi's `onProviderStreamEvent`): once the
//! response's headers arrive, its status and the headers worth a host's
//! while — the request id to quote to the provider, the rate-limit
//! counters, the server's timing.
//!
//! Only headers on the list below are passed, so nothing a server sets
//! for itself (cookies, tokens) reaches a host, and every value goes
//! through the key's redaction first.

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use super::super::http;
use leash_protocol::secret::ApiKey;

/// Headers passed by their exact name.
const NAMED: [&str; 5] = [
    "x-request-id",
    "request-id",
    "openai-processing-ms",
    "server-timing",
    "retry-after",
];

/// Headers passed by their prefix: the providers' rate-limit counters.
const PREFIXES: [&str; 3] = ["x-ratelimit-", "anthropic-ratelimit-", "ratelimit-"];

/// Whether a header is one a host may see.
fn passed(name: &str) -> bool {
    NAMED.contains(&name) || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// The observer's data for a response: `{"type": "response", "status",
/// "headers": {name: value}}`, the headers sorted by name (as `HeaderMap`
/// keeps them lowercase), only those on the list.
pub(crate) fn response_data(status: u16, headers: &HeaderMap, key: Option<&ApiKey>) -> Value {
    let mut names: Vec<&str> = headers
        .keys()
        .map(|name| name.as_str())
        .filter(|name| passed(name))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut shown = Map::new();
    for name in names {
        let values: Vec<&str> = headers
            .get_all(name)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .collect();
        if !values.is_empty() {
            shown.insert(
                name.to_owned(),
                Value::String(http::redact(&values.join(", "), key)),
            );
        }
    }
    json!({"type": "response", "status": status, "headers": shown})
}

/// The response's id in a stream's first event: Chat Completions' `id`,
/// Anthropic's `message.id`, Responses' `response.id` (at most 256 bytes;
/// only a JSON object's string).
pub(crate) fn response_id(data: &str) -> Option<String> {
    if data.len() > 64 * 1024 || !data.contains("\"id\"") {
        return None;
    }
    let value: Value = serde_json::from_str(data).ok()?;
    let id = value
        .get("id")
        .or_else(|| value.get("message")?.get("id"))
        .or_else(|| value.get("response")?.get("id"))?
        .as_str()?;
    (!id.is_empty() && id.len() <= 256).then(|| id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn the_response_id_of_each_wire() {
        assert_eq!(
            response_id(r#"{"id":"chatcmpl-1","choices":[]}"#).as_deref(),
            Some("chatcmpl-1")
        );
        assert_eq!(
            response_id(r#"{"type":"message_start","message":{"id":"msg_1"}}"#).as_deref(),
            Some("msg_1")
        );
        assert_eq!(
            response_id(r#"{"type":"response.created","response":{"id":"resp_1"}}"#).as_deref(),
            Some("resp_1")
        );
        assert_eq!(response_id(r#"{"id":7}"#), None);
        assert_eq!(response_id("not json \"id\""), None);
    }

    #[test]
    fn only_listed_headers_are_passed_sorted_and_redacted() {
        let mut headers = HeaderMap::new();
        headers.insert("set-cookie", HeaderValue::from_static("session=secret"));
        headers.insert("x-request-id", HeaderValue::from_static("req_42"));
        headers.insert(
            "anthropic-ratelimit-tokens-remaining",
            HeaderValue::from_static("9000"),
        );
        headers.insert("server-timing", HeaderValue::from_static("sk-key-12345678"));
        let key = ApiKey::new("sk-key-12345678");
        let data = response_data(200, &headers, Some(&key));
        assert_eq!(
            data,
            json!({"type": "response", "status": 200, "headers": {
                "anthropic-ratelimit-tokens-remaining": "9000",
                "server-timing": "***",
                "x-request-id": "req_42"
            }})
        );
    }
}
