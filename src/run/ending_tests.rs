use super::*;
use crate::policy::command_hooks::HookVerdict;
use leash_protocol::{AssistantContent, ToolCall, ToolResultMessage};

fn assistant(stop: StopReason, tool_call: bool) -> Message {
    let mut content = vec![AssistantContent::Text { text: "t".into() }];
    if tool_call {
        content.push(AssistantContent::ToolCall(ToolCall {
            id: "c".into(),
            name: "read_file".into(),
            arguments: serde_json::json!({}),
        }));
    }
    Message::Assistant(AssistantMessage {
        content,
        stop_reason: stop,
        ..AssistantMessage::default()
    })
}

fn result() -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: "c".into(),
        tool_name: "read_file".into(),
        content: vec![],
        details: serde_json::Value::Null,
        is_error: true,
        duration_ms: None,
        usage: None,
        timestamp: 0,
    })
}

fn decide(messages: &[Message], abort: Option<AbortCause>, limits: LimitReport) -> (Status, u8) {
    let status = decide_status(&Facts {
        last_reply: LastReply::of(messages),
        abort,
        limits,
        ..Facts::default()
    });
    (status, status.code())
}

#[test]
fn every_ending_maps_to_its_status_and_code() {
    let none = LimitReport::default();
    let user = Message::user_text("q");
    let stop = assistant(StopReason::Stop, false);
    let tools = [user.clone(), assistant(StopReason::ToolUse, true), result()];
    let limit = LimitReport {
        turn_limit_reached: true,
        ..none
    };
    let terminated = LimitReport {
        batch_terminated: true,
        ..none
    };
    let both = LimitReport {
        turn_limit_reached: true,
        batch_terminated: true,
        ..none
    };
    let budget = LimitReport {
        budget_exhausted: true,
        ..none
    };
    let interrupt = Some(AbortCause::Signal(Signal::Interrupt));
    let terminate = Some(AbortCause::Signal(Signal::Terminate));
    let hangup = Some(AbortCause::Signal(Signal::Hangup));
    type Case = (Vec<Message>, Option<AbortCause>, LimitReport, (Status, u8));
    let cases: Vec<Case> = vec![
        (
            vec![user.clone(), stop.clone()],
            None,
            none,
            (Status::Ok, 0),
        ),
        (
            vec![user.clone(), assistant(StopReason::Error, false)],
            None,
            none,
            (Status::Error, 1),
        ),
        (vec![user.clone()], None, none, (Status::Error, 1)),
        (tools.to_vec(), None, limit, (Status::TurnLimit, 3)),
        (tools.to_vec(), None, terminated, (Status::Terminated, 4)),
        (tools.to_vec(), None, both, (Status::Terminated, 4)),
        (
            vec![user.clone(), assistant(StopReason::Length, false)],
            None,
            none,
            (Status::Length, 5),
        ),
        (tools.to_vec(), None, budget, (Status::Budget, 7)),
        (
            vec![user.clone(), assistant(StopReason::Aborted, false)],
            Some(AbortCause::Timeout),
            none,
            (Status::Timeout, 124),
        ),
        (
            tools.to_vec(),
            Some(AbortCause::Timeout),
            none,
            (Status::Timeout, 124),
        ),
        (
            vec![user.clone(), assistant(StopReason::Aborted, false)],
            interrupt,
            none,
            (Status::Interrupted(Signal::Interrupt), 130),
        ),
        (
            vec![user.clone(), assistant(StopReason::Aborted, false)],
            terminate,
            none,
            (Status::Interrupted(Signal::Terminate), 143),
        ),
        (
            vec![user.clone(), assistant(StopReason::Aborted, false)],
            hangup,
            none,
            (Status::Interrupted(Signal::Hangup), 129),
        ),
        // The timer fired just after the answer was complete.
        (
            vec![user.clone(), stop.clone()],
            Some(AbortCause::Timeout),
            none,
            (Status::Ok, 0),
        ),
    ];
    for (messages, abort, guards, expected) in cases {
        assert_eq!(
            decide(&messages, abort, guards),
            expected,
            "{messages:?} {abort:?} {guards:?}"
        );
    }
}

#[test]
fn one_turn_is_singular_and_no_correction_is_claimed_that_never_ran() {
    let one = Detail {
        turns: 1,
        budget: Some((12, 10)),
        ..Detail::default()
    };
    assert_eq!(
        describe(Status::TurnLimit, &one),
        "turn limit reached after 1 turn; task not confirmed complete; raise it with --max-turns N"
    );
    assert_eq!(
        describe(Status::Budget, &one),
        "token budget used up: 12 of 10 tokens after 1 turn; raise it with --max-tokens-total N"
    );
    let invalid = Detail {
        error_message: Some("not JSON"),
        ..Detail::default()
    };
    let text = describe(Status::InvalidOutput, &invalid);
    assert!(!text.contains("after one corrective turn"), "{text}");
    assert!(text.contains("no turn was left for a correction"), "{text}");
    let corrected = Detail {
        corrected: true,
        ..invalid
    };
    assert!(
        describe(Status::InvalidOutput, &corrected).contains("after one corrective turn: not JSON")
    );
    assert_eq!(
        describe(Status::Interrupted(Signal::Hangup), &one),
        "terminated by SIGHUP"
    );
}

#[test]
fn a_failed_write_fails_only_a_run_that_succeeded() {
    let after_write_failure = |status: Status| {
        decide_status(&Facts {
            never_ran: Some(status),
            write_failed: true,
            ..Facts::default()
        })
    };
    assert_eq!(after_write_failure(Status::Ok), Status::Error);
    assert_eq!(after_write_failure(Status::Length), Status::Length);
    assert_eq!(after_write_failure(Status::TurnLimit), Status::TurnLimit);
}

#[test]
fn the_budget_line_names_the_cost_budget_when_max_cost_stopped_the_run() {
    let cost = |usd: &str| crate::policy::cost::Cost::parse_usd(usd).unwrap();
    let detail = Detail {
        turns: 2,
        budget: Some((12, 100)),
        cost_budget: Some((cost("0.0123"), cost("0.01"))),
        ..Detail::default()
    };
    assert_eq!(
        describe(Status::Budget, &detail),
        "cost budget used up: $0.012300 of $0.010000 after 2 turns; raise it with --max-cost USD"
    );
}

#[test]
fn a_hook_verdict_and_the_schema_check_are_decided_with_the_rest() {
    let answered = Facts {
        last_reply: LastReply::of(&[assistant(StopReason::Stop, false)]),
        ..Facts::default()
    };
    let with = |change: &dyn Fn(&mut Facts)| {
        let mut facts = answered.clone();
        change(&mut facts);
        decide_status(&facts)
    };
    assert_eq!(decide_status(&answered), Status::Ok);
    assert_eq!(
        with(&|f| f.hook = Some(HookVerdict::Failed("no".into()))),
        Status::Terminated
    );
    assert_eq!(
        with(&|f| f.hook = Some(HookVerdict::ContinueRefused { budget: true })),
        Status::Budget
    );
    assert_eq!(
        with(&|f| f.hook = Some(HookVerdict::ContinueRefused { budget: false })),
        Status::TurnLimit
    );
    assert_eq!(
        with(&|f| f.schema = SchemaVerdict::Invalid),
        Status::InvalidOutput
    );
    assert_eq!(with(&|f| f.schema = SchemaVerdict::Valid), Status::Ok);
    // A failed hook outranks the schema; a refused continuation of a run
    // that did not answer changes nothing.
    assert_eq!(
        with(&|f| {
            f.hook = Some(HookVerdict::Failed("no".into()));
            f.schema = SchemaVerdict::Invalid;
        }),
        Status::Terminated
    );
    let errored = Facts {
        last_reply: LastReply::of(&[assistant(StopReason::Error, false)]),
        hook: Some(HookVerdict::ContinueRefused { budget: true }),
        ..Facts::default()
    };
    assert_eq!(decide_status(&errored), Status::Error);
    // An invalid reply whose result could not be written keeps its status.
    assert_eq!(
        with(&|f| {
            f.schema = SchemaVerdict::Invalid;
            f.write_failed = true;
        }),
        Status::InvalidOutput
    );
}

#[test]
fn late_stdin_takes_even_a_complete_answer_away() {
    let answered = vec![assistant(StopReason::Stop, false)];
    let late = Some(AbortCause::LateStdin);
    assert_eq!(
        decide(&answered, late, LimitReport::default()),
        (Status::Usage, 2)
    );
    // A timeout after a complete answer keeps it; late input does not.
    assert_eq!(
        decide(&answered, Some(AbortCause::Timeout), LimitReport::default()).0,
        Status::Ok
    );
}
