//! Test helpers for the OpenAI Responses API: the wire builders the unit
//! tests use too (`leash_provider::testing::responses`: a streamed reply
//! in the documented format, item by item or event by event, and canned
//! replies), plus the request log of a mock server.
//!
//! Test code only; it must never talk to the real API.

#[allow(unused_imports)] // not every test binary uses them all
pub use leash_provider::testing::responses::*;

#[allow(unused_imports)] // not every test binary uses both
pub use super::openai::http_error;
#[allow(unused_imports)]
pub use super::{request_bodies, sse};
