//! Reading back a transcript `--transcript` wrote, for `--resume`
//! (docs/src/resume.md "Resume"). The file is untrusted input: every line is checked (the
//! schema version, well-formed messages, each tool call answered by
//! exactly one result with the call's id and name) before any request,
//! and the first problem is reported with its line. What passes is the
//! conversation as it was received, changed only where the wire that
//! resumes it cannot take a block (another provider's thinking), and
//! then only with a notice. It must never invent, reorder or rewrite a
//! message or a tool result.

mod attachments;
mod error;
#[cfg(test)]
mod tests;

pub use attachments::{Recorded, Reread, RereadError, STDIN};
pub use error::ResumeError;
use error::at;

use std::collections::HashMap;

use serde::Deserialize;

use crate::render::transcript::{SessionLine, TRANSCRIPT_VERSION};
use leash_protocol::{AssistantContent, Attachment, Message, StopReason};

/// The wire a step of a transcript was run on, as its session line names
/// it (`api`): two OpenAI APIs share a provider name but not their
/// reasoning items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// The scripted model.
    Faux,
    /// OpenAI Chat Completions.
    Chat,
    /// The OpenAI Responses API.
    Responses,
    /// Anthropic Messages.
    Anthropic,
    /// Azure OpenAI's Chat Completions.
    AzureChat,
    /// Azure OpenAI's Responses API.
    AzureResponses,
    /// Google's Gemini API (`streamGenerateContent`).
    Gemini,
    /// Amazon Bedrock's ConverseStream.
    Bedrock,
}

impl Wire {
    /// The session line's `api`.
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::Faux => "faux",
            Wire::Chat => "openai-chat",
            Wire::Responses => "openai-responses",
            Wire::Anthropic => "anthropic-messages",
            Wire::AzureChat => "azure-openai-chat",
            Wire::AzureResponses => "azure-openai-responses",
            Wire::Gemini => "gemini-generate-content",
            Wire::Bedrock => "bedrock-converse",
        }
    }

    /// The provider name the wire's messages carry.
    pub fn provider(self) -> &'static str {
        match self {
            Wire::Faux => "faux",
            Wire::Chat | Wire::Responses => "openai",
            Wire::Anthropic => "anthropic",
            Wire::AzureChat | Wire::AzureResponses => "azure",
            Wire::Gemini => "gemini",
            Wire::Bedrock => "bedrock",
        }
    }

    fn parse(api: &str) -> Option<Wire> {
        [
            Wire::Faux,
            Wire::Chat,
            Wire::Responses,
            Wire::Anthropic,
            Wire::AzureChat,
            Wire::AzureResponses,
            Wire::Gemini,
            Wire::Bedrock,
        ]
        .into_iter()
        .find(|wire| wire.as_str() == api)
    }
}

/// A wire's caps on attachments are its `media::limits` wire's.
impl From<Wire> for leash_media::limits::Wire {
    fn from(wire: Wire) -> Self {
        use leash_media::limits::Wire as Caps;
        match wire {
            Wire::Faux => Caps::Faux,
            Wire::Chat | Wire::AzureChat => Caps::ChatCompletions,
            Wire::Responses | Wire::AzureResponses => Caps::Responses,
            Wire::Gemini => Caps::Gemini,
            Wire::Bedrock => Caps::Bedrock,
            Wire::Anthropic => Caps::Anthropic,
        }
    }
}

/// A transcript that passed every check, ready to be the start of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    /// The conversation, oldest first, as the resuming wire will send it.
    pub messages: Vec<Message>,
    /// The system message of the transcript's last step.
    pub system: String,
    /// The assistant messages restored (earlier turns).
    pub turns: u32,
    /// The lines read (every line of the file).
    pub lines: u32,
    /// What was left out, and why, for the event stream.
    pub notices: Vec<String>,
    /// The attachments the conversation holds, recorded without their
    /// bytes: [`Restored::reattach`] reads them again.
    pub attachments: Vec<Recorded>,
    /// How the file ended.
    pub tail: Tail,
}

impl Restored {
    /// `text` (the file this was restored from) as whole lines: a cut
    /// last line left out, a missing last newline added.
    pub fn whole_lines(text: &str) -> String {
        split_tail(text).0.into_owned()
    }

    /// Every recorded attachment read again and given its bytes, in the
    /// order of the transcript; the first that is gone, cannot be read or
    /// is not the file the run saw is the error, naming its line.
    pub fn reattach(&mut self, reread: &impl Reread) -> Result<(), ResumeError> {
        attachments::reattach(&mut self.messages, &self.attachments, reread)
    }

    /// The attachments of the restored conversation (with their bytes once
    /// [`Restored::reattach`] ran), for the request caps.
    pub fn attachments(&self) -> impl Iterator<Item = &Attachment> {
        attachments::attachments_of(&self.messages)
    }
}

/// Only the role, to tell a session line from a message.
#[derive(Deserialize)]
struct Role {
    role: String,
}

/// A tool call waiting for its result.
struct Open {
    name: String,
    line: usize,
}

/// Checks `text` (a whole transcript) and restores its conversation for
/// `target`.
pub fn restore(text: &str, target: Wire) -> Result<Restored, ResumeError> {
    if text.is_empty() {
        return Err(at(1, "the transcript is empty"));
    }
    let (whole, tail) = split_tail(text);
    if whole.is_empty() {
        return Err(at(1, "the only line is cut off (no newline at its end)"));
    }
    let mut restored = Restored {
        messages: Vec::new(),
        system: String::new(),
        turns: 0,
        lines: 0,
        notices: Vec::new(),
        attachments: Vec::new(),
        tail,
    };
    if tail == Tail::Cut {
        let line = whole.lines().count() + 1;
        restored.notices.push(format!(
            "--resume: line {line} is cut off (no newline at its end: a write cut short, as by a kill) and is left out"
        ));
    }
    let mut wire: Option<Wire> = None;
    let mut open = OpenCalls::default();
    let mut seen_ids: HashMap<String, usize> = HashMap::new();
    let mut dropped_thinking = 0usize;
    for (index, raw) in whole.split_terminator('\n').enumerate() {
        let line = index + 1;
        restored.lines = u32::try_from(line).unwrap_or(u32::MAX);
        let role: Role = serde_json::from_str(raw)
            .map_err(|error| at(line, format!("not a transcript line: {error}")))?;
        if role.role == "session" {
            open.leave_out_unanswered(&mut restored, &mut seen_ids);
            let session: SessionLine = serde_json::from_str(raw)
                .map_err(|error| at(line, format!("not a session line: {error}")))?;
            if session.schema_version != TRANSCRIPT_VERSION {
                return Err(at(
                    line,
                    format!(
                        "schema version {}, this leash reads version {TRANSCRIPT_VERSION}",
                        session.schema_version
                    ),
                ));
            }
            let Some(step) = Wire::parse(&session.api) else {
                return Err(at(line, format!("unknown api {:?}", session.api)));
            };
            wire = Some(step);
            restored.system = session.system;
            continue;
        }
        let Some(step) = wire else {
            return Err(at(
                line,
                "no session line with a schema version before the first message \
                 (not a transcript this leash wrote)",
            ));
        };
        let message: Message = serde_json::from_str(raw)
            .map_err(|error| at(line, format!("not a transcript message: {error}")))?;
        attachments::record(
            &message,
            line,
            restored.messages.len(),
            &mut restored.attachments,
        )?;
        match message {
            Message::User(user) => {
                open.check_answered()?;
                restored.messages.push(Message::User(user));
            }
            Message::ToolResult(result) => {
                let Some(call) = open.calls.remove(&result.tool_call_id) else {
                    return Err(at(
                        line,
                        format!(
                            "a tool result for {:?}, which no open tool call has",
                            result.tool_call_id
                        ),
                    ));
                };
                if call.name != result.tool_name {
                    return Err(at(
                        line,
                        format!(
                            "the result of {:?} names tool {:?}, the call (line {}) {:?}",
                            result.tool_call_id, result.tool_name, call.line, call.name
                        ),
                    ));
                }
                restored.messages.push(Message::ToolResult(result));
            }
            Message::Assistant(mut assistant) => {
                open.check_answered()?;
                if assistant.provider != step.provider() {
                    return Err(at(
                        line,
                        format!(
                            "a reply from provider {:?} in a step on {}",
                            assistant.provider,
                            step.as_str()
                        ),
                    ));
                }
                // A reply that failed or was stopped ended its run: its
                // calls never ran, and no request ever held it.
                if matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) {
                    restored.notices.push(format!(
                        "--resume: the unfinished reply on line {line} (stopReason {}) is left out",
                        assistant.stop_reason.as_str()
                    ));
                    continue;
                }
                for call in assistant.tool_calls() {
                    if let Some(first) = seen_ids.insert(call.id.clone(), line) {
                        return Err(at(
                            line,
                            format!(
                                "tool call id {:?} was used before, on line {first}",
                                call.id
                            ),
                        ));
                    }
                    check_id(&call.id, step, target, line)?;
                    open.order.push(call.id.clone());
                    open.reply = Some((restored.messages.len(), line));
                    open.calls.insert(
                        call.id.clone(),
                        Open {
                            name: call.name.clone(),
                            line,
                        },
                    );
                }
                if step != target && target != Wire::Faux {
                    let before = assistant.content.len();
                    assistant
                        .content
                        .retain(|block| !matches!(block, AssistantContent::Thinking { .. }));
                    dropped_thinking += before - assistant.content.len();
                    if assistant.content.is_empty() {
                        continue;
                    }
                }
                restored.turns = restored.turns.saturating_add(1);
                restored.messages.push(Message::Assistant(assistant));
            }
            // The library's roles; a transcript `--transcript` wrote holds none.
            other @ (Message::System(_) | Message::Custom(_)) => {
                return Err(at(
                    line,
                    format!(
                        "a message of role {:?}, which leash's transcripts never hold",
                        other.role()
                    ),
                ));
            }
        }
    }
    open.leave_out_unanswered(&mut restored, &mut seen_ids);
    if wire.is_none() {
        return Err(at(1, "no session line: not a transcript this leash wrote"));
    }
    if dropped_thinking > 0 {
        restored.notices.push(format!(
            "--resume: {dropped_thinking} thinking block(s) from another provider or API left out; {} cannot take them",
            target.as_str()
        ));
    }
    Ok(restored)
}

/// The tool calls of the last reply still waiting for their results: a
/// map, so a reply with very many calls costs no quadratic search, and
/// their order, so the first unanswered one is the one reported.
#[derive(Default)]
struct OpenCalls {
    calls: HashMap<String, Open>,
    order: Vec<String>,
    /// The index in the restored messages and the line of the reply
    /// that made the calls.
    reply: Option<(usize, usize)>,
}

impl OpenCalls {
    /// At the end of a step (the next session line, or the end of the
    /// file): a reply whose calls did not all get a result, with nothing
    /// but its results after it, is what a run killed while its tools
    /// ran leaves. It and its results are left out with a notice: its
    /// turn never completed, and no request ever held it; its call ids
    /// are free again (the model may ask the same calls again).
    fn leave_out_unanswered(
        &mut self,
        restored: &mut Restored,
        seen_ids: &mut HashMap<String, usize>,
    ) {
        let unanswered = self.order.iter().any(|id| self.calls.contains_key(id));
        if let (true, Some((index, line))) = (unanswered, self.reply) {
            for id in &self.order {
                seen_ids.remove(id);
            }
            let results = restored.messages.len().saturating_sub(index + 1);
            restored.messages.truncate(index);
            restored.attachments.retain(|record| record.message < index);
            restored.turns = restored.turns.saturating_sub(1);
            restored.notices.push(format!(
                "--resume: the reply on line {line} and its {results} tool result(s) are left out: \
                 its tool calls never all finished (the run was stopped, as by a kill, while they ran)"
            ));
        }
        self.calls.clear();
        self.order.clear();
        self.reply = None;
    }

    /// Every call answered (before the next message), or the first that
    /// was not.
    fn check_answered(&mut self) -> Result<(), ResumeError> {
        let first = self
            .order
            .iter()
            .find_map(|id| self.calls.get(id).map(|call| (id, call)));
        if let Some((id, call)) = first {
            return Err(at(
                call.line,
                format!("tool call {id:?} ({}) has no tool result", call.name),
            ));
        }
        self.order.clear();
        self.reply = None;
        Ok(())
    }
}

/// How a transcript ends: a run killed while it wrote a line leaves that
/// line without its newline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Every line ends in a newline.
    Whole,
    /// The last line is a whole JSON value without its newline: it is read.
    NoNewline,
    /// The last line is not whole (a write cut short): it is left out.
    Cut,
}

/// `text`'s whole lines, each ending in a newline, and how it ended.
fn split_tail(text: &str) -> (std::borrow::Cow<'_, str>, Tail) {
    if text.ends_with('\n') {
        return (text.into(), Tail::Whole);
    }
    let start = text.rfind('\n').map_or(0, |end| end + 1);
    match serde_json::from_str::<serde::de::IgnoredAny>(&text[start..]) {
        Ok(_) => (format!("{text}\n").into(), Tail::NoNewline),
        Err(_) => (text[..start].into(), Tail::Cut),
    }
}

/// A tool call id from another wire must fit the wire that resumes:
/// Anthropic takes letters, digits, `_` and `-`; OpenAI at most 40
/// characters. Rewriting ids would make the transcript say something the
/// earlier run did not.
fn check_id(id: &str, step: Wire, target: Wire, line: usize) -> Result<(), ResumeError> {
    if step == target || target == Wire::Faux {
        return Ok(());
    }
    let fits = match target {
        // Converse's toolUseId: letters, digits, `_` and `-`, as Anthropic's.
        Wire::Anthropic | Wire::Bedrock => {
            !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        }
        Wire::Chat | Wire::Responses | Wire::AzureChat | Wire::AzureResponses => {
            !id.is_empty() && id.chars().count() <= 40
        }
        // Gemini sends back the ids it gave; any other it leaves out.
        Wire::Gemini | Wire::Faux => true,
    };
    if fits {
        Ok(())
    } else {
        Err(ResumeError::Unfaithful {
            line,
            problem: format!(
                "tool call id {id:?} from {} cannot go to {} unchanged",
                step.as_str(),
                target.as_str()
            ),
        })
    }
}

/// A `--resume` the plan holds: the file as read (a new `--transcript`
/// starts with a copy of it) and the conversation restored from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
    /// The path as given.
    pub path: std::path::PathBuf,
    /// The file's whole lines, checked (a cut last line left out, a
    /// missing last newline added).
    pub text: String,
    /// The bytes the file held when it was read.
    pub read_bytes: u64,
    /// What the run starts from.
    pub restored: Restored,
}
