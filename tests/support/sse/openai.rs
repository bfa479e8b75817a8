//! Test helpers for the OpenAI Chat Completions API: the wire builders
//! the unit tests use too (`leash_provider::testing::openai`: the
//! `data: {chunk}` lines of a streamed reply in the documented format),
//! a canned error response, and the request log of a mock server.
//!
//! Test code only; it must never talk to the real API.

#![allow(dead_code)]

use wiremock::ResponseTemplate;

#[allow(unused_imports)] // not every test binary uses them all
pub use leash_provider::testing::openai::*;

#[allow(unused_imports)] // not every test binary uses both
pub use super::{request_bodies, sse};

/// An HTTP error with the API's error JSON.
pub fn http_error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(
        error_json(message).to_string().into_bytes(),
        "application/json",
    )
}
