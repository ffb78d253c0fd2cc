//! The SQLite schema, created (or upgraded) when a store is opened.

use rusqlite::{Connection, TransactionBehavior};

use crate::DbError;

/// The schema version this build writes, kept in `PRAGMA user_version`.
pub(crate) const SCHEMA_VERSION: i64 = 10;

/// Version 1 of the schema.
///
/// - `tasks` holds the head of each task. The columns next to the JSON (`owner`, `context_id`,
///   `state`, `status_ts_ms`, `version`, `expires_at_ms`) are what queries filter and order on,
///   so no query has to parse JSON.
/// - `events` is the log, keyed by (task, seq) so a sequence number can only be written once:
///   even a writer that skipped the version check could not create a duplicate.
/// - `push_configs` is keyed by owner first, so one owner can neither see nor overwrite
///   another owner's config, even for the same task id.
/// - `jobs` holds both queues. `group_key` is the FIFO message group (the task id) of the push
///   queue; `dead_letters` is where jobs go after their last attempt.
/// - `dedup_keys` emulates the SQS FIFO de-duplication window: a key seen within the window is
///   not enqueued again, even if its job was already delivered and deleted.
const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    task_id       TEXT    NOT NULL PRIMARY KEY,
    owner         TEXT    NOT NULL,
    context_id    TEXT    NOT NULL,
    state         TEXT    NOT NULL,
    status_ts_ms  INTEGER NOT NULL,
    version       INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    head          TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_owner_status
    ON tasks (owner, status_ts_ms DESC, task_id DESC);
CREATE INDEX IF NOT EXISTS tasks_by_owner_context
    ON tasks (owner, context_id, status_ts_ms DESC, task_id DESC);
CREATE INDEX IF NOT EXISTS tasks_by_owner_state
    ON tasks (owner, state, status_ts_ms DESC, task_id DESC);
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (expires_at_ms);

CREATE TABLE IF NOT EXISTS events (
    task_id TEXT    NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    at_ms   INTEGER NOT NULL,
    body    TEXT    NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS push_configs (
    owner         TEXT    NOT NULL,
    task_id       TEXT    NOT NULL,
    config_id     TEXT    NOT NULL,
    body          TEXT    NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    PRIMARY KEY (owner, task_id, config_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS push_configs_by_expiry ON push_configs (expires_at_ms);

CREATE TABLE IF NOT EXISTS leases (
    task_id  TEXT    NOT NULL PRIMARY KEY,
    holder   TEXT    NOT NULL,
    until_ms INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS jobs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    queue         TEXT    NOT NULL,
    body          TEXT    NOT NULL,
    group_key     TEXT,
    visible_at_ms INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    created_ms    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_visibility ON jobs (queue, visible_at_ms, id);
CREATE INDEX IF NOT EXISTS jobs_by_group ON jobs (queue, group_key, id);

CREATE TABLE IF NOT EXISTS dedup_keys (
    queue         TEXT    NOT NULL,
    dedup_key     TEXT    NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    PRIMARY KEY (queue, dedup_key)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS dead_letters (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    queue         TEXT    NOT NULL,
    body          TEXT    NOT NULL,
    receive_count INTEGER NOT NULL,
    reason        TEXT    NOT NULL,
    moved_at_ms   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS dead_letters_by_queue ON dead_letters (queue, id);
";

/// Version 2 adds `push_deliveries`: the delivery record of each push config (attempts, last
/// status and error, last success), as JSON. It is keyed like `push_configs` but kept apart,
/// so that the record outlives a config deleted after a 410 Gone.
const SCHEMA_V2: &str = "
CREATE TABLE IF NOT EXISTS push_deliveries (
    owner         TEXT    NOT NULL,
    task_id       TEXT    NOT NULL,
    config_id     TEXT    NOT NULL,
    body          TEXT    NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    PRIMARY KEY (owner, task_id, config_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS push_deliveries_by_expiry ON push_deliveries (expires_at_ms);
";

/// Version 3 lets a lease say whose task it is and whether it is an inline execution's: only
/// those are listed by the sweep once expired (queued work is redelivered by its queue). The
/// partial index holds inline leases only, ordered by their end, so the sweep's query reads
/// just the expired ones.
const SCHEMA_V3_COLUMNS: [(&str, &str); 2] = [
    ("owner", "ALTER TABLE leases ADD COLUMN owner TEXT"),
    (
        "inline",
        "ALTER TABLE leases ADD COLUMN inline INTEGER NOT NULL DEFAULT 0",
    ),
];
const SCHEMA_V3_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS leases_inline_by_until ON leases (until_ms) WHERE inline = 1";

/// Version 3 also adds `message_replies`: the direct message replies recorded for idempotent
/// SendMessage, keyed by the task id their message would have created (a live reply holds that
/// id as a live task would).
const SCHEMA_V3_REPLIES: &str = "
CREATE TABLE IF NOT EXISTS message_replies (
    task_id       TEXT    NOT NULL PRIMARY KEY,
    owner         TEXT    NOT NULL,
    body          TEXT    NOT NULL,
    expires_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS message_replies_by_expiry ON message_replies (expires_at_ms);
";

/// Version 4 lets a queued job's lease count its attempts: `job_seq` is the job (the message
/// it runs) whose attempts `job_attempts` counts. A renewal keeps them; taking the lease for
/// another job starts again at 1.
const SCHEMA_V4_COLUMNS: [(&str, &str); 2] = [
    ("job_seq", "ALTER TABLE leases ADD COLUMN job_seq INTEGER"),
    (
        "job_attempts",
        "ALTER TABLE leases ADD COLUMN job_attempts INTEGER NOT NULL DEFAULT 0",
    ),
];

/// Version 5 makes a new task cost one row and one random index entry, where a blocking echo
/// wrote four rows and six (measured: about 2.5 times the writer's time per task):
///
/// - `tasks.events`: a task born terminal (its first write ends it) keeps the events of that
///   write in its head row, as a JSON array, and no `events` rows; its `head` is empty and the
///   task is rebuilt from the events. Nothing is ever appended to a terminal task.
/// - The context index goes: context ids are random, so each insert touched a page of its own.
///   The owner index now carries the columns ListTasks filters on (context, state, expiry), so
///   a filtered page or count reads the index alone.
/// - The owner indexes ascend by status timestamp (ListTasks reads them backwards): a new task
///   then lands at the right end of each, where SQLite fills pages and appends, instead of at
///   the left end, where every insert split a page in the middle (pages half empty, more of
///   them written per commit).
///
/// Older rows stay as they are (`events` NULL: the head and the `events` rows as before).
const SCHEMA_V5_COLUMNS: [(&str, &str); 1] =
    [("events", "ALTER TABLE tasks ADD COLUMN events TEXT")];
const SCHEMA_V5_INDEXES: &str = "
DROP INDEX IF EXISTS tasks_by_owner_context;
DROP INDEX IF EXISTS tasks_by_owner_status;
DROP INDEX IF EXISTS tasks_by_owner_state;
CREATE INDEX IF NOT EXISTS tasks_by_owner_listed
    ON tasks (owner, status_ts_ms, task_id, context_id, state, expires_at_ms);
CREATE INDEX IF NOT EXISTS tasks_by_owner_state_ts
    ON tasks (owner, state, status_ts_ms, task_id);
";

/// Version 6 adds `executions`: the durable execution of each task that has one (its recorded
/// steps, how many events it emitted, what it waits for), as JSON, with its version for the
/// conditional write and its wait's due time, indexed for the sweep of due waits (the partial
/// index holds parked executions only).
const SCHEMA_V6: &str = "
CREATE TABLE IF NOT EXISTS executions (
    task_id       TEXT    NOT NULL PRIMARY KEY,
    owner         TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    due_at_ms     INTEGER,
    expires_at_ms INTEGER NOT NULL,
    body          TEXT    NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS executions_by_due ON executions (due_at_ms) WHERE due_at_ms IS NOT NULL;
CREATE INDEX IF NOT EXISTS executions_by_expiry ON executions (expires_at_ms);
";

/// Version 7 keeps ListTasks' `totalSize` off the size of the store: `task_counts` holds, per
/// owner and state, how many rows `tasks` has, kept by triggers in the transaction of every
/// insert, delete and state change (whatever the path: a create, an append, the purge), so
/// the count an unfiltered or state-filtered page needs is a few rows, not a scan of the
/// owner's index (about 200 ms per page at 350,000 tasks). The rows counted include tasks that
/// expired and wait for the purge; the expiry index carried owner and state (until version
/// 10), so ListTasks subtracted those by reading the expired entries alone (at most what
/// expired since the last purge). The counts of an existing file are taken once, here.
const SCHEMA_V7: &str = "
CREATE TABLE IF NOT EXISTS task_counts (
    owner TEXT    NOT NULL,
    state TEXT    NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (owner, state)
) WITHOUT ROWID;
DELETE FROM task_counts;
INSERT INTO task_counts (owner, state, n) SELECT owner, state, COUNT(*) FROM tasks GROUP BY owner, state;
CREATE TRIGGER IF NOT EXISTS task_counts_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO task_counts (owner, state, n) VALUES (NEW.owner, NEW.state, 1)
        ON CONFLICT (owner, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS task_counts_delete AFTER DELETE ON tasks BEGIN
    UPDATE task_counts SET n = n - 1 WHERE owner = OLD.owner AND state = OLD.state;
END;
CREATE TRIGGER IF NOT EXISTS task_counts_update AFTER UPDATE OF owner, state ON tasks
    WHEN OLD.owner IS NOT NEW.owner OR OLD.state IS NOT NEW.state BEGIN
    UPDATE task_counts SET n = n - 1 WHERE owner = OLD.owner AND state = OLD.state;
    INSERT INTO task_counts (owner, state, n) VALUES (NEW.owner, NEW.state, 1)
        ON CONFLICT (owner, state) DO UPDATE SET n = n + 1;
END;
DROP INDEX IF EXISTS tasks_by_expiry;
CREATE INDEX IF NOT EXISTS tasks_by_expiry_owner ON tasks (expires_at_ms, owner, state);
";

/// Version 8 adds `relay_gates`: per task whose execution waited for another agent, its owner
/// and the digests of the push tokens its relay route takes (`DurableExecution::relay_tokens`),
/// which the route checks a push against before it reads the record; kept after the record,
/// until it expires. Records saved before have none until their next save.
const SCHEMA_V8: &str = "
CREATE TABLE IF NOT EXISTS relay_gates (
    task_id       TEXT    NOT NULL PRIMARY KEY,
    owner         TEXT    NOT NULL,
    tokens        TEXT    NOT NULL,
    expires_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Version 9 takes the count off every create: a new task's row no longer adds to
/// `task_counts` in its own transaction (a trigger's upsert, and one more page of the log per
/// commit: about 10 % of a blocking echo's instructions). `task_counts_mark.w` is the highest
/// `rowid` of `tasks` the counts hold: rows above it are counted where they are read (a
/// range of the table's newest rows), and the writer folds them into `task_counts` every
/// [`crate::COUNTS_FOLD_EVERY`] in one transaction of its own, moving the mark. The delete and
/// state-change triggers move counts only for rows at or below the mark (a row above it
/// is counted as it stands when it is folded), and a delete lowers the mark to the highest
/// row left, so that SQLite, which gives a new row the highest `rowid` plus one, never gives
/// a new row a `rowid` at or below it. Nothing is kept in memory: a crash loses nothing.
/// The counts of an existing file are taken again, here.
const SCHEMA_V9: &str = "
DROP TRIGGER IF EXISTS task_counts_insert;
DROP TRIGGER IF EXISTS task_counts_delete;
DROP TRIGGER IF EXISTS task_counts_update;
CREATE TABLE IF NOT EXISTS task_counts_mark (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    w  INTEGER NOT NULL
);
DELETE FROM task_counts;
INSERT INTO task_counts (owner, state, n) SELECT owner, state, COUNT(*) FROM tasks GROUP BY owner, state;
INSERT OR REPLACE INTO task_counts_mark (id, w) VALUES (1, (SELECT COALESCE(MAX(rowid), 0) FROM tasks));
CREATE TRIGGER IF NOT EXISTS task_counts_delete AFTER DELETE ON tasks BEGIN
    UPDATE task_counts SET n = n - 1 WHERE owner = OLD.owner AND state = OLD.state
        AND OLD.rowid <= (SELECT w FROM task_counts_mark);
    UPDATE task_counts_mark SET w = (SELECT COALESCE(MAX(rowid), 0) FROM tasks)
        WHERE w > (SELECT COALESCE(MAX(rowid), 0) FROM tasks);
END;
CREATE TRIGGER IF NOT EXISTS task_counts_update AFTER UPDATE OF owner, state ON tasks
    WHEN (OLD.owner IS NOT NEW.owner OR OLD.state IS NOT NEW.state)
        AND OLD.rowid <= (SELECT w FROM task_counts_mark) BEGIN
    UPDATE task_counts SET n = n - 1 WHERE owner = OLD.owner AND state = OLD.state;
    INSERT INTO task_counts (owner, state, n) VALUES (NEW.owner, NEW.state, 1)
        ON CONFLICT (owner, state) DO UPDATE SET n = n + 1;
END;
";

/// Version 10 takes owner and state out of the expiry index again: tasks written within one
/// expiry step share their expiry (see the core's `expiry_at`), so nearly every comparison an
/// insert made in `(expires_at_ms, owner, state)` ran on through the owner's text to the state
/// (about 2 % of a blocking echo's instructions). The expired rows ListTasks subtracts are
/// at most what expired since the last purge, so it reads their owner and state from the
/// table instead.
const SCHEMA_V10: &str = "
DROP INDEX IF EXISTS tasks_by_expiry_owner;
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (expires_at_ms);
";

/// Creates the schema if the file is new. Runs in an immediate transaction so that several
/// processes opening a fresh file at once do not race: the second one waits (busy timeout),
/// then sees the version the first one wrote.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), DbError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(DbError::Invalid(format!(
            "database schema version {version} is newer than this build supports ({SCHEMA_VERSION})"
        )));
    }
    if version < 1 {
        tx.execute_batch(SCHEMA_V1)?;
    }
    if version < 2 {
        tx.execute_batch(SCHEMA_V2)?;
    }
    if version < 3 {
        add_columns(&tx, "leases", &SCHEMA_V3_COLUMNS)?;
        tx.execute_batch(SCHEMA_V3_INDEX)?;
        tx.execute_batch(SCHEMA_V3_REPLIES)?;
    }
    if version < 4 {
        add_columns(&tx, "leases", &SCHEMA_V4_COLUMNS)?;
    }
    if version < 5 {
        add_columns(&tx, "tasks", &SCHEMA_V5_COLUMNS)?;
        tx.execute_batch(SCHEMA_V5_INDEXES)?;
    }
    if version < 6 {
        tx.execute_batch(SCHEMA_V6)?;
    }
    if version < 7 {
        tx.execute_batch(SCHEMA_V7)?;
    }
    if version < 8 {
        tx.execute_batch(SCHEMA_V8)?;
    }
    if version < 9 {
        tx.execute_batch(SCHEMA_V9)?;
    }
    if version < 10 {
        tx.execute_batch(SCHEMA_V10)?;
    }
    if version < SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()?;
    Ok(())
}

/// Adds the columns of `table` that are missing, column by column, so that a file whose
/// version number was rolled back (the upgrade tests do that) upgrades too: SQLite has no
/// ADD COLUMN IF NOT EXISTS.
fn add_columns(
    tx: &rusqlite::Transaction<'_>,
    table: &str,
    columns: &[(&str, &str)],
) -> rusqlite::Result<()> {
    for (column, add) in columns {
        let exists: bool = tx.query_row(
            "SELECT COUNT(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
            [table, column],
            |r| r.get(0),
        )?;
        if !exists {
            tx.execute_batch(add)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task_store::fold_counts;

    /// Inserts a task row of `owner` in `state`; returns its `rowid`.
    fn insert(conn: &Connection, id: &str, owner: &str, state: &str) -> i64 {
        conn.execute(
            "INSERT INTO tasks (task_id, owner, context_id, state, status_ts_ms, version,
                                expires_at_ms, head)
             VALUES (?1, ?2, 'c', ?3, 0, 1, 9999999999999, '{}')",
            [id, owner, state],
        )
        .expect("insert");
        conn.last_insert_rowid()
    }

    /// What ListTasks counts for each owner and state (folded counts and the rows above the
    /// mark), against what the table holds.
    fn assert_counts_hold(conn: &Connection) {
        let mut truth = conn
            .prepare("SELECT owner, state, COUNT(*) FROM tasks GROUP BY owner, state")
            .expect("prepare");
        let truth: Vec<(String, String, i64)> = truth
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        let counted = |owner: &str, state: &str| -> i64 {
            conn.query_row(
                "SELECT (SELECT COALESCE(SUM(n), 0) FROM task_counts WHERE owner = ?1 AND state = ?2)
                      + (SELECT COUNT(*) FROM tasks WHERE rowid > (SELECT w FROM task_counts_mark)
                         AND owner = ?1 AND state = ?2)",
                [owner, state],
                |r| r.get(0),
            )
            .expect("count")
        };
        for (owner, state, n) in &truth {
            assert_eq!(counted(owner, state), *n, "{owner} {state}");
        }
        let all: i64 = conn
            .query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))
            .expect("all");
        let counted_all: i64 = conn
            .query_row(
                "SELECT (SELECT COALESCE(SUM(n), 0) FROM task_counts)
                      + (SELECT COUNT(*) FROM tasks WHERE rowid > (SELECT w FROM task_counts_mark))",
                [],
                |r| r.get(0),
            )
            .expect("count all");
        assert_eq!(counted_all, all);
    }

    /// The counts hold through creates, state changes and deletes on both sides of the mark,
    /// folds between them, and a deleted newest row whose `rowid` SQLite gives again.
    #[test]
    fn the_counts_hold_on_both_sides_of_the_fold_mark() {
        let mut conn = Connection::open_in_memory().expect("sqlite");
        migrate(&mut conn).expect("migrate");
        insert(&conn, "a1", "o", "WORKING");
        insert(&conn, "a2", "o", "WORKING");
        insert(&conn, "b1", "p", "COMPLETED");
        assert_counts_hold(&conn);
        assert!(fold_counts(&conn).expect("fold") > 0);
        assert_counts_hold(&conn);
        // Folded rows move between states by the trigger.
        conn.execute(
            "UPDATE tasks SET state = 'COMPLETED' WHERE task_id = 'a1'",
            [],
        )
        .expect("update");
        assert_counts_hold(&conn);
        // Rows above the mark are counted as they stand.
        let newest = insert(&conn, "a3", "o", "WORKING");
        conn.execute("UPDATE tasks SET state = 'FAILED' WHERE task_id = 'a3'", [])
            .expect("update");
        assert_counts_hold(&conn);
        assert!(fold_counts(&conn).expect("fold") > 0);
        assert_counts_hold(&conn);
        // The newest row, folded, deleted: SQLite gives its rowid to the next row, which must
        // not count as folded.
        conn.execute("DELETE FROM tasks WHERE task_id = 'a3'", [])
            .expect("delete");
        assert_counts_hold(&conn);
        assert_eq!(insert(&conn, "a4", "o", "WORKING"), newest);
        assert_counts_hold(&conn);
        conn.execute("DELETE FROM tasks WHERE task_id = 'a2'", [])
            .expect("delete");
        assert_counts_hold(&conn);
        assert!(fold_counts(&conn).expect("fold") > 0);
        assert_eq!(fold_counts(&conn).expect("fold again"), 0);
        assert_counts_hold(&conn);
        conn.execute("DELETE FROM tasks", []).expect("delete all");
        assert_counts_hold(&conn);
        insert(&conn, "a5", "o", "WORKING");
        assert_counts_hold(&conn);
    }
}
