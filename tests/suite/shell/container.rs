//! Root in a default container — no writable pids cgroup — gets a
//! confined shell with a process cap (docs/src/tools.md "Root in a
//! container"): each command runs as a stranger's uid whose
//! `RLIMIT_NPROC` the kernel enforces. This machine's root can make a
//! cgroup, so a debug build is told it cannot (`_LEASH_TEST_NO_CGROUP`).

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use serde_json::json;

use super::{Parent, command, confinable, processes_with, texts};

const NO_CGROUP: &str = "_LEASH_TEST_NO_CGROUP";

#[test]
fn root_without_a_cgroup_runs_commands_capped_as_a_stranger_and_gets_its_files_back() {
    if !confinable() || !nix::unistd::geteuid().is_root() {
        return;
    }
    let parent = Parent::new();
    let root = parent.path("root");
    // The checkout's owner, whose files the command's become.
    std::os::unix::fs::chown(&root, Some(4242), Some(4343)).unwrap();
    let outcome = parent
        .run(&[
            command(
                "id -u; mkdir -p made/deep && printf 'one\\n' > made/deep/f.txt; \
                 python3 -c 'import os; os.setuid(0)' 2>&1 | tail -1; \
                 python3 -c 'import os; os.setresuid(0, 0, 0)' 2>&1 | tail -1; \
                 kill -0 $PPID 2>&1 | tail -1; grep CapBnd /proc/self/status",
            ),
            json!({"command": "bomb_3171() { bomb_3171 | bomb_3171 & }; bomb_3171; sleep 2; \
                   echo still-here", "timeout": 20}),
            command("cat made/deep/f.txt; echo next-command"),
        ])
        .env(NO_CGROUP, "1")
        .timeout(Duration::from_secs(120))
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    let texts = texts(&outcome);
    // Not root, and no way back to it; leash out of its reach.
    let uid: u32 = texts[0].lines().next().unwrap().parse().unwrap();
    assert!((60_000..=65_533).contains(&uid), "{}", texts[0]);
    assert_eq!(
        texts[0].matches("Operation not permitted").count(),
        3,
        "{}",
        texts[0]
    );
    // CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID,
    // CAP_NET_BIND_SERVICE: no CAP_SETUID, CAP_SETGID or CAP_SETPCAP.
    assert!(
        texts[0].contains("CapBnd:\t000000000000041b"),
        "{}",
        texts[0]
    );
    // The cap holds the bomb; the next command runs.
    assert!(
        texts[1].contains("Resource temporarily unavailable"),
        "the cap was not hit: {}",
        &texts[1][texts[1].len().saturating_sub(500)..]
    );
    assert!(
        texts[2].contains("one") && texts[2].contains("next-command"),
        "{}",
        texts[2]
    );
    assert_eq!(processes_with("bomb_3171"), Vec::<String>::new());
    // What it made is the checkout owner's.
    for path in ["made", "made/deep", "made/deep/f.txt"] {
        let meta = std::fs::symlink_metadata(root.join(path)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (4242, 4343), "{path}");
    }
}

#[test]
fn root_without_a_cgroup_edits_what_its_commands_wrote() {
    if !confinable() || !nix::unistd::geteuid().is_root() {
        return;
    }
    let parent = Parent::new();
    let outcome = parent
        .run(&[command(
            "printf 'fn answer() -> u32 { 41 }\\n' > lib.rs && chmod 600 lib.rs",
        )])
        .env(NO_CGROUP, "1")
        .args(["--allow-write"])
        .output();
    assert_eq!(outcome.code(), Some(0), "{}", outcome.stderr());
    // A later run's edit_file of the file the command wrote.
    let edit = crate::support::run::Run::faux(json!([
        {"toolCalls": [{"name": "edit_file", "arguments": {"path": "lib.rs", "old": "41", "new": "42"}}]},
        {"toolCalls": [{"name": "bash", "arguments": {"command": "cat lib.rs"}}]},
        {"text": "done"}
    ]))
    .home(parent.path("home"))
    .current_dir(parent.path(""))
    .env(NO_CGROUP, "1")
    .args(["--root", "root", "--allow-exec", "--allow-write", "--events", "jsonl"])
    .args(["--output", "json", "--no-stdin", "--max-turns", "3"])
    .prompt("go")
    .output();
    assert_eq!(edit.code(), Some(0), "{}", edit.stderr());
    let texts = texts(&edit);
    assert!(texts[0].contains("42"), "{}", texts[0]);
    assert!(texts[1].contains("{ 42 }"), "{}", texts[1]);
}
