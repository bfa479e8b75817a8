//! The two provider mocks the hostile checkout's runs talk to, in their
//! own wire formats, and how each names its key, URL and model.

use super::*;

/// The two provider mocks.
#[derive(Debug, Clone, Copy)]
pub(super) enum Provider {
    OpenAi,
    Anthropic,
}

impl Provider {
    pub(super) fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
    pub(super) fn key_var(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
    pub(super) fn base_url_var(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_BASE_URL",
            Provider::Anthropic => "ANTHROPIC_BASE_URL",
        }
    }
    pub(super) fn base_url(self, mock: &str) -> String {
        match self {
            Provider::OpenAi => format!("{mock}/v1"),
            Provider::Anthropic => mock.to_owned(),
        }
    }
    pub(super) fn model(self) -> &'static str {
        match self {
            Provider::OpenAi => "gpt-test",
            Provider::Anthropic => "claude-test",
        }
    }
    pub(super) fn endpoint(self) -> &'static str {
        match self {
            Provider::OpenAi => "/v1/chat/completions",
            Provider::Anthropic => "/v1/messages",
        }
    }

    /// One reply holding `calls` (id, tool, arguments) as a batch.
    pub(super) fn calls(self, calls: &[(&str, &str, Value)]) -> String {
        match self {
            Provider::OpenAi => {
                let mut chunks = vec![openai::role()];
                for (i, (id, name, args)) in calls.iter().enumerate() {
                    chunks.push(openai::call_start(i, id, name));
                    chunks.push(openai::call_args(i, &args.to_string()));
                }
                chunks.push(openai::finish("tool_calls"));
                openai::body(&chunks, true)
            }
            Provider::Anthropic => {
                let mut out = anthropic::message_start(10);
                for (i, (id, name, args)) in calls.iter().enumerate() {
                    out.push_str(&anthropic::tool_use_block(
                        i,
                        id,
                        name,
                        &[&args.to_string()],
                    ));
                }
                out.push_str(&anthropic::message_delta("tool_use", 5));
                out.push_str(&anthropic::message_stop());
                out
            }
        }
    }

    pub(super) fn text(self, text: &str) -> String {
        match self {
            Provider::OpenAi => openai::text_reply(&[text]),
            Provider::Anthropic => anthropic::text_reply(text),
        }
    }

    /// The tool results a request carries, by call id.
    pub(super) fn results(self, body: &Value) -> BTreeMap<String, String> {
        let messages = body["messages"].as_array().unwrap();
        let text = |content: &Value| match content {
            Value::String(text) => text.clone(),
            other => other
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        };
        match self {
            Provider::OpenAi => messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| {
                    (
                        m["tool_call_id"].as_str().unwrap().to_owned(),
                        text(&m["content"]),
                    )
                })
                .collect(),
            Provider::Anthropic => messages
                .iter()
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["content"].as_array())
                .flatten()
                .filter(|block| block["type"] == "tool_result")
                .map(|b| {
                    (
                        b["tool_use_id"].as_str().unwrap().to_owned(),
                        text(&b["content"]),
                    )
                })
                .collect(),
        }
    }
}
