//! Tool-argument handling on any argument text: the raw JSON a model
//! streams for up to eight calls (to `read_file`, `list_dir`, an unknown
//! tool) goes through the whole loop — assembly, schema validation, the
//! repeat guard, the tools on a root full of links that lead out. No panic,
//! exactly one result per call, an error for anything that is not a valid
//! object, and no outside content in any result.

#![no_main]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::stream::BoxStream;
use leash_agent::{Agent, Declarations, LoopConfig, QueueHandle, ToolExecution};
use leash::internals::{LimitSettings, RunLimits};
use leash_tools::blocking::join_finished_tool_threads;
use leash_protocol::StreamEvent;
use leash_protocol::{Message, StopReason};
use leash_provider::{Provider, Request};
use leash_tools::Tool;
use leash_tools::list_dir::ListDir;
use leash_tools::read_file::ReadFile;
use leash_tools::sandbox::Sandbox;
use leash_fuzz::{OUTSIDE_SECRET, tree};
use libfuzzer_sys::fuzz_target;

/// One scripted reply per request.
struct Turns(Mutex<VecDeque<Vec<StreamEvent>>>);

impl Provider for Turns {
    fn name(&self) -> &str {
        "fuzz"
    }
    fn stream(&self, _request: Request<'_>) -> BoxStream<'static, StreamEvent> {
        let next = self.0.lock().ok().and_then(|mut turns| turns.pop_front());
        let events = next.unwrap_or_else(|| vec![StreamEvent::Done(StopReason::Stop)]);
        futures::stream::iter(events).boxed()
    }
}

const NAMES: [&str; 4] = ["read_file", "list_dir", "write_file", ""];

fuzz_target!(|data: &[u8]| {
    let mut first = Vec::new();
    let mut calls = 0;
    for (key, segment) in data.split(|&b| b == 0xff).take(8).enumerate() {
        let Some((&selector, args)) = segment.split_first() else {
            continue;
        };
        let args = String::from_utf8_lossy(args).into_owned();
        let name = NAMES[usize::from(selector) % NAMES.len()];
        first.push(StreamEvent::ToolCallStart {
            key,
            id: format!("call_{key}"),
            name: name.to_owned(),
        });
        let middle = (0..=args.len() / 2)
            .rev()
            .find(|i| args.is_char_boundary(*i))
            .unwrap_or(0);
        for fragment in [&args[..middle], &args[middle..]] {
            first.push(StreamEvent::ToolCallArgs {
                key,
                fragment: fragment.to_owned(),
            });
        }
        calls += 1;
    }
    if calls == 0 {
        return;
    }
    first.push(StreamEvent::Done(StopReason::ToolUse));
    let provider = Arc::new(Turns(Mutex::new(VecDeque::from([
        first,
        vec![
            StreamEvent::Text("done".into()),
            StreamEvent::Done(StopReason::Stop),
        ],
    ]))));
    let Ok(sandbox) = Sandbox::new(&tree().root) else {
        panic!("the fuzz root is usable");
    };
    let sandbox = Arc::new(sandbox);
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(ReadFile::new(Arc::clone(&sandbox))),
        Arc::new(ListDir::new(sandbox)),
    ];
    let queues = QueueHandle::default();
    let agent = Agent::with_queues(
        provider,
        LoopConfig {
            model: "fuzz".into(),
            system: String::new(),
            tools,
            declarations: Declarations::Beside,
            tool_execution: if data.len() % 2 == 0 {
                ToolExecution::Parallel
            } else {
                ToolExecution::Sequential
            },
            hooks: Arc::new(RunLimits::new(LimitSettings::new(4, 1), queues.clone())),
        },
        queues,
    );
    let Ok(added) = futures::executor::block_on(agent.prompt(vec![Message::user_text("go")]))
    else {
        panic!("the agent was idle");
    };
    let Some(Message::Assistant(reply)) = added.get(1) else {
        panic!("no reply: {added:?}");
    };
    let results: Vec<_> = added
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect();
    let asked: Vec<_> = reply.tool_calls().collect();
    assert_eq!(results.len(), asked.len(), "one result per call");
    for (call, result) in asked.iter().zip(&results) {
        assert_eq!(call.id, result.tool_call_id, "results in the model's order");
        if !call.arguments.is_object() {
            assert!(
                result.is_error,
                "{call:?} ran with arguments that are no object"
            );
        }
        // A result may repeat what the model wrote itself (an invalid
        // argument is quoted); anything else holding the secret was read.
        let written = call.arguments.to_string().contains(OUTSIDE_SECRET);
        assert!(
            written || !result.text().contains(OUTSIDE_SECRET),
            "{call:?} read outside the root"
        );
    }
    // Every tool thread ends before the next input: one still ending when
    // libFuzzer exits holds thread-locals LeakSanitizer reports as leaked.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while join_finished_tool_threads() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "a tool thread never ended"
        );
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
});
