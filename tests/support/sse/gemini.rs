//! Test helpers for Google's Gemini API: the wire builders the unit tests
//! use too (`leash_provider::testing::gemini`: `data:` chunks of a
//! streamed `GenerateContentResponse`).
//!
//! Test code only; it must never talk to the real API.

#[allow(unused_imports)] // not every test binary uses them all
pub use leash_provider::testing::gemini::*;
