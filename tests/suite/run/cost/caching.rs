//! Prompt caching (docs/src/providers.md "Prompt caching"): each turn's request is an exact
//! byte prefix of the next on every provider, where Anthropic's breakpoints
//! sit, `--no-cache` in every layer, `prompt_cache_key`, and cached tokens
//! in the usage reports.

use super::*;
use pretty_assertions::assert_eq;

const BREAKPOINT: &str = r#","cache_control":{"type":"ephemeral"}"#;

/// The prefix rule of this file's header, between two consecutive bodies.
fn assert_prefix(before: &str, after: &str, moving_breakpoint: bool) {
    let head = before
        .strip_suffix("]}")
        .unwrap_or_else(|| panic!("messages are not the last field: {before}"));
    let head = match moving_breakpoint {
        true => {
            let tail = format!("{BREAKPOINT}}}]}}");
            let cut = head
                .strip_suffix(&tail)
                .unwrap_or_else(|| panic!("no breakpoint on the last block: {head}"));
            format!("{cut}}}]}}")
        }
        false => head.to_owned(),
    };
    assert!(after.len() > head.len(), "{after}");
    assert_eq!(
        &after[..head.len()],
        head,
        "turn N+1 does not repeat turn N"
    );
    assert_eq!(&after[head.len()..head.len() + 1], ",");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_request_repeats_the_one_before_as_an_exact_prefix_on_every_provider() {
    for (api, extra) in [
        (Api::OpenAi, vec!["--prompt-cache-key", "repo-1"]),
        (Api::Responses, vec!["--prompt-cache-key", "repo-1"]),
        (Api::Anthropic, vec![]),
        (Api::Anthropic, vec!["--no-cache"]),
    ] {
        let server = three_turns(api).await;
        let mut args = vec!["-s", "You are terse.", "--max-turns", "5"];
        args.extend(extra.iter().copied());
        args.push("Read sample.ts, then list the directory.");
        let output = on(&server, api).args(&args).output_async().await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{api:?}: {}",
            output.stderr()
        );
        let bodies = raw_bodies(&server).await;
        assert_eq!(bodies.len(), 3, "{api:?}");
        if api != Api::Anthropic {
            let first: Value = serde_json::from_str(&bodies[0]).unwrap();
            assert_eq!(first["prompt_cache_key"], "repo-1", "{api:?}");
        }
        let moving = api == Api::Anthropic && extra.is_empty();
        assert_prefix(&bodies[0], &bodies[1], moving);
        assert_prefix(&bodies[1], &bodies[2], moving);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_breakpoints_sit_on_the_last_tool_the_system_and_the_last_block() {
    let server = three_turns(Api::Anthropic).await;
    let output = on(&server, Api::Anthropic)
        .args([
            "-s",
            "You are terse.",
            "Read sample.ts, then list the directory.",
        ])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    let ephemeral = json!({"type": "ephemeral"});
    for body in anthropic::request_bodies(&server).await {
        let tools = body["tools"].as_array().unwrap();
        let (last_tool, others) = tools.split_last().unwrap();
        assert_eq!(last_tool["cache_control"], ephemeral);
        assert!(
            others
                .iter()
                .all(|tool| tool.get("cache_control").is_none())
        );
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}])
        );
        let messages = body["messages"].as_array().unwrap();
        let (last, earlier) = messages.split_last().unwrap();
        let (last_block, earlier_blocks) =
            last["content"].as_array().unwrap().split_last().unwrap();
        assert_eq!(last_block["cache_control"], ephemeral);
        assert!(
            earlier_blocks
                .iter()
                .all(|b| b.get("cache_control").is_none())
        );
        for message in earlier {
            for block in message["content"].as_array().unwrap() {
                assert!(block.get("cache_control").is_none(), "{body}");
            }
        }
        // Three breakpoints; the API allows four.
        assert_eq!(body.to_string().matches("cache_control").count(), 3);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_cache_removes_every_breakpoint_in_flag_variable_and_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("leash");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "no-cache = true\n").unwrap();
    for (args, env) in [
        (vec!["--no-cache", "Read sample.ts."], vec![]),
        (vec!["Read sample.ts."], vec![("LEASH_NO_CACHE", "1")]),
        (
            vec!["Read sample.ts."],
            vec![("XDG_CONFIG_HOME", dir.path().to_str().unwrap())],
        ),
    ] {
        let server = three_turns(Api::Anthropic).await;
        let mut args = args;
        args.splice(0..0, ["-s", "You are terse."]);
        let output = on(&server, Api::Anthropic)
            .envs(env.iter().copied())
            .args(&args)
            .output_async()
            .await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{env:?}: {}",
            output.stderr()
        );
        for body in raw_bodies(&server).await {
            assert!(!body.contains("cache_control"), "{env:?}: {body}");
            assert!(body.contains(r#""system":"You are terse.""#), "{body}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_gets_the_prompt_cache_key_only_when_set() {
    let server = three_turns(Api::OpenAi).await;
    let output = on(&server, Api::OpenAi)
        .envs([("LEASH_PROMPT_CACHE_KEY", "repo-7")])
        .args(["Read sample.ts."])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    for body in openai::request_bodies(&server).await {
        assert_eq!(body["prompt_cache_key"], "repo-7");
        assert!(!body.to_string().contains("cache_control"));
    }
    let server = three_turns(Api::OpenAi).await;
    let output = on(&server, Api::OpenAi)
        .args(["Read sample.ts."])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    for body in raw_bodies(&server).await {
        assert!(!body.contains("prompt_cache_key"), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cached_tokens_are_reported_per_turn_and_for_the_run() {
    for (api, turns, total) in [
        (
            Api::Anthropic,
            [[10, 20, 0, 1000], [10, 20, 1000, 200], [10, 10, 1200, 200]],
            [30, 50, 2200, 1400],
        ),
        (
            Api::OpenAi,
            [[1000, 20, 0, 0], [200, 20, 1000, 0], [200, 10, 1200, 0]],
            [1400, 50, 2200, 0],
        ),
    ] {
        let server = three_turns(api).await;
        let args = [
            "--output",
            "json",
            "--events",
            "jsonl",
            "Read sample.ts, then list the directory.",
        ];
        let output = on(&server, api).args(args).output_async().await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{api:?}: {}",
            output.stderr()
        );
        let result = result(&output);
        assert_eq!(counts(&result["usage"]), total, "{api:?}");
        let per_turn: Vec<[u64; 4]> = result["turnUsage"]
            .as_array()
            .unwrap()
            .iter()
            .map(counts)
            .collect();
        assert_eq!(per_turn, turns, "{api:?}");
        assert_eq!(result.get("cost"), None, "no price, no cost");
        let events = output.events();
        let run_end = events.last().unwrap();
        assert_eq!(run_end["type"], "run_end");
        assert_eq!(run_end["usage"], result["usage"]);
        assert_eq!(run_end["turnUsage"], result["turnUsage"]);
        let turn_ends: Vec<[u64; 4]> = of_type(&events, "turn_end")
            .iter()
            .map(|event| counts(&event["message"]["usage"]))
            .collect();
        assert_eq!(turn_ends, turns, "{api:?}");
    }
}
