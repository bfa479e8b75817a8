//! Tool-side options of Pi 1.6.0's `AgentTool`: `prepareArguments` folds a
//! legacy argument shape before validation, and the usage a tool's result
//! reports reaches `afterToolCall`.

use super::*;
use leash_protocol::Usage;
use pretty_assertions::assert_eq;

/// An edit tool whose schema wants `{edits: [{oldText, newText}]}` and that
/// folds the older top-level `{oldText, newText}` into it.
struct EditTool {
    executed: Mutex<Vec<Value>>,
}

impl Tool for EditTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit".into(),
            description: "Edit tool".into(),
            parameters: json!({
                "type": "object",
                "properties": {"edits": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                    "required": ["oldText", "newText"]
                }}},
                "required": ["edits"],
                "additionalProperties": false
            }),
        }
    }
    fn prepare_arguments(&self, args: Value) -> Value {
        match (args.get("oldText"), args.get("newText")) {
            (Some(old), Some(new)) => {
                let mut edits = args
                    .get("edits")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                edits.push(json!({"oldText": old, "newText": new}));
                json!({ "edits": edits })
            }
            _ => args,
        }
    }
    fn execute<'a>(
        &'a self,
        _call_id: &'a str,
        args: Value,
        _cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.executed.lock().unwrap().push(args.clone());
        Box::pin(async move {
            Ok(ToolOutput {
                usage: Some(Usage {
                    input: 10,
                    output: 5,
                    total_tokens: 15,
                    ..Usage::default()
                }),
                ..ToolOutput::text("edited")
            })
        })
    }
}

/// Records what the tool-call hooks were shown.
#[derive(Default)]
struct Seen {
    before_args: Mutex<Vec<Value>>,
    after_usage: Mutex<Vec<Option<Usage>>>,
}

impl AgentHooks for Seen {
    fn before_tool_call<'a>(
        &'a self,
        call: ToolCallContext<'a>,
    ) -> BoxFuture<'a, Result<BeforeToolCall, String>> {
        self.before_args.lock().unwrap().push(call.args.clone());
        Box::pin(async { Ok(BeforeToolCall::Run) })
    }
    fn after_tool_call<'a>(
        &'a self,
        executed: ExecutedToolCall<'a>,
    ) -> BoxFuture<'a, Result<Option<ResultOverride>, String>> {
        self.after_usage
            .lock()
            .unwrap()
            .push(executed.usage.cloned());
        Box::pin(async { Ok(None) })
    }
}

/// Pi: "should prepare tool arguments for validation" — a legacy shape that
/// the schema refuses is folded by `prepareArguments` first; the tool and
/// `beforeToolCall` get the prepared arguments.
#[tokio::test]
async fn prepare_arguments_folds_a_legacy_shape_before_validation() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("edit", json!({"oldText": "before", "newText": "after"}))]},
        {"text": "done"}
    ]));
    let tool = Arc::new(EditTool {
        executed: Mutex::new(Vec::new()),
    });
    let hooks = Arc::new(Seen::default());
    let mut config = config(vec![tool.clone()], NoHooks);
    config.hooks = hooks.clone();
    let agent = Agent::new(provider, config);
    let added = agent
        .prompt(vec![Message::user_text("edit")])
        .await
        .unwrap();
    let expected = json!({"edits": [{"oldText": "before", "newText": "after"}]});
    assert_eq!(
        *tool.executed.lock().unwrap(),
        std::slice::from_ref(&expected)
    );
    assert_eq!(*hooks.before_args.lock().unwrap(), [expected]);
    let results = tool_results(&added);
    assert!(!results[0].is_error, "{}", result_text(&results[0]));
}

/// Pi's `AgentToolResult` usage: the tokens a tool reports spending (a
/// sub-agent, a model call of its own) are shown to `afterToolCall`.
#[tokio::test]
async fn after_tool_call_sees_the_usage_a_tool_reported() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("edit", json!({"edits": []}))]},
        {"toolCalls": [call("t", json!({}))]},
        {"text": "done"}
    ]));
    let tool = Arc::new(EditTool {
        executed: Mutex::new(Vec::new()),
    });
    let hooks = Arc::new(Seen::default());
    let mut config = config(vec![tool, TestTool::new("t")], NoHooks);
    config.hooks = hooks.clone();
    let agent = Agent::new(provider, config);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    let seen = hooks.after_usage.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].as_ref().map(|u| (u.input, u.output)), Some((10, 5)));
    assert_eq!(seen[1], None);
}
