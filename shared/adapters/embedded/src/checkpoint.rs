//! Checkpoints of the store's write-ahead log, on a thread of their own: when the log is
//! copied into the database file, and when the writer pauses so that the log can start again.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use rusqlite::Connection;

use crate::connection::{stable_plans, DbError, BUSY_TIMEOUT};

/// How many pages the write-ahead log holds before the checkpoint thread copies them into the
/// database file (SQLite's own automatic checkpoint runs at 1,000, inside the committing write).
const CHECKPOINT_PAGES: i32 = 8_000;

/// How many pages the write-ahead log holds before the checkpoint thread has the writer pause
/// for a last pass once it has nearly caught up, so that the log starts again from its start
/// (see [`checkpoint_in_background`]). A pause lasts as long as the disk takes to flush (1–50 ms
/// on a busy shared disk, whatever it flushes), so pauses must be rare enough that the writes
/// they hold are well under 1 %: at the ~14,000 blocking echoes a second of a two-CPU machine
/// (about three pages each with a million tasks) this is one pause every ~4 s, and a log of up
/// to 640 MB while under such load (readers only look up the part not copied yet).
const RESTART_PAGES: i32 = 20 * CHECKPOINT_PAGES;

/// How many pages the write-ahead log may hold at most: beyond, the writer pauses for a
/// checkpoint to complete however far behind it is.
const WAL_PAGES_MAX: i32 = 30 * CHECKPOINT_PAGES;

/// When the checkpoint thread copies the log and when it has the writer pause
/// ([`checkpoint_in_background`]), in pages of the write-ahead log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogLimits {
    /// Passes start ([`CHECKPOINT_PAGES`]).
    pub(crate) checkpoint: i32,
    /// The writer pauses once a pass nearly caught up ([`RESTART_PAGES`]).
    pub(crate) restart: i32,
    /// The writer pauses however far behind the passes are ([`WAL_PAGES_MAX`]).
    pub(crate) max: i32,
}

impl LogLimits {
    /// The server's.
    pub(crate) const SERVER: LogLimits = LogLimits {
        checkpoint: CHECKPOINT_PAGES,
        restart: RESTART_PAGES,
        max: WAL_PAGES_MAX,
    };
}

/// Flushes the database file, logging a failure (the next checkpoint's own flush reports it
/// to SQLite).
fn flush(database: &std::fs::File) {
    if let Err(e) = database.sync_data() {
        tracing::warn!(error = %e, "the store's checkpoint failed");
    }
}

/// How few pages a checkpoint may have left to copy for the writer to pause while it copies
/// them: a pause then lasts one short pass, where a pause at [`WAL_PAGES_MAX`] waits for
/// whatever a slow pass left behind.
const CAUGHT_UP_PAGES: i32 = 512;

/// How many pages, copied since the database file was last flushed, the pass during a pause may
/// find to flush: more, and the checkpoint thread flushes and copies once more first.
const PAUSE_COPY_PAGES: i32 = 64;

/// How many times at most the checkpoint thread flushes and copies before it asks for a pause.
const PRESYNC_ROUNDS_MAX: usize = 4;

/// What the write-ahead log went through: how often the writer paused for it, and how often
/// it started again from its beginning (read by tests; relaxed counters otherwise).
#[derive(Debug, Default)]
pub(crate) struct LogCounts {
    pub(crate) pauses: AtomicU64,
    pub(crate) restarts: AtomicU64,
    /// Pauses whose pass found the log already started again.
    pub(crate) needless_pauses: AtomicU64,
}

/// The writer's side of checkpointing ([`checkpoint_in_background`]): the checkpoint thread
/// asks for a pause, the writer (between two batches) says it paused and waits to be let go.
pub(crate) struct CheckpointPause {
    asked: Arc<AtomicBool>,
    paused: mpsc::SyncSender<()>,
    resume: mpsc::Receiver<()>,
    counts: Arc<LogCounts>,
}

impl CheckpointPause {
    /// Pauses the writer for a checkpoint to complete, if the checkpoint thread asks for it.
    pub(crate) fn honour(&self) {
        if self.asked.swap(false, Ordering::AcqRel) && self.paused.send(()).is_ok() {
            let paused = std::time::Instant::now();
            let _ = self.resume.recv();
            self.counts.pauses.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                us = paused.elapsed().as_micros() as u64,
                "the store's writer paused for a checkpoint to complete"
            );
        }
    }
}

/// Moves checkpointing off the writer: `conn` (the write connection) no longer checkpoints
/// inside its commits. Once the log holds [`CHECKPOINT_PAGES`] pages, a thread of its own runs a
/// passive checkpoint on another connection after every commit (copying pages and `fsync`ing
/// the file while the writer goes on; after the first, each copies only what the last commits
/// added). The writer writes the log from its start again at its first transaction after a
/// checkpoint caught up with it. A writer that never stops leaves every pass a little behind,
/// so once the log holds [`RESTART_PAGES`] and a pass ends within [`CAUGHT_UP_PAGES`] of its
/// end, the thread asks the writer to pause between two batches for one last short pass,
/// which completes the checkpoint. That pass `fsync`s the database file (SQLite does when a
/// checkpoint completes, not on the passes before), so the thread first flushes what the
/// earlier passes copied, and copies what came meanwhile, without the writer waiting, again
/// while a round copied more than [`PAUSE_COPY_PAGES`] (at most [`PRESYNC_ROUNDS_MAX`] rounds):
/// measured with a million tasks, the pauses went from 40–150 ms to a few. Should the writer
/// outpace the passes (the log past [`WAL_PAGES_MAX`] pages), it pauses however far behind
/// they are. A log that a pause completed, or that started again meanwhile, needs no pause: the
/// passes between a pause and the writer's next commit still see it. SQLite's own automatic
/// checkpoint would copy and `fsync` inside the committing write, every 1,000 pages, and its
/// blocking modes would hold the writer in its busy handler, which sleeps in steps of
/// milliseconds.
pub(crate) fn checkpoint_in_background(
    conn: &mut Connection,
    path: &Path,
    limits: LogLimits,
    counts: Arc<LogCounts>,
) -> Result<CheckpointPause, DbError> {
    // Turning the automatic checkpoint off replaces SQLite's own WAL hook: set it first.
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    let (due, checkpoints) = mpsc::sync_channel::<()>(1);
    let mut log_before = 0;
    let hook_counts = counts.clone();
    conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages: i32| {
        if pages < log_before {
            hook_counts.restarts.fetch_add(1, Ordering::Relaxed);
        }
        log_before = pages;
        if pages >= limits.checkpoint {
            // A full channel means a pass is already due: nothing to add.
            let _ = due.try_send(());
        }
        Ok(())
    }))?;
    let (paused_tx, paused) = mpsc::sync_channel::<()>(0);
    let (resume, resume_rx) = mpsc::sync_channel::<()>(1);
    let asked = Arc::new(AtomicBool::new(false));
    let writer_side = CheckpointPause {
        asked: asked.clone(),
        paused: paused_tx,
        resume: resume_rx,
        counts: counts.clone(),
    };
    let checkpointer = Connection::open(path)?;
    let database = std::fs::File::open(path)
        .map_err(|e| DbError::Invalid(format!("cannot open the store's file: {e}")))?;
    checkpointer.busy_timeout(BUSY_TIMEOUT)?;
    stable_plans(&checkpointer)?;
    // The pages in the log, and how many of them the database file holds now.
    let pass = move || {
        let started = std::time::Instant::now();
        let pages = checkpointer.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get::<_, i32>(1)?, r.get::<_, i32>(2)?))
        });
        tracing::debug!(
            us = started.elapsed().as_micros() as u64,
            pages = ?pages.as_ref().ok(),
            "checkpoint pass"
        );
        pages
    };
    std::thread::Builder::new()
        .name("a2a-sqlite-checkpoint".into())
        .spawn(move || {
            // The log's length when the last pause completed the checkpoint: until the
            // writer's next commit (which starts the log again) the passes still see it.
            let mut completed_at = None;
            // Whether the log needs no pause to start again: it did, or the writer's next
            // commit will.
            let starts_again = |log: i32, copied: i32, completed_at: Option<i32>| {
                log < limits.restart || (log == copied && completed_at == Some(log))
            };
            // Ends with the writer connection, which owns the hook and with it the sender.
            while checkpoints.recv().is_ok() {
                match pass() {
                    Ok((log, copied))
                        if (log >= limits.max
                            || (log >= limits.restart && log - copied <= CAUGHT_UP_PAGES))
                            && !starts_again(log, copied, completed_at) =>
                    {
                        // What the pause's pass would flush, flushed before it: the earlier
                        // passes' pages, then a pass for what came meanwhile, again while
                        // that pass copied more than a pause should flush (the flush costs
                        // about a random page write per page copied since the last).
                        // Past the limit the writer pauses at once, however far behind the
                        // passes are: no rounds first, while it writes on.
                        let rounds = if log >= limits.max {
                            0
                        } else {
                            PRESYNC_ROUNDS_MAX
                        };
                        let (mut log, mut before) = (log, copied);
                        for _ in 0..rounds {
                            flush(&database);
                            let Ok((now_in_log, now)) = pass() else { break };
                            let copied = now - before;
                            (log, before) = (now_in_log, now);
                            if starts_again(log, before, completed_at) || copied <= PAUSE_COPY_PAGES
                            {
                                break;
                            }
                        }
                        if starts_again(log, before, completed_at) {
                            continue;
                        }
                        asked.store(true, Ordering::Release);
                        // The writer pauses at its next batch (or never: it has stopped).
                        if paused.recv().is_ok() {
                            let found = pass();
                            if matches!(found, Ok((log, _)) if log < limits.restart) {
                                counts.needless_pauses.fetch_add(1, Ordering::Relaxed);
                            }
                            completed_at = match found {
                                Ok((log, copied)) if log == copied => Some(log),
                                Ok(_) => None,
                                Err(e) => {
                                    tracing::warn!(error = %e, "the store's checkpoint failed");
                                    None
                                }
                            };
                            let _ = resume.send(());
                        }
                    }
                    Ok(_) => {}
                    // The next pass tries again; meanwhile the log only grows.
                    Err(e) => tracing::warn!(error = %e, "the store's checkpoint failed"),
                }
            }
        })
        .map_err(|e| {
            DbError::Invalid(format!("cannot start the store's checkpoint thread: {e}"))
        })?;
    Ok(writer_side)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SqliteStore, DB_FILE_NAME};
    use a2a_core::{Owner, TaskEvent, TaskLogStore};
    use a2a_protocol::{Message, TaskState, Timestamp};

    /// Writers that never let the checkpoint thread catch up on its own still keep the log
    /// within its limits: the writer pauses, the last pass completes, the log starts again
    /// from its beginning (the file never shrinks, so its size is the most it ever held).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_starts_again_under_writers_that_never_stop() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let limits = LogLimits {
            checkpoint: 64,
            restart: 256,
            max: 512,
        };
        let (store, counts) = SqliteStore::open_counted(dir.path(), limits).expect("the store");
        let owner = Owner::new("", "log-limits");
        let expires = Timestamp::from_millis(Timestamp::now().millis() + 3_600_000);
        let writers = (0..8).map(|writer| {
            let (store, owner) = (store.clone(), owner.clone());
            tokio::spawn(async move {
                for n in 0..400 {
                    let (mut head, mut events) = a2a_store_contract::new_task(
                        &owner,
                        &format!("task-{writer}-{n}"),
                        &format!("context-{writer}-{n}"),
                        TaskState::Completed,
                        Timestamp::now(),
                        expires,
                    );
                    // About two pages each, so that the tasks outgrow what the log may hold
                    // several times over.
                    let said = Message::user_text(format!("m-{writer}-{n}"), "x".repeat(6_000));
                    head.task.history = vec![said];
                    if let Some(TaskEvent::Created { task }) =
                        events.first_mut().map(|e| &mut e.event)
                    {
                        task.history.clone_from(&head.task.history);
                    }
                    store.create_task(&head, &events).await.expect("create");
                }
            })
        });
        for writer in futures::future::join_all(writers).await {
            writer.expect("a writer");
        }
        let log = std::fs::metadata(dir.path().join(format!("{DB_FILE_NAME}-wal")))
            .expect("the log file")
            .len();
        let frame = 4096 + 24;
        // 3,200 tasks of two pages take the log past 60 MB when nothing makes the writer
        // pause. With the pause it holds its limit (2 MB), what the writer committed while the
        // last pass ran and then its batch; generous, for a machine busy with other tests.
        let bound = 32 + (u64::try_from(limits.max).unwrap_or(0) + 5_120) * frame;
        assert!(log <= bound, "the log grew to {log} bytes, beyond {bound}");
        let page_count: i64 = store
            .read(|c| Ok(c.query_row("PRAGMA page_count", [], |r| r.get(0))?))
            .await
            .expect("page_count");
        let page_count = u64::try_from(page_count).unwrap_or(0);
        assert!(
            page_count * frame > bound,
            "the store ({page_count} pages) outgrew what the log may hold: the test writes enough"
        );
        // Every pause is for a log that then starts again, not for one that already has or is
        // about to (the pass just after a pause still sees the completed log).
        let (pauses, restarts, needless) = (
            counts.pauses.load(Ordering::Relaxed),
            counts.restarts.load(Ordering::Relaxed),
            counts.needless_pauses.load(Ordering::Relaxed),
        );
        assert!(restarts >= 2, "the log started again {restarts} times");
        assert!(
            pauses <= restarts + 1,
            "{pauses} pauses for {restarts} times the log started again"
        );
        // A few are a race (a pass catches up between two batches, and the writer starts the
        // log again before it pauses): 0–3 in 45–50 pauses. Pausing again after every pause,
        // the pass seeing the completed log before the writer's next commit, made 22–29 of
        // 68–80.
        assert!(
            needless * 5 <= pauses,
            "{needless} of {pauses} pauses found the log already started again"
        );
    }
}
