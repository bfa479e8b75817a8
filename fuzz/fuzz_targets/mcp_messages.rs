//! The caps on one MCP message, on any bytes cut into any chunks: a
//! stdio server's lines (`CappedLines`) and an HTTP server's SSE events
//! (`EventSizer`). No panic; the answer never depends on where the
//! chunks were cut; a stdio stream passes through untouched up to the
//! first line past the cap, and stops within one cap after that line's
//! start; an event stream is refused exactly when some event's lines
//! add up past the cap.

#![no_main]

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use leash_child::lines::{CappedLines, Overflow};
use leash_mcp::http::EventSizer;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

/// `data` read `step` bytes at a time.
struct Chunked<'a> {
    data: &'a [u8],
    step: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self.step.min(self.data.len()).min(buf.remaining());
        buf.put_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Poll::Ready(Ok(()))
    }
}

/// The largest event of `data`: line ends are LF, CRLF or CR; an empty
/// line ends an event; terminators do not count.
fn largest_event(data: &[u8]) -> usize {
    let text: Vec<u8> = {
        let mut out = Vec::with_capacity(data.len());
        let mut i = 0;
        while i < data.len() {
            match data[i] {
                b'\r' if data.get(i + 1) == Some(&b'\n') => {
                    out.push(b'\n');
                    i += 1;
                }
                b'\r' => out.push(b'\n'),
                byte => out.push(byte),
            }
            i += 1;
        }
        out
    };
    let (mut largest, mut event) = (0, 0);
    for line in text.split(|byte| *byte == b'\n') {
        if line.is_empty() {
            event = 0;
        } else {
            event += line.len();
            largest = largest.max(event);
        }
    }
    largest
}

fuzz_target!(|input: &[u8]| {
    let [cap, step, data @ ..] = input else {
        return;
    };
    let cap = usize::from(*cap % 64) + 1;
    let step = usize::from(*step % 16) + 1;

    // HTTP: SSE events, whole and in chunks.
    let whole = EventSizer::new(cap).feed(data).is_ok();
    let mut sizer = EventSizer::new(cap);
    let chunked = data.chunks(step).all(|chunk| sizer.feed(chunk).is_ok());
    assert_eq!(whole, chunked, "the cut changed the answer");
    assert_eq!(whole, largest_event(data) <= cap);

    // stdio: lines.
    let overflow = Overflow::default();
    let mut reader = CappedLines::new(Chunked { data, step }, cap, overflow.clone());
    let mut out = Vec::new();
    let read = futures::executor::block_on(reader.read_to_end(&mut out));
    assert!(data.starts_with(&out), "a byte changed");
    let mut start = 0;
    let long_line = data.split(|byte| *byte == b'\n').find_map(|line| {
        let at = start;
        start += line.len() + 1;
        (line.len() > cap).then_some(at)
    });
    match long_line {
        None => {
            assert!(read.is_ok() && out.len() == data.len() && !overflow.happened());
        }
        Some(at) => {
            assert!(read.is_err() && overflow.happened());
            assert!(
                at <= out.len() && out.len() <= at + cap,
                "{at} {}",
                out.len()
            );
        }
    }
});
