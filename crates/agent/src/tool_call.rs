//! One tool call's pipeline (ARCHITECTURE.md §1.3): find the tool → validate the
//! arguments → `before_tool_call` → execute → `after_tool_call` → the
//! tool-result message. Each rule is one function named after it.
//!
//! Every call that enters this pipeline leaves it with exactly one result:
//! nothing here may drop a call, and nothing a tool or hook does may panic
//! the loop.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::assistant_stream::ABORTED;
use super::hooks::{AgentHooks, BeforeToolCall, ExecutedToolCall, ToolCallContext};
use super::types::EmitFn;
pub(crate) use arguments::ArgumentSchema;
pub use arguments::MAX_ARGUMENT_BYTES;
pub(crate) use arguments::validate_arguments;
#[cfg(feature = "schema-validation")]
pub use arguments::violations;
use arguments::{arguments_too_large, snippet};
use leash_protocol::tool::{Tool, ToolUpdates};
use leash_protocol::{AssistantMessage, Message};
use leash_protocol::{ToolCall, ToolOutput, ToolResultMessage, ToolSpec, now_ms};

/// The default text of a call `before_tool_call` blocked without a reason.
pub const BLOCKED: &str = "Tool execution was blocked";

/// The most tool calls of one assistant message that run; every later call
/// of the message is answered with an error without running. Real replies
/// hold a handful; this bounds what one hostile reply can start at once.
pub const MAX_TOOL_CALLS_PER_MESSAGE: usize = 64;

/// The most characters of a model-given tool name an error repeats.
const SHOWN_NAME_CHARS: usize = 100;

/// The text of every call of a `length`-truncated message.
pub const TRUNCATED_CALL: &str = "not executed: the response hit the output token limit, its arguments may be truncated; re-issue the call";

/// What preparation decided for one call.
pub(crate) enum Prepared {
    /// The call is answered without running (unknown, invalid, blocked, aborted).
    Immediate(Finalized),
    /// The call may run.
    Run { tool: Arc<dyn Tool>, args: Value },
}

/// A call's final outcome, before it becomes a message.
#[derive(Debug, Clone)]
pub(crate) struct Finalized {
    pub(crate) output: ToolOutput,
    pub(crate) is_error: bool,
    /// Present only when `execute` really ran.
    pub(crate) duration_ms: Option<u64>,
}

impl Finalized {
    /// An error result for a call that never ran.
    pub(crate) fn refused(text: impl Into<String>) -> Self {
        Finalized {
            output: ToolOutput::text(text),
            is_error: true,
            duration_ms: None,
        }
    }
}

mod arguments;

/// The tools of a run, each with its spec asked for and its argument schema
/// compiled once per run rather than once per call, at the tool's first
/// call: the first compile of a process also builds the JSON Schema
/// meta-validator (about 0.8 ms of CPU), which a run that calls no tool
/// never needs, and which otherwise delays the first request.
pub(crate) struct ToolSet<'a> {
    tools: &'a [Arc<dyn Tool>],
    specs: Vec<ToolSpec>,
    schemas: Vec<OnceLock<ArgumentSchema>>,
}

impl<'a> ToolSet<'a> {
    /// Asks every tool for its spec; each schema compiles at first use.
    pub(crate) fn new(tools: &'a [Arc<dyn Tool>]) -> Self {
        let specs: Vec<ToolSpec> = tools.iter().map(|tool| tool.spec()).collect();
        let schemas = specs.iter().map(|_| OnceLock::new()).collect();
        ToolSet {
            tools,
            specs,
            schemas,
        }
    }

    /// The specs, as the provider is told about the tools.
    pub(crate) fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// The index of the tool called `name`.
    fn index(&self, name: &str) -> Option<usize> {
        self.specs.iter().position(|spec| spec.name == name)
    }

    /// The tool called `name`, with its compiled schema.
    fn find(&self, name: &str) -> Option<(&'a Arc<dyn Tool>, &ArgumentSchema)> {
        let index = self.index(name)?;
        let schema = self.schemas[index]
            .get_or_init(|| compile_argument_schema(&self.specs[index].parameters));
        Some((&self.tools[index], schema))
    }

    /// Whether the tool called `name` is declared sequential.
    pub(crate) fn is_sequential(&self, name: &str) -> bool {
        self.index(name)
            .is_some_and(|index| self.tools[index].sequential())
    }
}

/// Compiles a tool's argument schema.
#[cfg(feature = "schema-validation")]
pub(crate) fn compile_argument_schema(schema: &Value) -> ArgumentSchema {
    jsonschema::validator_for(schema)
        .map_err(|error| format!("the tool's own schema is invalid: {error}"))
}

/// Without `schema-validation` a schema is taken as it is.
#[cfg(not(feature = "schema-validation"))]
pub(crate) fn compile_argument_schema(_schema: &Value) -> ArgumentSchema {
    Ok(())
}

/// Finds the tool, validates the arguments and asks `before_tool_call`.
/// `position` is the call's place in its message (0 for the first).
pub(crate) async fn prepare_tool_call(
    call: &ToolCall,
    position: usize,
    batch: &BatchContext<'_>,
) -> Prepared {
    let cancel = batch.cancel;
    if cancel.is_cancelled() {
        return Prepared::Immediate(Finalized::refused(ABORTED));
    }
    if position >= MAX_TOOL_CALLS_PER_MESSAGE {
        return Prepared::Immediate(Finalized::refused(format!(
            "not executed: the reply holds more than {MAX_TOOL_CALLS_PER_MESSAGE} tool calls, \
             the most one reply may run; re-issue this call in the next turn"
        )));
    }
    let Some((tool, schema)) = batch.tools.find(&call.name) else {
        return Prepared::Immediate(Finalized::refused(format!(
            "Tool {} not found",
            snippet(&call.name, SHOWN_NAME_CHARS)
        )));
    };
    if arguments_too_large(&call.arguments) {
        return Prepared::Immediate(Finalized::refused(format!(
            "Invalid arguments for {}: they are larger than {MAX_ARGUMENT_BYTES} bytes, \
             the most one call may carry",
            call.name
        )));
    }
    let args = tool.prepare_arguments(call.arguments.clone());
    if arguments_too_large(&args) {
        return Prepared::Immediate(Finalized::refused(format!(
            "Invalid arguments for {}: they are larger than {MAX_ARGUMENT_BYTES} bytes, \
             the most one call may carry",
            call.name
        )));
    }
    if let Err(problem) = validate_arguments(schema, &args) {
        return Prepared::Immediate(Finalized::refused(format!(
            "Invalid arguments for {}: {problem}",
            call.name
        )));
    }
    let hook = ToolCallContext {
        assistant_message: batch.message,
        call,
        args: &args,
        context: batch.context,
        cancel,
    };
    let decision = batch.hooks.before_tool_call(hook).await;
    // As in Pi: an abort while the hook ran wins over its decision.
    if cancel.is_cancelled() {
        return Prepared::Immediate(Finalized::refused(ABORTED));
    }
    match decision {
        Ok(BeforeToolCall::Run) => Prepared::Run {
            tool: Arc::clone(tool),
            args,
        },
        Ok(BeforeToolCall::RunWith(args)) => Prepared::Run {
            tool: Arc::clone(tool),
            args,
        },
        Ok(BeforeToolCall::Block(block)) => {
            let mut refused = Finalized::refused(block.reason.unwrap_or_else(|| BLOCKED.into()));
            refused.output.terminate = block.terminate;
            Prepared::Immediate(refused)
        }
        Err(text) => Prepared::Immediate(Finalized::refused(text)),
    }
}

/// Runs a prepared call, measuring `execute` with a monotonic clock. An
/// abort ends the wait at once; the tool is dropped and told to stop.
pub(crate) async fn execute_prepared_tool_call(
    tool: &dyn Tool,
    call: &ToolCall,
    args: Value,
    cancel: &CancellationToken,
    updates: ToolUpdates,
) -> Finalized {
    let started = Instant::now();
    let outcome = tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ABORTED.to_owned()),
        result = tool.execute(&call.id, args, cancel.child_token(), updates) => {
            result.map_err(|error| error.to_string())
        }
    };
    let duration_ms = Some(started.elapsed().as_millis() as u64);
    match outcome {
        Ok(output) => Finalized {
            output,
            is_error: false,
            duration_ms,
        },
        Err(text) => Finalized {
            output: ToolOutput::text(text),
            is_error: true,
            duration_ms,
        },
    }
}

/// Lets `after_tool_call` replace fields of an executed call's result; its
/// error replaces the result with an error result (`durationMs` stays: the
/// tool did run).
pub(crate) async fn finalize_executed_tool_call(
    call: &ToolCall,
    args: &Value,
    mut finalized: Finalized,
    batch: &BatchContext<'_>,
) -> Finalized {
    let provisional = tool_result_message(call, &finalized);
    let executed = ExecutedToolCall {
        call: ToolCallContext {
            assistant_message: batch.message,
            call,
            args,
            context: batch.context,
            cancel: batch.cancel,
        },
        result: &provisional,
        is_error: finalized.is_error,
        usage: finalized.output.usage.as_ref(),
    };
    match batch.hooks.after_tool_call(executed).await {
        Ok(None) => {}
        Ok(Some(changes)) => {
            if let Some(content) = changes.content {
                finalized.output.content = content;
            }
            if let Some(details) = changes.details {
                finalized.output.details = details;
            }
            if let Some(is_error) = changes.is_error {
                finalized.is_error = is_error;
            }
            if let Some(terminate) = changes.terminate {
                finalized.output.terminate = terminate;
            }
            if let Some(usage) = changes.usage {
                finalized.output.usage = Some(usage);
            }
        }
        Err(text) => {
            // The tool ran and spent what it spent: its usage stays.
            finalized.output = ToolOutput {
                usage: finalized.output.usage,
                ..ToolOutput::text(text)
            };
            finalized.is_error = true;
        }
    }
    finalized
}

/// The tool-result message for a finalized call (`createToolResultMessage`):
/// content never null, `durationMs` only when the tool ran, `usage` only
/// when the tool or `after_tool_call` gave one.
pub(crate) fn tool_result_message(call: &ToolCall, finalized: &Finalized) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: finalized.output.content.clone(),
        details: finalized.output.details.clone(),
        is_error: finalized.is_error,
        duration_ms: finalized.duration_ms,
        usage: finalized.output.usage,
        timestamp: now_ms(),
    }
}

/// What a batch needs from the loop.
pub(crate) struct BatchContext<'a> {
    /// The assistant message the calls came from.
    pub(crate) message: &'a AssistantMessage,
    pub(crate) tools: &'a ToolSet<'a>,
    pub(crate) hooks: &'a dyn AgentHooks,
    pub(crate) context: &'a [Message],
    pub(crate) cancel: &'a CancellationToken,
    pub(crate) emit: &'a EmitFn<'a>,
}

#[cfg(all(test, feature = "schema-validation"))]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tool whose schema is only ever compiled, never run.
    struct Schema(Value);

    impl Tool for Schema {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: self.0["title"].as_str().unwrap_or("t").to_owned(),
                description: String::new(),
                parameters: self.0.clone(),
            }
        }
        fn execute<'a>(
            &'a self,
            _call_id: &'a str,
            _args: Value,
            _cancel: CancellationToken,
            _updates: ToolUpdates,
        ) -> futures::future::BoxFuture<'a, Result<ToolOutput, leash_protocol::tool::ToolError>>
        {
            Box::pin(async { Ok(ToolOutput::text("")) })
        }
    }

    #[test]
    fn a_schema_compiles_at_the_tools_first_call_and_a_bad_one_fails_there() {
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(Schema(json!({"title": "good", "type": "object"}))),
            Arc::new(Schema(json!({"title": "bad", "type": 3}))),
        ];
        let set = ToolSet::new(&tools);
        let compiled = |set: &ToolSet<'_>| set.schemas.iter().filter(|s| s.get().is_some()).count();
        assert_eq!(compiled(&set), 0, "nothing compiles before a call");
        assert!(!set.is_sequential("good"));
        assert_eq!(
            compiled(&set),
            0,
            "nor to learn whether a tool is sequential"
        );
        let (_, good) = set.find("good").unwrap();
        assert_eq!(validate_arguments(good, &json!({})), Ok(()));
        assert_eq!(compiled(&set), 1);
        let (_, bad) = set.find("bad").unwrap();
        let error = validate_arguments(bad, &json!({})).unwrap_err();
        assert!(
            error.starts_with("the tool's own schema is invalid"),
            "{error}"
        );
    }
}
