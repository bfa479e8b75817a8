//! The shared gate follows the retry rule (docs/src/batch.md "Fan-out: leash batch",
//! docs/src/security.md "Security and limits"): a refusal's `retry-after` of 10^19 s or of
//! 999999 s neither panics the batch nor parks the other items — each
//! sends its request within the retry cap, and `batch_end` is last.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::*;

/// Answers `template` and notes when each request came, by marker.
struct Timed {
    template: ResponseTemplate,
    marker: &'static str,
    log: Arc<Mutex<Vec<(&'static str, Instant)>>>,
}

impl Respond for Timed {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.log.lock().unwrap().push((self.marker, Instant::now()));
        self.template.clone()
    }
}

#[tokio::test]
async fn a_huge_or_large_retry_after_never_parks_or_panics_the_batch() {
    for wait in ["10000000000000000000", "999999"] {
        let server = MockServer::start().await;
        let log = Arc::new(Mutex::new(Vec::new()));
        let endpoint = "/v1/chat/completions";
        let refused = ResponseTemplate::new(429)
            .insert_header("retry-after", wait)
            .set_body_json(openai::error_json("slow down"));
        Mock::given(method("POST"))
            .and(path(endpoint))
            .and(body_string_contains("alpha"))
            .respond_with(Timed {
                template: refused,
                marker: "alpha",
                log: Arc::clone(&log),
            })
            .mount(&server)
            .await;
        for marker in ["beta", "gamma"] {
            Mock::given(method("POST"))
                .and(path(endpoint))
                .and(body_string_contains(marker))
                .respond_with(Timed {
                    template: sse(openai::text_reply(&["ok"])),
                    marker,
                    log: Arc::clone(&log),
                })
                .mount(&server)
                .await;
        }
        let (_dir, path) = input("alpha\nbeta\ngamma\n");
        // No retry: the refused item gives up at once, and its refusal
        // still pauses the gate every item shares.
        let args = ["--parallel", "1", "--retries", "0", "-t", "20s"];
        let started = Instant::now();
        let outcome = batch(&server, Api::OpenAi, &path, &args)
            .output_async()
            .await;
        assert_eq!(outcome.code(), Some(9), "{wait}: {}", outcome.stderr());
        let summary = super::summary(&outcome);
        assert_eq!(summary["ok"].as_u64(), Some(2), "{wait}: {summary}");
        let statuses: Vec<Value> = lines(&outcome)
            .iter()
            .map(|l| l["status"].clone())
            .collect();
        assert_eq!(statuses, ["error", "ok", "ok"], "{wait}");
        let log = log.lock().unwrap().clone();
        let at = |marker: &str| log.iter().find(|(m, _)| *m == marker).map(|(_, at)| *at);
        let refused = at("alpha").unwrap();
        for marker in ["beta", "gamma"] {
            let sent = at(marker).unwrap_or_else(|| panic!("{wait}: {marker} never sent"));
            // The computed back-off (500 ms ± 25%) stands in for the
            // server's number, far under the cap.
            assert!(
                sent.duration_since(refused) < Duration::from_secs(5),
                "{wait}: {marker} after {:?}",
                sent.duration_since(refused)
            );
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{wait}");
    }
}
