//! A batch's own files against hostile input (README "Fan-out: leash
//! batch", "Security and limits"): a shard whose `index` is huge or
//! maximal, two copies on one `--resume OUT`, an id that names the input
//! or the results file, `--resume` on a file that is not a results file.

use std::time::{Duration, Instant};

use super::*;
use crate::support::run::Run;

fn merge(files: &[&Path]) -> Outcome {
    Run::new()
        .command_word("batch")
        .arg("merge")
        .args(files)
        .timeout(Duration::from_secs(20))
        .output()
}

#[test]
fn a_shard_with_a_huge_or_maximal_index_is_counted_not_allocated() {
    let dir = tempfile::tempdir().unwrap();
    for index in [4_000_000_000u64, u64::MAX] {
        let shard = dir.path().join(format!("shard-{index}.jsonl"));
        let text = format!(
            "{{\"id\":\"a\",\"index\":0,\"status\":\"ok\"}}\n{{\"id\":\"b\",\"index\":{index},\"status\":\"ok\"}}\n"
        );
        std::fs::write(&shard, text).unwrap();
        let started = Instant::now();
        let outcome = merge(&[&shard]);
        assert_eq!(outcome.code(), Some(1), "{index}: {}", outcome.stderr());
        let more = u128::from(index) - 1 - 20;
        assert_eq!(
            outcome.last_line(),
            format!(
                "leash: batch merge: missing indexes: {} and {more} more",
                (1..=20)
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
        assert_eq!(outcome.stdout(), "");
        assert!(started.elapsed() < Duration::from_secs(5), "{index}");
    }
}
