//! Whether a head write whose outcome is in doubt landed: its answer was lost, or its every
//! attempt failed, and the head may hold it all the same ([`written_by`](super::heads::written_by)
//! tells it).

use std::time::Duration;

use a2a_core::StoreError;

use super::DynamoTaskStore;
use crate::items::{self, attr, Item};
use crate::timeouts::CALL_LIMITS;

/// The pauses before a create whose outcome is in doubt is checked again
/// ([`DynamoTaskStore::create_landed`]): each check is a call with the SDK's own retries, so
/// the create is in doubt for good only after a throttling burst or outage of seconds.
const LANDED_CHECK_PAUSES: [Duration; 3] = [
    Duration::from_millis(250),
    Duration::from_secs(1),
    Duration::from_secs(2),
];

impl DynamoTaskStore {
    /// [`Self::head_holds`] for a create whose outcome is in doubt, asked again after each of
    /// [`LANDED_CHECK_PAUSES`] while the store fails the read. Given up at the first failure,
    /// a create that landed unseen would be an error to the core, which must then assume it
    /// may have landed: its client gets a 5xx, and the task its agent began is ended FAILED by
    /// the sweep, so the client's retry of the message gets that FAILED task back (issue 52's
    /// fault run at 20 %: one such task a run).
    pub(super) async fn create_landed(
        &self,
        task_id: &str,
        ours: &Item,
    ) -> Result<bool, StoreError> {
        a2a_core::after_pauses(
            &LANDED_CHECK_PAUSES,
            |err| matches!(err, StoreError::Backend(_)),
            || self.head_holds(task_id, ours),
            |err| tracing::warn!(task_id, error = %err, "could not tell whether a create landed; asking again"),
        )
        .await
    }

    /// [`Self::create_landed`] for a create whose every attempt failed: an attempt the SDK gave
    /// up on (no answer within [`CALL_LIMITS`]' attempt timeout) may still land after the call
    /// ended, so a create not found at once is looked for again once such an attempt would have
    /// landed (issue 52's fault run at 20 %, seed 23: a create that landed after its check
    /// said it had not, its task then ended FAILED by the sweep).
    pub(super) async fn create_landed_late(
        &self,
        task_id: &str,
        ours: &Item,
    ) -> Result<bool, StoreError> {
        match self.create_landed(task_id, ours).await {
            Ok(false) => {
                tokio::time::sleep(CALL_LIMITS.attempt).await;
                self.create_landed(task_id, ours).await
            }
            landed => landed,
        }
    }

    /// Whether the head of `task_id` is the write `ours` describes ([`super::heads::written_by`]). A write
    /// whose condition failed may have failed on itself: the SDK tries a request again when an
    /// attempt got no answer in time, and the first attempt may have landed all the same. Its
    /// retry then finds the head it wrote, and must not be taken for another writer's (the core
    /// would write its events a second time on top of themselves).
    pub(super) async fn head_holds(&self, task_id: &str, ours: &Item) -> Result<bool, StoreError> {
        // Without its events a write cannot be told from another writer's at that version.
        if !ours.contains_key(attr::HEAD_EVENTS) {
            return Ok(false);
        }
        let Some(stored) = self
            .get(items::key(items::task_pk(task_id), items::HEAD_SK))
            .await?
        else {
            return Ok(false);
        };
        Ok(ours
            .iter()
            .all(|(name, value)| stored.get(name) == Some(value)))
    }
}
