//! The same acceptance cases on both OpenAI APIs (docs/src/providers.md "Providers";
//! ARCHITECTURE.md §2.1, §2.4): the seed task, the turn and output limits,
//! errors and retries, the timeout and structured output, once with
//! `--api chat` and once with `--api responses`.

use super::*;
use pretty_assertions::assert_eq;

const BOTH: [Api; 2] = [Api::Chat, Api::Responses];

#[tokio::test(flavor = "multi_thread")]
async fn the_seed_task_on_both_apis() {
    for api in BOTH {
        let server = MockServer::start().await;
        let first = api.calls(
            "Let me read the file first.",
            &[("call_seed_1", "read_file", "{\"path\": \"sample.ts\"}")],
        );
        Mock::given(method("POST"))
            .and(path(api.path()))
            .and(header("authorization", format!("Bearer {KEY}").as_str()))
            .respond_with(sse(first))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(api.path()))
            .respond_with(sse(api.text(&[
                "`first([])` returns ",
                "`undefined`: indexing past the end ",
                "of an array does not throw.",
            ])))
            .mount(&server)
            .await;

        let output = seed(api, &base(&server))
            .args(["--timeout", "20s"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(output.stdout(), format!("{REPLY}\n"), "{api:?}");
        output.assert_key_absent(KEY);

        let bodies = request_bodies(&server).await;
        assert_eq!(bodies.len(), 2, "{api:?}");
        let turn = conversation(api, &bodies[1]);
        let sample = std::fs::read_to_string(sample_path()).unwrap();
        match api {
            Api::Chat => {
                assert_eq!(turn.len(), 3, "{turn:#?}");
                assert_eq!(turn[1]["tool_calls"][0]["id"], "call_seed_1");
                assert_eq!(turn[2]["tool_call_id"], "call_seed_1");
            }
            Api::Responses => {
                assert_eq!(bodies[0]["store"], false);
                assert_eq!(bodies[0]["stream"], true);
                assert_eq!(bodies[0]["include"], json!(["reasoning.encrypted_content"]));
                assert_eq!(bodies[1]["instructions"], bodies[0]["instructions"]);
                let tool = bodies[0]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|tool| tool["name"] == "read_file")
                    .unwrap();
                assert_eq!(tool["type"], "function");
                assert!(tool["parameters"].is_object(), "{tool}");
                assert_eq!(turn.len(), 4, "{turn:#?}");
                assert_eq!(turn[0]["role"], "user");
                assert!(turn[0]["content"].as_str().unwrap().contains(SEED_PROMPT));
                assert_eq!(
                    turn[1],
                    json!({"type": "message", "role": "assistant",
                           "content": "Let me read the file first."})
                );
                assert_eq!(
                    turn[2],
                    json!({"type": "function_call", "call_id": "call_seed_1",
                           "name": "read_file", "arguments": "{\"path\":\"sample.ts\"}"})
                );
                assert_eq!(turn[3]["type"], "function_call_output");
                assert_eq!(turn[3]["call_id"], "call_seed_1");
                let result = turn[3]["output"].as_str().unwrap();
                for line in sample.lines() {
                    assert!(result.contains(line), "tool result lacks {line:?}");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_turn_limit_on_both_apis_exits_3() {
    for api in BOTH {
        let server = serve(
            api,
            vec![sse(api.calls(
                "Reading.",
                &[("call_1", "read_file", "{\"path\": \"sample.ts\"}")],
            ))],
        )
        .await;
        let output = seed(api, &base(&server))
            .args(["--max-turns", "1"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(3),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(request_bodies(&server).await.len(), 1, "{api:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_output_limit_on_both_apis_exits_5_and_names_the_apis_field() {
    for api in BOTH {
        let server = serve(api, vec![sse(api.length("The answer is"))]).await;
        let output = seed(api, &base(&server))
            .args(["--max-tokens", "3"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(5),
            "{api:?}: {}",
            output.stderr()
        );
        let body = &request_bodies(&server).await[0];
        let field = match api {
            Api::Chat => "max_completion_tokens",
            Api::Responses => "max_output_tokens",
        };
        assert_eq!(body[field], 3, "{api:?}: {body}");
        assert_eq!(body.get("max_tokens"), None, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_on_both_apis_exit_1_retried_as_the_driver_says() {
    for api in BOTH {
        // 401: no retry, the server's words, never the key.
        let server = serve(
            api,
            vec![chat::http_error(
                401,
                &format!("Incorrect API key provided: {KEY}."),
            )],
        )
        .await;
        let output = seed(api, &base(&server))
            .args(["--retries", "2"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(1),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(request_bodies(&server).await.len(), 1);
        let last = output.last_line();
        assert!(
            last.contains("401") && last.contains("Incorrect API key"),
            "{last}"
        );
        output.assert_key_absent(KEY);

        // 500s: every retry used, then exit 1.
        let server = serve(api, vec![chat::http_error(500, "The server had an error.")]).await;
        let output = seed(api, &base(&server))
            .args(["--retries", "1"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(1),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(request_bodies(&server).await.len(), 2, "{api:?}");
        assert!(
            output.last_line().contains("HTTP 500"),
            "{}",
            output.stderr()
        );

        // A cut stream: exit 1, the incomplete-reply words, no retry.
        let server = serve(api, vec![sse(api.cut("An answer that never ends"))]).await;
        let output = seed(api, &base(&server))
            .args(["--retries", "2"])
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(1),
            "{api:?}: {}",
            output.stderr()
        );
        assert!(
            output.last_line().contains("the reply is incomplete"),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(request_bodies(&server).await.len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limited_once_then_served_on_both_apis() {
    for api in BOTH {
        let server = serve(
            api,
            vec![
                chat::http_error(429, "Rate limit reached").insert_header("retry-after", "1"),
                sse(api.text(&[REPLY])),
            ],
        )
        .await;
        let output = seed(api, &base(&server))
            .args(["--retries", "2"])
            .output_async()
            .await;
        let elapsed = output.elapsed;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(output.stdout(), format!("{REPLY}\n"));
        assert_eq!(request_bodies(&server).await.len(), 2);
        assert!(
            elapsed >= Duration::from_secs(1),
            "retry-after: {elapsed:?}"
        );
        assert!(output.stderr().contains("429"), "{}", output.stderr());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_server_on_both_apis_is_cut_by_the_timeout_with_124() {
    for api in BOTH {
        let server = serve(
            api,
            vec![sse(api.text(&[REPLY])).set_delay(Duration::from_secs(10))],
        )
        .await;
        let output = seed(api, &base(&server))
            .args(["--timeout", "1s"])
            .output_async()
            .await;
        let elapsed = output.elapsed;
        assert_eq!(
            output.status.code(),
            Some(124),
            "{api:?}: {}",
            output.stderr()
        );
        assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
        output.assert_key_absent(KEY);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn structured_output_on_both_apis_asks_for_the_schema() {
    let schema = json!({
        "type": "object",
        "properties": {"verdict": {"enum": ["pass", "fail"]}},
        "required": ["verdict"],
        "additionalProperties": false
    });
    for api in BOTH {
        let dir = tempfile::tempdir().unwrap();
        let schema_path = dir.path().join("schema.json");
        std::fs::write(&schema_path, schema.to_string()).unwrap();
        let server = serve(api, vec![sse(api.text(&[r#"{"verdict":"pass"}"#]))]).await;
        let schema_arg = schema_path.display().to_string();
        let output = seed(api, &base(&server))
            .args(["--tools", "none", "--output-schema", &schema_arg])
            .prompt("Is it good?")
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(output.stdout(), "{\"verdict\":\"pass\"}\n");
        let body = &request_bodies(&server).await[0];
        let format = match api {
            Api::Chat => {
                let format = &body["response_format"];
                assert_eq!(format["type"], "json_schema");
                format["json_schema"].clone()
            }
            Api::Responses => {
                let format = body["text"]["format"].clone();
                assert_eq!(format["type"], "json_schema");
                format
            }
        };
        assert_eq!(format["name"], "leash_output", "{body}");
        assert_eq!(format["schema"], schema, "{body}");
        assert_eq!(format["strict"], true, "{body}");
    }
}
