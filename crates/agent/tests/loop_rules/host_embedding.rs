//! Pi 1.6.0's cases a host embedding leash hits beyond the loop's rules:
//! a tool result carrying usage and cost, a system message's named
//! sections, a provider's own data for the observer, and the whole
//! transcript handed to a provider (ARCHITECTURE.md §1.1, §1.2). Each is
//! driven the way `crates/agent/examples/embed.rs` drives leash: an `Agent`, tools,
//! hooks and a provider, through the public API.

use super::*;
use leash_protocol::{Sections, SystemMessage, Usage, UsageCost};
use pretty_assertions::assert_eq;

/// A tool that ran a model of its own and reports what that spent.
struct SubAgent;

impl Tool for SubAgent {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delegate".into(),
            description: "asks a sub-agent".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn execute<'a>(
        &'a self,
        _call_id: &'a str,
        _args: Value,
        _cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async {
            Ok(ToolOutput {
                usage: Some(
                    Usage {
                        input: 10,
                        output: 5,
                        ..Usage::default()
                    }
                    .with_total(),
                ),
                ..ToolOutput::text("the sub-agent's answer")
            })
        })
    }
}

fn priced() -> Usage {
    Usage {
        input: 1200,
        output: 300,
        cache_read: 100,
        cache_write: 0,
        total_tokens: 0,
        cost: Some(UsageCost {
            input: 0.0036,
            output: 0.0045,
            cache_read: 0.00003,
            cache_write: 0.0,
            total: 0.00813,
        }),
    }
    .with_total()
}

/// Replaces every executed result's usage with [`priced`], after
/// checking it saw the tool's own.
struct PricesResults {
    seen: Mutex<Vec<Option<Usage>>>,
}

impl AgentHooks for PricesResults {
    fn after_tool_call<'a>(
        &'a self,
        executed: ExecutedToolCall<'a>,
    ) -> BoxFuture<'a, Result<Option<ResultOverride>, String>> {
        self.seen.lock().unwrap().push(executed.usage.copied());
        Box::pin(async {
            Ok(Some(ResultOverride {
                usage: Some(priced()),
                ..ResultOverride::default()
            }))
        })
    }
}

/// Pi: "afterToolCall can replace a tool result's usage" — the hook's
/// usage, cost included, is what the tool-result message carries in the
/// transcript and in `tool_execution_end`; a result nobody gave usage
/// is written without the field.
#[tokio::test]
async fn after_tool_call_replaces_the_tool_results_usage_and_cost() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("delegate", json!({})), call("read", json!({}))]},
        {"text": "done"}
    ]));
    let hooks = Arc::new(PricesResults {
        seen: Mutex::new(Vec::new()),
    });
    let mut config = config(vec![Arc::new(SubAgent), TestTool::new("read")], NoHooks);
    config.hooks = hooks.clone();
    let agent = Agent::new(provider, config);
    let ends = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&ends);
    let _sub = agent.subscribe(move |event| {
        if let AgentEvent::ToolExecutionEnd { result, .. } = event {
            sink.lock().unwrap().push(result.usage);
        }
    });
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();

    let seen = hooks.seen.lock().unwrap().clone();
    assert!(
        seen.contains(&Some(
            Usage {
                input: 10,
                output: 5,
                ..Usage::default()
            }
            .with_total()
        ))
    );
    assert!(seen.contains(&None));
    let results = tool_results(&added);
    assert_eq!(results.len(), 2);
    for result in &results {
        assert_eq!(result.usage, Some(priced()), "{}", result.tool_call_id);
    }
    assert_eq!(*ends.lock().unwrap(), vec![Some(priced()); 2]);
    let line = serde_json::to_value(Message::ToolResult(results[0].clone())).unwrap();
    assert_eq!(
        line["usage"],
        json!({
            "input": 1200, "output": 300, "cacheRead": 100, "cacheWrite": 0,
            "totalTokens": 1600,
            "cost": {"input": 0.0036, "output": 0.0045, "cacheRead": 0.00003,
                     "cacheWrite": 0.0, "total": 0.00813}
        })
    );
    let read_back: Message = serde_json::from_value(line).unwrap();
    assert_eq!(read_back, Message::ToolResult(results[0].clone()));
}

/// Without a hook, a tool's own usage is the result's; a result of a tool
/// that reported none has no `usage` key at all (today's files).
#[tokio::test]
async fn a_tools_own_usage_is_carried_and_absent_stays_absent() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("delegate", json!({})), call("read", json!({}))]},
        {"text": "done"}
    ]));
    let agent = Agent::new(
        provider,
        config(vec![Arc::new(SubAgent), TestTool::new("read")], NoHooks),
    );
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let results = tool_results(&added);
    assert_eq!(results[0].usage.map(|usage| usage.total_tokens), Some(15));
    assert_eq!(results[0].usage.and_then(|usage| usage.cost), None);
    let plain = serde_json::to_value(Message::ToolResult(results[1].clone())).unwrap();
    assert!(plain.get("usage").is_none(), "{plain}");
    let sub = serde_json::to_string(&Message::ToolResult(results[0].clone())).unwrap();
    assert!(!sub.contains("cost"), "{sub}");
}

fn in_transcript(tools: Vec<Arc<dyn Tool>>) -> LoopConfig {
    LoopConfig {
        declarations: Declarations::InTranscript,
        ..config(tools, NoHooks)
    }
}

fn sectioned(content: &str, sections: Sections) -> Message {
    Message::System(SystemMessage {
        content: content.to_owned(),
        sections,
        ..SystemMessage::default()
    })
}

fn system_messages(messages: &[Message]) -> Vec<SystemMessage> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::System(system) => Some(system.clone()),
            _ => None,
        })
        .collect()
}

/// Pi: "merges tool changes into a pending system message and keeps its
/// sections" — a prompt's own system message gets the tool changes and
/// keeps `sections`; the model is told content, then sections, in the
/// order they were first given, the same on every request.
#[tokio::test]
async fn tool_changes_merged_into_a_pending_system_message_keep_its_sections() {
    let provider = Recorder::new(json!([{"text": "one"}, {"text": "two"}]));
    let read = TestTool::new("read");
    let agent = Agent::new(provider.clone(), in_transcript(vec![read.clone()]));
    agent
        .prompt(vec![Message::user_text("first")])
        .await
        .unwrap();

    agent.set_tools(vec![read, TestTool::new("list")]);
    let sections = Sections::default()
        .with("skills", "<skills>grep</skills>")
        .with("note", "Be brief.");
    let added = agent
        .prompt(vec![
            sectioned("Review mode.", sections.clone()),
            Message::user_text("second"),
        ])
        .await
        .unwrap();

    let declared = system_messages(&added);
    assert_eq!(declared.len(), 1, "merged into the pending one");
    assert_eq!(declared[0].sections, sections);
    assert_eq!(declared[0].content, "Review mode.");
    let names: Vec<&str> = declared[0]
        .tools_added
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["list"]);
    let prompts: Vec<String> = provider
        .declared()
        .into_iter()
        .map(|(system, _)| system)
        .collect();
    assert_eq!(
        prompts[1],
        "sys\n\nReview mode.\n\n<skills>grep</skills>\n\nBe brief."
    );
    // A later system message patches one section in its place and
    // withdraws the other; the prompt keeps the first-given order.
    let patch = Sections::default()
        .with("skills", "<skills>grep, find</skills>")
        .without("note");
    agent
        .prompt(vec![sectioned("", patch), Message::user_text("third")])
        .await
        .unwrap();
    let prompts: Vec<String> = provider
        .declared()
        .into_iter()
        .map(|(system, _)| system)
        .collect();
    assert_eq!(
        prompts[2],
        "sys\n\nReview mode.\n\n<skills>grep, find</skills>"
    );
    agent.reset().unwrap();
    let baseline = system_messages(&agent.messages());
    assert_eq!(
        baseline[0].sections,
        Sections::default().with("skills", "<skills>grep, find</skills>")
    );
}

/// Pi: "rewrites pending tool declarations to the executable set and keeps
/// sections" — a pending system message declaring a tool that cannot run
/// is rewritten to the tools that can, its sections untouched; `reset`
/// keeps the replayed sections in its baseline.
#[tokio::test]
async fn rewriting_pending_declarations_to_the_executable_set_keeps_sections() {
    let provider = Recorder::new(json!([{"text": "one"}]));
    let agent = Agent::new(provider.clone(), in_transcript(vec![TestTool::new("read")]));
    let sections = Sections::default().with("cwd", "<cwd>/repo</cwd>");
    let declares_ghost = Message::System(SystemMessage {
        sections: sections.clone(),
        tools_added: vec![TestTool::plain("ghost").spec],
        ..SystemMessage::default()
    });
    let added = agent
        .prompt(vec![declares_ghost, Message::user_text("go")])
        .await
        .unwrap();
    let declared = system_messages(&added);
    assert_eq!(declared.len(), 1);
    assert_eq!(declared[0].sections, sections);
    assert!(declared[0].tools_added.is_empty(), "{declared:?}");
    assert_eq!(provider.declared()[0].1, ["read"]);
    assert_eq!(provider.declared()[0].0, "sys\n\n<cwd>/repo</cwd>");

    agent.reset().unwrap();
    let baseline = system_messages(&agent.messages());
    assert_eq!(baseline.len(), 1);
    assert_eq!(baseline[0].sections, sections);
}

/// A provider that plays a script after sending data of its own, and
/// records each request's whole transcript.
struct Whole {
    faux: FauxProvider,
    transcripts: Mutex<Vec<Vec<Message>>>,
}

impl Whole {
    fn new(script: Value) -> Arc<Self> {
        Arc::new(Whole {
            faux: FauxProvider::new(Script::parse(&script.to_string(), "test").unwrap()),
            transcripts: Mutex::new(Vec::new()),
        })
    }
}

impl Provider for Whole {
    fn name(&self) -> &str {
        "whole"
    }
    fn stream(&self, request: Request<'_>) -> BoxStream<'static, StreamEvent> {
        use futures::StreamExt;
        self.transcripts
            .lock()
            .unwrap()
            .push(request.transcript.to_vec());
        let own = futures::stream::iter([StreamEvent::Provider(json!({"request_cost": 0.01}))]);
        own.chain(self.faux.stream(request)).boxed()
    }
}

/// Records what `on_provider_event` is handed.
#[derive(Default)]
struct Observes {
    seen: Mutex<Vec<StreamEvent>>,
}

impl AgentHooks for Observes {
    fn on_provider_event(&self, event: &StreamEvent) {
        self.seen.lock().unwrap().push(event.clone());
    }
}

/// Pi: "passes provider stream events to onProviderStreamEvent" — the
/// observer gets exactly the provider's own data; the reply is built
/// without it.
#[tokio::test]
async fn the_observer_gets_the_providers_own_data_exactly() {
    let provider = Whole::new(json!([{"text": "hi"}]));
    let hooks = Arc::new(Observes::default());
    let mut config = config(vec![], NoHooks);
    config.hooks = hooks.clone();
    let agent = Agent::new(provider, config);
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();

    let seen = hooks.seen.lock().unwrap().clone();
    assert_eq!(
        seen.first(),
        Some(&StreamEvent::Provider(json!({"request_cost": 0.01})))
    );
    assert_eq!(
        seen.iter()
            .filter(|event| matches!(event, StreamEvent::Provider(_)))
            .count(),
        1
    );
    let Some(Message::Assistant(reply)) = added.last() else {
        panic!("a reply");
    };
    assert_eq!(reply.text(), "hi");
    assert_eq!(reply.content.len(), 1);
}

/// Pi: the stream function of an agent that declares in the transcript
/// gets `{ messages }` alone, system messages in place — a provider reads
/// where a later system message stood and what it changed, while the
/// resolved fields stay what the built-in wires read.
#[tokio::test]
async fn a_provider_gets_the_whole_transcript_with_system_messages_in_place() {
    let provider = Whole::new(json!([{"text": "one"}, {"text": "two"}]));
    let read = TestTool::new("read");
    let agent = Agent::new(provider.clone(), in_transcript(vec![read.clone()]));
    agent
        .prompt(vec![Message::user_text("first")])
        .await
        .unwrap();
    agent.set_tools(vec![read, TestTool::new("list")]);
    agent
        .prompt(vec![Message::user_text("second")])
        .await
        .unwrap();

    let transcripts = provider.transcripts.lock().unwrap().clone();
    let roles = |messages: &[Message]| -> Vec<String> {
        messages.iter().map(|m| m.role().to_owned()).collect()
    };
    assert_eq!(roles(&transcripts[0]), ["system", "user"]);
    assert_eq!(
        roles(&transcripts[1]),
        ["system", "user", "assistant", "system", "user"]
    );
    let later = system_messages(&transcripts[1][3..]);
    let names: Vec<&str> = later[0]
        .tools_added
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["list"]);
}
