//! Criterion groups for the two per-byte / per-delta hot paths of a long
//! reply: SSE decoding (`leash_provider::sse`) and assembling the
//! assistant message from text deltas (`stream_assistant_response`). The
//! whole-process picture is `make bench` (`benches/costs`).
//!
//! `cargo bench --bench micro`; under `cargo test` each runs once.

#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use futures::stream::BoxStream;
use leash_agent::assistant_stream::stream_assistant_response;
use leash_agent::types::AgentEvent;
use leash_protocol::StopReason;
use leash_protocol::StreamEvent;
use leash_provider::sse;
use leash_provider::{Provider, Request};
use tokio_util::sync::CancellationToken;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A realistic Chat Completions chunk.
fn chunk(i: usize) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"object\":\"chat.completion.chunk\",\"created\":1741569952,\"model\":\"gpt-4.1-mini-2025-04-14\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" token{i}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
    )
}

fn sse_decoding(c: &mut Criterion) {
    let runtime = runtime();
    let mut body = Vec::new();
    let mut i = 0;
    while body.len() < 4 * 1024 * 1024 {
        body.extend_from_slice(chunk(i).as_bytes());
        i += 1;
    }
    let mut group = c.benchmark_group("sse_decoding");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(body.len() as u64));
    for read in [4 * 1024, 16 * 1024, 64 * 1024, 256 * 1024] {
        let pieces: Vec<Vec<u8>> = body.chunks(read).map(<[u8]>::to_vec).collect();
        group.bench_with_input(
            BenchmarkId::new("read_bytes", read),
            &pieces,
            |b, pieces| {
                b.iter_batched(
                    || pieces.clone(),
                    |pieces| {
                        runtime.block_on(async {
                            let stream =
                                futures::stream::iter(pieces.into_iter().map(Ok::<_, String>));
                            let mut events = sse::from_bytes(stream, sse::MAX_EVENT_BYTES);
                            let mut count = 0usize;
                            while let Some(event) = events.next().await {
                                black_box(event.expect("a valid event"));
                                count += 1;
                            }
                            count
                        })
                    },
                    criterion::BatchSize::LargeInput,
                );
            },
        );
    }
    group.finish();
}

/// A provider whose reply is `deltas` text deltas, made as they are pulled.
struct Deltas(usize);

impl Provider for Deltas {
    fn name(&self) -> &str {
        "bench"
    }

    fn stream(&self, _request: Request<'_>) -> BoxStream<'static, StreamEvent> {
        let texts = (0..self.0).map(|_| StreamEvent::Text("tok ".to_owned()));
        Box::pin(futures::stream::iter(
            texts.chain(std::iter::once(StreamEvent::Done(StopReason::Stop))),
        ))
    }
}

fn message_assembly(c: &mut Criterion) {
    let runtime = runtime();
    let mut group = c.benchmark_group("message_assembly");
    group.sample_size(10);
    for deltas in [1_000, 10_000, 100_000] {
        group.throughput(Throughput::Elements(deltas as u64));
        let provider = Arc::new(Deltas(deltas));
        group.bench_with_input(
            BenchmarkId::new("text_deltas", deltas),
            &provider,
            |b, provider| {
                b.iter(|| {
                    let cancel = CancellationToken::new();
                    let emit = |event: AgentEvent| {
                        black_box(event);
                    };
                    let request = Request {
                        transcript: &[],
                        model: "bench",
                        system: "",
                        messages: &[],
                        tools: &[],
                        options: Default::default(),
                    };
                    let message = runtime.block_on(stream_assistant_response(
                        provider.as_ref(),
                        request,
                        &cancel,
                        &emit,
                    ));
                    assert_eq!(message.stop_reason, StopReason::Stop);
                    message
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, sse_decoding, message_assembly);
criterion_main!(benches);
