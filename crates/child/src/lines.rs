//! A child's stdout read as lines of at most a cap (a stdio MCP server
//! speaks one JSON-RPC message a line). The cap is checked on the bytes as
//! they arrive, before whoever reads the stream buffers them: a line that
//! runs past it is refused there, so a server cannot make leash hold more
//! than the cap of one message, however long its line (or endless).
//!
//! The lines before the long one are delivered; then every read fails, and
//! [`Overflow`] tells the owner why its stream ended.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// Whether a stream refused a message past its cap; shared with its
/// owner, who can also wait for it (a call then fails at once instead of
/// waiting for an answer that will never come).
#[derive(Debug, Clone, Default)]
pub struct Overflow(CancellationToken);

impl Overflow {
    /// A message went past the cap: the stream ended there.
    pub fn happened(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Returns once a message went past the cap.
    pub async fn wait(&self) {
        self.0.cancelled().await;
    }

    /// Records that a message went past the cap.
    pub fn set(&self) {
        self.0.cancel();
    }
}

/// An [`AsyncRead`] that passes `inner` through while no line (the bytes
/// between two newlines) is longer than `cap` bytes.
#[derive(Debug)]
pub struct CappedLines<R> {
    inner: R,
    cap: usize,
    /// The length of the line read so far (since the last newline).
    line: usize,
    overflow: Overflow,
}

impl<R> CappedLines<R> {
    /// Reads `inner` with lines capped at `cap` bytes; `overflow` is set
    /// when a line goes past it.
    pub fn new(inner: R, cap: usize, overflow: Overflow) -> Self {
        CappedLines {
            inner,
            cap,
            line: 0,
            overflow,
        }
    }

    fn refused(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a line longer than the cap of {} bytes", self.cap),
        )
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CappedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.overflow.happened() {
            return Poll::Ready(Err(self.refused()));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        let (cap, mut line) = (self.cap, self.line);
        // Where the last whole line of this chunk ends (after its newline).
        let mut whole = 0;
        let mut at = 0;
        for (index, piece) in buf.filled()[before..]
            .split(|byte| *byte == b'\n')
            .enumerate()
        {
            if index > 0 {
                // `piece` follows a newline: the line before it was whole.
                line = 0;
                whole = at;
            }
            line += piece.len();
            at += piece.len() + 1;
            if line > cap {
                self.overflow.set();
                buf.set_filled(before + whole);
                return Poll::Ready(if whole == 0 {
                    Err(self.refused())
                } else {
                    Ok(())
                });
            }
        }
        self.line = line;
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read_all(input: &[u8], cap: usize) -> (Vec<u8>, io::Result<usize>, bool) {
        let overflow = Overflow::default();
        let mut out = Vec::new();
        let mut reader = CappedLines::new(input, cap, overflow.clone());
        let result = reader.read_to_end(&mut out).await;
        (out, result, overflow.happened())
    }

    #[tokio::test]
    async fn lines_up_to_the_cap_pass_through() {
        let (out, result, over) = read_all(b"abcd\nefgh\n\nij", 4).await;
        assert_eq!(out, b"abcd\nefgh\n\nij");
        assert_eq!(result.unwrap(), 13);
        assert!(!over);
    }

    #[tokio::test]
    async fn a_line_past_the_cap_ends_the_stream_after_the_lines_before_it() {
        let (out, result, over) = read_all(b"ok\nabcde\nnever\n", 4).await;
        assert_eq!(out, b"ok\n");
        assert!(result.unwrap_err().to_string().contains("cap of 4 bytes"));
        assert!(over);
    }

    #[tokio::test]
    async fn a_long_line_split_across_reads_is_counted_whole() {
        let (client, mut server) = tokio::io::duplex(64);
        let overflow = Overflow::default();
        let mut reader = CappedLines::new(client, 100, overflow.clone());
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            server.write_all(b"short\n").await.unwrap();
            // An endless line, in pieces smaller than the cap.
            for _ in 0..10 {
                if server.write_all(&[b'x'; 30]).await.is_err() {
                    break;
                }
            }
        });
        let mut out = Vec::new();
        let error = reader.read_to_end(&mut out).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(overflow.happened());
        // Never more than the cap of the long line reached the reader.
        assert!(out.len() <= 6 + 100, "{}", out.len());
        assert!(out.starts_with(b"short\n"));
        drop(reader);
        writer.await.unwrap();
    }
}
