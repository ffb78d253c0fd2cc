//! Push delivery: one signed webhook POST per (event, config) job, with the outcome of every
//! attempt recorded on the config's delivery record.
//!
//! The core builds the request (body, `Authorization`, token and signature headers) and
//! decides what the outcome means (delivered, gone, refused, retry); the POST itself goes
//! through the configured [`WebhookSender`](crate::webhook::WebhookSender), behind the SSRF
//! guard of [`crate::push_policy`].

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::{StreamResponse, TaskPushNotificationConfig, Timestamp};
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tracing::Instrument as _;
use url::Url;

use crate::kernel::Core;
use crate::ports::{JobOutcome, PushAttempt, PushAttemptResult, PushConfigStore, PushJob};
use crate::timeline::DEFAULT_TIMELINE_LENGTH;
use crate::webhook::{WebhookOutcome, WebhookRequest};
use a2a_protocol::push::PUSH_SIGNATURE_HEADER;

/// Exponential backoff with jitter for the `n`th failed attempt: 1 s, 2 s, 4 s, … up to 5 min.
pub fn backoff(attempt: u32) -> Duration {
    let base =
        Duration::from_secs(1u64 << attempt.saturating_sub(1).min(8)).min(Duration::from_secs(300));
    // Jitter of up to a quarter, from the clock's nanoseconds: enough to spread retries.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    base + base.mul_f64(f64::from(nanos % 1000) / 4000.0)
}

/// How one POST went, before it is recorded.
struct Sent {
    result: PushAttemptResult,
    status: Option<u16>,
    error: Option<String>,
}

impl Sent {
    fn failed(status: Option<u16>, error: String) -> Self {
        Self {
            result: PushAttemptResult::Failed,
            status,
            error: Some(error),
        }
    }
}

pub(crate) async fn deliver(core: &Arc<Core>, job: &PushJob, receive_count: u32) -> JobOutcome {
    let store = &core.store;
    // Before an attempt is made, the receive count only paces the backoff.
    let retry = |reason: String| JobOutcome::Retry {
        reason,
        after: backoff(receive_count),
    };
    let config = match store
        .get_push_config(&job.owner, &job.task_id, &job.config_id)
        .await
    {
        Ok(Some(config)) => config,
        // Deleted (by the client, or after a 410 Gone), or expired with its task.
        Ok(None) => return JobOutcome::Done,
        Err(err) => return retry(format!("store: {err}")),
    };
    let attempts = core.config.max_push_attempts;
    let number = match attempt_number(core.store.as_ref(), attempts, job, receive_count).await {
        Ok(Attempt::Next(number)) => number,
        Ok(Attempt::Exhausted(reason)) => return JobOutcome::DeadLetter { reason },
        Ok(Attempt::Settled) => return JobOutcome::Done,
        Err(err) => return retry(format!("store: {err}")),
    };
    let event = match store
        .read_events(&job.owner, &job.task_id, job.seq.saturating_sub(1), 1)
        .await
    {
        Ok(events) => events.into_iter().find(|e| e.seq == job.seq),
        Err(err) => return retry(format!("store: {err}")),
    };
    let Some(event) = event else {
        return JobOutcome::Done;
    };
    let Some(mut response) = event.event.to_stream_response() else {
        return JobOutcome::Done;
    };
    crate::timeline::without_chunk_generations(&mut response);
    let version = config.protocol();
    if version.is_1_1() {
        // A config an A2A 1.1 client set: the event's generation, as its stream would carry.
        crate::event::set_generation(&mut response, job.seq as i64);
        // The one Task pushed is the task's creation, event 1: its timeline is that event's.
        if let StreamResponse::Task(task) = &mut response {
            crate::timeline::project(task, std::slice::from_ref(&event), DEFAULT_TIMELINE_LENGTH);
        }
    }
    // Serialised once: the signature's body hash covers exactly these bytes.
    let body = match version.older() {
        None => serde_json::to_vec(&response),
        // A config set by an older version's client gets what its SDKs push: the Task as it
        // stands, in that version's dialect.
        Some(older) => {
            let task = match store.load_task(&job.owner, &job.task_id).await {
                Ok(Some(head)) => head.task,
                Ok(None) => return JobOutcome::Done,
                Err(err) => return retry(format!("store: {err}")),
            };
            serde_json::to_value(&task)
                .and_then(|t| serde_json::to_vec(&older.push_dialect().task(t)))
        }
    };
    let body = match body {
        Ok(body) => body,
        Err(err) => return retry(format!("encoding the event failed: {err}")),
    };

    let span = tracing::trace_span!(
        "push_notification",
        otel.kind = "client",
        a2a.task.id = job.task_id.as_str(),
        a2a.push.seq = job.seq,
        url.full = crate::trace::shown_url(&config.url),
        http.response.status_code = tracing::field::Empty,
    );
    crate::trace::set_span_parent(&span, config.traceparent.as_deref());
    let sent = post(core, &config, job, body)
        .instrument(span.clone())
        .await;
    if let Some(status) = sent.status {
        span.record("http.response.status_code", status);
    }
    let final_attempt =
        sent.result == PushAttemptResult::Failed && number >= core.config.max_push_attempts;
    let attempt = PushAttempt {
        seq: job.seq,
        at: Timestamp::now(),
        result: sent.result,
        http_status: sent.status,
        error: sent.error,
        final_attempt,
        number,
    };
    log_attempt(job, &config, receive_count, &attempt);
    core.config.observer.push_attempt(&attempt, number);
    let expires_at = Timestamp::from_millis(
        Timestamp::now().millis() + core.config.retention.as_millis() as i64,
    );
    if let Err(err) = store
        .record_push_attempt(
            &job.owner,
            &job.task_id,
            &job.config_id,
            &attempt,
            expires_at,
        )
        .await
    {
        // The attempt itself stands; only its record is missing.
        tracing::warn!(task_id = %job.task_id, config_id = %job.config_id, error = %err, "recording the push attempt failed");
    }

    match attempt.result {
        PushAttemptResult::Delivered | PushAttemptResult::Refused => JobOutcome::Done,
        PushAttemptResult::Gone => {
            // The receiver says this webhook is gone for good: stop every later delivery to it.
            if let Err(err) = store
                .delete_push_config(&job.owner, &job.task_id, &job.config_id)
                .await
            {
                tracing::warn!(task_id = %job.task_id, config_id = %job.config_id, error = %err, "deleting the gone push config failed");
            }
            JobOutcome::Done
        }
        PushAttemptResult::Failed if final_attempt => JobOutcome::DeadLetter {
            reason: attempt.error.unwrap_or_default(),
        },
        PushAttemptResult::Failed => JobOutcome::Retry {
            reason: attempt.error.unwrap_or_default(),
            after: backoff(number),
        },
    }
}

/// Where a push job stands by our own count.
enum Attempt {
    /// Make attempt number `n` (1 on the first).
    Next(u32),
    /// The last attempt was made and failed (its dead-lettering did not happen): give up now,
    /// with this reason, without sending again.
    Exhausted(String),
    /// An earlier attempt at this event already settled it (delivered, refused or gone) and
    /// only deleting the job failed: nothing to send.
    Settled,
}

/// The number of the attempt this delivery would be, from the config's delivery record: the
/// record's count for this event plus one. Attempts are counted there, after each POST, so a
/// receive that never reached this code (a throttled Lambda invocation) is not an attempt. On
/// the queue's first receive no attempt can have been made, and the record is not read.
async fn attempt_number(
    deliveries: &dyn PushConfigStore,
    max_attempts: u32,
    job: &PushJob,
    receive_count: u32,
) -> Result<Attempt, crate::ports::StoreError> {
    if receive_count <= 1 {
        return Ok(Attempt::Next(1));
    }
    let record = deliveries
        .get_push_delivery(&job.owner, &job.task_id, &job.config_id)
        .await?;
    let made = match &record {
        Some(record) if record.last_seq == job.seq => {
            if record.last_result != Some(PushAttemptResult::Failed) {
                return Ok(Attempt::Settled);
            }
            record.last_seq_attempts
        }
        _ => 0,
    };
    if made >= max_attempts {
        let last_error = record
            .and_then(|r| r.last_error)
            .unwrap_or_else(|| "delivery failed".into());
        return Ok(Attempt::Exhausted(format!(
            "gave up after {made} attempts: {last_error}"
        )));
    }
    Ok(Attempt::Next(made + 1))
}

/// Makes one POST and classifies its outcome. Error texts name the host at most: a URL's path
/// and query can carry secrets, and credentials never appear.
async fn post(
    core: &Core,
    config: &TaskPushNotificationConfig,
    job: &PushJob,
    body: Vec<u8>,
) -> Sent {
    let url = match core.config.push_policy.check_delivery_url(&config.url) {
        Ok(url) => url,
        Err(err) => {
            return Sent {
                result: PushAttemptResult::Refused,
                status: None,
                error: Some(err.message()),
            }
        }
    };
    let host = url.host_str().unwrap_or_default().to_string();
    let token = match &core.config.push_signer {
        Some(signer) => {
            let claims = signer.claims(&config.url, &job.task_id, job.seq, &config.id, &body);
            match signer.sign(&claims).await {
                Ok(token) => Some(token),
                Err(err) => return Sent::failed(None, err.to_string()),
            }
        }
        None => {
            // Said where it matters (the host that delivers), once per process.
            static UNSIGNED: std::sync::Once = std::sync::Once::new();
            UNSIGNED.call_once(|| {
                tracing::warn!("no push signing keys are configured: pushes go out unsigned");
            });
            None
        }
    };
    let headers = match push_headers(config, token.as_deref()) {
        Ok(headers) => headers,
        Err(reason) => return Sent::failed(None, reason),
    };
    let request = WebhookRequest {
        url,
        headers,
        body,
        timeout: core.config.push_timeout,
        policy: core.config.push_policy.clone(),
    };
    match core.config.push_sender.send(request).await {
        WebhookOutcome::Answered(status) => {
            let code = Some(status.as_u16());
            if status.is_success() {
                Sent {
                    result: PushAttemptResult::Delivered,
                    status: code,
                    error: None,
                }
            } else if status == StatusCode::GONE {
                Sent {
                    result: PushAttemptResult::Gone,
                    status: code,
                    error: Some(format!("webhook {host} answered 410 Gone")),
                }
            } else if status.is_redirection() {
                Sent::failed(
                    code,
                    format!("webhook {host} answered {status}; redirects are not followed"),
                )
            } else {
                Sent::failed(code, format!("webhook {host} answered {status}"))
            }
        }
        WebhookOutcome::Refused(refusal) => Sent {
            result: PushAttemptResult::Refused,
            status: None,
            error: Some(format!("not sent: {refusal}")),
        },
        WebhookOutcome::Failed(error) => {
            Sent::failed(None, format!("webhook {host} unreachable: {error}"))
        }
    }
}

/// The headers of one push: `Authorization` from the config's authentication (the spec's
/// rule) or else the signed JWT as a bearer token, the signature header, and the config's
/// token under both names the SDKs read. Every credential is marked sensitive.
fn push_headers(
    config: &TaskPushNotificationConfig,
    token: Option<&str>,
) -> Result<HeaderMap, String> {
    let secret = |value: &str, what: &str| {
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| format!("the push config's {what} is not a valid header value"))?;
        value.set_sensitive(true);
        Ok::<_, String>(value)
    };
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    match (&config.authentication, token) {
        (Some(auth), _) => {
            // The spec's rule: Authorization is built from the config's authentication.
            let value = if auth.credentials.is_empty() {
                auth.scheme.clone()
            } else {
                format!("{} {}", auth.scheme, auth.credentials)
            };
            headers.insert(AUTHORIZATION, secret(&value, "authentication")?);
        }
        // Nothing else claims Authorization: carry the JWT there too, as the A2A topic doc's
        // JWT scheme (and most JWT middleware) expects.
        (None, Some(token)) => {
            headers.insert(
                AUTHORIZATION,
                secret(&format!("Bearer {token}"), "signature")?,
            );
        }
        (None, None) => {}
    }
    if let Some(token) = token {
        headers.insert(
            HeaderName::from_bytes(PUSH_SIGNATURE_HEADER.as_bytes())
                .expect("the signature header's name is a valid header name"),
            secret(token, "signature")?,
        );
    }
    if !config.token.is_empty() {
        // The spec names no header for the token; the SDKs read one or the other.
        let value = secret(&config.token, "token")?;
        headers.insert(
            HeaderName::from_static("x-a2a-notification-token"),
            value.clone(),
        );
        headers.insert(HeaderName::from_static("a2a-notification-token"), value);
    }
    // The trace of the request that set the config (this delivery's span in it, when spans
    // are exported): the receiver's work joins it.
    if let Some(value) = crate::trace::passed_on(config.traceparent.as_deref())
        .and_then(|t| HeaderValue::from_str(&t).ok())
    {
        headers.insert(HeaderName::from_static("traceparent"), value);
    }
    Ok(headers)
}

/// One log line per attempt: identifiers, host, status and error; never the URL's path or
/// query, the token or the credentials.
fn log_attempt(
    job: &PushJob,
    config: &TaskPushNotificationConfig,
    receive_count: u32,
    attempt: &PushAttempt,
) {
    let number = attempt.number;
    let host = Url::parse(&config.url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    let status = attempt.http_status.unwrap_or_default();
    let error = attempt.error.as_deref().unwrap_or_default();
    let (task_id, config_id, seq) = (&job.task_id, &job.config_id, job.seq);
    match attempt.result {
        PushAttemptResult::Delivered => {
            tracing::info!(%task_id, %config_id, seq, %host, attempt = number, receive_count, status, "push delivered")
        }
        PushAttemptResult::Gone => {
            tracing::info!(%task_id, %config_id, seq, %host, "webhook answered 410 Gone; push config removed")
        }
        PushAttemptResult::Refused => {
            tracing::warn!(%task_id, %config_id, seq, %host, %error, "push refused by the URL policy")
        }
        PushAttemptResult::Failed if attempt.final_attempt => {
            tracing::error!(%task_id, %config_id, seq, %host, attempt = number, receive_count, status, %error, "push failed on its last attempt")
        }
        PushAttemptResult::Failed => {
            tracing::warn!(%task_id, %config_id, seq, %host, attempt = number, receive_count, status, %error, "push failed; will retry")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(1) >= Duration::from_secs(1) && backoff(1) < Duration::from_secs(2));
        assert!(backoff(3) >= Duration::from_secs(4));
        assert!(backoff(30) <= Duration::from_secs(375));
    }

    #[test]
    fn push_headers_carry_the_credentials_hidden_from_debug() {
        let config = TaskPushNotificationConfig {
            url: "https://hook.example/x".into(),
            token: "tok-secret".into(),
            ..Default::default()
        };
        let headers = push_headers(&config, Some("jwt.secret")).unwrap();
        assert_eq!(headers[AUTHORIZATION], "Bearer jwt.secret");
        assert_eq!(headers[PUSH_SIGNATURE_HEADER], "jwt.secret");
        assert_eq!(headers["X-A2A-Notification-Token"], "tok-secret");
        assert_eq!(headers["A2A-Notification-Token"], "tok-secret");
        assert_eq!(headers[CONTENT_TYPE], "application/json");
        assert!(headers.get("traceparent").is_none());
        let traced = TaskPushNotificationConfig {
            traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
            ..config.clone()
        };
        assert_eq!(
            push_headers(&traced, None).unwrap()["traceparent"],
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        );
        let printed = format!("{headers:?}");
        assert!(!printed.contains("secret"), "{printed}");
        assert!(push_headers(&TaskPushNotificationConfig::default(), None)
            .unwrap()
            .get(AUTHORIZATION)
            .is_none());
    }
}
