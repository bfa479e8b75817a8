//! The providers (docs/src/providers.md "Providers"; ARCHITECTURE.md §2.1, §2.4): the
//! real binary against loopback OpenAI Chat Completions, OpenAI Responses
//! and Anthropic Messages servers — the seed task, errors, retries, the
//! timeout, what passes between a server and the user unchanged, TLS, and
//! hostile servers and models.

mod anthropic;
mod apis;
mod attach_confined;
mod attachments;
mod azure;
mod bedrock;
mod gemini;
mod hostile_models;
mod hostile_servers;
mod openai;
mod reasoning_effort;
mod tls;
mod vertex;
mod wire_fidelity;
