//! A host embedding leash's loop: an [`Agent`] over the scripted `faux`
//! model, with one tool of the host's own written as a [`TypedTool`]
//! (serde + schemars arguments), a listener that reports the run's events
//! on stderr, and the final reply on stdout.
//!
//! The script asks for the tool once, then answers. The example checks its
//! own outcome and exits non-zero if the tool did not run as asked, its
//! result did not reach the model, or the reply did not arrive, so
//! `cargo run -p leash-agent --example embed` (run by `make test`) proves the embedding
//! API works end to end, not only that it compiles.
//!
//! Swap `FauxProvider` for `leash_provider::openai::OpenAiProvider` or
//! `leash_provider::anthropic::AnthropicProvider` to talk to a real model;
//! nothing else changes.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use leash_agent::types::AgentEvent;
use leash_agent::{Agent, Declarations, LoopConfig, NoHooks, ToolExecution};
use leash_faux::{FauxProvider, Script, ScriptedResponse, ScriptedToolCall};
use leash_protocol::tool::{Tool, ToolUpdates, TypedTool};
use leash_protocol::{Message, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

/// The host's tool: counts the words of a text.
struct CountWords;

/// What the model passes to `count_words`. The doc comments become the
/// schema's descriptions the model reads.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountWordsArgs {
    /// The text to count the words of.
    text: String,
}

/// Why `count_words` failed; the model reads its `Display`.
#[derive(Debug, thiserror::Error)]
#[error("there is no text to count")]
struct EmptyText;

impl TypedTool for CountWords {
    const NAME: &'static str = "count_words";
    type Args = CountWordsArgs;
    type Error = EmptyText;

    fn description(&self) -> String {
        "Counts the words of a text (runs of non-whitespace).".to_owned()
    }

    async fn call(
        &self,
        args: CountWordsArgs,
        _cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<ToolOutput, EmptyText> {
        match args.text.split_whitespace().count() {
            0 => Err(EmptyText),
            words => Ok(ToolOutput::text(words.to_string())),
        }
    }
}

/// The text the model asks about, and what it answers once it has the count.
const TEXT: &str = "the quick brown fox jumps over the lazy dog";
const REPLY: &str = "The sentence has 9 words.";

/// The scripted model: first a call of `count_words`, then the answer.
fn script() -> Script {
    Script {
        responses: vec![
            ScriptedResponse {
                tool_calls: vec![ScriptedToolCall {
                    id: None,
                    name: CountWords::NAME.to_owned(),
                    arguments: Some(serde_json::json!({ "text": TEXT })),
                    arguments_raw: None,
                }],
                ..ScriptedResponse::default()
            },
            ScriptedResponse {
                text: Some(REPLY.to_owned()),
                ..ScriptedResponse::default()
            },
        ],
        repeat_last: false,
    }
}

/// What the listener saw of the tool calls: (name, is_error, result text).
type Seen = Arc<Mutex<Vec<(String, bool, String)>>>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let provider = Arc::new(FauxProvider::new(script()));
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(CountWords)];
    let agent = Agent::new(
        provider.clone(),
        LoopConfig {
            model: "faux".to_owned(),
            system: "Answer in one sentence.".to_owned(),
            tools,
            declarations: Declarations::Beside,
            tool_execution: ToolExecution::Parallel,
            hooks: Arc::new(NoHooks),
        },
    );

    // Events go to stderr, as leash's own `--events text` does; the
    // listener also keeps what it saw so the run can be checked below.
    let seen: Seen = Arc::default();
    let record = Arc::clone(&seen);
    let _subscription = agent.subscribe(move |event| match event {
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => eprintln!("embed: → {tool_name} {args}"),
        AgentEvent::ToolExecutionEnd {
            tool_name,
            result,
            is_error,
            ..
        } => {
            eprintln!("embed: ← {tool_name}: {}", result.text());
            if let Ok(mut seen) = record.lock() {
                seen.push((tool_name.clone(), *is_error, result.text()));
            }
        }
        AgentEvent::AgentEnd { messages } => {
            eprintln!("embed: run over, {} messages", messages.len())
        }
        _ => {}
    });

    let added = match agent
        .prompt(vec![Message::user_text(format!(
            "How many words are in \"{TEXT}\"?"
        ))])
        .await
    {
        Ok(added) => added,
        Err(error) => return fail(&format!("the prompt was refused: {error}")),
    };
    let reply = match added.last() {
        Some(Message::Assistant(reply)) => reply.text(),
        other => return fail(&format!("the run ended without a reply: {other:?}")),
    };
    println!("{reply}");

    // The outcome, checked: the tool ran once, as asked, and answered; the
    // model was asked again with that answer; the reply is the script's.
    let calls = match seen.lock() {
        Ok(seen) => seen.clone(),
        Err(_) => return fail("the listener panicked"),
    };
    let expected_call = (CountWords::NAME.to_owned(), false, "9".to_owned());
    if calls != [expected_call] {
        return fail(&format!(
            "expected one count_words call answering 9, saw {calls:?}"
        ));
    }
    let result_sent = added.iter().any(|message| {
        matches!(message, Message::ToolResult(result) if result.text() == "9" && !result.is_error)
    });
    if !result_sent || provider.requests() != 2 {
        return fail("the tool's result did not go back to the model");
    }
    if reply != REPLY {
        return fail(&format!("expected the reply {REPLY:?}, got {reply:?}"));
    }
    ExitCode::SUCCESS
}

/// Says why the example failed, on stderr, and exits non-zero.
fn fail(why: &str) -> ExitCode {
    eprintln!("embed: FAILED: {why}");
    ExitCode::FAILURE
}
