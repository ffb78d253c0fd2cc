//! The store's SQLite connections: the settings every connection gets, and the error of a
//! blocking store call ([`DbError`]).

use std::time::Duration;

use a2a_core::StoreError;
use rusqlite::Connection;

/// How long a statement waits for another connection's write lock before failing.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Prepared statements kept per connection: every statement of the store fits.
pub(crate) const STATEMENT_CACHE: usize = 64;

/// Applies the writer's settings to a new connection.
pub(crate) fn configure(conn: &mut Connection) -> Result<(), DbError> {
    // Set first, so that everything below (and the schema creation) waits for other processes
    // instead of failing with SQLITE_BUSY.
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    stable_plans(conn)?;
    enable_wal(conn)?;
    // In WAL mode NORMAL only risks the last commits on power loss, not on a process crash.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    Ok(())
}

/// Plans each statement once, whatever values it is run with (SQLite's query planner stability
/// guarantee). The bundled SQLite is built with STAT4, under which a statement whose plan could
/// depend on a bound value (an equality on part of a key, a range on an indexed column: "now"
/// against an expiry) is prepared again whenever that value changes, which is every run: a push
/// config lookup in every write was parsed and planned anew each time. The store's statements
/// have one right plan; they keep it.
pub(crate) fn stable_plans(conn: &Connection) -> Result<(), DbError> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
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
