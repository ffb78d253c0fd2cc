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

mod checkpoint;
mod connection;
mod queue;
mod schema;
mod task_store;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2a_core::StoreError;
use checkpoint::{checkpoint_in_background, CheckpointPause, LogCounts, LogLimits};
pub(crate) use connection::DbError;
use connection::{configure, stable_plans, BUSY_TIMEOUT, STATEMENT_CACHE};
use rusqlite::{Connection, OpenFlags};
use tokio::sync::{oneshot, watch};

pub use queue::{EmbeddedQueue, QueueName, ReceivedJob};

/// Name of the database file inside the data directory.
pub const DB_FILE_NAME: &str = "a2a.sqlite3";

/// How often waiters re-check the file, to notice writes made by other processes (which do not
/// reach this process's wake-up channels).
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// The task store and both queues, in one SQLite file.
///
/// Cloning is cheap: clones share the connections and the wake-up channels. Open the same file
/// from several processes (or several `SqliteStore`s) if you like; conditional writes keep
/// them correct.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// The writer thread's queue. One thread owns the only write connection of this store and
    /// commits whatever writes are waiting in one transaction (group commit), so concurrent
    /// writers share a commit instead of queueing for the file lock one by one.
    writer: mpsc::Sender<WriteJob>,
    /// Idle read connections. WAL lets readers run beside the writer, so a read runs at once
    /// on the calling thread instead of waiting for a thread hop or for the writer.
    readers: Mutex<Vec<Connection>>,
    /// The database file, to open more read connections.
    path: PathBuf,
    /// Turns of the reads that scan ([`SqliteStore::read_blocking`]).
    scans: tokio::sync::Semaphore,
    /// The versions this process wrote, per task, for the followers waiting on that task.
    appends: Appends,
    /// Bumped after every enqueue on the work queue by this process.
    work_enqueued: watch::Sender<u64>,
    /// Bumped after every enqueue on the push queue by this process.
    push_enqueued: watch::Sender<u64>,
}

/// Per task, the last version this process wrote, for the followers waiting on that task. Only
/// tasks someone waits on have an entry, so an append wakes the followers of its own task and
/// nobody else.
#[derive(Default)]
struct Appends {
    waiting: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl Appends {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, watch::Sender<u64>>> {
        // A poisoned map only means a panic elsewhere while it was held; its content is valid.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that this process wrote `task_id` up to `version`: wakes its followers.
    fn wrote(&self, task_id: &str, version: u64) {
        if let Some(sender) = self.lock().get(task_id) {
            sender.send_if_modified(|seen| {
                let newer = version > *seen;
                if newer {
                    *seen = version;
                }
                newer
            });
        }
    }

    /// Starts watching `task_id`'s writes by this process; the entry goes with its last watcher.
    fn watch(&self, task_id: &str) -> AppendWatch<'_> {
        let receiver = self
            .lock()
            .entry(task_id.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        AppendWatch {
            appends: self,
            task_id: task_id.to_owned(),
            receiver,
        }
    }
}

/// A follower's watch on one task's writes (see [`Appends::watch`]).
struct AppendWatch<'a> {
    appends: &'a Appends,
    task_id: String,
    receiver: watch::Receiver<u64>,
}

impl Drop for AppendWatch<'_> {
    fn drop(&mut self) {
        let mut waiting = self.appends.lock();
        // Under the lock nobody subscribes meanwhile: one receiver left is this one.
        if waiting
            .get(&self.task_id)
            .is_some_and(|sender| sender.receiver_count() <= 1)
        {
            waiting.remove(&self.task_id);
        }
    }
}

/// A write for the writer thread: it runs inside the batch's transaction, says whether it
/// succeeded (else its savepoint is rolled back), and returns how to answer its caller once the
/// batch's commit is known, so that nobody is answered before their write is durable.
type WriteJob = Box<dyn FnOnce(&Connection) -> (bool, Answer) + Send>;

/// Answers a write's caller with the outcome of the commit of its batch.
type Answer = Box<dyn FnOnce(Result<(), String>) + Send>;

/// How many idle read connections are kept; more are opened while more threads read at once.
const MAX_IDLE_READERS: usize = 8;

/// How many writes at most share one transaction.
const MAX_BATCH: usize = 128;

/// How often at most the writer folds the newest tasks into ListTasks' counts (schema v9):
/// a ListTasks counts the rows not folded yet one by one, at most what was created in
/// this time (about 3,500 rows at full speed on two CPUs, well under a millisecond to count).
pub(crate) const COUNTS_FOLD_EVERY: Duration = Duration::from_millis(250);

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) `<data_dir>/a2a.sqlite3` and its schema.
    ///
    /// The file runs in WAL mode with `synchronous=NORMAL`: a committed transaction is in the
    /// WAL file (the operating system's page cache) before its caller is answered, so it
    /// survives a crash or `kill -9` of the process; only an OS crash or power loss may lose
    /// the last commits. Each commit therefore costs no `fsync`; checkpoints do.
    pub fn open(data_dir: &Path) -> Result<SqliteStore, StoreError> {
        Self::open_with(data_dir, LogLimits::SERVER)
    }

    /// [`Self::open`] with the write-ahead log kept within `limits`.
    fn open_with(data_dir: &Path, limits: LogLimits) -> Result<SqliteStore, StoreError> {
        Self::open_counted(data_dir, limits).map(|(store, _)| store)
    }

    /// [`Self::open_with`], and what the store's log went through since.
    fn open_counted(
        data_dir: &Path,
        limits: LogLimits,
    ) -> Result<(SqliteStore, Arc<LogCounts>), StoreError> {
        std::fs::create_dir_all(data_dir)
            .map_err(|e| StoreError::Backend(format!("cannot create the data directory: {e}")))?;
        let path = data_dir.join(DB_FILE_NAME);
        let opened = Connection::open(&path)
            .map_err(DbError::from)
            .and_then(|mut conn| {
                configure(&mut conn)?;
                schema::migrate(&mut conn)?;
                Ok(conn)
            });
        // SQLite says "unable to open database file" whatever the reason; the common one,
        // a directory or file this user may not write, is named instead.
        let mut conn =
            opened.map_err(|e| unwritable(data_dir, &path).unwrap_or_else(|| e.into()))?;
        let counts = Arc::new(LogCounts::default());
        let checkpoint = checkpoint_in_background(&mut conn, &path, limits, counts.clone())?;
        let (writer, jobs) = mpsc::channel();
        std::thread::Builder::new()
            .name("a2a-sqlite-writer".into())
            .spawn(move || run_writer(conn, jobs, &checkpoint))
            .map_err(|e| StoreError::Backend(format!("cannot start the store's writer: {e}")))?;
        let store = SqliteStore {
            inner: Arc::new(Inner {
                writer,
                readers: Mutex::new(Vec::new()),
                path,
                scans: tokio::sync::Semaphore::new(
                    std::thread::available_parallelism().map_or(2, |n| n.get()),
                ),
                appends: Appends::default(),
                work_enqueued: watch::channel(0).0,
                push_enqueued: watch::channel(0).0,
            }),
        };
        Ok((store, counts))
    }

    /// Runs the write `f` on the writer thread, inside a transaction that it may share with
    /// other writes (each in its own savepoint: an error rolls back only its own changes), and
    /// answers once that transaction committed.
    ///
    /// The transaction is `BEGIN IMMEDIATE`: it holds the file's write lock from the start, so
    /// what `f` reads is still true when it writes, even with other processes on the file.
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, DbError> + Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let job: WriteJob = Box::new(move |conn: &Connection| {
            let result = f(conn);
            let ok = result.is_ok();
            let answer: Answer = Box::new(move |committed: Result<(), String>| {
                let result = match committed {
                    Ok(()) => result.map_err(StoreError::from),
                    Err(e) => Err(StoreError::Backend(e)),
                };
                let _ = answer.send(result);
            });
            (ok, answer)
        });
        self.inner
            .writer
            .send(job)
            .map_err(|_| StoreError::Backend("the store's writer has stopped".into()))?;
        // A dropped answer means the write was not run (see `run_writer`).
        answered
            .await
            .map_err(|_| StoreError::Backend("the store could not run the write".into()))?
    }

    /// Runs the read `f` at once on this thread, on an idle read connection.
    ///
    /// Reads are point lookups by primary key or short index ranges, so they take
    /// microseconds: far less than a hop to another thread. A WAL reader never waits for the
    /// writer. Use [`read_blocking`](Self::read_blocking) for reads that scan.
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Connection) -> Result<T, DbError>,
    {
        self.read_now(f)
    }

    /// Runs a read that may scan (a ListTasks that counts its matches, with a context or
    /// timestamp filter) on the blocking thread pool,
    /// at most one per CPU at once: they are CPU-bound, and more would only share the same
    /// CPUs, each on a thread and a read connection (with its page cache) of its own.
    async fn read_blocking<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, DbError> + Send + 'static,
    {
        let _turn = self
            .inner
            .scans
            .acquire()
            .await
            .map_err(|_| StoreError::Backend("the store is closed".into()))?;
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.read_now(f))
            .await
            .map_err(|e| StoreError::Backend(format!("store call did not complete: {e}")))?
    }

    fn read_now<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Connection) -> Result<T, DbError>,
    {
        let idle = self
            .inner
            .readers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => open_reader(&self.inner.path)?,
        };
        let result = f(&mut conn);
        let mut readers = self
            .inner
            .readers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if readers.len() < MAX_IDLE_READERS {
            readers.push(conn);
        }
        result.map_err(StoreError::from)
    }
}

/// Opens a read connection on an existing store file.
fn open_reader(path: &Path) -> Result<Connection, DbError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    stable_plans(&conn)?;
    // Readers share the OS page cache; a private 2 MB SQLite cache each (the default) only
    // adds resident memory per pooled connection.
    conn.pragma_update(None, "cache_size", -READER_CACHE_KIB)?;
    Ok(conn)
}

/// SQLite page cache per read connection, in KiB (the writer keeps the default).
const READER_CACHE_KIB: i64 = 256;

/// The writer thread: takes every write waiting, runs them in one immediate transaction (each
/// in a savepoint), commits once, then answers them all. Ends when the store is dropped.
///
/// A write that cannot run (the transaction or its savepoint could not start, or it panicked)
/// is dropped unanswered, and its caller gets an error; the others go on.
fn run_writer(conn: Connection, jobs: mpsc::Receiver<WriteJob>, checkpoint: &CheckpointPause) {
    let mut folded_at = std::time::Instant::now();
    while let Ok(first) = jobs.recv() {
        if folded_at.elapsed() >= COUNTS_FOLD_EVERY {
            fold_counts(&conn);
            folded_at = std::time::Instant::now();
        }
        checkpoint.honour();
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let mut answers: Vec<Answer> = Vec::with_capacity(batch.len());
        let mut in_transaction = false;
        for job in batch {
            if !in_transaction {
                if let Err(e) = control(&conn, "BEGIN IMMEDIATE") {
                    tracing::error!(error = %e, "the store could not start a write transaction");
                    continue;
                }
                in_transaction = true;
            }
            if let Err(e) = control(&conn, "SAVEPOINT w") {
                tracing::error!(error = %e, "the store could not start a write");
                continue;
            }
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&conn)));
            let kept = match ran {
                Ok((true, answer)) => {
                    answers.push(answer);
                    control(&conn, "RELEASE w")
                }
                Ok((false, answer)) => {
                    answers.push(answer);
                    roll_back_savepoint(&conn)
                }
                Err(_) => roll_back_savepoint(&conn),
            };
            if let Err(e) = kept {
                tracing::error!(error = %e, "the store could not end a write");
            }
            if conn.is_autocommit() {
                // SQLite rolled the whole transaction back (an I/O error, a full disk): every
                // write of it so far is lost. Say so, and start afresh for the rest.
                for answer in answers.drain(..) {
                    answer(Err("sqlite: the write transaction was rolled back".into()));
                }
                in_transaction = false;
            }
        }
        if !in_transaction {
            continue;
        }
        // SQLite's messages name tables and constraints, never values: safe to pass on.
        let committed = control(&conn, "COMMIT").map_err(|e| {
            let _ = control(&conn, "ROLLBACK");
            format!("sqlite: {e}")
        });
        for answer in answers {
            answer(committed.clone());
        }
    }
}

/// Folds the newest tasks into ListTasks' counts ([`task_store::fold_counts`]) in a transaction of
/// its own. A failure changes nothing (the rows stay counted where they are read) and is
/// tried again at the next fold.
fn fold_counts(conn: &Connection) {
    let folded = control(conn, "BEGIN IMMEDIATE")
        .and_then(|()| task_store::fold_counts(conn))
        .and_then(|_| control(conn, "COMMIT"));
    if let Err(e) = folded {
        if !conn.is_autocommit() {
            let _ = control(conn, "ROLLBACK");
        }
        tracing::warn!(error = %e, "the store could not fold new tasks into the ListTasks counts");
    }
}

/// Runs a transaction-control statement (`BEGIN`, `SAVEPOINT`, `COMMIT`, …) through the
/// statement cache: the writer runs a few of them per write, and parsing one each time cost
/// more than running it.
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// Undoes the changes of the write in savepoint `w`, keeping the others of the transaction.
fn roll_back_savepoint(conn: &Connection) -> rusqlite::Result<()> {
    if conn.is_autocommit() {
        return Ok(());
    }
    control(conn, "ROLLBACK TO w")?;
    control(conn, "RELEASE w")
}

/// `execute` and `query_row` through the connection's prepared-statement cache: the store runs
/// the same few statements over and over, and preparing one costs more than running it.
pub(crate) trait CachedStatements {
    /// [`Connection::execute`], with the statement prepared once per connection.
    fn execute_cached<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;

    /// [`Connection::query_row`], with the statement prepared once per connection.
    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>;
}

impl CachedStatements for Connection {
    fn execute_cached<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

/// Sets the per-connection pragmas.
/// Why the store cannot be written, if the reason is the file system's: the directory refuses
/// a new file, or the store's file refuses writes (permissions, a read-only file system).
fn unwritable(data_dir: &Path, path: &Path) -> Option<StoreError> {
    let probe = data_dir.join(".a2a-write-check");
    let checked = std::fs::File::create(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| format!("cannot create a file in the data directory: {e}"))
        .and_then(|()| match path.exists() {
            true => std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map(drop)
                .map_err(|e| format!("cannot write {}: {e}", path.display())),
            false => Ok(()),
        });
    checked.err().map(StoreError::Backend)
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
