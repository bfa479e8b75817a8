//! What the fuzz targets share: cutting an input into the chunks a network
//! would deliver, a provider that replays a prepared stream, assembling a
//! reply the way the loop does, and the checks every assembled reply must
//! pass. A failed check panics, which libFuzzer reports as a crash.

use std::sync::Mutex;

use futures::StreamExt;
use futures::stream::BoxStream;
use leash_agent::types::{AgentEvent, AssistantMessageEvent};
use leash_provider::sse::{self, SseError, SseEvent};
use leash_agent::assistant_stream::stream_assistant_response;
use leash_protocol::StreamEvent;
use leash_protocol::{AssistantMessage, StopReason};
use leash_provider::{Provider, Request};
use tokio_util::sync::CancellationToken;

/// The cap on one event the targets use: small, so inputs reach it.
pub const FUZZ_EVENT_CAP: usize = 4096;

/// Cuts `data` into chunks: its first byte is the chunk size (0: one chunk
/// holding everything), the rest is the body.
pub fn chunks(data: &[u8]) -> Vec<Vec<u8>> {
    let Some((&size, body)) = data.split_first() else {
        return Vec::new();
    };
    match size {
        0 => vec![body.to_vec()],
        n => body.chunks(usize::from(n)).map(<[u8]>::to_vec).collect(),
    }
}

/// The SSE events of `chunks`, capped at [`FUZZ_EVENT_CAP`] per event.
pub fn sse_events(chunks: Vec<Vec<u8>>) -> BoxStream<'static, Result<SseEvent, SseError>> {
    sse::from_bytes(
        futures::stream::iter(chunks.into_iter().map(Ok::<_, String>)),
        FUZZ_EVENT_CAP,
    )
}

/// A provider that answers its one request with a prepared stream.
pub struct Replay(Mutex<Option<BoxStream<'static, StreamEvent>>>);

impl Replay {
    /// A provider that replays `stream`.
    pub fn new(stream: BoxStream<'static, StreamEvent>) -> Self {
        Replay(Mutex::new(Some(stream)))
    }
}

impl Provider for Replay {
    fn name(&self) -> &str {
        "fuzz"
    }

    fn stream(&self, _request: Request<'_>) -> BoxStream<'static, StreamEvent> {
        let taken = self.0.lock().ok().and_then(|mut stream| stream.take());
        taken.unwrap_or_else(|| futures::stream::empty().boxed())
    }
}

/// Collects a provider stream, checking that it ends with exactly one
/// `Done` or `Error` and holds nothing after it.
pub fn collect_checked(stream: BoxStream<'static, StreamEvent>) -> Vec<StreamEvent> {
    let events: Vec<StreamEvent> = futures::executor::block_on(stream.collect());
    let terminal =
        |event: &StreamEvent| matches!(event, StreamEvent::Done(_) | StreamEvent::Error(_));
    let terminals = events.iter().filter(|event| terminal(event)).count();
    assert_eq!(terminals, 1, "one Done or Error per stream: {events:?}");
    assert!(
        events.last().is_some_and(terminal),
        "the terminal event comes last"
    );
    events
}

/// Assembles `events` into an assistant message exactly as the loop does,
/// and checks the message against the deltas it was built from.
pub fn assemble(events: Vec<StreamEvent>) -> AssistantMessage {
    let last = events.last().cloned();
    let provider = Replay::new(futures::stream::iter(events).boxed());
    let updates = Mutex::new(Vec::new());
    let emit = |event: AgentEvent| {
        if let AgentEvent::MessageUpdate { event } = event {
            if let Ok(mut updates) = updates.lock() {
                updates.push(event);
            }
        }
    };
    let request = Request {
        transcript: &[],
        model: "fuzz",
        system: "",
        messages: &[],
        tools: &[],
        options: Default::default(),
    };
    let cancel = CancellationToken::new();
    let message = futures::executor::block_on(stream_assistant_response(
        &provider, request, &cancel, &emit,
    ));
    let updates = updates.into_inner().unwrap_or_default();
    check_message(&message, &updates, last.as_ref());
    message
}

/// The invariants of an assembled message: every delta names a block that
/// exists, the stop reason is the stream's, and an error says why.
fn check_message(
    message: &AssistantMessage,
    updates: &[AssistantMessageEvent],
    last: Option<&StreamEvent>,
) {
    for update in updates {
        let index = match update {
            AssistantMessageEvent::TextStart { content_index }
            | AssistantMessageEvent::TextDelta { content_index, .. }
            | AssistantMessageEvent::TextEnd { content_index }
            | AssistantMessageEvent::ThinkingStart { content_index }
            | AssistantMessageEvent::ThinkingDelta { content_index, .. }
            | AssistantMessageEvent::ThinkingEnd { content_index }
            | AssistantMessageEvent::ToolCallStart { content_index, .. }
            | AssistantMessageEvent::ToolCallDelta { content_index, .. }
            | AssistantMessageEvent::ToolCallEnd { content_index } => *content_index,
        };
        assert!(index < message.content.len(), "{update:?} past the content");
    }
    match last {
        Some(StreamEvent::Done(stop)) => {
            assert_eq!(message.stop_reason, *stop);
            assert!(message.error_message.is_none());
        }
        Some(StreamEvent::Error(text)) => {
            assert_eq!(message.stop_reason, StopReason::Error);
            assert_eq!(message.error_message.as_deref(), Some(text.as_str()));
        }
        _ => assert_eq!(message.stop_reason, StopReason::Error),
    }
    // Text never contains a message the loop made up: the reply is
    // exactly the concatenation of the text deltas.
    let deltas: String = updates
        .iter()
        .filter_map(|update| match update {
            AssistantMessageEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(message.text(), deltas);
}

/// Text that only files outside the fuzz root hold; a result or a file
/// read that shows it is an escape.
pub const OUTSIDE_SECRET: &str = "OUTSIDE-SECRET-5f1c";

/// A directory tree for the file-tool targets: `root/` with text, binary,
/// nested and linked entries (links inside, out of the root, to `/proc`,
/// loops), and `outside/` next to it holding [`OUTSIDE_SECRET`]. Made once
/// per process under the temp directory.
pub struct Tree {
    /// The root the sandbox is made on.
    pub root: std::path::PathBuf,
    /// A symlink to the root (a root that is itself a symlink).
    pub root_link: std::path::PathBuf,
}

/// The tree, made on first use.
pub fn tree() -> &'static Tree {
    static TREE: std::sync::OnceLock<Tree> = std::sync::OnceLock::new();
    TREE.get_or_init(make_tree)
}

fn make_tree() -> Tree {
    use std::fs;
    use std::os::unix::fs::symlink;
    let base = std::env::temp_dir().join(format!("leash-fuzz-{}", std::process::id()));
    let _ = fs::remove_dir_all(&base);
    let root = base.join("root");
    let outside = base.join("outside");
    let made = (|| -> std::io::Result<()> {
        fs::create_dir_all(root.join("sub/deeper"))?;
        fs::create_dir_all(&outside)?;
        fs::write(outside.join("outside-only.txt"), OUTSIDE_SECRET)?;
        fs::write(root.join("a.txt"), "alpha\nbeta\ngamma\n")?;
        fs::write(root.join("sub/b.txt"), "nested\n")?;
        fs::write(root.join("sub/deeper/c.txt"), "deeper\n")?;
        fs::write(root.join("bin.dat"), b"\x00\x01\x02")?;
        fs::write(root.join("latin1.txt"), b"caf\xe9\n")?;
        fs::write(root.join("long.txt"), "x".repeat(70_000))?;
        symlink("a.txt", root.join("link_in"))?;
        symlink("sub", root.join("dir_in"))?;
        symlink("../a.txt", root.join("sub/up_in"))?;
        symlink(outside.join("outside-only.txt"), root.join("abs_out"))?;
        symlink("../outside/outside-only.txt", root.join("rel_out"))?;
        symlink(&outside, root.join("dir_out"))?;
        symlink("../../outside", root.join("sub/deep_out"))?;
        symlink("/", root.join("slash"))?;
        symlink("/proc/self/environ", root.join("environ"))?;
        symlink("loop_b", root.join("loop_a"))?;
        symlink("loop_a", root.join("loop_b"))?;
        symlink("self", root.join("self"))?;
        symlink(".", root.join("dot"))?;
        symlink("..", root.join("dotdot"))?;
        symlink(&root, base.join("root_link"))?;
        Ok(())
    })();
    if let Err(error) = made {
        panic!(
            "cannot make the fuzz tree under {}: {error}",
            base.display()
        );
    }
    let root = fs::canonicalize(&root).unwrap_or(root);
    Tree {
        root_link: base.join("root_link"),
        root,
    }
}

/// CRC-32 (IEEE), as the AWS event-stream frames carry it.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// One `application/vnd.amazon.eventstream` frame: string headers, then
/// `payload`, with both CRCs right (so inputs reach the decoder behind the
/// framing). A header's value past 65535 bytes is cut to fit.
pub fn event_frame(headers: &[(&str, &[u8])], payload: &[u8]) -> Vec<u8> {
    let mut encoded = Vec::new();
    for (name, value) in headers {
        let name = &name.as_bytes()[..name.len().min(255)];
        let value = &value[..value.len().min(usize::from(u16::MAX))];
        encoded.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
        encoded.extend_from_slice(name);
        encoded.push(7); // a string
        encoded.extend_from_slice(&u16::try_from(value.len()).unwrap_or(u16::MAX).to_be_bytes());
        encoded.extend_from_slice(value);
    }
    let total = 12 + encoded.len() + payload.len() + 4;
    let mut frame = Vec::with_capacity(total);
    frame.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    frame.extend_from_slice(
        &u32::try_from(encoded.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    let prelude = crc32(&frame);
    frame.extend_from_slice(&prelude.to_be_bytes());
    frame.extend_from_slice(&encoded);
    frame.extend_from_slice(payload);
    let whole = crc32(&frame);
    frame.extend_from_slice(&whole.to_be_bytes());
    frame
}
