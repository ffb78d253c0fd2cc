//! ListTasks' counts (schema v7, v9): read without a scan, and the newest tasks folded in.

use rusqlite::{params, Connection};

use crate::{CachedStatements, DbError};

/// How many live tasks `owner` has (in `state`, if given), without a scan: the rows
/// `task_counts` counts, plus the newest rows not folded into it yet (schema v9: at most a
/// fold's interval of creates, read by `rowid`), less those expired and not yet purged, which
/// the expiry index holds ahead of every live entry (their owner and state are read from the
/// table: at most what expired since the last purge).
pub(super) fn counted_total(
    conn: &Connection,
    owner: &str,
    state: Option<&str>,
    now: i64,
) -> Result<i64, DbError> {
    let (rows, unfolded, expired): (i64, i64, i64) = match state {
        None => (
            conn.query_row_cached(
                "SELECT COALESCE(SUM(n), 0) FROM task_counts WHERE owner = ?1",
                [owner],
                |r| r.get(0),
            )?,
            conn.query_row_cached(
                "SELECT COUNT(*) FROM tasks
                 WHERE rowid > (SELECT w FROM task_counts_mark) AND owner = ?1",
                [owner],
                |r| r.get(0),
            )?,
            conn.query_row_cached(
                "SELECT COUNT(*) FROM tasks INDEXED BY tasks_by_expiry
                 WHERE expires_at_ms <= ?2 AND owner = ?1",
                params![owner, now],
                |r| r.get(0),
            )?,
        ),
        Some(state) => (
            conn.query_row_cached(
                "SELECT COALESCE(SUM(n), 0) FROM task_counts WHERE owner = ?1 AND state = ?2",
                [owner, state],
                |r| r.get(0),
            )?,
            conn.query_row_cached(
                "SELECT COUNT(*) FROM tasks
                 WHERE rowid > (SELECT w FROM task_counts_mark) AND owner = ?1 AND state = ?2",
                [owner, state],
                |r| r.get(0),
            )?,
            conn.query_row_cached(
                "SELECT COUNT(*) FROM tasks INDEXED BY tasks_by_expiry
                 WHERE expires_at_ms <= ?3 AND owner = ?1 AND state = ?2",
                params![owner, state, now],
                |r| r.get(0),
            )?,
        ),
    };
    Ok((rows + unfolded - expired).max(0))
}

/// Folds the rows of `tasks` above the counts' mark into `task_counts` and moves the mark
/// (schema v9), in the caller's transaction. Returns how many counts it changed.
pub(crate) fn fold_counts(conn: &Connection) -> rusqlite::Result<usize> {
    let folded = conn.execute_cached(
        "INSERT INTO task_counts (owner, state, n)
         SELECT owner, state, COUNT(*) FROM tasks
         WHERE rowid > (SELECT w FROM task_counts_mark) GROUP BY owner, state
         ON CONFLICT (owner, state) DO UPDATE SET n = n + excluded.n",
        [],
    )?;
    if folded > 0 {
        conn.execute_cached(
            "UPDATE task_counts_mark SET w = (SELECT COALESCE(MAX(rowid), 0) FROM tasks)",
            [],
        )?;
    }
    Ok(folded)
}
