//! The exit table: complete, one code per status.

use super::*;

#[test]
fn statuses_have_their_wire_names() {
    assert_eq!(Status::TurnLimit.as_str(), "turn_limit");
    assert_eq!(Status::InvalidOutput.as_str(), "invalid_output");
    assert_eq!(Status::InvalidOutput.code(), 6);
}

/// A new status without its line in the table fails here.
fn every_status() -> Vec<Status> {
    let all = |status: Status| match status {
        Status::Ok
        | Status::Error
        | Status::Usage
        | Status::TurnLimit
        | Status::Terminated
        | Status::Length
        | Status::InvalidOutput
        | Status::Budget
        | Status::Mcp
        | Status::BatchFailed
        | Status::Timeout
        | Status::Interrupted(Signal::Interrupt | Signal::Terminate | Signal::Hangup) => status,
    };
    [
        Status::Ok,
        Status::Error,
        Status::Usage,
        Status::TurnLimit,
        Status::Terminated,
        Status::Length,
        Status::InvalidOutput,
        Status::Budget,
        Status::Mcp,
        Status::BatchFailed,
        Status::Timeout,
        Status::Interrupted(Signal::Interrupt),
        Status::Interrupted(Signal::Terminate),
        Status::Interrupted(Signal::Hangup),
    ]
    .map(all)
    .to_vec()
}

#[test]
fn the_exit_table_has_every_status_once_with_a_distinct_code() {
    let statuses = every_status();
    assert_eq!(EXITS.len(), statuses.len());
    for status in statuses {
        assert_eq!(EXITS.iter().filter(|e| e.status == status).count(), 1);
    }
    let mut codes: Vec<u8> = EXITS.iter().map(|e| e.code).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), EXITS.len());
    assert_eq!(Status::Interrupted(Signal::Hangup).code(), 129);
    assert_eq!(
        Status::Interrupted(Signal::Terminate).as_str(),
        "interrupted"
    );
    assert_eq!(status_names().len(), 12);
    assert_eq!(Status::BatchFailed.code(), 9);
    assert_eq!((Status::Mcp.code(), Status::Mcp.as_str()), (8, "mcp"));
    let interrupted = exit_lines().pop().unwrap();
    assert_eq!(
        interrupted,
        (
            "130".to_owned(),
            "interrupted",
            "SIGINT (143 for SIGTERM, 129 for SIGHUP)".to_owned()
        )
    );
}
