//! Calls that name their protocol version (`A2A-Version`), on either binding, for the tests of
//! what differs between versions (the A2A 1.1 draft's tests): JSON-RPC methods or their REST
//! routes, with the answer or the error as it came.

use reqwest::header::CONTENT_TYPE;
use reqwest::Method;
use serde_json::{json, Value};

use crate::{query_string, ApiError, Binding, Client};

/// An operation called with `A2A-Version: version`: JSON-RPC method `op`, or its REST route.
pub async fn call(
    server: &Client,
    b: Binding,
    version: &str,
    op: &str,
    params: Value,
) -> Result<Value, ApiError> {
    match b {
        Binding::JsonRpc => {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": op, "params": params});
            let raw = server
                .send_raw(
                    server
                        .http()
                        .post(server.jsonrpc_url())
                        .header("A2A-Version", version)
                        .header(CONTENT_TYPE, "application/json")
                        .body(body.to_string()),
                )
                .await;
            assert_eq!(raw.status, 200, "{op}: {}", raw.body);
            match raw.body.get("error") {
                Some(error) => Err(ApiError::from_rpc_error(error)),
                None => Ok(raw.body["result"].clone()),
            }
        }
        Binding::Rest => {
            let (method, path, body) = rest_route(op, &params);
            let mut builder = server
                .http()
                .request(method, server.url(&path))
                .header("A2A-Version", version);
            if let Some(body) = body {
                builder = builder
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.to_string());
            }
            let raw = server.send_raw(builder).await;
            if (200..300).contains(&raw.status) {
                Ok(raw.body)
            } else {
                Err(ApiError::from_rest(raw.status, &raw.body))
            }
        }
    }
}

/// The REST form of the operations these tests call.
pub fn rest_route(op: &str, params: &Value) -> (Method, String, Option<Value>) {
    let id = params["id"].as_str().unwrap_or_default();
    let task = params["taskId"].as_str().unwrap_or_default();
    match op {
        "SendMessage" => (Method::POST, "/message:send".into(), Some(params.clone())),
        "GetTask" => {
            let mut query = params.clone();
            if let Some(fields) = query.as_object_mut() {
                fields.remove("id");
            }
            (
                Method::GET,
                format!("/tasks/{id}{}", query_string(&query)),
                None,
            )
        }
        "ListTasks" => (Method::GET, format!("/tasks{}", query_string(params)), None),
        "CancelTask" => (Method::POST, format!("/tasks/{id}:cancel"), Some(json!({}))),
        "CreateTaskPushNotificationConfig" => (
            Method::POST,
            format!("/tasks/{task}/pushNotificationConfigs"),
            Some(params.clone()),
        ),
        "GetTaskPushNotificationConfig" => (
            Method::GET,
            format!("/tasks/{task}/pushNotificationConfigs/{id}"),
            None,
        ),
        "ListTaskPushNotificationConfigs" => (
            Method::GET,
            format!("/tasks/{task}/pushNotificationConfigs"),
            None,
        ),
        other => panic!("no REST route for {other} in this test"),
    }
}

/// A 1.1 `generation` as a number (ProtoJSON writes int64 as a string).
#[track_caller]
pub fn generation(object: &Value) -> i64 {
    object["generation"]
        .as_str()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| panic!("a generation (int64 as a string): {object}"))
}
