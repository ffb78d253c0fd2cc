//! Durable executions on SQLite (`executions`): one row per task with durable work, its
//! record as JSON beside the columns the conditional write and the due list read.

use a2a_core::{DueExecution, DurableExecution, ExecutionStore, Owner, RelayGate, StoreError};
use a2a_protocol::Timestamp;
use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use crate::{now_ms, to_i64, CachedStatements, DbError, SqliteStore};

#[async_trait]
impl ExecutionStore for SqliteStore {
    async fn load_execution(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<DurableExecution>, StoreError> {
        let owner = owner.as_str().to_owned();
        let task_id = task_id.to_owned();
        self.read(move |conn| {
            let body: Option<String> = conn
                .query_row_cached(
                    "SELECT body FROM executions
                     WHERE task_id = ?1 AND owner = ?2 AND expires_at_ms > ?3",
                    params![task_id, owner, now_ms()],
                    |r| r.get(0),
                )
                .optional()?;
            body.map(|b| {
                serde_json::from_str(&b).map_err(|e| {
                    // Where it breaks, never what it holds (a record carries its waits' tokens).
                    DbError::Store(StoreError::Unreadable(format!(
                        "the execution record of task {task_id} does not read: {:?} error at \
                         line {} column {}",
                        e.classify(),
                        e.line(),
                        e.column()
                    )))
                })
            })
            .transpose()
        })
        .await
    }

    async fn save_execution(
        &self,
        execution: &DurableExecution,
        expected: Option<u64>,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_string(execution).map_err(DbError::from)?;
        let task_id = execution.task_id.clone();
        let owner = execution.owner.as_str().to_owned();
        let version = to_i64(execution.version);
        let due = execution.due_at().map(|t| t.millis());
        let expires = execution.expires_at.millis();
        let expected = expected.map(to_i64);
        let tokens = execution.relay_tokens();
        let saved = self
            .write(move |tx| {
                let now = now_ms();
                // The row as it stands: an expired one counts as none.
                let stored: Option<(String, i64)> = tx
                    .query_row_cached(
                        "SELECT owner, version FROM executions
                         WHERE task_id = ?1 AND expires_at_ms > ?2",
                        params![task_id, now],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?;
                let matches = match (&stored, expected) {
                    (None, None) => true,
                    (Some((stored_owner, v)), Some(e)) => *stored_owner == owner && *v == e,
                    _ => false,
                };
                if !matches {
                    // A repeat of a save that landed: this very record is stored already (its
                    // body is read only here, off the usual path).
                    let repeat = match &stored {
                        Some((stored_owner, v)) if *stored_owner == owner && *v == version => {
                            let stored_body: String = tx.query_row_cached(
                                "SELECT body FROM executions WHERE task_id = ?1",
                                params![task_id],
                                |r| r.get(0),
                            )?;
                            stored_body == body
                        }
                        _ => false,
                    };
                    return Ok(repeat);
                }
                tx.execute_cached(
                    "INSERT INTO executions (task_id, owner, version, due_at_ms, expires_at_ms, body)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (task_id) DO UPDATE SET owner = excluded.owner,
                         version = excluded.version, due_at_ms = excluded.due_at_ms,
                         expires_at_ms = excluded.expires_at_ms, body = excluded.body",
                    params![task_id, owner, version, due, expires, body],
                )?;
                if !tokens.is_empty() {
                    write_gate(tx, &task_id, &owner, &tokens, expires)?;
                }
                Ok(true)
            })
            .await?;
        if saved {
            Ok(())
        } else {
            Err(StoreError::Conflict)
        }
    }

    /// The gate's row, apart from the record's (whose body is never read here).
    async fn load_relay_gate(&self, task_id: &str) -> Result<Option<RelayGate>, StoreError> {
        let task_id = task_id.to_owned();
        self.read(move |conn| {
            Ok(conn
                .query_row_cached(
                    "SELECT owner, tokens FROM relay_gates
                     WHERE task_id = ?1 AND expires_at_ms > ?2",
                    params![task_id, now_ms()],
                    |r| {
                        Ok(RelayGate {
                            owner: Owner(r.get(0)?),
                            tokens: r.get(1)?,
                        })
                    },
                )
                .optional()?)
        })
        .await
    }

    async fn delete_execution(&self, owner: &Owner, task_id: &str) -> Result<(), StoreError> {
        let owner = owner.as_str().to_owned();
        let task_id = task_id.to_owned();
        self.write(move |tx| {
            tx.execute_cached(
                "DELETE FROM executions WHERE task_id = ?1 AND owner = ?2",
                params![task_id, owner],
            )?;
            Ok(())
        })
        .await
    }

    /// Nothing to forget: the list reads the records themselves.
    async fn forget_due_entry(&self, _entry: &DueExecution) -> Result<(), StoreError> {
        Ok(())
    }

    async fn list_due_executions(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<DueExecution>, StoreError> {
        let limit = to_i64(limit as u64);
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT task_id, owner, due_at_ms FROM executions
                 WHERE due_at_ms IS NOT NULL AND due_at_ms <= ?1 AND expires_at_ms > ?1
                 ORDER BY due_at_ms LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![now.millis(), limit], |r| {
                Ok(DueExecution {
                    task_id: r.get(0)?,
                    owner: Owner(r.get(1)?),
                    due_at: Timestamp::from_millis(r.get(2)?),
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }
}

/// Makes the task's relay gate hold `tokens` (in the save's transaction: a save that lands
/// has its gate).
fn write_gate(
    tx: &rusqlite::Connection,
    task_id: &str,
    owner: &str,
    tokens: &str,
    expires: i64,
) -> Result<(), DbError> {
    tx.execute_cached(
        "INSERT INTO relay_gates (task_id, owner, tokens, expires_at_ms) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (task_id) DO UPDATE SET owner = excluded.owner, tokens = excluded.tokens,
             expires_at_ms = excluded.expires_at_ms
         WHERE tokens IS NOT excluded.tokens OR expires_at_ms < excluded.expires_at_ms",
        params![task_id, owner, tokens, expires],
    )?;
    Ok(())
}
