//! The JSON a shell hook reads and writes (docs/src/hooks.md "Hooks"): one object on
//! stdin, one object (or nothing) on stdout, read strictly — an unknown
//! field, a wrong type or a second value is "not that JSON", and fails
//! closed, so a typo such as `"blocked": true` never lets a call through.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::spec::HookEvent;
use leash_protocol::{AssistantMessage, ToolCall, ToolResultMessage, Usage};

/// The call as a hook sees it: `arguments` are the ones that will run (a
/// previous hook's replacement included).
#[derive(Debug, Serialize)]
pub struct CallInput<'a> {
    /// The call's id.
    pub id: &'a str,
    /// The tool's name.
    pub name: &'a str,
    /// The arguments.
    pub arguments: &'a Value,
}

impl<'a> CallInput<'a> {
    /// `call` with `arguments`.
    pub fn new(call: &'a ToolCall, arguments: &'a Value) -> Self {
        CallInput {
            id: &call.id,
            name: &call.name,
            arguments,
        }
    }
}

/// An executed call's result, as `after-tool-call` sees it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultInput {
    /// The result's text.
    pub content: String,
    /// Whether it is an error.
    pub is_error: bool,
}

/// An assistant message with its `role`, as the event stream shows it.
#[derive(Debug, Serialize)]
pub struct Assistant<'a> {
    role: &'static str,
    #[serde(flatten)]
    message: &'a AssistantMessage,
}

impl<'a> Assistant<'a> {
    /// `message` with `"role": "assistant"`.
    pub fn new(message: &'a AssistantMessage) -> Self {
        Assistant {
            role: "assistant",
            message,
        }
    }
}

/// The one object a hook reads on stdin.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookInput<'a> {
    /// `before-tool-call`, `after-tool-call` or `finish-turn`.
    pub event: &'static str,
    /// The turn, 1 for the first.
    pub turn: u32,
    /// Tokens the run used so far (this turn's reply included).
    pub usage: Usage,
    /// leash's working directory (the hook's too).
    pub cwd: &'a Path,
    /// The call (tool-call events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<CallInput<'a>>,
    /// The call's result (`after-tool-call`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<ResultInput>,
    /// The turn's assistant message (`finish-turn`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Assistant<'a>>,
    /// The turn's tool results (`finish-turn`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_results: Option<&'a [ToolResultMessage]>,
}

impl HookInput<'_> {
    /// The input as one line of JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_else(|_| b"{}".to_vec());
        bytes.push(b'\n');
        bytes
    }
}

/// A `before-tool-call` answer.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BeforeReply {
    /// Do not run the call.
    #[serde(default)]
    pub block: bool,
    /// What the model is told (with `block`).
    pub reason: Option<String>,
    /// The blocked result asks the batch to terminate (with `block`).
    #[serde(default)]
    pub terminate: bool,
    /// Run with these arguments instead (an object).
    pub arguments: Option<serde_json::Map<String, Value>>,
}

/// An `after-tool-call` answer: each field present replaces the result's.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AfterReply {
    /// The result's new text.
    pub content: Option<String>,
    /// The new error flag.
    pub is_error: Option<bool>,
    /// The new terminate hint.
    pub terminate: Option<bool>,
}

/// What `finish-turn` may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// End the run after this turn.
    End,
    /// Make one more request.
    Continue,
}

/// A `finish-turn` answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinishReply {
    /// `None` keeps the default schedule.
    pub action: Option<Action>,
    /// With `continue`: a message the model reads before its next turn.
    pub reason: Option<String>,
}

/// Parses a hook's stdout for `event`: nothing (only whitespace) is the
/// empty answer; anything else must be exactly one object of that shape.
pub fn parse<T: Default + serde::de::DeserializeOwned>(
    event: HookEvent,
    stdout: &[u8],
) -> Result<T, String> {
    let text = std::str::from_utf8(stdout).map_err(|_| "its output is not UTF-8".to_owned())?;
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    if !text.trim_start().starts_with('{') {
        return Err(format!(
            "its output is not a JSON object ({})",
            shape(event)
        ));
    }
    serde_json::from_str(text).map_err(|error| {
        format!(
            "its output is not the JSON {event} expects ({}): {error}",
            shape(event)
        )
    })
}

/// The answer shape of `event`, for error messages.
fn shape(event: HookEvent) -> &'static str {
    match event {
        HookEvent::BeforeToolCall => {
            r#"{} or {"block": true, "reason": "...", "terminate": false} or {"arguments": {...}}"#
        }
        HookEvent::AfterToolCall => {
            r#"any of {"content": "...", "isError": true, "terminate": true}"#
        }
        HookEvent::FinishTurn => {
            r#"{"action": "end"} or {"action": "continue", "reason": "..."} or {}"#
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn before_answers_parse_strictly() {
        let parse = |text: &str| parse::<BeforeReply>(HookEvent::BeforeToolCall, text.as_bytes());
        assert_eq!(parse(""), Ok(BeforeReply::default()));
        assert_eq!(parse(" \n"), Ok(BeforeReply::default()));
        assert_eq!(parse("{}"), Ok(BeforeReply::default()));
        let block = parse(r#"{"block": true, "reason": "no", "terminate": true}"#).unwrap();
        assert!(block.block && block.terminate);
        assert_eq!(block.reason.as_deref(), Some("no"));
        let args = parse(r#"{"arguments": {"path": "b"}}"#).unwrap();
        assert_eq!(
            args.arguments.map(Value::Object),
            Some(json!({"path": "b"}))
        );
        for bad in [
            r#"{"blocked": true}"#,
            r#"{"block": "yes"}"#,
            r#"{"arguments": [1]}"#,
            r#"{} {}"#,
            "ok",
            "[]",
            "{",
        ] {
            let error = parse(bad).unwrap_err();
            assert!(error.starts_with("its output is not"), "{bad}: {error}");
        }
        assert!(super::parse::<BeforeReply>(HookEvent::BeforeToolCall, b"\xff").is_err());
    }

    #[test]
    fn after_and_finish_answers_parse_strictly() {
        let after = parse::<AfterReply>(
            HookEvent::AfterToolCall,
            br#"{"content": "x", "isError": false}"#,
        )
        .unwrap();
        assert_eq!(after.content.as_deref(), Some("x"));
        assert_eq!((after.is_error, after.terminate), (Some(false), None));
        assert!(parse::<AfterReply>(HookEvent::AfterToolCall, br#"{"is_error": true}"#).is_err());
        let finish = |text: &str| parse::<FinishReply>(HookEvent::FinishTurn, text.as_bytes());
        assert_eq!(finish("").unwrap().action, None);
        assert_eq!(
            finish(r#"{"action":"end"}"#).unwrap().action,
            Some(Action::End)
        );
        assert_eq!(
            finish(r#"{"action":"continue"}"#).unwrap().action,
            Some(Action::Continue)
        );
        assert!(finish(r#"{"action":"stop"}"#).is_err());
        assert_eq!(
            finish(r#"{"action":"continue","reason":"tests fail"}"#)
                .unwrap()
                .reason
                .as_deref(),
            Some("tests fail")
        );
    }

    #[test]
    fn the_input_is_one_line_of_camel_case_json() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a"}),
        };
        let input = HookInput {
            event: "after-tool-call",
            turn: 2,
            usage: Usage::default(),
            cwd: Path::new("/w"),
            tool_call: Some(CallInput::new(&call, &call.arguments)),
            result: Some(ResultInput {
                content: "text".into(),
                is_error: false,
            }),
            message: None,
            tool_results: None,
        };
        let bytes = input.to_bytes();
        assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            value,
            json!({
                "event": "after-tool-call", "turn": 2, "cwd": "/w",
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
                "toolCall": {"id": "c1", "name": "read_file", "arguments": {"path": "a"}},
                "result": {"content": "text", "isError": false}
            })
        );
    }
}
