//! Pi's `AgentState` on the `Agent`: the model, system prompt, thinking
//! level, session id, tools and messages a host sets between prompts, and
//! the run's view (streaming message, pending tool calls, error message).
//!
//! A setter must never emit an event or reach the run in progress: it
//! changes what the next run uses.

use std::sync::Arc;

use super::{Agent, lock};
use crate::Declarations;
use crate::transcript::current_system_prompt;
use leash_protocol::provider::ThinkingLevel;
use leash_protocol::tool::Tool;
use leash_protocol::{Message, SystemMessage};

impl Agent {
    // A run in progress keeps what it started with, except that its
    // messages are appended to whatever transcript is set meanwhile.

    /// Replaces the transcript (Pi's `state.messages = …`); the agent keeps
    /// its own copy.
    ///
    /// The state a host sets between prompts, and what a failed run leaves:
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use leash_agent::{Agent, Declarations, LoopConfig, NoHooks, ToolExecution};
    /// use leash_protocol::Message;
    /// use leash_protocol::provider::ThinkingLevel;
    /// use leash_faux::{FauxProvider, Script};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let script = Script::parse(r#"[{"error": "overloaded"}]"#, "inline script")?;
    /// let agent = Agent::new(
    ///     Arc::new(FauxProvider::new(script)),
    ///     LoopConfig {
    ///         model: "faux".to_owned(),
    ///         system: String::new(),
    ///         tools: Vec::new(),
    ///         declarations: Declarations::Beside,
    ///         tool_execution: ToolExecution::Parallel,
    ///         hooks: Arc::new(NoHooks),
    ///     },
    /// );
    /// agent.set_model("faux-large");
    /// agent.set_thinking_level(ThinkingLevel::High);
    /// agent.set_session_id(Some("session-1".to_owned()));
    /// agent.set_messages(vec![Message::user_text("Where were we?")]);
    /// agent.continue_run().await?;
    /// assert_eq!(agent.error_message().as_deref(), Some("overloaded"));
    /// assert_eq!(agent.messages().len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_messages(&self, messages: Vec<Message>) {
        *lock(&self.shared.transcript) = messages;
    }

    /// The model the next run asks.
    pub fn model(&self) -> String {
        lock(&self.shared.config).model.clone()
    }

    /// Sets the model for the next run.
    pub fn set_model(&self, model: impl Into<String>) {
        lock(&self.shared.config).model = model.into();
    }

    /// The system prompt the next run sends; empty for none: the
    /// configuration's, then what the transcript's system messages add
    /// (Pi's `state.systemPrompt`, replayed).
    pub fn system_prompt(&self) -> String {
        let config = lock(&self.shared.config);
        current_system_prompt(&config.system, &lock(&self.shared.transcript)).into_owned()
    }

    /// Sets the system prompt for the next run. With
    /// [`Declarations::InTranscript`] it is the leading system message's
    /// text that changes (one is put first when there is none): the
    /// transcript stays the one place the prompt is told.
    pub fn set_system_prompt(&self, system: impl Into<String>) {
        let mut config = lock(&self.shared.config);
        if config.declarations == Declarations::Beside {
            config.system = system.into();
            return;
        }
        let mut transcript = lock(&self.shared.transcript);
        match transcript.first_mut() {
            Some(Message::System(leading)) => leading.content = system.into(),
            _ => transcript.insert(
                0,
                Message::System(SystemMessage {
                    content: system.into(),
                    ..SystemMessage::default()
                }),
            ),
        }
    }

    /// How much reasoning the next run asks for (`Off` until set).
    pub fn thinking_level(&self) -> ThinkingLevel {
        *lock(&self.shared.thinking)
    }

    /// Sets the thinking level for the next run.
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        *lock(&self.shared.thinking) = level;
    }

    /// The session id every request of the next run carries (Pi's
    /// `sessionId`), for providers that key a cache on it.
    pub fn session_id(&self) -> Option<String> {
        lock(&self.shared.session_id).clone()
    }

    /// Sets the session id for the next run; `None` sends none.
    pub fn set_session_id(&self, session_id: Option<String>) {
        *lock(&self.shared.session_id) = session_id;
    }

    /// The tools the next run offers (a copy of the agent's list).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        lock(&self.shared.config).tools.clone()
    }

    /// Replaces the tools for the next run; the agent keeps its own list.
    pub fn set_tools(&self, tools: Vec<Arc<dyn Tool>>) {
        lock(&self.shared.config).tools = tools;
    }

    /// The message between its `message_start` and `message_end` (a reply
    /// as streamed so far: text and thinking grow, a tool call shows its id
    /// and name); `None` outside one (Pi's `streamingMessage`).
    pub fn streaming_message(&self) -> Option<Message> {
        lock(&self.shared.view).streaming.clone()
    }

    /// The ids of the tool calls between `tool_execution_start` and
    /// `tool_execution_end`, in start order (Pi's `pendingToolCalls`).
    pub fn pending_tool_calls(&self) -> Vec<String> {
        lock(&self.shared.view).pending_tool_calls.clone()
    }

    /// The error message of the last run that failed or was aborted, until
    /// the next run starts (Pi's `errorMessage`).
    pub fn error_message(&self) -> Option<String> {
        lock(&self.shared.view).error.clone()
    }
}
