//! Cost (docs/src/output.md "Cost"): `--price` and the config file's prices report the
//! cost of each turn and of the run, and `--max-cost` ends a run with exit
//! 7 naming the cost budget, or is a usage error without a price.

use super::*;
use pretty_assertions::assert_eq;

#[tokio::test(flavor = "multi_thread")]
async fn a_price_reports_the_cost_of_each_turn_and_of_the_run() {
    let server = three_turns(Api::Anthropic).await;
    // $3 input, $15 output, $0.30 cache read, $3.75 cache write per 1M.
    let args = [
        "--price",
        "3,15,0.3,3.75",
        "--output",
        "json",
        "--events",
        "jsonl",
        "Read sample.ts, then list the directory.",
    ];
    let output = on(&server, Api::Anthropic).args(args).output_async().await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    let result = result(&output);
    // Turn 1: 10×3 + 20×15 + 1000×3.75 = 4080 µ$; turn 2: 30 + 300 + 300 +
    // 750 = 1380; turn 3: 30 + 150 + 360 + 750 = 1290 (per million tokens).
    let costs: Vec<f64> = result["turnUsage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| turn["cost"].as_f64().unwrap())
        .collect();
    assert_eq!(costs, [0.00408, 0.00138, 0.00129]);
    assert_eq!(result["cost"].as_f64(), Some(0.00675));
    let events = output.events();
    assert_eq!(events.last().unwrap()["cost"].as_f64(), Some(0.00675));
    let turn_costs: Vec<f64> = of_type(&events, "turn_end")
        .iter()
        .map(|event| event["cost"].as_f64().unwrap())
        .collect();
    assert_eq!(turn_costs, costs);

    // The same run with text events: each turn_end line and the run_end line.
    let server = three_turns(Api::Anthropic).await;
    let output = on(&server, Api::Anthropic)
        .args(["--price", "3,15,0.3,3.75", "Read sample.ts."])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    let text = output.stderr();
    assert!(
        text.contains(
            "[turn 1] 1 tool call · tokens: 10 input, 20 output, 0 cache read, 1000 cache write · cost $0.004080\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with(
            "[run_end] ok · 3 turns · tokens: 30 input, 50 output, 2200 cache read, 1400 cache write · cost $0.006750\n"
        ),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_config_file_prices_the_model_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("leash");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "price = \"100,100\"\n[prices]\n\"gpt-test\" = \"2,8,0.5\"\n",
    )
    .unwrap();
    let server = three_turns(Api::OpenAi).await;
    let output = on(&server, Api::OpenAi)
        .envs([("XDG_CONFIG_HOME", dir.path().to_str().unwrap())])
        .args(["--output", "json", "Read sample.ts."])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", output.stderr());
    // 1400 input × $2 + 50 output × $8 + 2200 cached × $0.50, per 1M.
    assert_eq!(result(&output)["cost"].as_f64(), Some(0.0043));
}

#[tokio::test(flavor = "multi_thread")]
async fn max_cost_stops_the_run_with_exit_7_and_names_the_cost_budget() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let server = three_turns(api).await;
        // A dollar per token: the first turn is already over a dollar.
        let args = [
            "--price",
            "1000000,1000000",
            "--max-cost",
            "1.5",
            "--max-turns",
            "5",
            "Read sample.ts.",
        ];
        let output = on(&server, api).args(args).output_async().await;
        assert_eq!(
            output.status.code(),
            Some(7),
            "{api:?}: {}",
            output.stderr()
        );
        assert_eq!(
            raw_bodies(&server).await.len(),
            1,
            "no request after the budget"
        );
        let text = output.stderr();
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("leash: cost budget used up: $")
                && last.ends_with(" of $1.500000 after 1 turn; raise it with --max-cost USD"),
            "{api:?}: {last}"
        );
    }
    let server = three_turns(Api::OpenAi).await;
    let output = on(&server, Api::OpenAi)
        .envs([("LEASH_PRICE", "1000000,0"), ("LEASH_MAX_COST", "0.5")])
        .args(["--events", "jsonl", "--output", "json", "Read sample.ts."])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(7), "{}", output.stderr());
    let run_end = output.events().pop().unwrap();
    assert_eq!(run_end["status"], "budget");
    assert_eq!(
        run_end["message"],
        "cost budget used up: $1000.000000 of $0.500000 after 1 turn; raise it with --max-cost USD"
    );
    assert_eq!(result(&output)["cost"].as_f64(), Some(1000.0));
}

#[tokio::test(flavor = "multi_thread")]
async fn max_cost_without_a_price_is_a_usage_error() {
    let server = three_turns(Api::OpenAi).await;
    let output = on(&server, Api::OpenAi)
        .args(["--max-cost", "1", "hi"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(2), "{}", output.stderr());
    assert!(
        output
            .stderr()
            .starts_with("leash: --max-cost needs a price"),
        "{}",
        output.stderr()
    );
    assert!(raw_bodies(&server).await.is_empty());
    let output = on(&server, Api::OpenAi)
        .args(["--price", "2", "hi"])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(2), "{}", output.stderr());
    assert!(
        output.stderr().contains("invalid price '2'"),
        "{}",
        output.stderr()
    );
}
