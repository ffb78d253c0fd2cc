//! An OTLP receiver for the local cloud's checks (infra/lambda-e2e.sh): takes what the
//! functions' exporters post to `/v1/traces` (OTLP over HTTP, protobuf) on 127.0.0.1, checks the
//! SigV4 signature a request carries (X-Ray's endpoint takes only signed ones), and writes each
//! span as one JSON line to the file it was given, before it answers: once an exporter's post
//! returned, its spans are in the file.
//!
//!     a2a-otlp-receiver --port 0 --out spans.jsonl --secret test
//!
//! prints `http://127.0.0.1:PORT/v1/traces` (the endpoint) on stdout once it listens.

use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use clap::Parser;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message as _;
use serde_json::{json, Map, Value};

#[derive(Parser)]
struct Args {
    /// The port on 127.0.0.1 (0: any free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The file each span is appended to, one JSON object a line.
    #[arg(long)]
    out: std::path::PathBuf,
    /// The secret access key the functions sign with (the local cloud's).
    #[arg(long, default_value = "test")]
    secret: String,
}

struct Receiver {
    out: Mutex<std::fs::File>,
    secret: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.out)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", args.out.display()));
    let receiver = Arc::new(Receiver {
        out: Mutex::new(out),
        secret: args.secret,
    });
    let app = Router::new()
        .route("/v1/traces", post(take))
        .with_state(receiver);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .expect("bind 127.0.0.1");
    let address = listener.local_addr().expect("its address");
    println!("http://{address}/v1/traces");
    let _ = std::io::stdout().flush();
    axum::serve(listener, app).await.expect("serve");
}

async fn take(
    State(receiver): State<Arc<Receiver>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let signature = signature(&headers, &uri, &body, &receiver.secret);
    let export_bytes = body.len();
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new()).into_response();
    };
    let mut lines = String::new();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .map(|r| attributes_map(&r.attributes))
            .and_then(|a| {
                a.get("service.name")
                    .and_then(|v| v.as_str().map(str::to_owned))
            })
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                let links: Vec<Value> = span
                    .links
                    .iter()
                    .map(|l| json!({"trace_id": hex(&l.trace_id), "span_id": hex(&l.span_id)}))
                    .collect();
                let line = json!({
                    "service": service,
                    "name": span.name,
                    "kind": span.kind().as_str_name(),
                    "trace_id": hex(&span.trace_id),
                    "span_id": hex(&span.span_id),
                    "parent_span_id": hex(&span.parent_span_id),
                    "attributes": attributes(&span.attributes),
                    "links": links,
                    "signature": signature,
                    // The size of the export request that carried it (what a backend ingests).
                    "export_bytes": export_bytes,
                });
                lines.push_str(&line.to_string());
                lines.push('\n');
            }
        }
    }
    {
        let mut out = receiver.out.lock().unwrap_or_else(|e| e.into_inner());
        if out
            .write_all(lines.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            return (StatusCode::INTERNAL_SERVER_ERROR, Vec::new()).into_response();
        }
    }
    (
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
        .into_response()
}

/// What the request's signature is: `absent`, `valid` (with its credential scope), or why not.
fn signature(headers: &HeaderMap, uri: &Uri, body: &[u8], secret: &str) -> String {
    let Some(authorization) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return "absent".into();
    };
    let field = |name: &str| {
        authorization
            .split([' ', ','])
            .find_map(|part| part.strip_prefix(name))
            .unwrap_or_default()
            .to_owned()
    };
    let (credential, signed, given) = (
        field("Credential="),
        field("SignedHeaders="),
        field("Signature="),
    );
    let scope: Vec<&str> = credential.split('/').collect();
    let [key, _date, region, service, "aws4_request"] = scope[..] else {
        return format!("bad credential scope: {credential}");
    };
    let Some(time) = headers
        .get("x-amz-date")
        .and_then(|v| v.to_str().ok())
        .and_then(amz_date)
    else {
        return "no x-amz-date".into();
    };
    let token = headers
        .get("x-amz-security-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // The headers the client signed, but those the signer adds itself.
    let signed_headers: Vec<(&str, &str)> = signed
        .split(';')
        .filter(|h| !matches!(*h, "host" | "x-amz-date" | "x-amz-security-token"))
        .filter_map(|h| Some((h, headers.get(h)?.to_str().ok()?)))
        .collect();
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return "no host".into();
    };
    let url = format!("http://{host}{uri}");
    let identity = Credentials::new(key, secret, token, None, "receiver").into();
    let Ok(params) = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
    else {
        return "unsignable".into();
    };
    let Ok(signable) = SignableRequest::new(
        "POST",
        url,
        signed_headers.into_iter(),
        SignableBody::Bytes(body),
    ) else {
        return "unsignable".into();
    };
    match sign(signable, &params.into()) {
        Ok(output) if output.signature() == given => format!("valid {credential}"),
        Ok(_) => format!("invalid {credential}"),
        Err(e) => format!("unsignable: {e}"),
    }
}

/// `20251206T054640Z` (SigV4's `x-amz-date`) as a time.
fn amz_date(text: &str) -> Option<SystemTime> {
    let at = chrono::NaiveDateTime::parse_from_str(text, "%Y%m%dT%H%M%SZ").ok()?;
    Some(SystemTime::from(at.and_utc()))
}

fn attributes_map(attributes: &[KeyValue]) -> Map<String, Value> {
    attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(AnyValue::StringValue(s)) => Value::from(s.clone()),
                Some(AnyValue::IntValue(i)) => Value::from(*i),
                Some(AnyValue::BoolValue(b)) => Value::from(*b),
                Some(AnyValue::DoubleValue(d)) => Value::from(*d),
                Some(other) => Value::from(format!("{other:?}")),
                None => Value::Null,
            };
            (kv.key.clone(), value)
        })
        .collect()
}

fn attributes(attributes: &[KeyValue]) -> Value {
    Value::Object(attributes_map(attributes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
