//! `--attach` through the real binary (docs/src/resume.md "Attachments"): each kind of
//! file reaches each wire in that API's own form, an image `read_file`
//! read reaches a tool result where the wire allows one, files past a cap
//! or of another kind are refused before any request, and the records —
//! never the bytes — go to the transcript and the JSON result.

// A failed setup step (temp dir, spawn, JSON shape) should fail the test loudly.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use base64::Engine;
use leash_media::testing::{gif_of, jpeg_of, padded, pdf, pdf_of_pages, png_of};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use wiremock::MockServer;

use crate::support::run::Run;
use crate::support::sse::{anthropic, openai, responses};
use crate::support::sse::{request_bodies, serve_in_order};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// A directory holding a screenshot, a spec and a log: the files of the
/// manual's recipe.
fn files() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "fail.png", &png_of(1280, 720));
    write(dir.path(), "spec.pdf", &pdf());
    write(
        dir.path(),
        "test.log",
        b"FAIL login_test: button not found\n",
    );
    dir
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

/// The run attaching the three files of [`files`], with the prompt.
fn attaching(run: Run, dir: &TempDir) -> Run {
    run.current_dir(dir.path())
        .args(["--no-stdin", "--tools", "none", "--attach", "fail.png"])
        .args(["--attach", "spec.pdf", "--attach", "test.log"])
        .prompt("Why does the UI test fail?")
}

const LOG_BLOCK: &str = "<file name=\"test.log\">\nFAIL login_test: button not found\n</file>";

#[tokio::test(flavor = "multi_thread")]
async fn each_kind_reaches_anthropic_as_image_document_and_text_blocks() {
    let server = MockServer::start().await;
    serve_in_order(&server, "/v1/messages", vec![anthropic::text_reply("seen")]).await;
    let dir = files();
    let output = attaching(Run::anthropic(&server), &dir)
        .arg("--no-cache")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let bodies = request_bodies(&server).await;
    assert_eq!(
        bodies[0]["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "Why does the UI test fail?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": b64(&png_of(1280, 720))}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                            "data": b64(&pdf())}},
            {"type": "text", "text": LOG_BLOCK}
        ]}])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_kind_reaches_chat_completions_as_image_url_file_and_text_parts() {
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![openai::text_reply(&["seen"])],
    )
    .await;
    let dir = files();
    let output = attaching(Run::openai(&server), &dir).output_async().await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let bodies = request_bodies(&server).await;
    assert_eq!(
        bodies[0]["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "Why does the UI test fail?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(&png_of(1280, 720)))}},
            {"type": "file", "file": {"filename": "spec.pdf",
                                      "file_data": format!("data:application/pdf;base64,{}", b64(&pdf()))}},
            {"type": "text", "text": LOG_BLOCK}
        ]}])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_kind_reaches_responses_as_input_image_input_file_and_text() {
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        "/v1/responses",
        vec![responses::text_reply(&["seen"])],
    )
    .await;
    let dir = files();
    let output = attaching(Run::responses(&server), &dir)
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let bodies = request_bodies(&server).await;
    assert_eq!(
        bodies[0]["input"],
        json!([{"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Why does the UI test fail?"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{}", b64(&png_of(1280, 720))),
             "detail": "auto"},
            {"type": "input_file", "filename": "spec.pdf",
             "file_data": format!("data:application/pdf;base64,{}", b64(&pdf()))},
            {"type": "input_text", "text": LOG_BLOCK}
        ]}])
    );
}

/// A run whose model reads `shot.gif` with `read_file`, then answers.
fn reading_an_image(run: Run, dir: &TempDir) -> Run {
    write(dir.path(), "shot.gif", &gif_of(40, 30));
    run.current_dir(dir.path())
        .args(["--no-stdin", "--root", ".", "--tools", "read_file"])
        .prompt("Look at shot.gif")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_read_file_read_is_an_image_block_in_anthropics_tool_result() {
    let server = MockServer::start().await;
    let call = anthropic::tool_call_reply("toolu_1", "read_file", "{\"path\": \"shot.gif\"}");
    serve_in_order(
        &server,
        "/v1/messages",
        vec![call, anthropic::text_reply("a chart")],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let output = reading_an_image(Run::anthropic(&server), &dir)
        .arg("--no-cache")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let bodies = request_bodies(&server).await;
    assert_eq!(
        bodies[1]["messages"][2]["content"][0]["content"],
        json!([
            {"type": "text", "text": "Read image file shot.gif [image/gif, 40×30 px, 14 bytes]"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/gif",
                                         "data": b64(&gif_of(40, 30))}}
        ])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_read_file_read_is_a_note_on_chat_completions() {
    let server = MockServer::start().await;
    let call = openai::body(
        &[
            openai::call_start(0, "call_1", "read_file"),
            openai::call_args(0, "{\"path\": \"shot.gif\"}"),
            openai::finish("tool_calls"),
        ],
        true,
    );
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![call, openai::text_reply(&["ok"])],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let output = reading_an_image(Run::openai(&server), &dir)
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let bodies = request_bodies(&server).await;
    let tool = &bodies[1]["messages"][2];
    assert_eq!(tool["role"], "tool");
    assert_eq!(
        tool["content"],
        "Read image file shot.gif [image/gif, 40×30 px, 14 bytes][shot.gif (image/gif, 14 bytes) not shown: a tool result on this API (Chat Completions) holds text only]"
    );
}

/// `leash --attach NAME` on the Anthropic mock: the outcome and how many
/// requests the mock got.
async fn refused(name: &str, bytes: &[u8]) -> (crate::support::run::Outcome, usize) {
    let server = MockServer::start().await;
    serve_in_order(&server, "/v1/messages", vec![anthropic::text_reply("seen")]).await;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), name, bytes);
    let output = Run::anthropic(&server)
        .current_dir(dir.path())
        .args(["--no-stdin", "--attach", name])
        .prompt("look")
        .output_async()
        .await;
    (output, request_bodies(&server).await.len())
}

#[tokio::test(flavor = "multi_thread")]
async fn oversize_and_wrong_type_files_are_refused_before_any_request() {
    let (output, requests) = refused("big.png", &padded(png_of(10, 10), 3_750_001)).await;
    assert_eq!((output.code(), requests), (Some(2), 0));
    assert_eq!(
        output.last_line(),
        "leash: --attach: big.png: 3750001 bytes; anthropic takes an image of at most 3750000 bytes"
    );
    let (output, requests) = refused("wide.jpg", &jpeg_of(9000, 100)).await;
    assert_eq!((output.code(), requests), (Some(2), 0));
    assert_eq!(
        output.last_line(),
        "leash: --attach: wide.jpg: the image is 9000×100 px; anthropic takes images of at most 8000×8000 px"
    );
    // Its name says PNG; its bytes say otherwise.
    let (output, requests) = refused("shot.png", b"\x7FELF\x02\x01\x01\0\0\0").await;
    assert_eq!((output.code(), requests), (Some(2), 0));
    assert_eq!(
        output.last_line(),
        "leash: --attach shot.png: it is not a PNG, JPEG, GIF or WebP image, a PDF or UTF-8 text (found by its bytes, not its name)"
    );
    let (output, requests) = refused("long.pdf", &pdf_of_pages(101)).await;
    assert_eq!((output.code(), requests), (Some(2), 0));
    assert_eq!(
        output.last_line(),
        "leash: --attach: the PDFs come to 101 pages (from their page trees); anthropic takes at most 100 in one request"
    );
    // Past the largest file any kind may be: refused unread.
    let (output, requests) = refused("huge.pdf", &padded(pdf(), 32_000_001)).await;
    assert_eq!((output.code(), requests), (Some(2), 0));
    assert!(
        output
            .last_line()
            .starts_with("leash: --attach huge.pdf: larger than 32000000 bytes"),
        "{}",
        output.last_line()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_is_attached_with_its_declared_type_and_refused_with_another() {
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        "/v1/chat/completions",
        vec![openai::text_reply(&["seen"])],
    )
    .await;
    let png = png_of(8, 8);
    let output = Run::openai(&server)
        .args([
            "--tools",
            "none",
            "--attach",
            "-",
            "--attach-type",
            "image/png",
        ])
        .prompt("What is this?")
        .stdin(png.clone())
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let bodies = request_bodies(&server).await;
    assert_eq!(
        bodies[0]["messages"][0]["content"][1],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(&png))}})
    );
    // Declared a PDF, the bytes are a PNG: no request.
    let output = Run::openai(&server)
        .args(["--attach", "-", "--attach-type", "application/pdf"])
        .prompt("What is this?")
        .stdin(png)
        .output_async()
        .await;
    assert_eq!(output.code(), Some(2));
    assert_eq!(
        output.last_line(),
        "leash: --attach -: --attach-type says application/pdf, but its bytes are image/png"
    );
    // Without a type: a usage error before stdin is read.
    let output = Run::openai(&server)
        .args(["--attach", "-"])
        .prompt("What is this?")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(2));
    assert!(
        output
            .last_line()
            .contains("--attach - needs --attach-type MIME")
    );
    // Stdin cannot be the attachment and forbidden, or the prompt's too.
    let output = Run::openai(&server)
        .args(["--no-stdin", "--attach", "-", "--attach-type", "image/png"])
        .prompt("What is this?")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(2));
    assert_eq!(
        output.last_line(),
        "leash: --attach - makes stdin the attachment; leave out --stdin and --no-stdin"
    );
    assert_eq!(request_bodies(&server).await.len(), 1);
}

#[test]
fn the_faux_script_sees_each_attachment_and_the_records_hold_no_bytes() {
    let dir = files();
    let script = json!([{"text": "seen", "expect": {"attachments": [
        {"name": "fail.png", "mediaType": "image/png", "sha256": sha256(&png_of(1280, 720))},
        {"name": "spec.pdf", "mediaType": "application/pdf", "size": pdf().len()},
        {"name": "test.log", "mediaType": "text/plain"}
    ]}}]);
    let transcript = dir.path().join("t.jsonl");
    let output = attaching(Run::faux(script), &dir)
        .args(["--output", "json", "--transcript"])
        .arg(&transcript)
        .output();
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let result: Value = serde_json::from_str(&output.stdout()).unwrap();
    let records = json!([
        {"name": "fail.png", "mediaType": "image/png", "size": png_of(1280, 720).len(),
         "sha256": sha256(&png_of(1280, 720))},
        {"name": "spec.pdf", "mediaType": "application/pdf", "size": pdf().len(), "sha256": sha256(&pdf())},
        {"name": "test.log", "mediaType": "text/plain", "size": 34,
         "sha256": sha256(b"FAIL login_test: button not found\n")}
    ]);
    assert_eq!(result["attachments"], records);
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(&transcript)
            .unwrap()
            .lines()
            // Each run's part starts with its session line.
            .find(|line| !line.contains(r#""role":"session""#))
            .unwrap(),
    )
    .unwrap();
    let mut in_transcript = first["content"].as_array().unwrap()[1..].to_vec();
    for record in &mut in_transcript {
        assert_eq!(record["type"], "attachment");
        record.as_object_mut().unwrap().remove("type");
    }
    assert_eq!(Value::Array(in_transcript), records);
    assert!(
        !std::fs::read_to_string(&transcript)
            .unwrap()
            .contains(&b64(&pdf()))
    );
}

#[test]
fn a_faux_expectation_that_is_not_met_fails_the_run() {
    let dir = files();
    let script = json!([{"text": "seen", "expect": {"attachments": [{"sha256": "00"}]}}]);
    let output = Run::faux(script)
        .current_dir(dir.path())
        .args(["--no-stdin", "--attach", "fail.png"])
        .prompt("look")
        .output();
    assert_eq!(output.code(), Some(1), "{}", output.stderr());
    assert!(
        output
            .last_line()
            .contains("expectation failed on request 1: attachment 1: sha256"),
        "{}",
        output.last_line()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_known_key_in_an_attachment_never_reaches_the_provider() {
    const KEY: &str = "sk-ant-attach-SECRET-1234567890";
    let server = MockServer::start().await;
    serve_in_order(&server, "/v1/messages", vec![anthropic::text_reply("seen")]).await;
    let dir = tempfile::tempdir().unwrap();
    let log = format!("env dump: ANTHROPIC_API_KEY={KEY}\n");
    write(dir.path(), "test.log", log.as_bytes());
    let output = Run::anthropic(&server)
        .key(KEY)
        .current_dir(dir.path())
        .args([
            "--no-stdin",
            "--no-cache",
            "--output",
            "json",
            "--attach",
            "test.log",
        ])
        .prompt("look")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(0), "{}", output.stderr());
    let bodies = request_bodies(&server).await;
    assert_eq!(
        bodies[0]["messages"][0]["content"][1]["text"],
        "<file name=\"test.log\">\nenv dump: ANTHROPIC_API_KEY=***\n</file>"
    );
    // The record is the file's, as read.
    let result: Value = serde_json::from_str(&output.stdout()).unwrap();
    assert_eq!(result["attachments"][0]["sha256"], sha256(log.as_bytes()));
    output.assert_key_absent(KEY);

    // An image cannot be redacted: refused, nothing sent.
    let mut png = png_of(4, 4);
    png.extend_from_slice(format!("tEXtComment\0{KEY}").as_bytes());
    write(dir.path(), "shot.png", &png);
    let output = Run::anthropic(&server)
        .key(KEY)
        .current_dir(dir.path())
        .args(["--no-stdin", "--attach", "shot.png"])
        .prompt("look")
        .output_async()
        .await;
    assert_eq!(output.code(), Some(2));
    assert!(
        output
            .last_line()
            .starts_with("leash: --attach shot.png: its bytes hold an API key"),
        "{}",
        output.last_line()
    );
    output.assert_key_absent(KEY);
    assert_eq!(request_bodies(&server).await.len(), 1);
}

#[test]
fn a_fifo_is_refused_at_once_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let started = std::time::Instant::now();
    let output = Run::faux(json!([{"text": "seen"}]))
        .current_dir(dir.path())
        .args(["--no-stdin", "--attach", "pipe"])
        .prompt("look")
        .timeout(std::time::Duration::from_secs(20))
        .output();
    assert_eq!(output.code(), Some(2), "{}", output.stderr());
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(
        output.last_line(),
        "leash: --attach pipe: it is a pipe (a FIFO), not a regular file; pipe a stream with \
         --attach - and --attach-type"
    );
}

#[test]
fn a_directory_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("shots")).unwrap();
    let output = Run::faux(json!([{"text": "seen"}]))
        .current_dir(dir.path())
        .args(["--no-stdin", "--attach", "shots"])
        .prompt("look")
        .output();
    assert_eq!(output.code(), Some(2), "{}", output.stderr());
    assert_eq!(
        output.last_line(),
        "leash: --attach shots: it is a directory"
    );
}
