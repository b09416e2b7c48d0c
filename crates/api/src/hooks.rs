//! The hook flow editor's endpoints (issue #17, the web UI's Hooks): the hooks of the config on
//! disk, one hook (or an imported flow file) checked, one hook tried on a sample request in
//! the sandbox, and a save of the hooks file. The checks and the save are `mcpflow-authoring`'s
//! (the tools' save path); a trial is the gateway's own verdict rules
//! ([`mcpflow_gateway::Trials`]). Without a config on disk ([`Api::with_publish`]) they answer 404.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcpflow_gateway::{Sample, TrialError, TrialOutcome};
use mcpflow_model::proxy::Hook;
use serde_json::{Map, Value as Json, json};

use crate::Api;
use crate::edit::{answer, base, blocking, publish, refusal};
use crate::error::ApiError;
use crate::http::{body_object, ok};

/// `GET /api/hooks`: every hook of the config on disk in order (which ones the editor may
/// change), the proxied upstreams, and whether and where hooks are saved.
pub async fn list(State(api): State<Api>) -> Response {
    let publish = match publish(&api) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    answer(
        blocking(move || {
            let flows = mcpflow_authoring::hook_flows(&*publish)
                .map_err(|e| ApiError::new(StatusCode::CONFLICT, "config_invalid", e))?;
            let save = match &flows.save {
                Ok(()) => json!({"allowed": true}),
                Err(why) => json!({"allowed": false, "why": why}),
            };
            let hooks: Vec<Json> = flows
                .hooks
                .iter()
                .map(|h| {
                    json!({
                        "hook": h.hook,
                        "editable": h.editable,
                        "writtenAt": h.written_at,
                    })
                })
                .collect();
            Ok(json!({
                "save": save,
                "file": flows.file.map(|f| f.display().to_string()),
                "version": flows.version,
                "upstreams": flows.upstreams,
                "graphTools": flows.graph_tools,
                "hooks": hooks,
            }))
        })
        .await,
    )
}

/// `POST /api/hooks/check`: `{hook}` (an object) checked as it is typed, or `{flow}` (the text
/// of a hook flow file, for an import) read and checked; `{valid, problems, hooks?}`.
pub async fn check(body: Bytes) -> Response {
    answer(
        blocking(move || {
            let body = body_object(&body)?;
            match (body.get("hook"), body.get("flow")) {
                (Some(hook), None) => {
                    let problems = mcpflow_authoring::check_hook(hook);
                    Ok(json!({"valid": problems.is_empty(), "problems": problems}))
                }
                (None, Some(Json::String(text))) => Ok(match mcpflow_authoring::read_flow(text) {
                    Ok(hooks) => json!({"valid": true, "problems": [], "hooks": hooks}),
                    Err(problems) => json!({"valid": false, "problems": problems}),
                }),
                _ => Err(ApiError::bad_request(
                    "send `hook`, one hook as an object, or `flow`, the text of a hook flow file",
                )),
            }
        })
        .await,
    )
}

/// `POST /api/hooks/try`: `{hook, upstream, tool?, params?, response?, caller?}`: the hook run
/// once in the sandbox on that request (and, for a `post` hook, that response), with the
/// verdict a served hook would give, what it made of the traffic and its console lines. A hook
/// that does not pass its checks is 422 with its problems.
pub async fn try_hook(State(api): State<Api>, body: Bytes) -> Response {
    let parsed = body_object(&body).and_then(|body| {
        let Some(hook) = body.get("hook").cloned() else {
            return Err(ApiError::bad_request("missing `hook`, the hook to try"));
        };
        let Some(upstream) = body.get("upstream").and_then(Json::as_str) else {
            return Err(ApiError::bad_request(
                "missing `upstream`, the proxied upstream the sample request is sent to",
            ));
        };
        let tool = body.get("tool").and_then(Json::as_str).map(str::to_owned);
        let params = match body.get("params") {
            None | Some(Json::Null) => default_params(&hook, tool.as_deref()),
            Some(p @ Json::Object(_)) => p.clone(),
            Some(_) => return Err(ApiError::bad_request("`params` is an object")),
        };
        let response = match body.get("response") {
            None | Some(Json::Null) => None,
            Some(r @ Json::Object(_)) => Some(r.clone()),
            Some(_) => return Err(ApiError::bad_request("`response` is an object")),
        };
        Ok((
            hook,
            Sample {
                server: upstream.to_owned(),
                tool,
                params,
                response,
                caller: body.get("caller").cloned(),
            },
        ))
    });
    let (hook, sample) = match parsed {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let checked = {
        let hook = hook.clone();
        blocking(move || Ok(mcpflow_authoring::check_hook(&hook))).await
    };
    match checked {
        Ok(problems) if problems.is_empty() => {}
        Ok(problems) => return invalid(problems).into_response(),
        Err(e) => return e.into_response(),
    }
    let hook: Hook = match serde_json::from_value(hook) {
        Ok(h) => h,
        Err(e) => return ApiError::bad_request(e.to_string()).into_response(),
    };
    // The tool a `tools/call` hook is tried on is the one the sample calls.
    let sample = Sample {
        tool: sample.tool.clone().or_else(|| {
            sample
                .params
                .get("name")
                .and_then(Json::as_str)
                .map(str::to_owned)
        }),
        ..sample
    };
    let trial = match api.trials().run(&hook, sample).await {
        Ok(t) => t,
        Err(TrialError::NotAScript(_)) => {
            let message = TrialError::NotAScript(hook.id.clone()).to_string();
            return ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "not_a_script", message)
                .into_response();
        }
        Err(e @ TrialError::Compile(_)) => {
            return ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", e.to_string())
                .into_response();
        }
        Err(e) => {
            return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "sandbox", e.to_string())
                .into_response();
        }
    };
    let (outcome, message) = match &trial.outcome {
        TrialOutcome::Passed => ("passed", None),
        TrialOutcome::Rewrote => ("rewrote", None),
        TrialOutcome::Rejected(m) => ("rejected", Some(m.clone())),
        TrialOutcome::Failed { message, .. } => ("failed", Some(message.clone())),
    };
    let logs: Vec<Json> = trial
        .logs
        .iter()
        .map(|l| json!({"level": format!("{:?}", l.level).to_lowercase(), "message": l.message}))
        .collect();
    let mut out = json!({
        "outcome": outcome,
        "rejects": trial.rejects(&hook),
        "blocking": hook.is_blocking(),
        "params": trial.params,
        "logs": logs,
        "cpuMs": trial.cpu_time.as_secs_f64() * 1000.0,
    });
    if let Some(message) = message {
        out["message"] = json!(message);
    }
    if let Some(response) = trial.response {
        out["response"] = response;
    }
    ok(&out)
}

/// What a sample request is when none is given: a call of the hook's tool (or of `tool`) with
/// no arguments, or a listing.
fn default_params(hook: &Json, tool: Option<&str>) -> Json {
    if hook.get("method").and_then(Json::as_str) == Some("tools/list") {
        return json!({});
    }
    json!({"name": tool.unwrap_or("tool"), "arguments": Map::new()})
}

fn invalid(problems: Vec<Json>) -> ApiError {
    let mut err = ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid",
        "the hook does not pass the checks",
    );
    err.problems = Some(problems);
    err
}

/// `POST /api/hooks/save`: `{hooks, base}`: the hooks file's whole list, in order, saved as the
/// tools are, `base` being its `version` when the flows were opened (`null`: it did not exist).
pub async fn save(State(api): State<Api>, body: Bytes) -> Response {
    let publish = match publish(&api) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let parsed = body_object(&body).and_then(|body| {
        let expected = base(
            &body,
            "`base` is the `version` of the hooks file as it was opened (GET /api/hooks), or \
             null when it did not exist",
        )?;
        match body.get("hooks") {
            Some(Json::Array(hooks)) => Ok((hooks.clone(), expected)),
            _ => Err(ApiError::bad_request(
                "`hooks` is the hooks file's list of hooks, in order",
            )),
        }
    });
    let (hooks, expected) = match parsed {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    match mcpflow_authoring::save_hooks(&*publish, &hooks, expected).await {
        Ok(saved) => ok(&json!({
            "file": saved.file.display().to_string(),
            "created": saved.created,
            "version": saved.version,
            "hooks": saved.hooks,
            "tools": saved.tools,
        })),
        Err(e) => refusal(e).into_response(),
    }
}
