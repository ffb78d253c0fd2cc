//! Request bodies: the Content-Type check and the size limit, both before any parsing.

use a2a_protocol::A2AError;
use axum::body::Body;
use axum::http::{header, HeaderMap, StatusCode};
use futures::StreamExt;
use serde_json::{Map, Value};

use crate::errors::HttpError;

/// Whether a Content-Type names a JSON body A2A accepts. Parameters (`; charset=utf-8`) are
/// allowed.
fn is_json_media_type(value: &str) -> bool {
    let essence = value.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.eq_ignore_ascii_case("application/a2a+json")
}

fn unsupported_content_type(found: Option<&str>) -> HttpError {
    let found = match found {
        Some(ct) => format!("Content-Type {ct:?} is not supported"),
        None => "A request body needs a Content-Type".to_string(),
    };
    HttpError::with_status(
        A2AError::ContentTypeNotSupported(format!(
            "{found}; send application/json or application/a2a+json"
        )),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
    )
}

fn too_large(limit: usize) -> HttpError {
    A2AError::PayloadTooLarge(format!(
        "The request body is larger than this server's limit of {limit} bytes"
    ))
    .into()
}

/// Reads a request body after checking its Content-Type and against `limit`.
///
/// A declared non-JSON Content-Type is refused before reading; a body without any
/// Content-Type is refused once it turns out not to be empty (an empty POST, such as a cancel
/// or a subscribe, needs none).
pub(crate) async fn read(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Vec<u8>, HttpError> {
    let content_type = match headers.get(header::CONTENT_TYPE) {
        None => None,
        Some(value) => Some(value.to_str().map_err(|_| unsupported_content_type(None))?),
    };
    let declared_length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(ct) = content_type {
        if !is_json_media_type(ct) && declared_length != Some(0) {
            return Err(unsupported_content_type(Some(ct)));
        }
    }
    if declared_length.is_some_and(|len| len > limit as u64) {
        return Err(too_large(limit));
    }
    // Read chunk by chunk so a body without Content-Length cannot exceed the limit either.
    let mut bytes = Vec::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| {
            tracing::debug!(%err, "reading a request body failed");
            HttpError::from(A2AError::InvalidRequest(
                "The request body could not be read".into(),
            ))
        })?;
        if bytes.len() + chunk.len() > limit {
            return Err(too_large(limit));
        }
        bytes.extend_from_slice(&chunk);
    }
    if !bytes.is_empty() && content_type.is_none() {
        return Err(unsupported_content_type(None));
    }
    Ok(bytes)
}

/// Reads a REST body as a JSON object; an empty body is `{}` (the optional body of cancel).
pub(crate) async fn read_object(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Map<String, Value>, HttpError> {
    let bytes = read(headers, body, limit).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(A2AError::invalid_params("The request body must be a JSON object").into()),
        Err(err) => {
            Err(A2AError::ParseError(format!("The request body is not valid JSON: {err}")).into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_media_types() {
        assert!(is_json_media_type("application/json"));
        assert!(is_json_media_type("Application/JSON; charset=utf-8"));
        assert!(is_json_media_type("application/a2a+json"));
        assert!(!is_json_media_type("text/plain"));
        assert!(!is_json_media_type("application/jsonx"));
    }
}
