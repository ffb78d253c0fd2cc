//! Embedded adapters: the task store, the work queue and the push queue in one SQLite file,
//! and the local files of the auth and signing keys.
//!
//! [`SqliteStore`] implements [`TaskStore`](a2a_core::TaskStore),
//! [`WorkQueue`](a2a_core::WorkQueue) and [`PushQueue`](a2a_core::PushQueue) on
//! `<data_dir>/a2a.sqlite3`, and adds the consumer side of the queues ([`SqliteStore::receive`]
//! and friends) for the local server's worker and push loops.
//!
//! Correctness never depends on this process's memory: every write is a `BEGIN IMMEDIATE`
//! transaction that checks what it relies on (the stored version, the lease holder) inside the
//! transaction, so several processes may share the file. In-process channels only wake waiters
//! early; a short poll interval notices writes made by other processes.

mod queue;
mod schema;
mod task_store;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2a_core::StoreError;
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::watch;

pub use queue::{EmbeddedQueue, QueueName, ReceivedJob};

/// Name of the database file inside the data directory.
pub const DB_FILE_NAME: &str = "a2a.sqlite3";

/// How long a statement waits for another connection's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How often waiters re-check the file, to notice writes made by other processes (which do not
/// reach this process's wake-up channels).
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// The task store and both queues, in one SQLite file.
///
/// Cloning is cheap: clones share one connection and the wake-up channels. Open the same file
/// from several processes (or several `SqliteStore`s) if you like; conditional writes keep
/// them correct.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// One connection is enough for a local server; calls are serialised through the mutex and
    /// run on the blocking thread pool, never on the async workers.
    conn: Mutex<Connection>,
    /// Bumped after every successful create or append by this process.
    appended: watch::Sender<u64>,
    /// Bumped after every enqueue on the work queue by this process.
    work_enqueued: watch::Sender<u64>,
    /// Bumped after every enqueue on the push queue by this process.
    push_enqueued: watch::Sender<u64>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) `<data_dir>/a2a.sqlite3` and its schema.
    ///
    /// The file runs in WAL mode with `synchronous=NORMAL`: a committed transaction survives a
    /// crash of the process (only an OS crash or power loss may lose the last commits).
    pub fn open(data_dir: &Path) -> Result<SqliteStore, StoreError> {
        std::fs::create_dir_all(data_dir)
            .map_err(|e| StoreError::Backend(format!("cannot create the data directory: {e}")))?;
        let mut conn = Connection::open(data_dir.join(DB_FILE_NAME)).map_err(DbError::from)?;
        configure(&mut conn)?;
        schema::migrate(&mut conn)?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                conn: Mutex::new(conn),
                appended: watch::channel(0).0,
                work_enqueued: watch::channel(0).0,
                push_enqueued: watch::channel(0).0,
            }),
        })
    }

    /// Runs `f` with the connection on the blocking thread pool.
    async fn with_conn<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, DbError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            // A panic while holding the lock poisons it; the connection itself is still sound
            // (an open rusqlite transaction rolls back when dropped), so carry on with it.
            let mut conn = inner
                .conn
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut conn)
        })
        .await
        .map_err(|e| StoreError::Backend(format!("store call did not complete: {e}")))?
        .map_err(StoreError::from)
    }
}

/// Starts a write transaction that takes the write lock at once, so that what it reads is
/// still true when it writes, even with other processes on the same file.
pub(crate) fn write_tx(conn: &mut Connection) -> Result<rusqlite::Transaction<'_>, DbError> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

/// Sets the per-connection pragmas.
fn configure(conn: &mut Connection) -> Result<(), DbError> {
    // Set first, so that everything below (and the schema creation) waits for other processes
    // instead of failing with SQLITE_BUSY.
    conn.busy_timeout(BUSY_TIMEOUT)?;
    enable_wal(conn)?;
    // In WAL mode NORMAL only risks the last commits on power loss, not on a process crash.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    Ok(())
}

/// Switches the file to WAL mode (a persistent setting: a no-op once done).
///
/// Switching a new file takes an exclusive lock and SQLite does not call the busy handler for
/// it, so when several processes open a new file at once, all but one get `SQLITE_BUSY` here.
/// Retry for as long as the busy timeout would have waited.
fn enable_wal(conn: &Connection) -> Result<(), DbError> {
    let started = std::time::Instant::now();
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(DbError::Invalid(format!(
                    "could not switch the database to WAL mode (got {mode})"
                )))
            }
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Errors inside a blocking store call, converted to [`StoreError`] at the boundary.
#[derive(Debug)]
pub(crate) enum DbError {
    /// SQLite failed.
    Sqlite(rusqlite::Error),
    /// A stored or given value did not (de)serialise.
    Json(serde_json::Error),
    /// The caller broke a precondition, or the file holds something unexpected.
    Invalid(String),
    /// A store outcome to pass on as is (`Conflict`, `InvalidPageToken`).
    Store(StoreError),
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

impl From<serde_json::Error> for DbError {
    fn from(e: serde_json::Error) -> Self {
        Self::Json(e)
    }
}

impl From<StoreError> for DbError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<DbError> for StoreError {
    fn from(e: DbError) -> Self {
        match e {
            // SQLite's messages name tables and constraints, never values: safe for logs.
            DbError::Sqlite(e) => StoreError::Backend(format!("sqlite: {e}")),
            DbError::Json(e) => StoreError::Backend(format!("stored JSON: {e}")),
            DbError::Invalid(text) => StoreError::Backend(text),
            DbError::Store(e) => e,
        }
    }
}

/// Milliseconds since the Unix epoch, now.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(duration_ms)
        .unwrap_or(0)
}

/// A duration in milliseconds, saturating (SQLite integers are i64).
fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Converts a count or sequence number to SQLite's integer type, saturating.
fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Waits until `rx` changes, `until` passes, or one poll interval elapses, whichever is first.
async fn wait_tick(rx: &mut watch::Receiver<u64>, until: tokio::time::Instant) {
    let tick = until.min(tokio::time::Instant::now() + POLL_INTERVAL);
    tokio::select! {
        changed = rx.changed() => {
            // The sender lives as long as the store, so this cannot fail while we hold `self`;
            // if it ever did, fall back to plain polling rather than spinning.
            if changed.is_err() {
                tokio::time::sleep_until(tick).await;
            }
        }
        () = tokio::time::sleep_until(tick) => {}
    }
}
