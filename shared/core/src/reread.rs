//! When a document read from a source that changes (a secret, a file) is read again: the
//! credentials for other agents, the A2A-Lite channels.

use std::time::{Duration, Instant};

/// A source that failed is asked again this soon at the earliest, not by every call.
pub const RETRY_FAILED_READ: Duration = Duration::from_secs(1);

/// When a document was last read, and the last failure to read it since.
#[derive(Debug, Default, Clone)]
pub struct ReadClock {
    read_at: Option<Instant>,
    failed: Option<(Instant, String)>,
}

impl ReadClock {
    /// Whether to read the document again now, for a source read every `refresh`: it was
    /// never read, or not within `refresh`, and no read failed within the last
    /// [`RETRY_FAILED_READ`] (or `refresh`, if shorter).
    pub fn due(&self, refresh: Duration) -> bool {
        let fresh = self.read_at.is_some_and(|at| at.elapsed() < refresh);
        let failed_just_now = self
            .failed
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < refresh.min(RETRY_FAILED_READ));
        !fresh && !failed_just_now
    }

    /// A read succeeded now.
    pub fn read(&mut self) {
        self.read_at = Some(Instant::now());
        self.failed = None;
    }

    /// A read failed now, for `why`.
    pub fn failed(&mut self, why: String) {
        self.failed = Some((Instant::now(), why));
    }

    /// Why the last read failed, if it did (and none succeeded since).
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_ref().map(|(_, why)| why.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_read_again_after_its_refresh_and_a_failure_a_second_later() {
        let mut clock = ReadClock::default();
        assert!(clock.due(Duration::from_secs(60)), "never read");
        clock.read();
        assert!(!clock.due(Duration::from_secs(60)), "read just now");
        assert!(clock.due(Duration::ZERO), "read every time");
        clock.failed("no such secret".into());
        assert_eq!(clock.failure(), Some("no such secret"));
        assert!(!clock.due(Duration::from_secs(60)), "failed just now");
        clock.read();
        assert_eq!(clock.failure(), None);
    }
}
