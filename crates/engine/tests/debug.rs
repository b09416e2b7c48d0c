//! Breakpoints, pause, step, resume, stop, events and time travel.
mod common;

use std::time::Duration;

use mcpflow_engine::{Control, Event, RunRequest, RunStatus};
use serde_json::json;
use tokio::sync::broadcast::Receiver;
use tokio::time::timeout;

fn engine() -> mcpflow_engine::Engine {
    common::load_path(&common::example("loop_example.yaml")).1
}

/// Next event that matches, within a generous bound (a hang fails the test instead of CI).
async fn next_matching(rx: &mut Receiver<Event>, f: impl Fn(&Event) -> bool) -> Event {
    timeout(Duration::from_secs(10), async {
        loop {
            let e = rx.recv().await.expect("event stream open");
            if f(&e) {
                return e;
            }
        }
    })
    .await
    .expect("event arrives")
}

#[tokio::test]
async fn breakpoint_pauses_before_the_node_then_step_and_resume() {
    let engine = engine();
    let control = Control::with_breakpoints(["check_condition"]);
    let mut handle =
        engine.spawn(RunRequest::new("sum_to_n", json!({"n": 3})).with_control(control.clone()));
    let mut rx = handle.events();

    let paused = next_matching(&mut rx, |e| matches!(e, Event::Paused { .. })).await;
    let Event::Paused {
        index,
        node_id,
        reason,
        ..
    } = paused
    else {
        unreachable!()
    };
    assert_eq!(
        (index, &*node_id, reason.as_str()),
        (2, "check_condition", "breakpoint")
    );
    assert!(control.is_paused());
    assert_eq!(
        control.state().paused_at,
        Some((2, "check_condition".to_owned()))
    );

    // Step: exactly one node runs (the switch), then the run pauses before the next one.
    control.remove_breakpoint("check_condition");
    control.step();
    let finished = next_matching(&mut rx, |e| matches!(e, Event::NodeFinished { .. })).await;
    let Event::NodeFinished { record } = finished else {
        unreachable!()
    };
    assert_eq!(&*record.node_id, "check_condition");
    let paused = next_matching(&mut rx, |e| matches!(e, Event::Paused { .. })).await;
    let Event::Paused {
        index,
        node_id,
        reason,
        ..
    } = paused
    else {
        unreachable!()
    };
    assert_eq!(
        (index, &*node_id, reason.as_str()),
        (3, "increment_node", "step")
    );

    control.resume();
    let run = handle.wait().await;
    assert_eq!(run.status, RunStatus::Succeeded);
    assert_eq!(run.output().map(|v| v.to_json()), Some(json!({"sum": 6})));
}

#[tokio::test]
async fn stop_while_paused_records_a_stopped_run() {
    let engine = engine();
    let control = Control::with_breakpoints(["exit_sum"]);
    let mut handle =
        engine.spawn(RunRequest::new("sum_to_n", json!({"n": 2})).with_control(control.clone()));
    let mut rx = handle.events();
    next_matching(&mut rx, |e| matches!(e, Event::Paused { .. })).await;
    control.stop();
    let run = handle.wait().await;
    assert_eq!(run.status, RunStatus::Stopped);
    assert_eq!(
        run.history.records().last().map(|r| &*r.node_id),
        Some("check_condition")
    );
}

#[tokio::test]
async fn pause_request_pauses_at_the_next_node() {
    let engine = engine();
    let control = Control::new();
    control.pause();
    let mut handle =
        engine.spawn(RunRequest::new("sum_to_n", json!({"n": 2})).with_control(control.clone()));
    let mut rx = handle.events();
    let Event::Paused { index, reason, .. } =
        next_matching(&mut rx, |e| matches!(e, Event::Paused { .. })).await
    else {
        unreachable!()
    };
    assert_eq!((index, reason.as_str()), (0, "pause"));
    control.resume();
    assert_eq!(handle.wait().await.status, RunStatus::Succeeded);
}

#[tokio::test]
async fn events_come_in_order_and_end_with_the_status() {
    let engine = engine();
    let mut handle = engine.spawn(RunRequest::new("sum_to_n", json!({"n": 1})));
    let mut rx = handle.events();
    let run = handle.wait().await;
    let mut kinds = Vec::new();
    while let Ok(e) = rx.try_recv() {
        kinds.push(match e {
            Event::RunStarted { .. } => "start".to_owned(),
            Event::NodeStarted { node_id, .. } => format!("+{node_id}"),
            Event::NodeFinished { record } => format!("-{}", record.node_id),
            Event::RunFinished { status } => format!("end:{status:?}"),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(kinds.first().map(String::as_str), Some("start"));
    assert_eq!(kinds.last().map(String::as_str), Some("end:Succeeded"));
    assert_eq!(kinds.len(), 2 + 2 * run.history.len());
    assert_eq!(
        kinds[1..3],
        ["+entry_sum".to_owned(), "-entry_sum".to_owned()]
    );
}

#[tokio::test]
async fn context_at_any_index_is_what_the_next_node_saw() {
    let run = engine()
        .run(RunRequest::new("sum_to_n", json!({"n": 3})))
        .await;
    // After record 1 (first increment_node): counter 1.
    let ctx = run.history.context_at(1).expect("in range").to_json();
    assert_eq!(ctx["entry_sum"], json!({"n": 3}));
    assert_eq!(ctx["increment_node"]["counter"], json!(1));
    assert!(ctx.get("check_condition").is_none());
    // After record 4 (second increment_node): counter 2, switch has routed once.
    let ctx = run.history.context_at(4).expect("in range").to_json();
    assert_eq!(ctx["increment_node"]["counter"], json!(2));
    assert_eq!(ctx["check_condition"], json!("increment_node"));
    assert!(run.history.context_at(9).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_runs_at_once_do_not_mix() {
    let engine = engine();
    let mut tasks = Vec::new();
    for n in 1..=50u64 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            (
                n,
                engine
                    .run(RunRequest::new("sum_to_n", json!({"n": n})))
                    .await,
            )
        }));
    }
    for t in tasks {
        let (n, run) = t.await.expect("joins");
        let want = n * (n + 1) / 2;
        assert_eq!(
            run.output().map(|v| v.to_json()),
            Some(json!({"sum": want})),
            "n = {n}"
        );
    }
}
