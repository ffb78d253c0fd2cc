//! How long an AWS call may take, and how often it is tried.
//!
//! The SDK sets no timeout of its own: a connection that went stale while a Lambda instance
//! was frozen (the peer or a NAT dropped it meanwhile) can hold a DynamoDB, SQS or Secrets
//! Manager call until the function itself times out (30 s, or 900 s for the streaming ones).
//! [`CALL_LIMITS`] bounds every call: an attempt that does not connect, or gets no answer, in
//! time is abandoned, and the retry goes out on a fresh connection; the whole call, retries
//! included, ends within [`CallLimits::operation`]. A stale connection therefore costs one
//! attempt (3 s), and a call never holds a function longer than 6 s: a blocking SendMessage's
//! longest wait (`BlockingTimeoutSeconds`, at most 24 s) plus one call ends within the 30 s of
//! the buffered functions (the template test checks it).
//!
//! A long poll (SQS `ReceiveMessage` with a wait, which only hosts that poll their own queues
//! make: never a Lambda function) is answered only after its wait: its attempt gets the wait
//! and [`LONG_POLL_MARGIN`] on top ([`long_poll_timeouts`]).

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::SdkConfig;

/// The bounds of one AWS call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// To open a connection (TCP and TLS).
    pub connect: Duration,
    /// From the request sent to the first byte of the answer.
    pub read: Duration,
    /// One attempt, from start to the whole answer.
    pub attempt: Duration,
    /// The whole call, every attempt and the pauses between them.
    pub operation: Duration,
    /// Attempts in all (the first and its retries), with the SDK's standard backoff.
    pub max_attempts: u32,
}

/// The limits of every AWS call the adapters and the functions make. DynamoDB, SQS and
/// Secrets Manager answer in milliseconds inside a region; an attempt that has had 3 s has
/// met a dead connection, not a slow service.
pub const CALL_LIMITS: CallLimits = CallLimits {
    connect: Duration::from_secs(2),
    read: Duration::from_secs(3),
    attempt: Duration::from_secs(3),
    operation: Duration::from_secs(6),
    max_attempts: 3,
};

impl CallLimits {
    /// The SDK's timeout configuration of these limits.
    pub fn timeout_config(&self) -> TimeoutConfig {
        TimeoutConfig::builder()
            .connect_timeout(self.connect)
            .read_timeout(self.read)
            .operation_attempt_timeout(self.attempt)
            .operation_timeout(self.operation)
            .build()
    }

    /// The SDK's retry configuration of these limits: standard retries (transient errors and
    /// timeouts), backing off from 50 ms, never more than a second.
    pub fn retry_config(&self) -> RetryConfig {
        RetryConfig::standard()
            .with_max_attempts(self.max_attempts)
            .with_initial_backoff(Duration::from_millis(50))
            .with_max_backoff(Duration::from_secs(1))
    }

    /// `sdk` with these limits: every client built from it applies them.
    pub fn apply(&self, sdk: &SdkConfig) -> SdkConfig {
        sdk.to_builder()
            .timeout_config(self.timeout_config())
            .retry_config(self.retry_config())
            .build()
    }
}

/// `sdk` with [`CALL_LIMITS`]: what every process builds its clients from.
pub fn with_call_limits(sdk: &SdkConfig) -> SdkConfig {
    CALL_LIMITS.apply(sdk)
}

/// What a long poll's attempt may take beyond its wait. More than a call's: the receivers of
/// one queue may answer one after the other (moto, the tests' emulator, takes a FIFO queue's
/// receives in turns), and a long poll is made by a host with time to spare, never by a
/// function racing its deadline. Still a bound: a stale connection costs this, not forever.
pub const LONG_POLL_MARGIN: Duration = Duration::from_secs(30);

/// The timeouts of a long poll that waits up to `wait` for a message: the answer comes after
/// the wait, so the read and attempt timeouts get it, and [`LONG_POLL_MARGIN`], on top.
pub fn long_poll_timeouts(wait: Duration) -> TimeoutConfig {
    let attempt = wait + LONG_POLL_MARGIN;
    TimeoutConfig::builder()
        .connect_timeout(CALL_LIMITS.connect)
        .read_timeout(attempt)
        .operation_attempt_timeout(attempt)
        .operation_timeout(attempt * CALL_LIMITS.max_attempts)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_bounded_and_a_stale_connection_costs_one_attempt() {
        let l = CALL_LIMITS;
        assert!(l.connect <= l.attempt && l.read <= l.attempt);
        // A retry after one dead attempt still fits.
        assert!(l.attempt * 2 <= l.operation, "{l:?}");
        assert!(l.max_attempts >= 2);
        let sdk = SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let limited = with_call_limits(&sdk);
        let t = limited.timeout_config().expect("timeouts");
        assert_eq!(t.connect_timeout(), Some(l.connect));
        assert_eq!(t.read_timeout(), Some(l.read));
        assert_eq!(t.operation_attempt_timeout(), Some(l.attempt));
        assert_eq!(t.operation_timeout(), Some(l.operation));
        assert_eq!(
            limited.retry_config().expect("retries").max_attempts(),
            l.max_attempts
        );
        // Every client built from it has them.
        let dynamodb = aws_sdk_dynamodb::Client::new(&limited);
        assert_eq!(
            dynamodb
                .config()
                .timeout_config()
                .and_then(|t| t.operation_timeout()),
            Some(l.operation)
        );
        let sqs = aws_sdk_sqs::Client::new(&limited);
        assert_eq!(
            sqs.config()
                .timeout_config()
                .and_then(|t| t.operation_attempt_timeout()),
            Some(l.attempt)
        );
        // A long poll of 20 s is not cut off by the read timeout.
        let poll = long_poll_timeouts(Duration::from_secs(20));
        assert_eq!(poll.read_timeout(), Some(Duration::from_secs(50)));
        assert!(poll.operation_attempt_timeout() > Some(Duration::from_secs(20)));
    }
}
