//! Amazon Bedrock's ConverseStream (docs/src/bedrock.md "Amazon
//! Bedrock"): `POST {endpoint}/model/{modelId}/converse-stream`, the reply
//! in `application/vnd.amazon.eventstream` binary frames. `request`
//! builds the body, `frames` reads the frames into the (name, data) pairs
//! every decoder takes, `decode::Decoder` turns them into
//! [`StreamEvent`]s, and `auth` signs the request with SigV4 (or the
//! driver sends a Bedrock API key as a bearer token). The shared driver
//! (`provider::driver`) sends, retries and redacts.
//!
//! It must never end a stream without exactly one `Done` or `Error`, never
//! panic on what a server sends, and never let a key or a secret into an
//! event.

pub mod auth;
mod decode;
mod frames;
mod request;
#[cfg(test)]
mod tests;

use futures::stream::BoxStream;

use super::driver::{HttpProvider, WireFormat, decode_with};
use super::sse::{SseError, SseEvent};
use super::{HttpSettings, Request, StreamEvent};

pub use auth::{AwsAuth, AwsKeys};

/// The Bedrock runtime's endpoint in `region`.
pub fn regional_endpoint(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

/// ConverseStream.
#[derive(Debug, Clone, Copy)]
pub struct ConverseStream;

impl WireFormat for ConverseStream {
    const NAME: &'static str = "bedrock";
    const DEFAULT_BASE_URL: &'static str = "";
    type Decoder = decode::Decoder;

    fn path() -> &'static str {
        "/model"
    }

    fn key_header(key: &str) -> (&'static str, String) {
        ("authorization", format!("Bearer {key}"))
    }

    fn body(request: &Request<'_>, settings: &HttpSettings) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&request::request_body(request, settings))
    }

    fn url(settings: &HttpSettings, model: &str) -> String {
        let base = match (settings.base_url.trim(), &settings.aws) {
            ("", Some(aws)) => regional_endpoint(&aws.region),
            (base, _) => base.to_owned(),
        };
        format!(
            "{}/model/{}/converse-stream",
            base.trim_end_matches('/'),
            escape(model)
        )
    }

    fn accept() -> &'static str {
        "application/vnd.amazon.eventstream"
    }

    fn sign(request: &mut reqwest::Request, settings: &HttpSettings) -> Result<bool, String> {
        match &settings.aws {
            Some(AwsAuth {
                region,
                keys: Some(keys),
            }) => {
                auth::sign_request(request, region, keys, std::time::SystemTime::now())?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn events(response: reqwest::Response) -> BoxStream<'static, Result<SseEvent, SseError>> {
        frames::events(response)
    }
}

/// A model id (or an inference profile's ARN) as one path segment, every
/// byte but RFC 3986's unreserved ones percent-encoded, as the AWS SDKs
/// send it (`:` → `%3A`, `/` → `%2F`).
fn escape(model: &str) -> String {
    let mut out = String::with_capacity(model.len());
    for byte in model.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(byte));
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// A model behind Amazon Bedrock.
pub type BedrockProvider = HttpProvider<ConverseStream>;

/// The stream of one response body's frames, decoded by this format's
/// decoder; public so the fuzz targets can feed it any bytes.
pub fn decode<S, B, E>(bytes: S) -> BoxStream<'static, StreamEvent>
where
    S: futures::Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    decode_with::<decode::Decoder, _>(frames::from_bytes(bytes, None))
}
