//! The SSE bodies the mock servers send, per provider, in the documented
//! wire formats: [`openai`] (Chat Completions `data:` chunks) and
//! [`anthropic`] (Messages `event:` / `data:` pairs), with canned error
//! responses and the request log of a mock server.

pub mod anthropic;
pub mod openai;
