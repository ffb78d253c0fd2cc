//! Spans from the Lambda functions (docs/tracing.md, "On Lambda"): exported over OTLP when the
//! template's `SpanExport` parameter (or the standard `OTEL_EXPORTER_OTLP_*` variables) asks
//! for it, and flushed before each invocation's answer is complete ([`a2a_telemetry::flush`]),
//! since Lambda freezes the process once it is and may never thaw it.
//!
//! To X-Ray's OTLP endpoint (`https://xray.<region>.amazonaws.com/v1/traces`, which takes only
//! SigV4-signed requests) the functions sign each export themselves with their role's
//! credentials ([`ENV_SIGN_FOR`] names the service to sign for): no collector layer to deploy
//! or keep up to date.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};

/// The service whose SigV4 signature the functions put on their exports (`xray`, set by the
/// template when `SpanExport` is `xray`); unset: exports go unsigned.
pub const ENV_SIGN_FOR: &str = "A2A_OTLP_SIGV4_SERVICE";

/// How long an export may take when no `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT` says: each
/// invocation waits for its spans' export before its answer completes, so a collector that
/// does not answer costs each invocation at most this (the exporter's own default is 10 s).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(2);

/// The layer exporting the function's spans, when the environment asks for it (see
/// [`a2a_telemetry::layer`]); `Err` says why it could not be built.
pub(crate) fn layer<S>() -> Result<Option<impl tracing_subscriber::Layer<S>>, String>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let timeout = (!a2a_telemetry::set("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        && !a2a_telemetry::set("OTEL_EXPORTER_OTLP_TIMEOUT"))
    .then_some(EXPORT_TIMEOUT);
    let signer = match std::env::var(ENV_SIGN_FOR) {
        Ok(service) if !service.trim().is_empty() => Some(SignedExports::new(
            service.trim(),
            timeout.unwrap_or(EXPORT_TIMEOUT),
        )?),
        _ => None,
    };
    let service = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "a2a-lambda".into());
    a2a_telemetry::layer(&service, move |exporter| {
        let exporter = match timeout {
            Some(timeout) => exporter.with_timeout(timeout),
            None => exporter,
        };
        match signer {
            Some(signer) => exporter.with_http_client(signer),
            None => exporter,
        }
    })
}

/// The exporter's HTTP client when exports are signed: the blocking client the exporter would
/// use (its batch thread has no async runtime), each request signed with SigV4 first.
#[derive(Debug)]
struct SignedExports {
    client: reqwest::blocking::Client,
    service: String,
    region: String,
}

impl SignedExports {
    fn new(service: &str, timeout: Duration) -> Result<Self, String> {
        let region = std::env::var("AWS_REGION")
            .or_else(|_| std::env::var("AWS_DEFAULT_REGION"))
            .map_err(|_| format!("{ENV_SIGN_FOR} is set but AWS_REGION is not"))?;
        // A blocking client may not be built (nor dropped) on an async runtime's thread.
        let client = std::thread::spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()
        })
        .join()
        .map_err(|_| "building the exporter's HTTP client panicked".to_owned())?
        .map_err(|e| format!("cannot build the exporter's HTTP client: {e}"))?;
        Ok(Self {
            client,
            service: service.to_owned(),
            region,
        })
    }
}

#[async_trait::async_trait]
impl HttpClient for SignedExports {
    async fn send_bytes(&self, mut request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let credentials = role_credentials()?;
        sign_request(
            &mut request,
            credentials,
            &self.service,
            &self.region,
            SystemTime::now(),
        )?;
        self.client.send_bytes(request).await
    }
}

/// The function's credentials: its role's, which Lambda gives in `AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
fn role_credentials() -> Result<Credentials, HttpError> {
    let key = std::env::var("AWS_ACCESS_KEY_ID");
    let secret = std::env::var("AWS_SECRET_ACCESS_KEY");
    let (Ok(key), Ok(secret)) = (key, secret) else {
        return Err("no AWS credentials to sign the spans' export with".into());
    };
    let token = std::env::var("AWS_SESSION_TOKEN").ok();
    Ok(Credentials::new(key, secret, token, None, "environment"))
}

/// Signs `request` with SigV4 for `service` in `region` at `time` with `credentials`.
fn sign_request(
    request: &mut Request<Bytes>,
    credentials: Credentials,
    service: &str,
    region: &str,
    time: SystemTime,
) -> Result<(), HttpError> {
    let identity = credentials.into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()?
        .into();
    let headers = request
        .headers()
        .iter()
        .map(|(name, value)| Ok((name.as_str(), value.to_str()?)))
        .collect::<Result<Vec<_>, HttpError>>()?;
    let signable = SignableRequest::new(
        request.method().as_str(),
        request.uri().to_string(),
        headers.into_iter(),
        SignableBody::Bytes(request.body()),
    )?;
    let (instructions, _) = sign(signable, &params)?.into_parts();
    instructions.apply_to_request_http1x(request);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_is_signed_for_its_service_region_and_body() {
        let signed = |body: &'static [u8], token: Option<&str>| {
            let mut request = Request::post("https://xray.eu-west-1.amazonaws.com/v1/traces")
                .header("content-type", "application/x-protobuf")
                .body(Bytes::from_static(body))
                .unwrap();
            let credentials = Credentials::new(
                "AKIDEXAMPLE",
                "secret",
                token.map(str::to_owned),
                None,
                "test",
            );
            let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_765_000_000);
            sign_request(&mut request, credentials, "xray", "eu-west-1", at).unwrap();
            request.headers().clone()
        };
        let headers = signed(b"spans", Some("session"));
        let authorization = headers["authorization"].to_str().unwrap();
        assert!(
            authorization.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20251206/eu-west-1/xray/aws4_request, "
            ),
            "{authorization}"
        );
        assert!(
            authorization
                .contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"),
            "{authorization}"
        );
        assert_eq!(headers["x-amz-date"], "20251206T054640Z");
        assert_eq!(headers["x-amz-security-token"], "session");
        assert!(!authorization.contains("secret"));
        let other = signed(b"other spans", Some("session"));
        assert_ne!(
            other["authorization"], headers["authorization"],
            "the body is signed"
        );
    }
}
