//! Test helpers for Amazon Bedrock's ConverseStream: the frame builders
//! the unit tests use too (`leash_provider::testing::bedrock`), the
//! 200 response that carries them, and the service's error bodies.
//!
//! Test code only; it must never talk to the real API.

#![allow(dead_code)]

use serde_json::json;
use wiremock::ResponseTemplate;

#[allow(unused_imports)] // not every test binary uses them all
pub use leash_provider::testing::bedrock::*;

/// A 200 event-stream response of `frames`, byte for byte.
pub fn eventstream(frames: Vec<u8>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(frames, "application/vnd.amazon.eventstream")
}

/// An AWS JSON error: `status`, `x-amzn-ErrorType` and `{"message"}`.
pub fn aws_error(status: u16, kind: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("x-amzn-ErrorType", kind)
        .set_body_raw(
            json!({"message": message}).to_string().into_bytes(),
            "application/json",
        )
}
