//! A call made again after short pauses while it fails in a way that passes (a store
//! throttled for a second, another agent in trouble for a moment): the one loop the core's
//! retries share. Each caller says which failures pass and how to log a retry.

use std::future::Future;
use std::time::Duration;

/// `call`, made again after each of `pauses` while its failure `passes`; `on_retry` sees each
/// failure that is tried again. The last failure, and any outcome that does not pass, is
/// returned as it is.
pub async fn after_pauses<T, E, F, Fut>(
    pauses: &[Duration],
    passes: impl Fn(&E) -> bool,
    mut call: F,
    on_retry: impl Fn(&E),
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut pauses = pauses.iter();
    loop {
        match call().await {
            Err(err) if passes(&err) => {
                let Some(pause) = pauses.next() else {
                    return Err(err);
                };
                on_retry(&err);
                tokio::time::sleep(*pause).await;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn a_passing_failure_is_tried_once_per_pause_and_no_more() {
        let calls = AtomicU32::new(0);
        let pauses = [Duration::ZERO, Duration::ZERO];
        let failing = after_pauses(
            &pauses,
            |e: &&str| *e == "busy",
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>("busy")
            },
            |_| {},
        )
        .await;
        assert_eq!(failing, Err("busy"));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            3,
            "the first call and one per pause"
        );

        calls.store(0, Ordering::SeqCst);
        let refused = after_pauses(
            &pauses,
            |e: &&str| *e == "busy",
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>("no")
            },
            |_| {},
        )
        .await;
        assert_eq!(refused, Err("no"));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "a failure that does not pass is final"
        );

        calls.store(0, Ordering::SeqCst);
        let later = after_pauses(
            &pauses,
            |e: &&str| *e == "busy",
            || async {
                match calls.fetch_add(1, Ordering::SeqCst) {
                    0 => Err("busy"),
                    _ => Ok(7),
                }
            },
            |_| {},
        )
        .await;
        assert_eq!(later, Ok(7));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
