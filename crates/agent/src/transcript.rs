//! System messages read as a sequence of changes (ARCHITECTURE.md §1.2,
//! "System and custom messages"; Pi's `utils/transcript.ts` and the loop's
//! `declareToolChanges`): the system prompt and the tools a transcript
//! has told the model of at its end, the change that brings them in line
//! with the tools that can run, and the request a context becomes.
//!
//! Pure functions over messages: nothing here keeps state or does I/O,
//! and none of them changes a message it is given.

use std::borrow::Cow;

use leash_protocol::{Message, Sections, SystemMessage, ToolReference, ToolSpec, now_ms};

/// Who tells the model its system prompt and tools.
///
/// With the transcript telling it, an agent's tools changed between
/// prompts are declared in a system message before the next prompt:
///
/// ```
/// use std::sync::Arc;
///
/// use leash_agent::{Agent, Declarations, LoopConfig, NoHooks, ToolExecution};
/// use leash_protocol::Message;
/// use leash_faux::{FauxProvider, Script};
/// use leash_protocol::tool::{Tool, ToolError, ToolUpdates};
/// use leash_protocol::{ToolOutput, ToolSpec};
///
/// /// A tool that only has a name (this example never calls it).
/// struct Named(&'static str);
///
/// impl Tool for Named {
///     fn spec(&self) -> ToolSpec {
///         let parameters = serde_json::json!({"type": "object"});
///         ToolSpec { name: self.0.to_owned(), description: String::new(), parameters }
///     }
///     fn execute<'a>(
///         &'a self,
///         _call_id: &'a str,
///         _args: serde_json::Value,
///         _cancel: tokio_util::sync::CancellationToken,
///         _updates: ToolUpdates,
///     ) -> futures::future::BoxFuture<'a, Result<ToolOutput, ToolError>> {
///         Box::pin(async { Ok(ToolOutput::text("")) })
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let read: Arc<dyn Tool> = Arc::new(Named("read_file"));
/// let list: Arc<dyn Tool> = Arc::new(Named("list_dir"));
/// let script = Script::parse(r#"[{"text": "one"}, {"text": "two"}]"#, "inline")?;
/// let agent = Agent::new(
///     Arc::new(FauxProvider::new(script)),
///     LoopConfig {
///         model: "faux".to_owned(),
///         system: "Be brief.".to_owned(),
///         tools: vec![read.clone()],
///         declarations: Declarations::InTranscript,
///         tool_execution: ToolExecution::Parallel,
///         hooks: Arc::new(NoHooks),
///     },
/// );
/// // The prompt and tools are the transcript's leading system message.
/// assert_eq!(agent.messages()[0].role(), "system");
/// agent.prompt(vec![Message::user_text("first")]).await?;
///
/// agent.set_tools(vec![read, list]);
/// let added = agent.prompt(vec![Message::user_text("second")]).await?;
/// let Message::System(declared) = &added[0] else { panic!("no declaration") };
/// assert_eq!(declared.tools_added[0].name, "list_dir");
///
/// agent.reset()?;
/// let Message::System(baseline) = &agent.messages()[0] else { panic!() };
/// assert_eq!((baseline.content.as_str(), baseline.tools_added.len()), ("Be brief.", 2));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Declarations {
    /// The run's configuration: `system` and `tools` go with every
    /// request and the transcript holds no declarations (the CLI's way,
    /// and Pi's `Context.systemPrompt`/`tools`).
    #[default]
    Beside,
    /// The transcript (Pi's agent): its system messages declare the tools,
    /// and before each request the loop adds one declaring whatever
    /// changed, so the model is told of exactly the tools that can run.
    InTranscript,
}

/// The tools the transcript's system messages leave declared, in the order
/// they were declared (a redeclared tool keeps its place; one withdrawn and
/// declared again moves to the end), as Pi's `getCurrentTools`.
pub fn current_tools(messages: &[Message]) -> Vec<ToolSpec> {
    replay_tools(system_messages(messages))
}

fn replay_tools<'a>(systems: impl Iterator<Item = &'a SystemMessage>) -> Vec<ToolSpec> {
    let mut tools: Vec<ToolSpec> = Vec::new();
    for system in systems {
        tools.retain(|tool| !system.tools_removed.iter().any(|r| r.name == tool.name));
        for added in &system.tools_added {
            match tools.iter_mut().find(|tool| tool.name == added.name) {
                Some(tool) => *tool = added.clone(),
                None => tools.push(added.clone()),
            }
        }
    }
    tools
}

/// The sections the transcript's system messages leave, patched by name
/// in order (Pi's replay in `getCurrentSystemMessage`).
pub fn current_sections(messages: &[Message]) -> Sections {
    let mut sections = Sections::default();
    for system in system_messages(messages) {
        sections.patch(&system.sections);
    }
    sections
}

/// The system prompt a transcript leaves: `base` (the configuration's),
/// then each system message's text, then the sections it leaves in the
/// order they were first given — the non-empty parts joined by a blank
/// line (Pi's `getCurrentSystemPrompt`). The order is a function of the
/// transcript alone, so a provider's prompt cache sees the same prefix
/// every time. Borrowed when no system message adds text.
pub fn current_system_prompt<'a>(base: &'a str, messages: &[Message]) -> Cow<'a, str> {
    let sections = current_sections(messages);
    let mut added = system_messages(messages)
        .map(|system| system.content.as_str())
        .chain(sections.texts())
        .filter(|text| !text.is_empty())
        .peekable();
    if added.peek().is_none() {
        return Cow::Borrowed(base);
    }
    let parts: Vec<&str> = std::iter::once(base)
        .filter(|text| !text.is_empty())
        .chain(added)
        .collect();
    Cow::Owned(parts.join("\n\n"))
}

/// Every system message replayed into one: the prompt so far, the
/// sections and the tools declared so far, or `None` when the transcript
/// holds none of them (Pi's `getCurrentSystemMessage`: what `reset` keeps).
pub fn current_system_message(messages: &[Message]) -> Option<SystemMessage> {
    let timestamp = system_messages(messages).next()?.timestamp;
    let content: Vec<&str> = system_messages(messages)
        .map(|system| system.content.as_str())
        .filter(|text| !text.is_empty())
        .collect();
    let content = content.join("\n\n");
    let sections = current_sections(messages);
    let tools_added = current_tools(messages);
    if content.is_empty() && sections.is_empty() && tools_added.is_empty() {
        return None;
    }
    Some(SystemMessage {
        content,
        sections,
        tools_added,
        tools_removed: Vec::new(),
        timestamp,
    })
}

/// The leading system message for a prompt and tools; `None` when both
/// are empty, so an empty transcript stays empty (Pi's
/// `createInitialSystemMessage`).
pub fn initial_system_message(system: &str, tools: &[ToolSpec]) -> Option<Message> {
    if system.is_empty() && tools.is_empty() {
        return None;
    }
    Some(Message::System(SystemMessage {
        content: system.to_owned(),
        tools_added: tools.to_vec(),
        timestamp: 0,
        ..SystemMessage::default()
    }))
}

/// What must be declared and withdrawn to go from the tools `declared` to
/// the tools `current`: a changed tool is withdrawn and declared again
/// (Pi's `getToolStateChanges`).
pub fn tool_state_changes(
    declared: &[ToolSpec],
    current: &[ToolSpec],
) -> (Vec<ToolSpec>, Vec<ToolReference>) {
    let find = |tools: &[ToolSpec], name: &str| tools.iter().position(|t| t.name == name);
    let added = current
        .iter()
        .filter(|tool| find(declared, &tool.name).is_none_or(|i| declared[i] != **tool))
        .cloned()
        .collect();
    let removed = declared
        .iter()
        .filter(|tool| find(current, &tool.name).is_none_or(|i| current[i] != **tool))
        .map(|tool| ToolReference {
            name: tool.name.clone(),
        })
        .collect();
    (added, removed)
}

/// The messages about to be appended, with the tool declarations made
/// right: when the transcript (`context` then `pending`) does not declare
/// exactly the tools that can run, the last pending system message gets
/// the change, or a new system message carries it, placed before the first
/// pending message of another role (Pi's `declareToolChanges`). Unchanged
/// when there is nothing to declare.
pub fn declare_tool_changes(
    context: &[Message],
    runnable: &[ToolSpec],
    mut pending: Vec<Message>,
) -> Vec<Message> {
    let last_system = pending
        .iter()
        .rposition(|message| matches!(message, Message::System(_)));
    // The pending system message's own tool fields are recomputed, so they
    // do not count as already declared.
    let declared = replay_tools(
        system_messages(context).chain(
            pending
                .iter()
                .enumerate()
                .filter(|(index, _)| Some(*index) != last_system)
                .filter_map(|(_, message)| as_system(message)),
        ),
    );
    let (tools_added, tools_removed) = tool_state_changes(&declared, runnable);
    match last_system.and_then(|index| match &mut pending[index] {
        Message::System(system) => Some(system),
        _ => None,
    }) {
        // Only the tool fields are rewritten: its text and sections stay.
        Some(system) => {
            system.tools_added = tools_added;
            system.tools_removed = tools_removed;
        }
        None if tools_added.is_empty() && tools_removed.is_empty() => {}
        None => {
            let update = Message::System(SystemMessage {
                tools_added,
                tools_removed,
                timestamp: now_ms(),
                ..SystemMessage::default()
            });
            let at = pending
                .iter()
                .position(|message| !matches!(message, Message::System(_)))
                .unwrap_or(pending.len());
            pending.insert(at, update);
        }
    }
    pending
}

/// What one request carries, resolved from the context the loop holds.
#[derive(Debug)]
pub struct ResolvedRequest<'a> {
    /// The system prompt: the configuration's, then what system messages add.
    pub system: Cow<'a, str>,
    /// The conversation: the context without system and custom messages.
    pub messages: Cow<'a, [Message]>,
    /// The tools the model is told of.
    pub tools: Cow<'a, [ToolSpec]>,
}

/// Resolves `context` (as `convert_to_llm` left it) for a wire: system
/// messages fold into the system prompt (and, with
/// [`Declarations::InTranscript`], name the tools), custom messages are
/// left out. Borrows everything when the context holds neither, as every
/// CLI run's does.
pub fn resolve_request<'a>(
    base_system: &'a str,
    context: &'a [Message],
    declarations: Declarations,
    runnable: &'a [ToolSpec],
) -> ResolvedRequest<'a> {
    let tools = match declarations {
        Declarations::Beside => Cow::Borrowed(runnable),
        Declarations::InTranscript => Cow::Owned(current_tools(context)),
    };
    if context.iter().all(Message::is_conversation) {
        return ResolvedRequest {
            system: Cow::Borrowed(base_system),
            messages: Cow::Borrowed(context),
            tools,
        };
    }
    ResolvedRequest {
        system: current_system_prompt(base_system, context),
        messages: Cow::Owned(
            context
                .iter()
                .filter(|message| message.is_conversation())
                .cloned()
                .collect(),
        ),
        tools,
    }
}

fn system_messages(messages: &[Message]) -> impl Iterator<Item = &SystemMessage> {
    messages.iter().filter_map(as_system)
}

fn as_system(message: &Message) -> Option<&SystemMessage> {
    match message {
        Message::System(system) => Some(system),
        _ => None,
    }
}
