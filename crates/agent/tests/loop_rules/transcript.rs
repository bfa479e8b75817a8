//! System and custom messages in the transcript (ARCHITECTURE.md §1.2,
//! "System and custom messages"), each test naming the rule of Pi 1.6.0
//! it mirrors: `createInitialSystemMessage` and the agent's state,
//! `declareToolChanges` in `runAgentLoop`/`runLoop`, `reset`'s baseline,
//! `prepareNextTurn`'s messages, and `convertToLlm` over custom roles.

use super::*;
use leash_agent::transcript::{
    current_system_prompt, current_tools, declare_tool_changes, resolve_request, tool_state_changes,
};
use leash_protocol::{CustomMessage, ReservedRole, SystemMessage, ToolReference};
use pretty_assertions::assert_eq;

fn spec(name: &str) -> ToolSpec {
    TestTool::plain(name).spec
}

fn in_transcript(tools: Vec<Arc<dyn Tool>>, hooks: impl AgentHooks + 'static) -> LoopConfig {
    LoopConfig {
        declarations: Declarations::InTranscript,
        ..config(tools, hooks)
    }
}

fn system(content: &str, added: &[&str], removed: &[&str]) -> Message {
    Message::System(SystemMessage {
        content: content.to_owned(),
        tools_added: added.iter().map(|name| spec(name)).collect(),
        tools_removed: removed
            .iter()
            .map(|name| ToolReference {
                name: (*name).to_owned(),
            })
            .collect(),
        timestamp: 0,
        ..SystemMessage::default()
    })
}

/// A system message's tool fields, by name, for comparing.
fn declares(message: &Message) -> Option<(String, Vec<String>, Vec<String>)> {
    match message {
        Message::System(system) => Some((
            system.content.clone(),
            system.tools_added.iter().map(|t| t.name.clone()).collect(),
            system
                .tools_removed
                .iter()
                .map(|t| t.name.clone())
                .collect(),
        )),
        _ => None,
    }
}

fn notification(text: &str) -> Message {
    let fields = json!({"text": text}).as_object().cloned().unwrap();
    Message::Custom(CustomMessage::new("notification", fields).unwrap())
}

fn roles(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.role().to_owned()).collect()
}

/// Pi: the agent's initial state folds its system prompt and tools into a
/// leading system message (`createInitialSystemMessage`); the request
/// still carries them as each wire wants, not as a message.
#[tokio::test]
async fn the_system_prompt_and_tools_become_a_leading_system_message() {
    let provider = Recorder::new(json!([{"text": "hi"}]));
    let agent = Agent::new(
        provider.clone(),
        in_transcript(vec![TestTool::new("read")], NoHooks),
    );
    assert_eq!(
        agent.messages().iter().map(declares).collect::<Vec<_>>(),
        vec![Some(("sys".into(), vec!["read".into()], vec![]))]
    );
    assert_eq!(agent.system_prompt(), "sys");

    agent
        .prompt(vec![Message::user_text("Hello")])
        .await
        .unwrap();
    assert_eq!(
        provider.declared(),
        vec![("sys".to_owned(), vec!["read".to_owned()])]
    );
    assert_eq!(roles(&provider.requests()[0]), vec!["user"]);
    assert_eq!(
        roles(&agent.messages()),
        vec!["system", "user", "assistant"]
    );
}

/// Pi: `runAgentLoop` declares the tools that can run but the transcript
/// does not declare, in a system message before the prompt, with its own
/// `message_start`/`message_end` (`declareToolChanges`); a changed tool is
/// withdrawn and declared again (`getToolStateChanges`).
#[tokio::test]
async fn tools_changed_between_prompts_are_declared_before_the_next_prompt() {
    let provider = Recorder::new(json!([{"text": "one"}, {"text": "two"}, {"text": "three"}]));
    let agent = Agent::new(
        provider.clone(),
        in_transcript(vec![TestTool::new("read")], NoHooks),
    );
    agent
        .prompt(vec![Message::user_text("first")])
        .await
        .unwrap();

    agent.set_tools(vec![TestTool::new("write")]);
    let (log, _sub) = record(&agent);
    let added = agent
        .prompt(vec![Message::user_text("second")])
        .await
        .unwrap();
    assert_eq!(
        declares(&added[0]),
        Some((String::new(), vec!["write".into()], vec!["read".into()]))
    );
    assert_eq!(roles(&added), vec!["system", "user", "assistant"]);
    assert_eq!(
        lines(&log)[..4],
        [
            "agent_start",
            "turn_start",
            "message_end system",
            "message_end user"
        ]
    );
    let (system, tools) = provider.declared()[1].clone();
    assert_eq!((system.as_str(), tools), ("sys", vec!["write".to_owned()]));
    assert_eq!(
        roles(&provider.requests()[1]),
        vec!["user", "assistant", "user"]
    );

    // Nothing changed: nothing is declared.
    let added = agent
        .prompt(vec![Message::user_text("third")])
        .await
        .unwrap();
    assert_eq!(roles(&added), vec!["user", "assistant"]);
}

/// Pi: `runLoop` declares a change even when a turn has nothing pending,
/// so `continue` after `setTools` tells the model first.
#[tokio::test]
async fn continue_declares_a_change_with_nothing_pending() {
    let provider = Recorder::new(json!([{"text": "ok"}]));
    let agent = Agent::new(provider.clone(), in_transcript(vec![], NoHooks));
    agent.set_messages(vec![Message::user_text("Where were we?")]);
    agent.set_tools(vec![TestTool::new("read")]);
    let added = agent.continue_run().await.unwrap();
    assert_eq!(
        declares(&added[0]),
        Some((String::new(), vec!["read".into()], vec![]))
    );
    assert_eq!(provider.declared()[0].1, vec!["read".to_owned()]);
}

/// Pi: `continue()` refuses a transcript of system messages only ("No
/// messages to continue from").
#[tokio::test]
async fn continue_refuses_a_transcript_of_declarations_only() {
    let provider = Recorder::new(json!([]));
    let agent = Agent::new(
        provider.clone(),
        in_transcript(vec![TestTool::new("read")], NoHooks),
    );
    let refused = agent.continue_run().await.unwrap_err();
    assert_eq!(refused.to_string(), "No messages to continue from");
    assert!(provider.requests().is_empty());
}

/// Pi: `reset()` keeps the replayed system message (`getCurrentSystemMessage`)
/// as the baseline: the prompt so far and the tools declared so far.
#[tokio::test]
async fn reset_returns_to_the_declarations_baseline() {
    let provider = Recorder::new(json!([{"text": "one"}, {"text": "two"}]));
    let agent = Agent::new(
        provider.clone(),
        in_transcript(vec![TestTool::new("read")], NoHooks),
    );
    agent
        .prompt(vec![Message::user_text("first")])
        .await
        .unwrap();
    agent.set_tools(vec![TestTool::new("read"), TestTool::new("write")]);
    agent
        .prompt(vec![Message::user_text("second")])
        .await
        .unwrap();
    assert_eq!(agent.messages().len(), 6);

    agent.reset().unwrap();
    assert_eq!(
        agent.messages().iter().map(declares).collect::<Vec<_>>(),
        vec![Some((
            "sys".into(),
            vec!["read".into(), "write".into()],
            vec![]
        ))]
    );
}

/// The leading system message is where the prompt is set, so a host's
/// `set_system_prompt` changes what the next request sends.
#[tokio::test]
async fn set_system_prompt_rewrites_the_leading_system_message() {
    let provider = Recorder::new(json!([{"text": "ok"}]));
    let agent = Agent::new(
        provider.clone(),
        LoopConfig {
            system: String::new(),
            ..in_transcript(vec![], NoHooks)
        },
    );
    assert!(agent.messages().is_empty(), "nothing to declare yet");
    agent.set_system_prompt("Be brief.");
    assert_eq!(agent.system_prompt(), "Be brief.");
    agent.prompt(vec![Message::user_text("Hi")]).await.unwrap();
    assert_eq!(provider.declared()[0].0, "Be brief.");
    assert_eq!(
        roles(&agent.messages()),
        vec!["system", "user", "assistant"]
    );
}

/// Hooks whose `prepare_next_turn` injects one system message, and whose
/// `convert_to_llm` (when `convert` is set) turns notifications into user
/// messages.
#[derive(Default)]
struct Injector {
    inject: Option<Message>,
    convert: bool,
}

impl AgentHooks for Injector {
    fn prepare_next_turn<'a>(
        &'a self,
        _last: FinishedTurn<'a>,
        _model: &'a str,
    ) -> BoxFuture<'a, NextTurnChanges> {
        Box::pin(async move {
            NextTurnChanges {
                messages: self.inject.clone().into_iter().collect(),
                ..NextTurnChanges::default()
            }
        })
    }

    fn convert_to_llm<'a>(&'a self, context: &'a [Message]) -> BoxFuture<'a, Option<Vec<Message>>> {
        Box::pin(async move {
            self.convert.then(|| {
                context
                    .iter()
                    .map(|message| match message {
                        Message::Custom(custom) => Message::user_text(format!(
                            "[{}] {}",
                            custom.role(),
                            custom.fields()["text"].as_str().unwrap_or_default()
                        )),
                        other => other.clone(),
                    })
                    .collect()
            })
        })
    }
}

/// Pi: `prepareNextTurn` may return messages, a system message among them;
/// it is appended with its events and from then on its text follows the
/// system prompt. Holds whoever declares the tools.
#[tokio::test]
async fn prepare_next_turn_can_inject_a_system_message() {
    for declarations in [Declarations::Beside, Declarations::InTranscript] {
        let provider = Recorder::new(json!([
            {"toolCalls": [call("read", json!({}))]},
            {"text": "done"}
        ]));
        let hooks = Injector {
            inject: Some(system("Answer in French.", &[], &[])),
            convert: false,
        };
        let agent = Agent::new(
            provider.clone(),
            LoopConfig {
                declarations,
                ..config(vec![TestTool::new("read")], hooks)
            },
        );
        agent.prompt(vec![Message::user_text("go")]).await.unwrap();
        let systems: Vec<String> = provider.declared().into_iter().map(|d| d.0).collect();
        assert_eq!(
            systems,
            vec!["sys", "sys\n\nAnswer in French."],
            "{declarations:?}"
        );
        assert!(
            provider.requests()[1].iter().all(Message::is_conversation),
            "a wire is never handed a system message"
        );
        let transcript = agent.messages();
        assert_eq!(
            transcript.iter().filter_map(declares).next_back(),
            Some(("Answer in French.".into(), vec![], vec![]))
        );
    }
}

/// Pi: a pending system message's own tool fields are rewritten to match
/// the tools that can run (`declareToolChanges` on a pending system
/// message): it cannot declare a tool that does not exist.
#[tokio::test]
async fn a_pending_system_message_cannot_declare_a_tool_that_cannot_run() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "done"}
    ]));
    let hooks = Injector {
        inject: Some(system("Use ghost.", &["ghost"], &["read"])),
        convert: false,
    };
    let agent = Agent::new(
        provider.clone(),
        in_transcript(vec![TestTool::new("read")], hooks),
    );
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let injected = agent
        .messages()
        .into_iter()
        .filter_map(|m| declares(&m))
        .last();
    assert_eq!(injected, Some(("Use ghost.".into(), vec![], vec![])));
    assert_eq!(provider.declared()[1].1, vec!["read".to_owned()]);
}

/// Pi: messages of the host's own roles stay in the context and its
/// events; the default `convertToLlm` leaves them out of every request.
#[tokio::test]
async fn a_custom_message_stays_in_the_transcript_and_never_reaches_the_model() {
    let provider = Recorder::new(json!([{"text": "ok"}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    let (log, _sub) = record(&agent);
    agent
        .prompt(vec![
            notification("build failed"),
            Message::user_text("why?"),
        ])
        .await
        .unwrap();
    assert_eq!(roles(&provider.requests()[0]), vec!["user"]);
    assert_eq!(
        roles(&agent.messages()),
        vec!["notification", "user", "assistant"]
    );
    assert!(lines(&log).contains(&"message_end notification".to_owned()));
}

/// Pi: a host's `convertToLlm` turns a custom message into one the model
/// reads; the context keeps the custom message.
#[tokio::test]
async fn convert_to_llm_turns_a_custom_message_into_one_the_model_reads() {
    let provider = Recorder::new(json!([{"text": "ok"}]));
    let hooks = Injector {
        inject: None,
        convert: true,
    };
    let agent = Agent::new(provider.clone(), config(vec![], hooks));
    agent
        .prompt(vec![
            notification("build failed"),
            Message::user_text("why?"),
        ])
        .await
        .unwrap();
    let sent = &provider.requests()[0];
    assert_eq!(roles(sent), vec!["user", "user"]);
    assert_eq!(
        match &sent[0] {
            Message::User(user) => user.content[0].as_text().map(str::to_owned),
            _ => None,
        },
        Some("[notification] build failed".to_owned())
    );
    assert_eq!(agent.messages()[0].role(), "notification");
}

/// A custom message is written and read back by its role; a known role
/// with a bad shape is an error, never a custom message; a custom message
/// cannot take a role leash reserves.
#[test]
fn messages_read_back_by_role() {
    let custom = notification("hi");
    let line = serde_json::to_string(&custom).unwrap();
    assert_eq!(line, r#"{"role":"notification","text":"hi"}"#);
    assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), custom);

    let declared = system("", &["read"], &["write"]);
    let line = serde_json::to_value(&declared).unwrap();
    assert_eq!(line["role"], "system");
    assert_eq!(line["toolsAdded"][0]["name"], "read");
    assert_eq!(line["toolsRemoved"], json!([{"name": "write"}]));
    assert_eq!(serde_json::from_value::<Message>(line).unwrap(), declared);
    let bare = serde_json::to_value(system("x", &[], &[])).unwrap();
    assert_eq!(
        bare,
        json!({"role": "system", "content": "x", "timestamp": 0})
    );

    let broken = serde_json::from_str::<Message>(r#"{"role":"user","content":5}"#);
    assert!(broken.unwrap_err().to_string().contains("invalid type"));
    assert!(serde_json::from_str::<Message>(r#"{"content":[]}"#).is_err());
    assert_eq!(
        CustomMessage::new("user", serde_json::Map::new()),
        Err(ReservedRole("user".into()))
    );
}

/// Pi's `getCurrentTools`: withdrawals then declarations, message by
/// message; a redeclared tool keeps its place, one withdrawn and declared
/// again moves to the end. `getToolStateChanges`: a changed tool is
/// withdrawn and declared again.
#[test]
fn tools_replay_in_declaration_order() {
    let mut changed = spec("b");
    changed.description = "another".into();
    let messages = vec![
        system("", &["a", "b", "c"], &[]),
        Message::Custom(CustomMessage::new("note", serde_json::Map::new()).unwrap()),
        Message::System(SystemMessage {
            tools_added: vec![changed.clone()],
            ..SystemMessage::default()
        }),
        system("", &["a"], &["a"]),
    ];
    let names: Vec<String> = current_tools(&messages)
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, vec!["b", "c", "a"]);
    assert_eq!(current_tools(&messages)[0], changed);

    let (added, removed) = tool_state_changes(&[spec("a"), spec("b")], &[changed, spec("a")]);
    assert_eq!(
        added.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    assert_eq!(removed, vec![ToolReference { name: "b".into() }]);
}

/// Pi's `getCurrentSystemPrompt`: the texts joined by a blank line, empty
/// ones skipped; `resolve_request` borrows when there is nothing to fold.
#[test]
fn the_system_prompt_is_the_sum_of_system_messages() {
    let messages = vec![
        system("Base.", &[], &[]),
        Message::user_text("hi"),
        system("", &["read"], &[]),
        system("Later.", &[], &[]),
    ];
    assert_eq!(current_system_prompt("", &messages), "Base.\n\nLater.");
    assert_eq!(
        current_system_prompt("Config.", &messages),
        "Config.\n\nBase.\n\nLater."
    );
    let plain = vec![Message::user_text("hi")];
    let resolved = resolve_request("Config.", &plain, Declarations::Beside, &[]);
    assert!(matches!(
        resolved.system,
        std::borrow::Cow::Borrowed("Config.")
    ));
    assert!(matches!(resolved.messages, std::borrow::Cow::Borrowed(_)));
    let resolved = resolve_request("", &messages, Declarations::InTranscript, &[]);
    assert_eq!(roles(&resolved.messages), vec!["user"]);
    assert_eq!(resolved.tools.len(), 1);
}

/// Pi's `declareToolChanges`: a new system message goes before the first
/// pending message of another role; nothing changes when the declarations
/// already match.
#[test]
fn a_declaration_goes_after_pending_system_messages() {
    let context = vec![system("", &["read"], &[])];
    let pending = vec![Message::user_text("hi")];
    assert_eq!(
        declare_tool_changes(&context, &[spec("read")], pending.clone()),
        pending
    );
    let declared = declare_tool_changes(&context, &[spec("write")], pending);
    assert_eq!(roles(&declared), vec!["system", "user"]);
    assert_eq!(
        declares(&declared[0]),
        Some((String::new(), vec!["write".into()], vec!["read".into()]))
    );
}
