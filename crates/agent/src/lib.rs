//! The agent loop (ARCHITECTURE.md §1): the pure two-level loop
//! (`agent_loop`, named after Pi's `agent-loop.ts`), one tool call's
//! pipeline (`tool_call`) and a batch of them (`tool_batch`), one
//! streamed reply (`assistant_stream`), the stateful wrapper (`agent`), the
//! hooks, and the types they share.

#![warn(missing_docs)]

#[allow(clippy::module_inception)]
mod agent;
mod agent_loop;
pub mod assistant_stream;
mod default_provider;
mod hooks;
mod lock;
mod queues;
mod state;
mod tool_batch;
pub mod tool_call;
pub mod transcript;
pub mod types;

pub use agent::{Agent, AgentError, AsyncListener, Subscription};
pub use agent_loop::{
    ContinueError, LoopConfig, MessageQueues, NoQueues, RunInputs, run_agent_loop,
    run_agent_loop_continue,
};
pub use default_provider::{
    DefaultProvider, NO_DEFAULT_PROVIDER, default_provider, set_default_provider,
};
pub use hooks::{
    AgentHooks, BeforeToolCall, ExecutedToolCall, FinishedTurn, NextTurnChanges, NoHooks,
    RequestChanges, RequestContext, ToolCallContext,
};
pub use queues::{QueueHandle, QueueMode};
pub use tool_batch::{BatchOutcome, ToolExecution};
pub use transcript::Declarations;
pub use types::EventSink;
