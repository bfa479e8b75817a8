//! The `--deny-tool`/`--allow-tool` matcher on any pattern and any path:
//! no panic; the same glob as a deny and as an allow pattern never both
//! let a call through (a deny blocks on any form of the path, an allow
//! passes only the file touched, so through a symlink both may block);
//! and a path argument is judged by what it names, not its
//! spelling — when a deny pattern matches the normalised form of a
//! relative path, it denies every equivalent spelling too (`./p`, `p/`,
//! `p` with its separators doubled, and the root's absolute path joined
//! to `p`), each of which normalises to the same form. An allow pattern
//! judges every spelling whose form leads to a file by that file alone,
//! so it lets all of them through or none, whatever `..` they carry.
//!
//! Input: the argument glob, a newline, the path.

#![no_main]

use leash::internals::tool_policy::{Policy, ToolPattern, normalised};
use leash_tools::sandbox::Sandbox;
use leash_fuzz::tree;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (glob, path) = text.split_once('\n').unwrap_or((text.as_ref(), "a.txt"));
    let Ok(sandbox) = Sandbox::new(&tree().root) else {
        panic!("the fuzz root is usable");
    };
    let value = format!("read_file(path={glob})");
    let Ok(pattern) = ToolPattern::parse("--deny-tool", &value) else {
        return;
    };
    let deny = Policy {
        deny: vec![pattern.clone()],
        allow: Vec::new(),
    };
    let allow = Policy {
        deny: Vec::new(),
        allow: vec![pattern],
    };
    let allowed = |p: &str| {
        let args = json!({ "path": p });
        allow.check("read_file", &args, Some(&sandbox)).is_none()
    };
    let denied = |p: &str| {
        let args = json!({ "path": p });
        let by_deny = deny.check("read_file", &args, Some(&sandbox)).is_some();
        // What the deny pattern lets through, the allow pattern blocks.
        assert!(by_deny || !allowed(p), "{p:?}: let through by both");
        by_deny
    };
    let raw = denied(path);
    let form = |p: &str| normalised(Some(&sandbox), "read_file", "path", p);
    let Some(normal) = form(path) else {
        return;
    };
    if path.is_empty() || path.starts_with('/') {
        return;
    }
    let root = sandbox.root().display().to_string();
    let spellings = [
        format!("./{path}"),
        format!("{path}/"),
        path.replace('/', "//"),
        format!("{root}/{path}"),
    ];
    for spelling in &spellings {
        assert_eq!(
            form(spelling).as_deref(),
            Some(normal.as_str()),
            "{spelling:?} normalises apart from {path:?}"
        );
    }
    if sandbox.touched(&normal).is_some() {
        let verdict = allowed(&normal);
        for spelling in spellings.iter().chain([&path.to_owned()]) {
            assert_eq!(
                allowed(spelling),
                verdict,
                "{spelling:?} and {normal:?} judged apart by the allow pattern {glob:?}"
            );
        }
    }
    if denied(&normal) {
        assert!(
            raw,
            "{path:?} slipped past {glob:?}, which denies {normal:?}"
        );
        for spelling in &spellings {
            assert!(denied(spelling), "{spelling:?} slipped past {glob:?}");
        }
    }
});
