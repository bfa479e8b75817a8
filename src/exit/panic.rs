//! What a panic prints in a build that aborts on panic (the release
//! profile): one `leash:` line saying it is a bug, then exit 101, the code
//! an unwinding main thread exits with, instead of `SIGABRT` and a core
//! file. No panic is expected (docs/src/security.md "Security and limits"); this is the
//! last word if one happens anyway.

use std::panic::PanicHookInfo;

/// The exit code of a panic: Rust's own for a panicked main thread.
pub const PANIC_CODE: i32 = 101;

/// The panic hook: the line on stderr, then the exit. Never returns, so
/// the abort after a hook never runs.
#[cfg_attr(not(panic = "abort"), allow(dead_code))]
pub fn report_panic(info: &PanicHookInfo<'_>) {
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str));
    let location = info.location().map(ToString::to_string);
    // Best effort: stderr may be gone; the exit code still says it.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        panic_line(location.as_deref(), message).as_bytes(),
    );
    std::process::exit(PANIC_CODE);
}

/// The one line a panic prints.
fn panic_line(location: Option<&str>, message: Option<&str>) -> String {
    let at = location.map_or_else(String::new, |at| format!(" at {at}"));
    let what = message.map_or_else(String::new, |message| format!(": {message}"));
    format!("leash: internal error{at}{what} (a bug in leash; please report it)\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_where_and_what() {
        assert_eq!(
            panic_line(Some("src/x.rs:1:2"), Some("boom")),
            "leash: internal error at src/x.rs:1:2: boom (a bug in leash; please report it)\n"
        );
        assert_eq!(
            panic_line(None, None),
            "leash: internal error (a bug in leash; please report it)\n"
        );
    }
}
