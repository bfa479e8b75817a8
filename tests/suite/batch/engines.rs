//! docs/src/batch.md "Fan-out: leash batch", beyond one machine: the GNU parallel
//! recipe, read out of the manual and run as written with Debian's
//! `parallel` — its host list replaced by `:` (this machine), leash on the
//! PATH and the OpenAI mock on loopback — then `leash batch merge`.
//! Skipped only where `parallel` is missing outside CI; in CI (`CI` set)
//! a missing `parallel` fails the test, as .ci/run installs it.

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::*;
use crate::support::run::{stderr, stdout};
use crate::support::shell::{Workspace, has};

/// The hosts the manual's recipe names; the test runs them all here.
const HOSTS: &str = "-S host1,host2,host3,host4";

#[tokio::test]
async fn the_gnu_parallel_recipe_runs_every_shard_and_merges_them() {
    if !has("parallel") {
        assert!(
            std::env::var_os("CI").is_none(),
            "GNU parallel is not installed, and CI must run this recipe (.ci/run installs it)"
        );
        eprintln!(
            "skipped: GNU parallel is not installed (apt-get install parallel); CI runs this test"
        );
        return;
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(openai::text_reply(&["reviewed"])))
        .mount(&server)
        .await;

    let ws = Workspace::new();
    let ids: Vec<String> = (0..10).map(|i| format!("file-{i}")).collect();
    let items: String = ids
        .iter()
        .map(|id| format!("{{\"id\": \"{id}\", \"prompt\": \"Review {id}.\"}}\n"))
        .collect();
    ws.write("items.jsonl", &items);

    let recipe = crate::suite::cli::recipes::recipe("gnu-parallel");
    assert!(
        recipe.contains(HOSTS),
        "the recipe names its hosts: {recipe}"
    );
    let script = recipe.replace(HOSTS, "-S :");
    let output = ws
        .bash(&script)
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.uri()))
        .env("LEASH_PROVIDER", "openai")
        .env("LEASH_MODEL", "gpt-test")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        stdout(&output),
        stderr(&output)
    );

    // Every shard holds the items whose index is K modulo 4.
    for k in 0..4 {
        let shard = std::fs::read_to_string(ws.path(&format!("shard-{k}.jsonl"))).unwrap();
        let indexes: Vec<u64> = shard
            .lines()
            .map(|line| {
                serde_json::from_str::<Value>(line).unwrap()["index"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        let expected: Vec<u64> = (0..10).filter(|i| i % 4 == k).collect();
        assert_eq!(indexes, expected, "shard {k}");
    }
    // The merge: every id once, in input order, each run ok.
    let results = std::fs::read_to_string(ws.path("results.jsonl")).unwrap();
    let lines: Vec<Value> = results
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(super::ids(&lines), ids);
    for line in &lines {
        assert_eq!(line["status"], "ok", "{line}");
        assert_eq!(line["reply"], "reviewed", "{line}");
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 10);
}
