//! The run's schedule (ARCHITECTURE.md §1.2, §1.4): hard exits, `finish_turn`, queues,
//! the wrapper, abort.

use super::*;
use pretty_assertions::assert_eq;

#[tokio::test]
async fn error_replies_are_hard_exits() {
    let provider = Recorder::new(json!([{"text": "part", "error": "HTTP 500: boom"}]));
    let finish_calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&finish_calls);
    let hooks = TestHooks {
        finish: Some(Box::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            Some(TurnDecision::Continue)
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![], hooks));
    let (log, _sub) = record(&agent);
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    // finish_turn was called, but its Continue was ignored.
    assert_eq!(finish_calls.load(Ordering::SeqCst), 1);
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(last_assistant_stop(&added), Some(StopReason::Error));
    assert_eq!(
        lines(&log)[lines(&log).len() - 2..],
        ["turn_end 0".to_owned(), "agent_end".to_owned()]
    );
}

// ---------------------------------------------------------------- finish_turn

#[tokio::test]
async fn finish_turn_end_stops_even_with_tool_calls_pending() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "never"}
    ]));
    let tool = TestTool::new("read");
    let hooks = TestHooks {
        finish: Some(Box::new(|_| Some(TurnDecision::End))),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![tool.clone()], hooks));
    agent.follow_up(Message::user_text("not polled after End"));
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(tool.runs(), 1);
    assert_eq!(provider.requests().len(), 1);
    let log = lines(&log);
    assert_eq!(
        log[log.len() - 2..],
        ["turn_end 1".to_owned(), "agent_end".to_owned()]
    );
}

#[tokio::test]
async fn finish_turn_continue_with_nothing_queued_makes_exactly_one_more_request() {
    let provider = Recorder::new(json!([{"text": "first"}, {"text": "second"}, {"text": "x"}]));
    let turns = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&turns);
    let hooks = TestHooks {
        finish: Some(Box::new(move |_| {
            (counter.fetch_add(1, Ordering::SeqCst) == 0).then_some(TurnDecision::Continue)
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![], hooks));
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests().len(), 2);
    // The context-only turn sends the same context plus the first reply.
    assert_eq!(provider.requests()[1].len(), 2);
    assert_eq!(
        lines(&log),
        vec![
            "agent_start",
            "turn_start",
            "message_end user",
            "message_end assistant",
            "turn_end 0",
            "turn_start",
            "message_end assistant",
            "turn_end 0",
            "agent_end"
        ]
    );
}

#[tokio::test]
async fn finish_turn_continue_adds_nothing_when_tool_results_already_cause_a_request() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "answer"},
        {"text": "must not be asked"}
    ]));
    let turns = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&turns);
    let hooks = TestHooks {
        finish: Some(Box::new(move |_| {
            (counter.fetch_add(1, Ordering::SeqCst) == 0).then_some(TurnDecision::Continue)
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![TestTool::new("read")], hooks));
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn continue_on_every_turn_is_bounded_by_a_turn_limit() {
    let provider = Recorder::new(json!({"responses": [{"text": "again"}], "repeatLast": true}));
    let turns = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&turns);
    // A user hook that always continues, combined with a limit of 3 turns.
    let hooks = TestHooks {
        finish: Some(Box::new(move |_| {
            let turn = counter.fetch_add(1, Ordering::SeqCst) + 1;
            Some(if turn >= 3 {
                TurnDecision::End
            } else {
                TurnDecision::Continue
            })
        })),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![], hooks));
    tokio::time::timeout(
        Duration::from_secs(5),
        agent.prompt(vec![Message::user_text("go")]),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(provider.requests().len(), 3);
}

// ---------------------------------------------------------------- queues

#[tokio::test]
async fn steering_is_delivered_before_the_next_request() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"text": "ok"}
    ]));
    let agent_slot: Arc<Mutex<Option<Agent>>> = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&agent_slot);
    let mut tool = TestTool::plain("read");
    tool.on_run = Some(Box::new(move || {
        if let Some(agent) = slot.lock().unwrap().as_ref() {
            agent.steer(Message::user_text("also check the tests"));
        }
    }));
    let agent = Agent::new(provider.clone(), config(vec![Arc::new(tool)], NoHooks));
    *agent_slot.lock().unwrap() = Some(agent.clone());
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    *agent_slot.lock().unwrap() = None;

    let second = &provider.requests()[1];
    let roles: Vec<&str> = second.iter().map(Message::role).collect();
    assert_eq!(roles, vec!["user", "assistant", "toolResult", "user"]);
    assert_eq!(
        lines(&log)[8..11],
        [
            "turn_start".to_owned(),
            "message_end user".to_owned(),
            "message_end assistant".to_owned()
        ]
    );
}

#[tokio::test]
async fn steering_queued_before_the_run_is_delivered_in_the_first_turn() {
    let provider = Recorder::new(json!([{"text": "ok"}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    agent.steer(Message::user_text("steer"));
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests()[0].len(), 2);
}

#[tokio::test]
async fn follow_ups_are_delivered_one_at_a_time_when_the_agent_would_stop() {
    let provider = Recorder::new(json!([{"text": "one"}, {"text": "two"}, {"text": "three"}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    agent.follow_up(Message::user_text("f1"));
    agent.follow_up(Message::user_text("f2"));
    let (log, _sub) = record(&agent);
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests().len(), 3);
    assert_eq!(provider.requests()[1].len(), 3);
    assert_eq!(provider.requests()[2].len(), 5);
    assert_eq!(
        lines(&log)[4..9],
        [
            "turn_end 0".to_owned(),
            "turn_start".to_owned(),
            "message_end user".to_owned(),
            "message_end assistant".to_owned(),
            "turn_end 0".to_owned()
        ]
    );
}

#[tokio::test]
async fn a_queue_in_all_mode_delivers_everything_at_once() {
    let provider = Recorder::new(json!([{"text": "one"}, {"text": "two"}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    agent.set_follow_up_mode(QueueMode::All);
    agent.follow_up(Message::user_text("f1"));
    agent.follow_up(Message::user_text("f2"));
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert_eq!(provider.requests().len(), 2);
    assert_eq!(provider.requests()[1].len(), 4);
}

// ---------------------------------------------------------------- wrapper

#[tokio::test]
async fn a_second_prompt_while_running_fails_at_once_and_changes_nothing() {
    let provider = Recorder::new(json!([{"text": "slow", "delayMs": 200}]));
    let agent = Agent::new(provider.clone(), config(vec![], NoHooks));
    let running = agent.clone();
    let first = tokio::spawn(async move { running.prompt(vec![Message::user_text("one")]).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = agent.prompt(vec![Message::user_text("two")]).await;
    assert_eq!(second, Err(AgentError::AlreadyRunning));
    assert_eq!(
        AgentError::AlreadyRunning.to_string(),
        "Agent is already processing a prompt. \
         Use steer() or followUp() to queue messages, or wait for completion."
    );
    first.await.unwrap().unwrap();
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(agent.messages().len(), 2);
}

#[tokio::test]
async fn unsubscribing_stops_events() {
    let provider = Recorder::new(json!([{"text": "a"}, {"text": "b"}]));
    let agent = Agent::new(provider, config(vec![], NoHooks));
    let (log, subscription) = record(&agent);
    agent.prompt(vec![Message::user_text("one")]).await.unwrap();
    let seen = lines(&log).len();
    subscription.unsubscribe();
    agent.prompt(vec![Message::user_text("two")]).await.unwrap();
    assert_eq!(lines(&log).len(), seen);
}

#[tokio::test]
async fn prepare_request_may_switch_the_model() {
    let provider = Recorder::new(json!([{"text": "a"}]));
    let hooks = TestHooks {
        model: Some("bigger".into()),
        ..TestHooks::default()
    };
    let agent = Agent::new(provider.clone(), config(vec![], hooks));
    let added = agent.prompt(vec![Message::user_text("one")]).await.unwrap();
    assert_eq!(*provider.models.lock().unwrap(), vec!["bigger".to_owned()]);
    match &added[1] {
        Message::Assistant(a) => assert_eq!(a.model, "bigger"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn prepare_next_turn_runs_before_every_turn_but_the_first() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({}))]},
        {"toolCalls": [call("read", json!({"text": "b"})), call("read", json!({"text": "c"}))]},
        {"text": "ok"}
    ]));
    let hooks = Arc::new(TestHooks::default());
    let agent = Agent::new(
        provider.clone(),
        LoopConfig {
            hooks: hooks.clone(),
            ..config(vec![TestTool::new("read")], NoHooks)
        },
    );
    agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    // Shown the turn that just completed: 1 result, then 2.
    assert_eq!(*hooks.next_turn.lock().unwrap(), vec![1, 2]);
    // Its model change applies to the next request and stays.
    assert_eq!(
        *provider.models.lock().unwrap(),
        vec!["faux-1", "faux-1+", "faux-1++"]
    );
}

// ---------------------------------------------------------------- abort

#[tokio::test]
async fn abort_during_a_stream_ends_it_promptly_with_turn_end_and_agent_end() {
    let provider = Recorder::new(json!([{"text": "never", "delayMs": 10000}]));
    let agent = Agent::new(provider, config(vec![], NoHooks));
    let (log, _sub) = record(&agent);
    let aborter = agent.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        aborter.abort();
    });
    let started = Instant::now();
    let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    match added.last() {
        Some(Message::Assistant(a)) => {
            assert_eq!(a.stop_reason, StopReason::Aborted);
            assert_eq!(a.error_message.as_deref(), Some(ABORTED));
        }
        other => panic!("unexpected {other:?}"),
    }
    let log = lines(&log);
    assert_eq!(
        log[log.len() - 2..],
        ["turn_end 0".to_owned(), "agent_end".to_owned()]
    );
    agent.wait_for_idle().await;
    assert!(!agent.is_running());
}

#[tokio::test]
async fn abort_during_a_tool_stops_it_and_still_answers_every_call() {
    let provider = Recorder::new(json!([
        {"toolCalls": [call("read", json!({"ms": 10000})), call("read", json!({"ms": 10000}))]},
        {"text": "never"}
    ]));
    for mode in [ToolExecution::Parallel, ToolExecution::Sequential] {
        let mut cfg = config(vec![TestTool::new("read")], NoHooks);
        cfg.tool_execution = mode;
        let provider = Recorder::new(json!([
            {"toolCalls": [call("read", json!({"ms": 10000})), call("read", json!({"ms": 10000}))]},
            {"text": "never"}
        ]));
        let agent = Agent::new(provider.clone(), cfg);
        let (log, _sub) = record(&agent);
        let aborter = agent.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            aborter.abort();
        });
        let started = Instant::now();
        let added = agent.prompt(vec![Message::user_text("go")]).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(2), "{mode:?}");
        let results = tool_results(&added);
        assert_eq!(results.len(), 2, "{mode:?}");
        assert!(
            results
                .iter()
                .all(|r| result_text(r) == ABORTED && r.is_error)
        );
        assert_eq!(provider.requests().len(), 1, "{mode:?}");
        let log = lines(&log);
        assert_eq!(
            log[log.len() - 2..],
            ["turn_end 2".to_owned(), "agent_end".to_owned()]
        );
    }
    drop(provider);
}
