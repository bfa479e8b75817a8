//! `leash batch` (docs/src/batch.md "Fan-out: leash batch"): many runs in one
//! process against the OpenAI and Anthropic mocks — input order and
//! `--unordered`, bad input lines, a failing item among ok ones, shards
//! and their merge (GNU parallel running the manual's recipe), resume
//! after SIGTERM, `--events-dir` with a hostile id, progress on a pipe
//! and on a terminal.

mod engines;
mod fan_out;
mod hostile_files;
mod input_once;
mod killed;
mod narrowing;
mod rate_cap;
mod resume;
mod shared;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::run::{Outcome, Run};
use crate::support::sse::{anthropic, openai, sse};

/// A prompt the mock answers `reply` to, after `delay`.
pub struct Answer {
    pub marker: &'static str,
    pub delay: Duration,
    pub reply: Reply,
}

/// What the mock answers.
pub enum Reply {
    /// A text reply that ends normally.
    Text(&'static str),
    /// An HTTP error the run cannot retry.
    Refuse,
}

pub fn answer(marker: &'static str, delay_ms: u64, reply: Reply) -> Answer {
    Answer {
        marker,
        delay: Duration::from_millis(delay_ms),
        reply,
    }
}

/// Which mock.
#[derive(Clone, Copy)]
pub enum Api {
    OpenAi,
    Anthropic,
}

/// Mounts each answer for the requests whose body holds its marker.
pub async fn serve(server: &MockServer, api: Api, answers: &[Answer]) {
    for answer in answers {
        let (endpoint, template) = match (api, &answer.reply) {
            (Api::OpenAi, Reply::Text(text)) => {
                ("/v1/chat/completions", sse(openai::text_reply(&[text])))
            }
            (Api::Anthropic, Reply::Text(text)) => {
                ("/v1/messages", sse(anthropic::text_reply(text)))
            }
            (Api::OpenAi, Reply::Refuse) => (
                "/v1/chat/completions",
                openai::http_error(400, "bad request"),
            ),
            (Api::Anthropic, Reply::Refuse) => (
                "/v1/messages",
                ResponseTemplate::new(400).set_body_json(anthropic::error_json(
                    "invalid_request_error",
                    "bad request",
                )),
            ),
        };
        Mock::given(method("POST"))
            .and(path(endpoint))
            .and(body_string_contains(answer.marker))
            .respond_with(template.set_delay(answer.delay))
            .mount(server)
            .await;
    }
}

/// `leash batch INPUT` on `api`'s mock at `server`, with `args`.
pub fn batch(server: &MockServer, api: Api, input: &Path, args: &[&str]) -> Run {
    let run = match api {
        Api::OpenAi => Run::openai(server),
        Api::Anthropic => Run::anthropic(server),
    };
    run.command_word("batch")
        .arg(input)
        .args(["--tools", "none"])
        .args(args)
        .timeout(Duration::from_secs(60))
}

/// The result lines on stdout.
pub fn lines(outcome: &Outcome) -> Vec<Value> {
    outcome
        .stdout()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The ids of `lines`, in order.
pub fn ids(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|line| line["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The `batch_end` summary: stderr's last line.
pub fn summary(outcome: &Outcome) -> Value {
    let last = outcome.last_line();
    let summary: Value = serde_json::from_str(&last).unwrap_or_else(|e| panic!("{e}: {last}"));
    assert_eq!(summary["type"], "batch_end", "{last}");
    summary
}

/// A temp directory with `input.jsonl` holding `text`.
pub fn input(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input.jsonl");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}
