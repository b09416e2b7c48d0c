//! The nodes that fan out: `parallel` (branches) and `foreach` (items), each on a fork of the
//! frame whose records are appended to the run's history when the node ends.

use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use mcpflow_expr::Value;
use serde_json::{Value as Json, json};

use crate::error::RunError;
use crate::frame::Frame;
use crate::graph::{ForeachStep, Step};
use crate::history::{Parent, Record};
use crate::resilience::error_json;
use crate::run::{Done, Executor, Failure};

impl Executor<'_> {
    /// Runs a branch or an item from `first` until it routes back to `stop` (the join, or
    /// the foreach node). Await nodes refuse to wait there, so it always ends with an output.
    async fn branch(
        &self,
        frame: &mut Frame<'_>,
        first: usize,
        stop: usize,
    ) -> Result<Option<Value>, RunError> {
        self.run_chain(frame, first, Some(stop), None)
            .await
            .and_then(|chain| chain.output(None))
    }

    pub(crate) async fn parallel(
        &self,
        frame: &Frame<'_>,
        step: &Step,
        branches: &[(Arc<str>, usize)],
        join: usize,
        fail_fast: bool,
    ) -> Result<Done, Failure> {
        let prefix = frame.len();
        let mut frames: Vec<Frame<'_>> = branches
            .iter()
            .map(|(name, _)| {
                frame.fork(Parent {
                    node: step.id.clone(),
                    index: None,
                    branch: Some(name.clone()),
                    item: None,
                })
            })
            .collect();
        let mut results: Vec<Option<Result<Option<Value>, RunError>>> =
            (0..branches.len()).map(|_| None).collect();
        {
            let mut running: FuturesUnordered<_> = frames
                .iter_mut()
                .zip(branches)
                .enumerate()
                .map(|(b, (f, (_, first)))| async move { (b, self.branch(f, *first, join).await) })
                .collect();
            while let Some((b, r)) = running.next().await {
                let failed = r.is_err();
                results[b] = Some(r);
                if failed && fail_fast {
                    // Dropping the others cancels their in-flight upstream calls.
                    break;
                }
            }
        }
        let mut children = Vec::new();
        let mut outputs = serde_json::Map::new();
        let mut errors = serde_json::Map::new();
        let mut first_error = None;
        for (b, f) in frames.into_iter().enumerate() {
            let name = &*branches[b].0;
            let start = frame.len() + children.len();
            children.extend(reindex(f.history.into_records(), prefix, start));
            match results[b].take() {
                Some(Ok(out)) => {
                    outputs.insert(name.to_owned(), out.map_or(Json::Null, Value::into_json));
                }
                Some(Err(e)) => {
                    errors.insert(name.to_owned(), error_json(&e));
                    first_error.get_or_insert((name.to_owned(), e));
                }
                None => {}
            }
        }
        if let Some((name, e)) = first_error {
            let mut err = RunError::new(
                e.kind,
                Some(&step.id),
                if errors.len() == 1 {
                    format!("branch `{name}` failed: {e}")
                } else {
                    format!("{} branches failed; branch `{name}`: {e}", errors.len())
                },
            );
            err.code = e.code;
            err.details = Some(Box::new(Json::Object(errors)));
            // The branch records still belong in the history: they are what happened.
            return Err(Failure {
                err,
                children,
                sub_history: None,
            });
        }
        let mut done = Done::plain(Some(Value::from_json(Json::Object(outputs))), Some(join));
        done.children = children;
        Ok(done)
    }

    pub(crate) async fn foreach(
        &self,
        frame: &Frame<'_>,
        step: &Step,
        at: usize,
        foreach: &ForeachStep,
        items: Vec<Json>,
    ) -> Result<Done, Failure> {
        let &ForeachStep {
            concurrency,
            body,
            next,
            ..
        } = foreach;
        let prefix = frame.len();
        let total = items.len();
        let mut runs = futures::stream::iter(items.into_iter().enumerate())
            .map(|(i, item)| {
                let mut f = frame.fork(Parent {
                    node: step.id.clone(),
                    index: None,
                    branch: None,
                    item: Some(i),
                });
                f.context.set(
                    &step.id,
                    Some(Value::from_json(json!({"item": item, "index": i}))),
                );
                async move {
                    let r = self.branch(&mut f, body, at).await;
                    (i, r, f)
                }
            })
            .buffered(concurrency);
        let mut outputs = Vec::with_capacity(total);
        let mut children = Vec::new();
        while let Some((i, r, f)) = runs.next().await {
            let start = frame.len() + children.len();
            children.extend(reindex(f.history.into_records(), prefix, start));
            match r {
                Ok(out) => outputs.push(out.map_or(Json::Null, Value::into_json)),
                Err(e) => {
                    // Items are fail-fast: the ones in flight are dropped (and cancelled).
                    let mut err =
                        RunError::new(e.kind, Some(&step.id), format!("item {i} failed: {e}"));
                    err.code = e.code.clone();
                    err.details = Some(Box::new(json!({ i.to_string(): error_json(&e) })));
                    return Err(Failure {
                        err,
                        children,
                        sub_history: None,
                    });
                }
            }
        }
        let mut done = Done::plain(Some(Value::from_json(Json::Array(outputs))), Some(next));
        done.children = children;
        Ok(done)
    }
}

/// Moves a branch's records (which sit after `prefix` in its copy of the history) to where
/// they land in the parent's, keeping the links between them.
fn reindex(records: Vec<Record>, prefix: usize, start: usize) -> Vec<Record> {
    let shift = |i: usize| if i >= prefix { i - prefix + start } else { i };
    records
        .into_iter()
        .map(|mut r| {
            r.index = shift(r.index);
            if let Some(p) = &mut r.parent
                && let Some(i) = &mut p.index
            {
                *i = shift(*i);
            }
            r
        })
        .collect()
}
