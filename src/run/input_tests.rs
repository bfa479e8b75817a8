//! The stdin rules, with stdin and the grace passed in.

use super::*;
use std::io::Cursor;

/// A reader that never returns (an open pipe nobody writes to).
struct Stalled;
impl Read for Stalled {
    fn read(&mut self, _buf: &mut [u8]) -> std::io::Result<usize> {
        std::thread::sleep(Duration::from_secs(3600));
        Ok(0)
    }
}

/// A pipe quiet for `quiet`, then giving `text` (empty: closed with
/// nothing in it).
struct Slow {
    quiet: Duration,
    text: Option<&'static str>,
}
impl Read for Slow {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        std::thread::sleep(std::mem::take(&mut self.quiet));
        let Some(text) = self.text.take() else {
            return Ok(0);
        };
        buf[..text.len()].copy_from_slice(text.as_bytes());
        Ok(text.len())
    }
}

fn bytes(text: &str) -> Cursor<Vec<u8>> {
    Cursor::new(text.as_bytes().to_vec())
}

const GRACE: Duration = Duration::from_millis(100);

#[tokio::test]
async fn no_prompt_reads_it_from_stdin() {
    let input = prompt_from(
        None,
        StdinMode::Auto,
        StdinKind::Piped,
        bytes("hello\n"),
        GRACE,
        None,
    )
    .await
    .unwrap();
    assert_eq!(input.text, "hello\n");
}

#[tokio::test]
async fn a_dash_prompt_reads_stdin_too() {
    let input = prompt_from(
        Some("-".into()),
        StdinMode::Auto,
        StdinKind::Piped,
        bytes("q"),
        GRACE,
        None,
    )
    .await
    .unwrap();
    assert_eq!(input.text, "q");
}

#[tokio::test]
async fn piped_stdin_is_fenced_after_the_prompt() {
    let input = prompt_from(
        Some("Any bugs?".into()),
        StdinMode::Auto,
        StdinKind::Piped,
        bytes("diff --git a b\n"),
        GRACE,
        None,
    )
    .await
    .unwrap();
    assert_eq!(input.text, "Any bugs?\n\n<stdin>\ndiff --git a b\n</stdin>");
    assert_eq!(input.notice, None);
}

#[tokio::test]
async fn an_empty_pipe_leaves_the_prompt_alone_and_says_so() {
    let input = prompt_from(
        Some("q".into()),
        StdinMode::Auto,
        StdinKind::Piped,
        bytes(""),
        GRACE,
        None,
    )
    .await
    .unwrap();
    assert_eq!(input.text, "q");
    assert_eq!(input.notice.as_deref(), Some(EMPTY_STDIN));
    // `/dev/null` is no input anybody gave: nothing to say.
    let input = prompt_from(
        Some("q".into()),
        StdinMode::Auto,
        StdinKind::Device,
        bytes(""),
        GRACE,
        None,
    )
    .await
    .unwrap();
    assert_eq!(input.notice, None);
    // `--stdin` says the run needs it.
    let error = prompt_from(
        Some("q".into()),
        StdinMode::Wait,
        StdinKind::Device,
        bytes(""),
        GRACE,
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(error, InputError::EmptyStdin);
}

#[tokio::test]
async fn a_silent_pipe_is_given_up_after_the_grace_with_a_notice() {
    let started = std::time::Instant::now();
    let input = prompt_from(
        Some("q".into()),
        StdinMode::Auto,
        StdinKind::Piped,
        Stalled,
        GRACE,
        None,
    )
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(input.text, "q");
    assert!(
        input
            .notice
            .unwrap()
            .starts_with("stdin gave nothing within")
    );
}

#[tokio::test]
async fn input_after_the_grace_is_seen_as_late() {
    let slow = Slow {
        quiet: Duration::from_millis(300),
        text: Some("log"),
    };
    let input = prompt_from(
        Some("q".into()),
        StdinMode::Auto,
        StdinKind::Piped,
        slow,
        GRACE,
        None,
    )
    .await
    .unwrap();
    assert_eq!(input.text, "q");
    let mut late = input.late.unwrap();
    tokio::time::timeout(Duration::from_secs(5), late.arrived())
        .await
        .expect("the late input is noticed");
}

#[tokio::test]
async fn a_pipe_closed_empty_after_the_grace_is_no_late_input() {
    let slow = Slow {
        quiet: Duration::from_millis(300),
        text: None,
    };
    let input = prompt_from(
        Some("q".into()),
        StdinMode::Auto,
        StdinKind::Piped,
        slow,
        GRACE,
        None,
    )
    .await
    .unwrap();
    let mut late = input.late.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(800), late.arrived()).await;
    assert!(waited.is_err(), "EOF must not count as late input");
}

#[tokio::test]
async fn wait_mode_is_bounded_by_the_deadline() {
    let deadline = Instant::now() + Duration::from_millis(150);
    let error = prompt_from(
        Some("q".into()),
        StdinMode::Wait,
        StdinKind::Piped,
        Stalled,
        GRACE,
        Some(deadline),
    )
    .await
    .unwrap_err();
    assert_eq!(error, InputError::Timeout);
}

#[tokio::test]
async fn never_mode_ignores_stdin_and_an_empty_prompt_is_refused() {
    let input = prompt_from(
        Some("q".into()),
        StdinMode::Never,
        StdinKind::Piped,
        Stalled,
        GRACE,
        None,
    )
    .await
    .unwrap();
    assert_eq!(input.text, "q");
    let error = prompt_from(
        None,
        StdinMode::Auto,
        StdinKind::Piped,
        bytes("  \n"),
        GRACE,
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(error, InputError::Empty);
    let error = prompt_from(
        None,
        StdinMode::Auto,
        StdinKind::Terminal,
        bytes(""),
        GRACE,
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(error, InputError::NoPrompt);
}
