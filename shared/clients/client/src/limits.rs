//! How much of what an agent sends the client reads, and the bounded reads that keep to it.
//!
//! Whatever a peer sends is untrusted: an answer that never ends, an SSE event without its
//! blank line, a line without its newline must not grow the client's memory without bound or
//! keep it reading forever. Every read stops at a limit with [`Error::TooLarge`], which names
//! the limit.

use std::time::Duration;

use crate::error::{Error, Limit};

/// Bounds on what the client reads from an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The largest answer that is not a stream (a result, an error, a card, a token
    /// response), in bytes. Default 16 MiB.
    pub max_body_bytes: usize,
    /// The largest SSE event (its lines together, and so each line), in bytes. Default 8 MiB.
    pub max_event_bytes: usize,
    /// The most one stream may carry in all, reconnects included, in bytes. Default 256 MiB.
    pub max_stream_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 16 << 20,
            max_event_bytes: 8 << 20,
            max_stream_bytes: 256 << 20,
        }
    }
}

/// One exchange with the agent, as its errors name it: what it is and its timeout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exchange<'a> {
    /// What the exchange is, for errors ("GetTask", "fetching the agent card at …").
    pub(crate) what: &'a str,
    /// Its timeout, if it has one.
    pub(crate) timeout: Option<Duration>,
}

impl Exchange<'_> {
    /// The error of a failed request: a timeout says what timed out, a redirect the client
    /// refused says why; anything else is a transport failure.
    pub(crate) fn failed(&self, e: reqwest::Error) -> Error {
        if let Some(refused) = crate::scope::refused_redirect(&e) {
            return Error::OtherOrigin(refused);
        }
        match self.timeout {
            Some(after) if e.is_timeout() => Error::Timeout {
                what: self.what.to_owned(),
                after,
            },
            _ => Error::Transport(e),
        }
    }

    /// Reads the whole body of `response`, refusing more than `limit` bytes.
    pub(crate) async fn read_body(
        &self,
        mut response: reqwest::Response,
        limit: usize,
    ) -> Result<Vec<u8>, Error> {
        let too_large = || Error::TooLarge {
            what: format!("the answer to {}", self.what),
            limit: Limit::Body,
            bytes: limit as u64,
        };
        // A declared length over the limit is refused before anything is read.
        if response
            .content_length()
            .is_some_and(|declared| declared > limit as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.failed(e))? {
            if body.len() + chunk.len() > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}
