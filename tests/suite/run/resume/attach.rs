//! `--resume` of a run with attachments (docs/src/resume.md "Resume"): each recorded
//! attachment is read again by its name and sent only when it is the file
//! the run saw, so the resumed request repeats the earlier one exactly;
//! a changed, deleted or stdin attachment, and a record that points
//! outside the root, are usage errors naming the line, before any request.

use super::*;
use crate::support::sse::anthropic;
use base64::Engine;
use leash_media::testing::png_of;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The screenshot passed with `--attach` and the diagram the model reads.
fn shot() -> Vec<u8> {
    png_of(64, 48)
}

fn diagram() -> Vec<u8> {
    png_of(20, 10)
}

/// Step one on Anthropic, run in the root: `--attach shot.png`, the model
/// reads `diagram.png`, then answers. Returns the server and the path of
/// the transcript.
async fn first_step(steps: &Steps) -> (MockServer, PathBuf) {
    std::fs::write(steps.path("shot.png"), shot()).unwrap();
    std::fs::write(steps.path("diagram.png"), diagram()).unwrap();
    let server = MockServer::start().await;
    let call = anthropic::tool_call_reply("toolu_1", "read_file", "{\"path\":\"diagram.png\"}");
    serve_in_order(
        &server,
        "/v1/messages",
        vec![
            call,
            anthropic::text_reply("the button is hidden"),
            anthropic::text_reply("fixed"),
        ],
    )
    .await;
    let t = steps.path("t.jsonl");
    let run = Run::anthropic(&server)
        .current_dir(steps.dir.path())
        .args(["--attach", "shot.png"]);
    json_of(&step(
        run,
        steps,
        &[Path::new("--transcript"), &t],
        "why does the test fail?",
    ));
    (server, t)
}

/// Step two: `--resume t.jsonl`, run in the root.
fn resume_step(server: &MockServer, steps: &Steps, t: &Path) -> Outcome {
    let run = Run::anthropic(server).current_dir(steps.dir.path());
    step(run, steps, &[Path::new("--resume"), t], "now fix it")
}

#[tokio::test(flavor = "multi_thread")]
async fn attachments_are_read_again_and_the_request_repeats_the_earlier_one() {
    let steps = Steps::new();
    let (server, t) = first_step(&steps).await;
    // The transcript holds records, not bytes.
    let text = std::fs::read_to_string(&t).unwrap();
    assert!(!text.contains(&b64(&shot())), "{text}");
    assert!(text.contains("\"name\":\"shot.png\""), "{text}");

    let second = json_of(&resume_step(&server, &steps, &t));
    assert_eq!(second["restoredTurns"], 2);
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    assert_prefix(&bodies, 1, 2, "messages");
    let image = |bytes: &[u8]| {
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                          "data": b64(bytes)}})
    };
    let resumed = unmarked(&bodies[2]["messages"]);
    assert_eq!(resumed[0]["content"][1], image(&shot()));
    assert_eq!(resumed[2]["content"][0]["content"][1], image(&diagram()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_or_deleted_attachment_is_refused_before_any_request() {
    let steps = Steps::new();
    let (server, t) = first_step(&steps).await;
    std::fs::write(steps.path("shot.png"), png_of(64, 49)).unwrap();
    let changed = resume_step(&server, &steps, &t);
    assert_eq!(changed.code(), Some(2), "{}", changed.stderr());
    let message = usage_message(&changed);
    assert!(
        message.contains(
            "line 2: the attachment \"shot.png\" is missing or changed since it was recorded"
        ),
        "{message}"
    );
    std::fs::write(steps.path("shot.png"), shot()).unwrap();
    std::fs::remove_file(steps.path("diagram.png")).unwrap();
    let gone = resume_step(&server, &steps, &t);
    assert_eq!(gone.code(), Some(2), "{}", gone.stderr());
    let message = usage_message(&gone);
    assert!(
        message.contains(
            "line 4: the attachment \"diagram.png\" is missing or changed since it was recorded"
        ),
        "{message}"
    );
    // Neither refusal sent anything: only step one's two requests.
    assert_eq!(request_bodies(&server).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_attachment_read_from_stdin_cannot_be_resumed() {
    let steps = Steps::new();
    let t = steps.path("t.jsonl");
    let first = Run::faux(json!([{"text": "a screenshot"}]))
        .args([
            "--attach",
            "-",
            "--attach-type",
            "image/png",
            "--tools",
            "none",
        ])
        .args(["--output", "json", "--events", "jsonl"])
        .arg("--transcript")
        .arg(&t)
        .prompt("what is this?")
        .stdin(shot())
        .output();
    assert_eq!(first.code(), Some(0), "{}", first.stderr());
    let output: Value = serde_json::from_str(&first.stdout()).unwrap();
    assert_eq!(output["attachments"][0]["name"], "-");
    let resumed = Run::faux(json!([{"text": "never"}]))
        .args(["--no-stdin", "--tools", "none", "--events", "jsonl"])
        .arg("--resume")
        .arg(&t)
        .prompt("and now?")
        .output();
    assert_eq!(resumed.code(), Some(2), "{}", resumed.stderr());
    assert!(
        usage_message(&resumed).ends_with(
            "line 2: it holds an attachment read from stdin (--attach -), whose bytes no \
             transcript keeps; it cannot be resumed"
        ),
        "{}",
        resumed.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_file_record_is_read_through_the_sandbox() {
    // A hostile transcript that names a file outside the root, with the
    // right hash: read_file's records are read under the root only.
    let steps = Steps::new();
    let (server, t) = first_step(&steps).await;
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("diagram.png");
    std::fs::write(&secret, diagram()).unwrap();
    let text = std::fs::read_to_string(&t).unwrap();
    let forged = text.replace(
        "\"name\":\"diagram.png\"",
        &format!("\"name\":{}", json!(secret.display().to_string())),
    );
    assert_ne!(forged, text);
    std::fs::write(&t, forged).unwrap();
    let refused = resume_step(&server, &steps, &t);
    assert_eq!(refused.code(), Some(2), "{}", refused.stderr());
    let message = usage_message(&refused);
    assert!(
        message.contains("line 4: the attachment") && message.contains("is missing or changed"),
        "{message}"
    );
    assert_eq!(request_bodies(&server).await.len(), 2);
}

/// The SHA-256 of `bytes`, in hex.
fn sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crafted_record_learns_neither_the_size_nor_the_hash_of_a_file() {
    // A transcript written by someone else names files of this machine:
    // the refusal says "missing or changed", and nothing of the file.
    let steps = Steps::new();
    let (server, t) = first_step(&steps).await;
    let text = std::fs::read_to_string(&t).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut same_size = b"not the screenshot".to_vec();
    same_size.resize(shot().len(), b'.');
    std::fs::write(steps.path(".env.local"), &same_size).unwrap();
    let files = [
        (
            "notes.txt",
            b"a line of the machine's own, 47 bytes long....\n".to_vec(),
        ),
        ("same.bin", same_size.clone()),
    ];
    let mut names = Vec::new();
    for (name, bytes) in &files {
        let path = elsewhere.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        names.push((path.display().to_string(), bytes.clone()));
    }
    names.push((".env.local".to_owned(), same_size));
    for (name, bytes) in names {
        let forged = text.replace(
            "\"name\":\"shot.png\"",
            &format!("\"name\":{}", json!(name)),
        );
        assert_ne!(forged, text);
        std::fs::write(&t, forged).unwrap();
        let refused = resume_step(&server, &steps, &t);
        assert_eq!(refused.code(), Some(2), "{}", refused.stderr());
        let message = usage_message(&refused);
        assert!(
            message.ends_with(&format!(
                "line 2: the attachment {name:?} is missing or changed since it was recorded: \
                 resuming sends only the bytes the run saw, from a file --attach may read"
            )),
            "{message}"
        );
        let all = refused.stderr();
        assert!(!all.contains(&format!("{} bytes", bytes.len())), "{all}");
        assert!(!all.contains(&sha256(&bytes)[..12]), "{all}");
        assert!(!all.contains("SHA-256"), "{all}");
    }
    assert_eq!(request_bodies(&server).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn records_past_one_requests_caps_are_refused_before_any_file_is_read() {
    // A forged record of a terabyte: refused by the records alone.
    let steps = Steps::new();
    let (server, t) = first_step(&steps).await;
    let text = std::fs::read_to_string(&t).unwrap();
    let size = format!("\"size\":{}", shot().len());
    assert!(text.contains(&size), "{text}");
    std::fs::write(&t, text.replace(&size, "\"size\":1000000000000")).unwrap();
    let refused = resume_step(&server, &steps, &t);
    assert_eq!(refused.code(), Some(2), "{}", refused.stderr());
    let message = usage_message(&refused);
    assert!(
        message.starts_with("cannot --resume ")
            && message.contains(
                "t.jsonl: its attachments, with the run's new ones: the attachments come to "
            )
            && message.contains("anthropic takes at most 32000000 in one request"),
        "{message}"
    );
    assert_eq!(request_bodies(&server).await.len(), 2);
}

#[test]
fn the_readme_screenshot_chain_sends_the_screenshot_in_both_steps() {
    let ws = crate::support::shell::Workspace::new();
    std::fs::create_dir_all(ws.path("shots")).unwrap();
    std::fs::write(ws.path("shots/login.png"), shot()).unwrap();
    // Each step plays the script from its start; both steps' requests must
    // hold the screenshot, by its record.
    let seen = json!({"attachments": [{"name": "shots/login.png", "mediaType": "image/png",
                                       "size": shot().len()}]});
    let script = ws.script(json!([{"text": "seen it", "expect": seen}]));
    let output = ws
        .bash(&crate::suite::cli::recipes::recipe("resume-screenshot"))
        .env("LEASH_PROVIDER", "faux")
        .env("LEASH_FAUX_SCRIPT", script)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "seen it\nseen it\n"
    );
}
