//! The parts measured inside this process, with the library: a tool batch
//! of parallel sleeping calls on the scripted provider, SSE decoding, and
//! the two OpenAI decoders (Chat Completions, Responses) on whole replies.
//!
//! Nothing here touches the network or the file system.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use leash_agent::types::AgentEvent;
use leash_agent::{Agent, Declarations, LoopConfig, NoHooks, ToolExecution};
use leash_faux::{FauxProvider, Script};
use leash_protocol::ToolSpec;
use leash_protocol::{Message, ToolOutput};
use leash_provider::sse;
use leash_tools::{Tool, ToolError, ToolUpdates};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How long one call of the sleeping tool takes.
pub const TOOL_SLEEP: Duration = Duration::from_millis(100);

/// A tool that sleeps [`TOOL_SLEEP`] (or until the run is aborted).
struct SleepTool {
    spec: ToolSpec,
}

impl Tool for SleepTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn execute<'a>(
        &'a self,
        _call_id: &'a str,
        _args: Value,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            tokio::select! {
                _ = tokio::time::sleep(TOOL_SLEEP) => Ok(ToolOutput::text("slept")),
                _ = cancel.cancelled() => Err("aborted".into()),
            }
        })
    }
}

/// A single-threaded runtime, as the binary uses.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// One run whose first reply asks for `calls` parallel sleeps. Returns the
/// time from the batch's first `tool_execution_start` to its last
/// `tool_execution_end`.
pub fn tool_batch(runtime: &tokio::runtime::Runtime, calls: usize) -> Duration {
    let tool_calls: Vec<Value> = (0..calls)
        .map(|i| json!({"id": format!("call_{i}"), "name": "sleep", "arguments": {}}))
        .collect();
    let script = json!([{"toolCalls": tool_calls}, {"text": "done"}]).to_string();
    let script = Script::parse(&script, "bench").expect("a valid faux script");
    let tool = Arc::new(SleepTool {
        spec: ToolSpec {
            name: "sleep".into(),
            description: "sleeps".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
    });
    let agent = Agent::new(
        Arc::new(FauxProvider::new(script)),
        LoopConfig {
            model: "faux".into(),
            system: String::new(),
            tools: vec![tool],
            declarations: Declarations::Beside,
            tool_execution: ToolExecution::Parallel,
            hooks: Arc::new(NoHooks),
        },
    );
    let span: Arc<Mutex<Span>> = Arc::default();
    let seen = Arc::clone(&span);
    let _subscription = agent.subscribe(move |event| {
        let mut span = seen.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            AgentEvent::ToolExecutionStart { .. } if span.first_start.is_none() => {
                span.first_start = Some(Instant::now())
            }
            AgentEvent::ToolExecutionEnd { is_error, .. } => {
                assert!(!is_error, "the sleeping tool failed");
                span.last_end = Some(Instant::now());
                span.ends += 1;
            }
            _ => {}
        }
    });
    let messages = runtime
        .block_on(agent.prompt(vec![Message::user_text("sleep")]))
        .expect("an idle agent");
    assert!(!messages.is_empty());
    let span = span.lock().unwrap_or_else(PoisonError::into_inner);
    assert_eq!(span.ends, calls, "every call ends");
    match (span.first_start, span.last_end) {
        (Some(start), Some(end)) => end - start,
        _ => panic!("the batch did not run"),
    }
}

/// What the batch's events showed.
#[derive(Debug, Default)]
struct Span {
    first_start: Option<Instant>,
    last_end: Option<Instant>,
    ends: usize,
}

/// A realistic Chat Completions chunk, as api.openai.com sends them.
pub fn realistic_chunk(i: usize) -> String {
    let delta = json!({
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion.chunk",
        "created": 1_741_569_952,
        "model": "gpt-4.1-mini-2025-04-14",
        "service_tier": "default",
        "system_fingerprint": "fp_b376dfbbd5",
        "choices": [{"index": 0, "delta": {"content": format!(" token{i}")}, "logprobs": null, "finish_reason": null}]
    });
    format!("data: {delta}\n\n")
}

/// An SSE body of realistic chunks, at least `bytes` long.
pub fn sse_body(bytes: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(bytes + 512);
    let mut i = 0;
    while body.len() < bytes {
        body.extend_from_slice(realistic_chunk(i).as_bytes());
        i += 1;
    }
    body
}

/// A slice of a shared body, so feeding the decoder copies nothing.
struct Piece {
    body: Arc<Vec<u8>>,
    start: usize,
    end: usize,
}

impl AsRef<[u8]> for Piece {
    fn as_ref(&self) -> &[u8] {
        &self.body[self.start..self.end]
    }
}

/// Decodes `body` fed in `chunk`-byte pieces; returns the time taken and
/// the number of events.
pub fn sse_decode(
    runtime: &tokio::runtime::Runtime,
    body: &Arc<Vec<u8>>,
    chunk: usize,
) -> (Duration, usize) {
    let pieces: Vec<Result<Piece, String>> = (0..body.len())
        .step_by(chunk)
        .map(|start| {
            Ok(Piece {
                body: Arc::clone(body),
                start,
                end: (start + chunk).min(body.len()),
            })
        })
        .collect();
    let started = Instant::now();
    let events = runtime.block_on(async {
        let mut events = sse::from_bytes(futures::stream::iter(pieces), sse::MAX_EVENT_BYTES);
        let mut count = 0;
        while let Some(event) = events.next().await {
            let event = event.expect("a valid event");
            std::hint::black_box(&event);
            count += 1;
        }
        count
    });
    (started.elapsed(), events)
}

/// A realistic Responses text delta event, as api.openai.com sends them
/// (`event:` line, typed `data`, the stream obfuscation padding).
pub fn realistic_responses_event(i: usize) -> String {
    let data = json!({
        "type": "response.output_text.delta",
        "sequence_number": i + 4,
        "item_id": "msg_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654",
        "output_index": 0,
        "content_index": 0,
        "delta": format!(" token{i}"),
        "logprobs": [],
        "obfuscation": "kE7Yq2v"
    });
    format!("event: response.output_text.delta\ndata: {data}\n\n")
}

/// Which OpenAI API a decoder body is written for.
#[derive(Debug, Clone, Copy)]
pub enum Api {
    /// Chat Completions chunks, ended by a finish reason and `[DONE]`.
    Chat,
    /// Responses events, ended by `response.completed`.
    Responses,
}

/// A whole reply of realistic text deltas in `api`'s format, at least
/// `bytes` long, ending as the API ends a reply.
pub fn reply_body(api: Api, bytes: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(bytes + 1024);
    let mut i = 0;
    while body.len() < bytes {
        let event = match api {
            Api::Chat => realistic_chunk(i),
            Api::Responses => realistic_responses_event(i),
        };
        body.extend_from_slice(event.as_bytes());
        i += 1;
    }
    let end = match api {
        Api::Chat => concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n"
        ),
        Api::Responses => concat!(
            "event: response.completed\ndata: {\"type\":\"response.completed\",",
            "\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":10,",
            "\"output_tokens\":10}}}\n\n"
        ),
    };
    body.extend_from_slice(end.as_bytes());
    body
}

/// Decodes `body` with `api`'s whole decoder (SSE framing, then the wire
/// format's events into the loop's stream events) fed in `chunk`-byte
/// pieces; returns the time taken and the number of stream events.
pub fn reply_decode(
    runtime: &tokio::runtime::Runtime,
    api: Api,
    body: &Arc<Vec<u8>>,
    chunk: usize,
) -> (Duration, usize) {
    let pieces: Vec<Result<Piece, String>> = (0..body.len())
        .step_by(chunk)
        .map(|start| {
            Ok(Piece {
                body: Arc::clone(body),
                start,
                end: (start + chunk).min(body.len()),
            })
        })
        .collect();
    let started = Instant::now();
    let events = runtime.block_on(async {
        let framed = sse::from_bytes(futures::stream::iter(pieces), sse::MAX_EVENT_BYTES);
        let mut events = match api {
            Api::Chat => leash_provider::openai::decode(framed),
            Api::Responses => leash_provider::openai_responses::decode(framed),
        };
        let mut count = 0;
        let mut last = None;
        while let Some(event) = events.next().await {
            count += 1;
            last = Some(event);
        }
        assert!(
            matches!(last, Some(leash_protocol::StreamEvent::Done(_))),
            "the reply decodes whole: {last:?}"
        );
        count
    });
    (started.elapsed(), events)
}
