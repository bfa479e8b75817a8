//! The shared rate gate: pacing, a refusal that pauses everyone, what it
//! learns from headers and from a refusal, the token budget; and the
//! driver waiting at it against a real loopback server.

use super::*;
use reqwest::header::HeaderMap;
use reqwest::header::HeaderValue;

/// When each of `n` requests passes the gate, in milliseconds from the
/// start, asked for all at once.
async fn admitted_at(gate: &Arc<RateGate>, n: usize) -> Vec<u128> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..n {
        let gate = Arc::clone(gate);
        tasks.push(tokio::spawn(async move {
            gate.admit().await;
            start.elapsed().as_millis()
        }));
    }
    let mut times = Vec::new();
    for task in tasks {
        times.push(task.await.unwrap());
    }
    times.sort_unstable();
    times
}

#[tokio::test(start_paused = true)]
async fn a_given_rate_spaces_the_requests_evenly() {
    let gate = RateGate::new(Some(120), None); // one every 500 ms
    assert_eq!(admitted_at(&gate, 4).await, vec![0, 500, 1000, 1500]);
}

#[tokio::test(start_paused = true)]
async fn without_a_rate_nothing_waits() {
    let gate = RateGate::new(None, None);
    assert_eq!(admitted_at(&gate, 3).await, vec![0, 0, 0]);
}

#[tokio::test(start_paused = true)]
async fn a_refusal_pauses_every_request_then_paces_at_what_was_allowed() {
    let gate = RateGate::new(None, None);
    // Five were sent at once; three were answered, then one refused (the
    // fifth still in flight was not allowed yet, so it does not count).
    assert_eq!(admitted_at(&gate, 5).await, vec![0, 0, 0, 0, 0]);
    for _ in 0..3 {
        gate.answered(RateHint::default());
    }
    gate.refused(Duration::from_secs(2), RateHint::default());
    assert_eq!(gate.refusals(), 1);
    // Learned: 3 a second; nobody starts before the pause is over (the
    // timer's 1 ms granularity rounds a slot up, the probe upward a slot
    // a little down).
    let times = admitted_at(&gate, 3).await;
    for (time, expected) in times.iter().zip([2000, 2333, 2666]) {
        assert!((expected - 10..=expected + 2).contains(time), "{times:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_providers_headers_teach_the_rate_and_the_tightest_wins() {
    let mut headers = HeaderMap::new();
    headers.insert("x-ratelimit-limit-requests", HeaderValue::from_static("60"));
    headers.insert(
        "x-ratelimit-limit-tokens",
        HeaderValue::from_static("90000"),
    );
    let hint = RateHint::from_headers(&headers);
    assert_eq!(
        hint,
        RateHint {
            requests_per_minute: Some(60),
            tokens_per_minute: Some(90000)
        }
    );
    let mut anthropic = HeaderMap::new();
    anthropic.insert(
        "anthropic-ratelimit-requests-limit",
        HeaderValue::from_static("50"),
    );
    assert_eq!(
        RateHint::from_headers(&anthropic).requests_per_minute,
        Some(50)
    );
    // Given 120/min, told 60/min: one a second.
    let gate = RateGate::new(Some(120), None);
    gate.answered(hint);
    assert_eq!(admitted_at(&gate, 3).await, vec![0, 1000, 2000]);
}

#[tokio::test(start_paused = true)]
async fn a_used_token_budget_waits_until_the_minute_has_passed() {
    let gate = RateGate::new(None, Some(1000));
    gate.admit().await;
    gate.spent(600);
    tokio::time::advance(Duration::from_secs(10)).await;
    gate.admit().await;
    gate.spent(500);
    // 1100 of 1000 used: the next request waits until the first 600 age
    // out, 60 s after they were spent (50 s from now).
    let start = Instant::now();
    gate.admit().await;
    assert_eq!(start.elapsed().as_secs(), 50);
}

#[tokio::test]
async fn two_streams_sharing_a_gate_both_wait_out_one_refusal() {
    use crate::testing::openai as wire;
    use crate::{HttpSettings, Provider, Request};
    use futures::StreamExt;
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            wire::body(&[wire::text("ok"), wire::finish("stop")], true).into_bytes(),
            "text/event-stream",
        ))
        .mount(&server)
        .await;
    let gate = RateGate::new(None, None);
    let settings = HttpSettings {
        gate: Some(Arc::clone(&gate)),
        ..HttpSettings::new(server.uri(), None)
    };
    let provider = crate::openai::OpenAiProvider::new(settings);
    let messages = vec![leash_protocol::Message::user_text("hi")];
    let ask = || {
        let provider = provider.clone();
        let messages = messages.clone();
        async move {
            let request = Request {
                transcript: &[],
                model: "m",
                system: "",
                messages: &messages,
                tools: &[],
                options: Default::default(),
            };
            let events: Vec<_> = provider.stream(request).collect().await;
            (events, std::time::Instant::now())
        }
    };
    let start = std::time::Instant::now();
    let (first, second) = tokio::join!(ask(), async {
        // Asks just after the refusal arrived.
        tokio::time::sleep(Duration::from_millis(300)).await;
        ask().await
    });
    assert_eq!(gate.refusals(), 1);
    for (events, done) in [&first, &second] {
        assert!(
            matches!(events.last(), Some(leash_protocol::StreamEvent::Done(_))),
            "{events:?}"
        );
        // Neither was sent again before the refusal's second was over.
        assert!(done.duration_since(start) >= Duration::from_secs(1));
    }
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 3, "one refused, then one each");
}

#[tokio::test(start_paused = true)]
async fn each_further_refusal_cuts_the_learned_rate_by_a_tenth() {
    let gate = RateGate::new(None, None);
    for _ in 0..10 {
        gate.admit().await;
        gate.answered(RateHint::default());
    }
    gate.refused(Duration::ZERO, RateHint::default());
    // Learned 10 a second; refused again while paced at it: 9 a second.
    gate.answered(RateHint::default());
    gate.refused(Duration::ZERO, RateHint::default());
    let times = admitted_at(&gate, 3).await;
    assert_eq!(times[0], 0, "{times:?}");
    assert!((111..=112).contains(&times[1]), "{times:?}");
}

#[tokio::test(start_paused = true)]
async fn a_taught_rate_climbs_a_tenth_a_second_until_the_next_refusal() {
    let gate = RateGate::new(None, None);
    for _ in 0..10 {
        gate.admit().await;
        gate.answered(RateHint::default());
    }
    gate.refused(Duration::ZERO, RateHint::default());
    // Taught 10 a second; five quiet seconds later, 15 a second.
    tokio::time::advance(Duration::from_secs(5)).await;
    let times = admitted_at(&gate, 3).await;
    let step = times[2] - times[1];
    assert!((66..=68).contains(&step), "{times:?}");
}

/// Header values a server may send, from the ordinary to the hostile.
const WAITS: [&str; 14] = [
    "0",
    "1",
    "2.5",
    "59.999",
    "60",
    "61",
    "999999",
    "10000000000000000000",
    "18446744073709551615",
    "99999999999999999999999999",
    "1e400",
    "Fri, 31 Dec 9999 23:59:59 GMT",
    "Thu, 01 Jan 1970 00:00:00 GMT",
    "-1",
];

#[tokio::test(start_paused = true)]
async fn no_header_value_parks_the_gate_past_the_retry_cap_or_overflows() {
    use crate::driver::retry::{RETRY_AFTER_CAP, capped_wait, retry_after};
    let now = std::time::SystemTime::now();
    let mut values: Vec<String> = WAITS.iter().map(|value| (*value).to_owned()).collect();
    // And a spread of random numbers of every magnitude.
    for _ in 0..200 {
        let digits = fastrand::usize(1..30);
        values.push((0..digits).map(|_| fastrand::digit(10)).collect());
    }
    for value in &values {
        for name in ["retry-after", "retry-after-ms"] {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_str(value).unwrap());
            headers.insert(
                "x-ratelimit-limit-requests",
                HeaderValue::from_str(value).unwrap(),
            );
            headers.insert(
                "x-ratelimit-limit-tokens",
                HeaderValue::from_str(value).unwrap(),
            );
            let server = retry_after(&headers, now);
            for retry in [1, 2, 3, u32::MAX] {
                let wait = capped_wait(server, retry);
                assert!(wait <= RETRY_AFTER_CAP, "{name}: {value}: {wait:?}");
                let gate = RateGate::new(None, None);
                let hint = RateHint::from_headers(&headers);
                gate.answered(hint);
                gate.spent(u64::MAX);
                gate.spent(u64::MAX);
                gate.refused(wait, hint);
                assert!(
                    gate.wait_ahead() <= MINUTE,
                    "{name}: {value}: {:?}",
                    gate.wait_ahead()
                );
            }
            // The server's number itself, uncapped, never panics the gate.
            RateGate::new(Some(1), Some(1))
                .refused(server.unwrap_or(Duration::MAX), RateHint::default());
        }
    }
    RateGate::new(None, None).refused(Duration::MAX, RateHint::default());
}
