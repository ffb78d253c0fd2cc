//! Answers of the buffered HTTP functions, kept within Lambda's response limit.
//!
//! A function that does not stream hands its whole answer to Lambda as one payload, which may
//! not exceed 6 MB (6,291,556 bytes: the API Gateway proxy response JSON, the body escaped inside
//! it). Beyond that Lambda fails the invocation and API Gateway answers 502 with nothing to go
//! on. A ListTasks page of 100 tasks with their artifacts (`includeArtifacts`) passes it easily.
//! So an answer is measured before it leaves:
//!
//! - a ListTasks page too large is asked for again with a smaller `pageSize`, in proportion,
//!   until it fits: the client gets fewer tasks and a `nextPageToken` to go on from (the page
//!   size is the most a page holds, never a promise);
//! - any other answer too large (a blocking SendMessage whose task carries megabytes of
//!   artifacts) becomes an error that says so, with what to do instead (GetTask, which
//!   streams), rather than a 502.
//!
//! The streaming functions are not bound by it (a streamed response may be larger).

use a2a_protocol::A2AError;
use axum::body::Body;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::ServiceExt;

/// The largest response payload of a synchronous Lambda invocation.
pub(crate) const MAX_RESPONSE_PAYLOAD: usize = 6_291_556;

/// Room for what the proxy response holds besides the body: status, headers, field names.
const ENVELOPE_ROOM: usize = 16 * 1024;

/// ListTasks' page size when the request names none (the spec's default).
const DEFAULT_PAGE_SIZE: usize = 50;

/// How many times a page is asked for again before giving up on it.
const MAX_RETRIES: usize = 6;

/// What `body` takes inside the proxy response: a JSON string, escaped, or base64 when it is not
/// UTF-8 text.
pub(crate) fn payload_size(body: &[u8]) -> usize {
    match std::str::from_utf8(body) {
        Ok(text) => serde_json::to_string(text).map_or(usize::MAX, |s| s.len()),
        Err(_) => body.len().div_ceil(3) * 4,
    }
}

/// Serves `request` with `router`: as it is when the function streams, else within
/// [`MAX_RESPONSE_PAYLOAD`].
pub(crate) async fn serve(
    router: Router,
    request: axum::http::Request<Body>,
    streaming: bool,
) -> Result<Response, std::convert::Infallible> {
    if streaming {
        router.oneshot(request).await
    } else {
        Ok(answer(router, request).await)
    }
}

/// Serves `request` with `router`, keeping the answer within [`MAX_RESPONSE_PAYLOAD`].
pub(crate) async fn answer(router: Router, request: axum::http::Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    let list = parts.method == Method::GET && is_list_tasks(&parts.uri);
    let mut page_size = page_size(&parts.uri).unwrap_or(DEFAULT_PAGE_SIZE);
    let mut request = axum::http::Request::from_parts(parts.clone(), body);
    for _ in 0..=MAX_RETRIES {
        let response = match router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let (head, body) = response.into_parts();
        let bytes = match axum::body::to_bytes(body, usize::MAX).await {
            Ok(bytes) => bytes,
            Err(err) => return too_large(&format!("the answer could not be read: {err}")),
        };
        let size = payload_size(&bytes) + headers_size(&head.headers);
        if size + ENVELOPE_ROOM <= MAX_RESPONSE_PAYLOAD {
            return Response::from_parts(head, Body::from(bytes));
        }
        if !list || !head.status.is_success() || page_size <= 1 {
            tracing::warn!(size, "an answer too large for a buffered Lambda response");
            return too_large(&format!(
                "the answer ({:.1} MB) is larger than the 6 MB a buffered Lambda function may \
                 return: read the task with GetTask (GET /tasks/{{id}}, which streams), or ask \
                 for less (historyLength)",
                megabytes(size)
            ));
        }
        // In proportion, with a tenth to spare for tasks larger than the page's average.
        let budget = MAX_RESPONSE_PAYLOAD - ENVELOPE_ROOM;
        let fitting = (page_size as f64 * budget as f64 / size as f64 * 0.9) as usize;
        page_size = fitting.clamp(1, page_size - 1);
        tracing::info!(
            size,
            page_size,
            "a ListTasks page too large for Lambda: asked again, smaller"
        );
        let mut parts = parts.clone();
        parts.uri = with_page_size(&parts.uri, page_size);
        request = axum::http::Request::from_parts(parts, Body::empty());
    }
    too_large("the page did not fit in a buffered Lambda response")
}

fn megabytes(bytes: usize) -> f64 {
    bytes as f64 / 1_000_000.0
}

fn headers_size(headers: &axum::http::HeaderMap) -> usize {
    headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 8)
        .sum()
}

/// The REST error for an answer that cannot be carried.
fn too_large(message: &str) -> Response {
    let error = A2AError::Internal(message.to_owned());
    let status =
        StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        error.to_status_body().to_string(),
    )
        .into_response()
}

/// Whether `uri` is ListTasks' REST route: `/tasks`, with a tenant or the 0.3 prefix before it.
fn is_list_tasks(uri: &Uri) -> bool {
    uri.path().trim_end_matches('/').rsplit('/').next() == Some("tasks")
}

/// The `pageSize` the query asks for, if any.
fn page_size(uri: &Uri) -> Option<usize> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("pageSize="))
        .and_then(|v| v.parse().ok())
}

/// `uri` asking for `size` as its `pageSize`.
fn with_page_size(uri: &Uri, size: usize) -> Uri {
    let mut query: Vec<String> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.starts_with("pageSize="))
        .map(str::to_owned)
        .collect();
    query.push(format!("pageSize={size}"));
    let text = format!("{}?{}", uri.path(), query.join("&"));
    text.parse().unwrap_or_else(|_| uri.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_size_is_replaced_and_the_rest_of_the_query_kept() {
        let uri: Uri = "/acme/tasks?includeArtifacts=true&pageSize=100&status=TASK_STATE_COMPLETED"
            .parse()
            .unwrap();
        assert!(is_list_tasks(&uri));
        assert_eq!(page_size(&uri), Some(100));
        let smaller = with_page_size(&uri, 37);
        assert_eq!(smaller.path(), "/acme/tasks");
        assert_eq!(
            smaller.query(),
            Some("includeArtifacts=true&status=TASK_STATE_COMPLETED&pageSize=37")
        );
        let bare: Uri = "/tasks".parse().unwrap();
        assert_eq!(page_size(&bare), None);
        assert_eq!(with_page_size(&bare, 9).query(), Some("pageSize=9"));
        assert!(!is_list_tasks(&"/tasks/abc".parse().unwrap()));
        assert!(is_list_tasks(&"/v1/tasks".parse().unwrap()));
    }

    /// Answers "big N" with one artifact of N characters, and completes.
    struct Big;

    #[async_trait::async_trait]
    impl a2a_core::Agent for Big {
        fn describe(&self) -> a2a_core::AgentDescription {
            a2a_core::AgentDescription {
                name: "big".into(),
                ..Default::default()
            }
        }

        async fn execute(
            &self,
            request: a2a_core::AgentRequest,
            emitter: a2a_core::Emitter,
        ) -> Result<(), a2a_core::AgentError> {
            let n: usize = request
                .text()
                .trim_start_matches("big ")
                .parse()
                .unwrap_or(1);
            // Varied text, as an agent's output is (a run of one letter would deflate to
            // nothing in the store, which is not what is measured here).
            let text: String = (0..n)
                .map(|i| char::from(b'a' + u8::try_from((i * 7 + i / 13) % 26).unwrap_or(0)))
                .collect();
            let artifact = a2a_protocol::Artifact {
                artifact_id: format!("{}-out", request.task_id),
                parts: vec![a2a_protocol::Part::text(&text)],
                ..Default::default()
            };
            emitter.artifact(artifact, false, true).await?;
            emitter.complete(None).await
        }
    }

    /// The payload Lambda gets for `response` of a REST API (proxy integration) function.
    async fn lambda_payload(response: Response) -> (u16, Vec<u8>, usize) {
        use lambda_http::aws_lambda_events::apigw::ApiGatewayProxyResponse;
        use lambda_http::aws_lambda_events::encodings::Body as LambdaBody;
        let (head, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap()
            .to_vec();
        let mut proxy = ApiGatewayProxyResponse::default();
        proxy.status_code = i64::from(head.status.as_u16());
        proxy.headers = head.headers.clone();
        proxy.body = Some(LambdaBody::Text(String::from_utf8(bytes.clone()).unwrap()));
        let size = serde_json::to_vec(&proxy).unwrap().len();
        (head.status.as_u16(), bytes, size)
    }

    fn get(uri: &str) -> axum::http::Request<Body> {
        axum::http::Request::get(uri)
            .header("A2A-Version", "1.0")
            .body(Body::empty())
            .unwrap()
    }

    /// Large tasks, read through the list and send functions' routers as Lambda would carry
    /// their answers: a ListTasks page that would pass 6 MB comes in smaller pages that all
    /// fit and together hold every task; a blocking SendMessage whose task alone passes it is
    /// answered with an error saying what to do instead. Unbounded, both answers are larger
    /// than Lambda takes (its invocation fails; API Gateway answers 502).
    #[tokio::test]
    async fn answers_of_large_tasks_fit_in_a_lambda_response() {
        use crate::HttpFunction;
        let store = a2a_test_support::server::EmbeddedStore::open();
        let service = store.service(a2a_core::ServiceConfig::default(), std::sync::Arc::new(Big));
        let options = a2a_http::HttpOptions::default();
        let list = a2a_http::router_with(
            service.clone(),
            options.clone(),
            &HttpFunction::List.surface(),
        );
        let send = a2a_http::router_with(service.clone(), options, &HttpFunction::Send.surface());
        let ctx = a2a_core::CallContext::anonymous("");
        let tasks = 60;
        for i in 0..tasks {
            let request: a2a_protocol::SendMessageRequest = serde_json::from_value(serde_json::json!({
                "message": {"messageId": format!("m{i}"), "role": "ROLE_USER", "parts": [{"text": "big 150000"}]}
            }))
            .unwrap();
            service.send_message(&ctx, request).await.expect("sent");
        }

        let first = "/tasks?includeArtifacts=true&pageSize=100";
        let unbounded = list.clone().oneshot(get(first)).await.unwrap();
        let (status, _, size) = lambda_payload(unbounded).await;
        assert_eq!(status, 200);
        assert!(
            size > MAX_RESPONSE_PAYLOAD,
            "the test's page must be too large: {size}"
        );

        let mut seen = std::collections::BTreeSet::new();
        let mut uri = first.to_owned();
        let mut pages = 0;
        loop {
            let (status, body, size) = lambda_payload(answer(list.clone(), get(&uri)).await).await;
            assert_eq!(status, 200);
            assert!(size <= MAX_RESPONSE_PAYLOAD, "page {pages}: {size} bytes");
            let page: serde_json::Value = serde_json::from_slice(&body).unwrap();
            for task in page["tasks"].as_array().unwrap() {
                assert!(task["artifacts"].is_array(), "artifacts included");
                assert!(seen.insert(task["id"].as_str().unwrap().to_owned()));
            }
            pages += 1;
            let token = page["nextPageToken"].as_str().unwrap();
            if token.is_empty() {
                break;
            }
            uri = format!("{first}&pageToken={token}");
        }
        assert_eq!(seen.len(), tasks, "every task, once");
        assert!(pages >= 2);

        let body = serde_json::json!({
            "message": {"messageId": "huge", "role": "ROLE_USER", "parts": [{"text": "big 7000000"}]}
        });
        let post = || {
            axum::http::Request::post("/message:send")
                .header("A2A-Version", "1.0")
                .header("Content-Type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap()
        };
        let (status, answer_body, size) = lambda_payload(answer(send.clone(), post()).await).await;
        assert_eq!(status, 500);
        assert!(size <= MAX_RESPONSE_PAYLOAD);
        let error: serde_json::Value = serde_json::from_slice(&answer_body).unwrap();
        assert_eq!(error["error"]["status"], "INTERNAL");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("6 MB") && message.contains("GetTask"),
            "{message}"
        );
        // The same send again (the same messageId: the original task) without the bound.
        let (status, _, size) = lambda_payload(send.oneshot(post()).await.unwrap()).await;
        assert_eq!(status, 200);
        assert!(size > MAX_RESPONSE_PAYLOAD, "{size}");
    }

    #[test]
    fn the_payload_counts_json_escapes_and_base64() {
        assert_eq!(payload_size(b"{\"a\":1}"), "\"{\\\"a\\\":1}\"".len());
        assert_eq!(payload_size(&[0xff, 0xfe, 0xfd]), 4);
    }
}
