//! The `bash` tool on a model's raw arguments and on a command's output,
//! without running anything. The input is the arguments' JSON, a NUL, a
//! chunk size, then the output bytes. The arguments are taken as the tool
//! takes them (the time limit above 0 and at most the cap, or refused);
//! the output, pushed in chunks, is cut as a result shows it: within the
//! byte and line caps, the same whatever the chunking, counting every
//! byte, and the sandbox's refusal note found on it without a panic. A
//! slow unit here is a command's output that stalls the run.

#![no_main]

use std::time::Duration;

use leash_child::reach::refusal_note;
use leash_child::tail::Tail;
use leash_tools::bash::{
    BashArgs, HEAD_BYTES, HEAD_LINES, MAX_BYTES, MAX_LINES, MAX_TIMEOUT, time_limit,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data
        .iter()
        .position(|byte| *byte == 0)
        .unwrap_or(data.len());
    let (raw, output) = (&data[..split], data.get(split + 1..).unwrap_or_default());
    if let Ok(raw) = std::str::from_utf8(raw)
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(raw)
        && let Ok(args) = serde_json::from_value::<BashArgs>(value)
        && let Ok(limit) = time_limit(args.timeout)
    {
        assert!(limit > Duration::ZERO && limit <= MAX_TIMEOUT, "{limit:?}");
    }
    let Some((&size, output)) = output.split_first() else {
        return;
    };
    let mut whole = Tail::with_head(MAX_BYTES, HEAD_BYTES);
    whole.push(output);
    let mut cut = Tail::with_head(MAX_BYTES, HEAD_BYTES);
    for chunk in output.chunks(usize::from(size.max(1))) {
        cut.push(chunk);
    }
    let shown = whole.cut_ends((MAX_BYTES, MAX_LINES), (HEAD_BYTES, HEAD_LINES));
    assert_eq!(
        shown,
        cut.cut_ends((MAX_BYTES, MAX_LINES), (HEAD_BYTES, HEAD_LINES)),
        "the cut depends on the chunking"
    );
    assert_eq!(shown.total_bytes, output.len() as u64);
    // Lossy UTF-8 may widen an invalid byte to three.
    assert!(shown.head.len() + shown.text.len() <= 3 * MAX_BYTES);
    let lines = |text: &str| text.lines().count() as u64;
    assert!(lines(&shown.head) + lines(&shown.text) <= MAX_LINES as u64 + 1);
    assert!(shown.dropped_lines <= shown.total_lines);
    let _ = refusal_note(&format!("{}{}", shown.head, shown.text));
});
