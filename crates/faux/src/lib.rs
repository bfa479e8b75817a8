//! The scripted model (`--provider faux --faux-script FILE`): one scripted
//! response per request, streamed as deltas through the same events as a
//! real provider. It is how users dry-run a pipeline offline and how the
//! tests run without a network.
//!
//! It must behave like a provider in every way the loop can observe:
//! streaming, stop reasons, errors, delays, and prompt cancellation when its
//! stream is dropped.

#![warn(missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde::Deserialize;
use serde_json::Value;

mod expect;

use self::expect::unmet;
pub use self::expect::{Expectation, ExpectedAttachment};
use leash_protocol::StreamEvent;
use leash_protocol::provider::{Provider, Request};
use leash_protocol::{Content, Message, StopReason, Usage};

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read faux script {path}: {source}")]
    Read {
        /// The script's path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a valid script.
    #[error("invalid faux script {path}: {message}")]
    Invalid {
        /// The script's path.
        path: String,
        /// What is wrong, with line and column.
        message: String,
    },
}

/// A whole script: the responses, in request order.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    List(Vec<ScriptedResponse>),
    Object(Script),
}

/// A parsed script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Script {
    /// One response per request, in order.
    pub responses: Vec<ScriptedResponse>,
    /// Answer every request past the end with the last response again.
    #[serde(default)]
    pub repeat_last: bool,
}

/// One scripted reply.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptedResponse {
    /// Reasoning text, streamed before the reply.
    #[serde(default)]
    pub thinking: Option<String>,
    /// Reply text, streamed word by word.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls, streamed after the text.
    #[serde(default)]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// How the reply ends; by default `toolUse` with tool calls, else `stop`.
    #[serde(default)]
    pub stop: Option<ScriptedStop>,
    /// Ends the reply as a provider error with this text (after any content).
    #[serde(default)]
    pub error: Option<String>,
    /// Wait before the first event.
    #[serde(default)]
    pub delay_ms: u64,
    /// Wait between deltas.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Token usage to report; by default a rough estimate (4 chars a token).
    #[serde(default)]
    pub usage: Option<ScriptedUsage>,
    /// What the request must hold; if it does not, the reply is an error
    /// that says what differs (so an offline test sees what reached the model).
    #[serde(default)]
    pub expect: Option<Expectation>,
    /// Append the text of the request's last user message to the reply
    /// (the built-in reply shows the prompt it got this way).
    #[serde(default)]
    pub echo_prompt: bool,
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptedToolCall {
    /// The call's id; by default `call_<request>_<n>`.
    #[serde(default)]
    pub id: Option<String>,
    /// The tool to call.
    pub name: String,
    /// The arguments as JSON.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// The argument text verbatim, for scripting broken JSON.
    #[serde(default)]
    pub arguments_raw: Option<String>,
}

/// How a scripted reply ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ScriptedStop {
    /// A complete answer.
    Stop,
    /// Cut off by the output token limit.
    Length,
    /// Tools are wanted.
    ToolUse,
}

/// Scripted usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptedUsage {
    /// Input tokens.
    #[serde(default)]
    pub input: u64,
    /// Output tokens.
    #[serde(default)]
    pub output: u64,
}

/// The opening of the built-in reply (docs/src/providers.md "The scripted model (`faux`)").
pub const BUILTIN_REPLY: &str = "This is leash's built-in offline model (--provider faux \
without --faux-script): no key, no network. For real answers set OPENAI_API_KEY or \
ANTHROPIC_API_KEY; to script replies and tool calls, pass --faux-script FILE.\n\
The prompt it got:\n\n";

impl Script {
    /// The script of `--provider faux` without `--faux-script`: every
    /// request answered at once with [`BUILTIN_REPLY`] and the prompt it
    /// got, so trying leash without a key takes one line.
    pub fn builtin() -> Script {
        Script {
            responses: vec![ScriptedResponse {
                text: Some(BUILTIN_REPLY.to_owned()),
                echo_prompt: true,
                ..ScriptedResponse::default()
            }],
            repeat_last: true,
        }
    }

    /// Parses a script from JSON text: an object `{"responses": [...]}` or
    /// a bare list of responses.
    pub fn parse(text: &str, path: &str) -> Result<Script, ScriptError> {
        let invalid = |message: String| ScriptError::Invalid {
            path: path.to_owned(),
            message,
        };
        // Parse into a Value first so errors carry line and column, then
        // into the typed shape so they name the field.
        let value: Value = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let file = if value.is_array() {
            serde_json::from_value::<Vec<ScriptedResponse>>(value).map(ScriptFile::List)
        } else {
            serde_json::from_value::<Script>(value).map(ScriptFile::Object)
        }
        .map_err(|e| invalid(e.to_string()))?;
        let script = match file {
            ScriptFile::List(responses) => Script {
                responses,
                repeat_last: false,
            },
            ScriptFile::Object(script) => script,
        };
        for (index, response) in script.responses.iter().enumerate() {
            for call in &response.tool_calls {
                if call.arguments.is_some() && call.arguments_raw.is_some() {
                    return Err(invalid(format!(
                        "response {}: tool call {} has both arguments and argumentsRaw",
                        index + 1,
                        call.name
                    )));
                }
            }
        }
        Ok(script)
    }

    /// Reads and parses a script file.
    pub fn load(path: &Path) -> Result<Script, ScriptError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: shown.clone(),
            source,
        })?;
        Script::parse(&text, &shown)
    }
}

/// The scripted provider. Each request takes the next response.
#[derive(Debug)]
pub struct FauxProvider {
    script: Arc<Script>,
    requests: AtomicUsize,
}

impl FauxProvider {
    /// A provider that plays `script`.
    pub fn new(script: Script) -> Self {
        FauxProvider {
            script: Arc::new(script),
            requests: AtomicUsize::new(0),
        }
    }

    /// How many requests it has answered.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Provider for FauxProvider {
    fn name(&self) -> &str {
        "faux"
    }

    fn stream(&self, request: Request<'_>) -> BoxStream<'static, StreamEvent> {
        let number = self.requests.fetch_add(1, Ordering::SeqCst) + 1;
        let available = self.script.responses.len();
        let response = match self.script.responses.get(number - 1) {
            Some(response) => response.clone(),
            None if self.script.repeat_last && available > 0 => {
                self.script.responses[available - 1].clone()
            }
            None => {
                let text = format!(
                    "the faux script has no response for request {number} (it has {available})"
                );
                return futures::stream::iter([StreamEvent::Error(text)]).boxed();
            }
        };
        if let Some(error) = response
            .expect
            .as_ref()
            .and_then(|expect| unmet(expect, &request, number))
        {
            return futures::stream::iter([StreamEvent::Error(error)]).boxed();
        }
        let mut response = response;
        if response.echo_prompt {
            let mut text = response.text.take().unwrap_or_default();
            text.push_str(&last_user_text(request.messages));
            response.text = Some(text);
        }
        let input_estimate = estimate_tokens(request);
        play(response, number, input_estimate).boxed()
    }
}

/// Streams one scripted response.
fn play(
    response: ScriptedResponse,
    number: usize,
    input_estimate: u64,
) -> impl futures::Stream<Item = StreamEvent> + Send + 'static {
    async_stream::stream! {
        if response.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(response.delay_ms)).await;
        }
        let pause = Duration::from_millis(response.chunk_delay_ms);
        let mut output_chars = 0usize;
        if let Some(thinking) = &response.thinking {
            output_chars += thinking.len();
            for piece in word_chunks(thinking) {
                yield StreamEvent::Thinking(piece.to_owned());
                if !pause.is_zero() { tokio::time::sleep(pause).await; }
            }
        }
        if let Some(text) = &response.text {
            output_chars += text.len();
            for piece in word_chunks(text) {
                yield StreamEvent::Text(piece.to_owned());
                if !pause.is_zero() { tokio::time::sleep(pause).await; }
            }
        }
        for (index, call) in response.tool_calls.iter().enumerate() {
            let id = call.id.clone().unwrap_or_else(|| format!("call_{number}_{}", index + 1));
            yield StreamEvent::ToolCallStart { key: index, id, name: call.name.clone() };
            let raw = match (&call.arguments_raw, &call.arguments) {
                (Some(raw), _) => raw.clone(),
                (None, Some(arguments)) => arguments.to_string(),
                (None, None) => "{}".to_owned(),
            };
            output_chars += raw.len();
            // Two fragments, split on a character boundary, like a real stream.
            let middle = (0..=raw.len() / 2).rev().find(|i| raw.is_char_boundary(*i)).unwrap_or(0);
            for fragment in [&raw[..middle], &raw[middle..]] {
                if !fragment.is_empty() {
                    yield StreamEvent::ToolCallArgs { key: index, fragment: fragment.to_owned() };
                }
            }
        }
        let usage = match response.usage {
            Some(usage) => Usage { input: usage.input, output: usage.output, ..Usage::default() },
            None => Usage { input: input_estimate, output: (output_chars as u64).div_ceil(4), ..Usage::default() },
        };
        yield StreamEvent::Usage(usage.with_total());
        if let Some(error) = response.error {
            yield StreamEvent::Error(error);
        } else {
            let stop = match response.stop {
                Some(ScriptedStop::Stop) => StopReason::Stop,
                Some(ScriptedStop::Length) => StopReason::Length,
                Some(ScriptedStop::ToolUse) => StopReason::ToolUse,
                None if response.tool_calls.is_empty() => StopReason::Stop,
                None => StopReason::ToolUse,
            };
            yield StreamEvent::Done(stop);
        }
    }
}

/// Splits text into deltas that each end after a run of whitespace.
fn word_chunks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let word_end = rest
            .char_indices()
            .skip_while(|(_, c)| c.is_whitespace())
            .find(|(_, c)| c.is_whitespace())
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        let end = rest[word_end..]
            .char_indices()
            .find(|(_, c)| !c.is_whitespace())
            .map(|(i, _)| word_end + i)
            .unwrap_or(rest.len());
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

/// The text of the last user message of `messages` (its text blocks,
/// joined), for [`ScriptedResponse::echo_prompt`].
fn last_user_text(messages: &[Message]) -> String {
    let last = messages.iter().rev().find_map(|message| match message {
        Message::User(user) => Some(user),
        _ => None,
    });
    last.into_iter()
        .flat_map(|user| &user.content)
        .filter_map(|content| match content {
            Content::Text { text } => Some(text.as_str()),
            Content::Attachment(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A rough input-token count (4 characters a token) for scripts that do not
/// give usage, so budgets and usage reports have something real to sum.
fn estimate_tokens(request: Request<'_>) -> u64 {
    let mut chars = request.system.len();
    for message in request.messages {
        chars += match message {
            Message::User(user) => user.content.iter().map(content_len).sum(),
            Message::Assistant(assistant) => assistant.text().len(),
            Message::ToolResult(result) => result.content.iter().map(content_len).sum(),
            Message::System(_) | Message::Custom(_) => 0,
        };
    }
    (chars as u64).div_ceil(4)
}

fn content_len(content: &Content) -> usize {
    match content {
        Content::Text { text } => text.len(),
        // As a real provider counts it, roughly: the bytes as sent.
        Content::Attachment(attachment) => attachment.size as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn collect(provider: &FauxProvider) -> Vec<StreamEvent> {
        let request = Request {
            transcript: &[],
            model: "faux",
            system: "",
            messages: &[],
            tools: &[],
            options: Default::default(),
        };
        provider.stream(request).collect().await
    }

    #[test]
    fn word_chunks_keep_every_character() {
        let text = "  first([]) returns\n undefined. ";
        let pieces: Vec<&str> = word_chunks(text).collect();
        assert_eq!(pieces.concat(), text);
        assert_eq!(pieces, vec!["  first([]) ", "returns\n ", "undefined. "]);
    }

    #[test]
    fn a_bare_list_and_an_object_both_parse() {
        let list = Script::parse(r#"[{"text": "hi"}]"#, "s.json").unwrap();
        let object = Script::parse(r#"{"responses": [{"text": "hi"}]}"#, "s.json").unwrap();
        assert_eq!(list, object);
    }

    #[test]
    fn an_unknown_field_is_named() {
        let error = Script::parse(r#"[{"txt": "hi"}]"#, "s.json").unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("invalid faux script s.json: unknown field `txt`"),
            "{text}"
        );
    }

    #[test]
    fn broken_json_reports_line_and_column() {
        let error = Script::parse("[\n{\"text\": }]", "s.json").unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
    }

    #[tokio::test]
    async fn a_tool_call_streams_start_fragments_usage_and_tool_use() {
        let script = Script::parse(
            r#"[{"toolCalls": [{"name": "read_file", "arguments": {"path": "a"}}]}]"#,
            "s",
        )
        .unwrap();
        let events = collect(&FauxProvider::new(script)).await;
        assert_eq!(
            events[0],
            StreamEvent::ToolCallStart {
                key: 0,
                id: "call_1_1".into(),
                name: "read_file".into()
            }
        );
        let args: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallArgs { fragment, .. } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(args, r#"{"path":"a"}"#);
        assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::ToolUse)));
    }

    #[tokio::test]
    async fn running_out_of_responses_is_a_provider_error() {
        let provider = FauxProvider::new(Script::parse(r#"[{"text": "one"}]"#, "s").unwrap());
        collect(&provider).await;
        let events = collect(&provider).await;
        assert_eq!(
            events,
            vec![StreamEvent::Error(
                "the faux script has no response for request 2 (it has 1)".into()
            )]
        );
    }

    #[tokio::test]
    async fn an_error_response_streams_its_text_then_fails() {
        let provider = FauxProvider::new(
            Script::parse(r#"[{"text": "partial", "error": "overloaded"}]"#, "s").unwrap(),
        );
        let events = collect(&provider).await;
        assert_eq!(events.first(), Some(&StreamEvent::Text("partial".into())));
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Error("overloaded".into()))
        );
    }
}
