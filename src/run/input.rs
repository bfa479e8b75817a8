//! The prompt and stdin (ARCHITECTURE.md §2): read the prompt from stdin when none is
//! given, append piped stdin to a given prompt, and never hang on a pipe
//! that nobody writes to (a short grace for the first byte, then go on).
//!
//! Reading happens on a plain thread so a blocked `read` can be abandoned;
//! nothing here may wait longer than the run's deadline. A pipe given up
//! after the grace is not forgotten: [`LateStdin`] keeps watching it, so
//! input that comes later stops the run instead of being dropped
//! (docs/src/usage.md "Stdin").

use std::io::{IsTerminal, Read};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::AttachPlan;
use crate::config::input::{FILE_LIMIT, StdinMode};
use leash_protocol::{Attachment, Content, Message, UserMessage, now_ms};

/// The most stdin leash reads (prompt or appended input).
pub const STDIN_LIMIT: usize = FILE_LIMIT as usize;

/// The user message to send, and a notice for stderr, if any.
#[derive(Debug)]
pub struct PromptInput {
    /// The text of the user message.
    pub text: String,
    /// Something the user should know (e.g. stdin was skipped).
    pub notice: Option<String>,
    /// The open pipe the run went on without, still watched.
    pub late: Option<LateStdin>,
}

/// An open stdin pipe that gave nothing within the grace, watched for
/// the rest of the run: a producer that was only slow (a compiler first,
/// `gh pr diff`, `kubectl logs`) must not get an answer that silently
/// left its input out. Dropping it stops the watch; the reader thread
/// is a plain one, so it never holds the process's exit.
#[derive(Debug)]
pub struct LateStdin {
    chunks: mpsc::Receiver<Chunk>,
}

impl LateStdin {
    /// Resolves when input arrives. A pipe closed with nothing in it
    /// (EOF) or one that fails is no late input: then it never resolves.
    pub async fn arrived(&mut self) {
        loop {
            match self.chunks.recv().await {
                Some(Chunk::Data(data)) if !data.is_empty() => return,
                Some(Chunk::Data(_)) => {}
                Some(Chunk::End | Chunk::Failed(_)) | None => {
                    return std::future::pending().await;
                }
            }
        }
    }
}

/// The last line of a run that input reached too late (docs/src/usage.md "Stdin").
pub fn late_stdin_line(grace: Duration) -> String {
    format!(
        "stdin arrived after the {} grace, when the run had already gone on without it; \
         nothing was printed: pass --stdin to wait for it (or --stdin-grace DURATION)",
        humantime::format_duration(grace)
    )
}

/// Why no prompt could be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Neither argument nor stdin gave any text.
    #[error("the prompt is empty: pass PROMPT or pipe it on stdin")]
    Empty,
    /// No prompt argument and stdin is a terminal.
    #[error("no prompt: pass PROMPT, or pipe it on stdin (e.g. echo 'question' | leash)")]
    NoPrompt,
    /// Stdin could not be read.
    #[error("cannot read stdin: {0}")]
    Read(String),
    /// `--stdin` and a prompt, and stdin gave nothing.
    #[error("stdin was empty, and --stdin says the run needs it")]
    EmptyStdin,
    /// Stdin is larger than leash accepts.
    #[error(
        "stdin is larger than {limit} bytes; pass a smaller input or give the model a file to read"
    )]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The deadline passed while waiting for stdin.
    #[error("timed out waiting for stdin")]
    Timeout,
    /// `--attach -` got nothing, or stdin is a terminal.
    #[error("--attach - reads the file from stdin, and {0}")]
    NoAttachment(&'static str),
    /// `--attach -`'s bytes are past its cap, or refused (its kind, a cap).
    #[error("{0}")]
    Attachment(String),
}

/// What stdin is, as far as the prompt rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinKind {
    /// A terminal: never read unless asked.
    Terminal,
    /// A device such as `/dev/null` (CI's usual stdin): nothing to say
    /// when it is empty.
    Device,
    /// A pipe, a file or a socket: input someone meant to give, so an
    /// empty one is said.
    Piped,
}

impl StdinKind {
    /// The process's stdin.
    pub fn of_process() -> Self {
        use std::os::fd::AsFd;
        use std::os::unix::fs::FileTypeExt;
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return StdinKind::Terminal;
        }
        let device = stdin
            .as_fd()
            .try_clone_to_owned()
            .map(std::fs::File::from)
            .and_then(|file| file.metadata())
            .is_ok_and(|meta| meta.file_type().is_char_device());
        match device {
            true => StdinKind::Device,
            false => StdinKind::Piped,
        }
    }
}

/// The notice for a piped stdin that held nothing.
const EMPTY_STDIN: &str = "stdin was empty; the prompt goes alone";

/// Something that can be read as stdin.
pub trait StdinSource: Read + Send + 'static {}
impl<T: Read + Send + 'static> StdinSource for T {}

/// Builds the prompt from the argument and the process's stdin, giving an
/// open pipe `grace` for its first byte.
pub async fn read_prompt(
    prompt: Option<String>,
    mode: StdinMode,
    grace: Duration,
    deadline: Option<Instant>,
) -> Result<PromptInput, InputError> {
    let kind = StdinKind::of_process();
    prompt_from(prompt, mode, kind, std::io::stdin(), grace, deadline).await
}

/// The rules, with stdin and the grace passed in (for tests).
pub async fn prompt_from(
    prompt: Option<String>,
    mode: StdinMode,
    kind: StdinKind,
    stdin: impl StdinSource,
    grace: Duration,
    deadline: Option<Instant>,
) -> Result<PromptInput, InputError> {
    let prompt = prompt.filter(|p| p != "-");
    let stdin_is_terminal = kind == StdinKind::Terminal;
    let empty = (kind == StdinKind::Piped).then(|| EMPTY_STDIN.to_owned());
    match (prompt, mode) {
        (Some(text), StdinMode::Never) => finish(text, None),
        (Some(text), _) if stdin_is_terminal => finish(text, None),
        (Some(text), StdinMode::Auto) => {
            match read_stdin(stdin, Some(grace), deadline, STDIN_LIMIT)
                .await?
                .text()
            {
                Piped::Data(piped) => finish(append_stdin(&text, &piped), None),
                Piped::Nothing => finish(text, empty),
                Piped::Silent(late) => {
                    let mut input = finish(text, Some(silent_notice(grace)))?;
                    input.late = Some(late);
                    Ok(input)
                }
            }
        }
        (Some(text), StdinMode::Wait) => {
            match read_stdin(stdin, None, deadline, STDIN_LIMIT).await?.text() {
                Piped::Data(piped) => finish(append_stdin(&text, &piped), None),
                Piped::Nothing | Piped::Silent(_) => Err(InputError::EmptyStdin),
            }
        }
        (None, StdinMode::Never) => Err(InputError::NoPrompt),
        (None, StdinMode::Auto) if stdin_is_terminal => Err(InputError::NoPrompt),
        (None, _) => match read_stdin(stdin, None, deadline, STDIN_LIMIT).await?.text() {
            Piped::Data(text) => finish(text, None),
            Piped::Nothing | Piped::Silent(_) => Err(InputError::Empty),
        },
    }
}

/// The notice for an open pipe that gave nothing within the grace.
fn silent_notice(grace: Duration) -> String {
    format!(
        "stdin gave nothing within {}; going on without it, and stopping (exit 2) \
         if it comes later (--stdin waits, --no-stdin skips)",
        humantime::format_duration(grace)
    )
}

fn finish(text: String, notice: Option<String>) -> Result<PromptInput, InputError> {
    if text.trim().is_empty() {
        return Err(InputError::Empty);
    }
    Ok(PromptInput {
        text,
        notice,
        late: None,
    })
}

/// The prompt with piped input fenced after it, so the model can tell the
/// question from the material.
pub fn append_stdin(prompt: &str, piped: &str) -> String {
    let piped = piped.strip_suffix('\n').unwrap_or(piped);
    format!("{prompt}\n\n<stdin>\n{piped}\n</stdin>")
}

enum Piped<T = String> {
    Data(T),
    /// Stdin was closed or empty.
    Nothing,
    /// Nothing arrived within the grace; the pipe is still watched.
    Silent(LateStdin),
}

impl Piped<Vec<u8>> {
    /// Stdin as text (a prompt), invalid UTF-8 replaced.
    fn text(self) -> Piped {
        match self {
            Piped::Data(bytes) => Piped::Data(String::from_utf8_lossy(&bytes).into_owned()),
            Piped::Nothing => Piped::Nothing,
            Piped::Silent(late) => Piped::Silent(late),
        }
    }
}

/// `--attach -`: stdin's bytes, at most `limit` of them, waited for as
/// long as the deadline allows (no grace: the run asked for them).
pub async fn read_attachment(limit: u64, deadline: Option<Instant>) -> Result<Vec<u8>, InputError> {
    if StdinKind::of_process() == StdinKind::Terminal {
        return Err(InputError::NoAttachment("stdin is a terminal"));
    }
    attachment_from(std::io::stdin(), limit, deadline).await
}

/// The run's attachments in order: the files the plan read, and with
/// `--attach -` stdin's bytes in their place; all checked against the
/// provider's caps before the first request.
pub async fn attachments(
    plan: &AttachPlan,
    deadline: Option<Instant>,
) -> Result<Vec<Attachment>, InputError> {
    let stdin = match plan.stdin {
        Some(_) => Some(read_attachment(plan.stdin_limit(), deadline).await?),
        None => None,
    };
    plan.with_stdin(stdin)
        .map_err(|error| InputError::Attachment(error.to_string()))
}

/// The prompt as the first user message: its text, then its attachments.
pub fn prompt_message(text: String, attachments: Vec<Attachment>) -> Message {
    let mut content = vec![Content::text(text)];
    content.extend(attachments.into_iter().map(Content::Attachment));
    Message::User(UserMessage {
        content,
        timestamp: now_ms(),
    })
}

/// [`read_attachment`] with stdin passed in (for tests).
pub async fn attachment_from(
    stdin: impl StdinSource,
    limit: u64,
    deadline: Option<Instant>,
) -> Result<Vec<u8>, InputError> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    match read_stdin(stdin, None, deadline, limit).await {
        Ok(Piped::Data(bytes)) => Ok(bytes),
        Ok(Piped::Nothing | Piped::Silent(_)) => Err(InputError::NoAttachment("stdin was empty")),
        Err(InputError::TooLarge { limit }) => Err(InputError::Attachment(format!(
            "--attach -: stdin is larger than {limit} bytes, the most the provider takes of its --attach-type"
        ))),
        Err(error) => Err(error),
    }
}

#[derive(Debug)]
enum Chunk {
    Data(Vec<u8>),
    End,
    Failed(String),
}

/// Reads stdin to its end. With a grace, gives up (→ `Silent`) when the
/// first byte does not come in time; the reader thread then goes on
/// feeding the returned [`LateStdin`], and ends when that is dropped.
async fn read_stdin(
    mut stdin: impl StdinSource,
    grace: Option<Duration>,
    deadline: Option<Instant>,
    cap: usize,
) -> Result<Piped<Vec<u8>>, InputError> {
    let (sender, mut chunks) = mpsc::channel::<Chunk>(16);
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let chunk = match stdin.read(&mut buffer) {
                Ok(0) => Chunk::End,
                Ok(n) => Chunk::Data(buffer[..n].to_vec()),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => Chunk::Failed(error.to_string()),
            };
            let last = !matches!(chunk, Chunk::Data(_));
            if sender.blocking_send(chunk).is_err() || last {
                return;
            }
        }
    });

    let mut bytes = Vec::new();
    let mut first = true;
    loop {
        let limit = match (first.then_some(grace).flatten(), deadline) {
            (Some(grace), Some(deadline)) => Some((Instant::now() + grace).min(deadline)),
            (Some(grace), None) => Some(Instant::now() + grace),
            (None, deadline) => deadline,
        };
        let next = match limit {
            Some(limit) => {
                let waited = tokio::time::timeout_at(limit, chunks.recv()).await;
                match waited {
                    Ok(next) => next,
                    Err(_)
                        if first
                            && grace.is_some()
                            && deadline.is_none_or(|d| Instant::now() < d) =>
                    {
                        return Ok(Piped::Silent(LateStdin { chunks }));
                    }
                    Err(_) => return Err(InputError::Timeout),
                }
            }
            None => chunks.recv().await,
        };
        first = false;
        match next {
            Some(Chunk::Data(data)) => {
                bytes.extend_from_slice(&data);
                if bytes.len() > cap {
                    return Err(InputError::TooLarge { limit: cap });
                }
            }
            Some(Chunk::End) | None => break,
            Some(Chunk::Failed(error)) => return Err(InputError::Read(error)),
        }
    }
    if bytes.is_empty() {
        return Ok(Piped::Nothing);
    }
    Ok(Piped::Data(bytes))
}

#[cfg(test)]
#[path = "input_tests.rs"]
mod tests;
