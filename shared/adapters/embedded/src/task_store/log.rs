//! The task event log on SQLite: heads in `tasks`, events in `events`, reply records, and
//! ListTasks on the by-owner index; each write's push fan-out in its own transaction.

use std::time::Duration;

use a2a_core::{
    LoggedEvent, Owner, PushConfigStore, SendRecord, StoreError, StoredReply, StoredTask,
    TaskLogStore, TaskPage, TaskQuery,
};
use a2a_protocol::{Task, TaskPushNotificationConfig, Timestamp};
use async_trait::async_trait;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::queue::{insert_push_rows, push_rows};
use crate::{now_ms, to_i64, CachedStatements, DbError, SqliteStore, POLL_INTERVAL};

/// A head as written to the `tasks` table, serialised before entering the blocking pool.
struct HeadRow {
    task_id: String,
    owner: String,
    context_id: String,
    state: &'static str,
    status_ts_ms: i64,
    version: i64,
    expires_at_ms: i64,
    /// The task as JSON; empty when `events` carries it.
    head: String,
    /// For a task born terminal: the events of its one write as a JSON array, from which the
    /// task is rebuilt ([`LoggedEvent::replay`]); such a task has no rows in `events`.
    events: Option<String>,
}

impl HeadRow {
    fn new(head: &StoredTask) -> Result<Self, DbError> {
        Self::with_body(head, serde_json::to_string(&head.task)?, None)
    }

    /// The head of a task born terminal, carrying `events` (already checked) instead of the
    /// task: one row where a head and its event rows would be four, and nothing is ever
    /// appended to it.
    fn born_terminal(head: &StoredTask, events: &[LoggedEvent]) -> Result<Self, DbError> {
        Self::with_body(head, String::new(), Some(serde_json::to_string(events)?))
    }

    fn with_body(head: &StoredTask, body: String, events: Option<String>) -> Result<Self, DbError> {
        if head.task.id.is_empty() {
            return Err(DbError::Invalid("a stored task needs an id".into()));
        }
        Ok(Self {
            task_id: head.task.id.clone(),
            owner: head.owner.as_str().to_owned(),
            context_id: head.task.context_id.clone(),
            state: head.task.status.state.as_str(),
            status_ts_ms: status_ts_ms(&head.task),
            version: to_i64(head.version),
            expires_at_ms: head.expires_at.millis(),
            head: body,
            events,
        })
    }

    fn insert(&self, conn: &Connection) -> Result<(), DbError> {
        conn.execute_cached(
            "INSERT INTO tasks (task_id, owner, context_id, state, status_ts_ms, version,
                                expires_at_ms, head, events)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                self.task_id,
                self.owner,
                self.context_id,
                self.state,
                self.status_ts_ms,
                self.version,
                self.expires_at_ms,
                self.head,
                self.events
            ],
        )?;
        Ok(())
    }

    fn update(&self, conn: &Connection) -> Result<(), DbError> {
        conn.execute_cached(
            "UPDATE tasks SET context_id = ?2, state = ?3, status_ts_ms = ?4, version = ?5,
                              expires_at_ms = ?6, head = ?7, events = NULL
             WHERE task_id = ?1",
            params![
                self.task_id,
                self.context_id,
                self.state,
                self.status_ts_ms,
                self.version,
                self.expires_at_ms,
                self.head
            ],
        )?;
        Ok(())
    }
}

/// The task of a `tasks` row: its `head` JSON, or the replay of the `events` it carries.
fn task_of_row(head: &str, events: Option<&str>) -> Result<Task, DbError> {
    match events {
        Some(events) => {
            let events: Vec<LoggedEvent> = serde_json::from_str(events)?;
            LoggedEvent::replay(&events)
                .map_err(|e| DbError::Invalid(format!("stored events: {}", e.message())))
        }
        None => Ok(serde_json::from_str(head)?),
    }
}

/// An event as written to the `events` table.
struct EventRow {
    seq: i64,
    at_ms: i64,
    body: String,
}

impl EventRow {
    /// Serialises `events`, checked by [`check_seqs`].
    fn all(
        events: &[LoggedEvent],
        expected_version: u64,
        head_version: u64,
    ) -> Result<Vec<Self>, DbError> {
        check_seqs(events, expected_version, head_version)?;
        events
            .iter()
            .map(|event| {
                Ok(Self {
                    seq: to_i64(event.seq),
                    at_ms: event.at.millis(),
                    body: serde_json::to_string(event)?,
                })
            })
            .collect()
    }

    fn insert_all(rows: &[Self], conn: &Connection, task_id: &str) -> Result<(), DbError> {
        let mut stmt = conn.prepare_cached(
            "INSERT INTO events (task_id, seq, at_ms, body) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for row in rows {
            stmt.execute(params![task_id, row.seq, row.at_ms, row.body])?;
        }
        Ok(())
    }
}

/// Checks that `events` continue a log of length `expected_version` without gaps and end at
/// `head_version`. A caller that breaks this has a bug; refusing the write keeps the log
/// gapless whatever the caller does.
fn check_seqs(
    events: &[LoggedEvent],
    expected_version: u64,
    head_version: u64,
) -> Result<(), DbError> {
    let mut next = expected_version;
    for event in events {
        next += 1;
        if event.seq != next {
            return Err(DbError::Invalid(format!(
                "event seq {} does not follow version {}",
                event.seq,
                next - 1
            )));
        }
    }
    if head_version != next {
        return Err(DbError::Invalid(format!(
            "head version {head_version} does not match the last event seq {next}"
        )));
    }
    Ok(())
}

/// The push fan-out of one write, done inside the write's transaction: the task's push
/// configs as that transaction sees them, and one job per visible event and config on the push
/// queue, which lives in the same file. So the jobs exist if and only if the events do, and a
/// task without push configs costs one index lookup.
struct FanOut {
    owner: String,
    task_id: String,
    /// The sequence numbers of the write's visible events (none: nothing to look up).
    seqs: Vec<u64>,
}

impl FanOut {
    fn new(head: &StoredTask, events: &[LoggedEvent]) -> Self {
        Self {
            owner: head.owner.as_str().to_owned(),
            task_id: head.task.id.clone(),
            seqs: a2a_core::visible_seqs(events),
        }
    }

    /// Enqueues the jobs in `tx`; returns how many were inserted.
    fn enqueue(&self, tx: &Connection, now: i64) -> Result<usize, DbError> {
        if self.seqs.is_empty() {
            return Ok(0);
        }
        let mut stmt = tx.prepare_cached(
            "SELECT config_id FROM push_configs
             WHERE owner = ?1 AND task_id = ?2 AND expires_at_ms > ?3 ORDER BY config_id",
        )?;
        let config_ids = stmt
            .query_map(params![self.owner, self.task_id, now], |r| r.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        if config_ids.is_empty() {
            return Ok(0);
        }
        let owner = Owner(self.owner.clone());
        let jobs = a2a_core::push_jobs_at(&owner, &self.task_id, &self.seqs, &config_ids);
        insert_push_rows(tx, &push_rows(&jobs)?)
    }
}

/// A create, serialised before it enters the writer: the head row, its event rows and its push
/// fan-out.
struct NewTask {
    row: HeadRow,
    events: Vec<EventRow>,
    fan_out: FanOut,
}

impl NewTask {
    fn new(head: &StoredTask, events: &[LoggedEvent]) -> Result<Self, DbError> {
        let fan_out = FanOut::new(head, events);
        // Nothing is ever appended to a task born terminal (a blocking echo): its events ride
        // in its head row.
        let (row, events) = if head.task.status.state.is_terminal() {
            check_seqs(events, 0, head.version)?;
            (HeadRow::born_terminal(head, events)?, Vec::new())
        } else {
            (HeadRow::new(head)?, EventRow::all(events, 0, head.version)?)
        };
        Ok(Self {
            row,
            events,
            fan_out,
        })
    }

    /// Inserts the task in `tx` if its id is free; returns how many push jobs it enqueued.
    /// The insert comes first, as ids are almost always free: its primary key says when one
    /// is taken, with no lookup of its own. A refusal (a caller rolls back to its savepoint)
    /// leaves nothing written.
    fn insert(&self, tx: &Connection, now: i64) -> Result<usize, DbError> {
        let task_id = &self.row.task_id;
        match self.row.insert(tx) {
            Err(DbError::Sqlite(e)) if is_primary_key_taken(&e) => {
                let expires_at: i64 = tx.query_row_cached(
                    "SELECT expires_at_ms FROM tasks WHERE task_id = ?1",
                    [task_id],
                    |r| r.get(0),
                )?;
                if expires_at > now {
                    return Err(StoreError::Conflict.into());
                }
                // An expired task is gone as far as readers are concerned; the purge just
                // has not reclaimed it yet. Its id is free again.
                tx.execute_cached("DELETE FROM events WHERE task_id = ?1", [task_id])?;
                tx.execute_cached("DELETE FROM tasks WHERE task_id = ?1", [task_id])?;
                self.row.insert(tx)?;
            }
            inserted => inserted?,
        }
        // A live reply record holds the id as a live task would (idempotent SendMessage).
        if reply_holds(tx, task_id, now)? {
            return Err(StoreError::Conflict.into());
        }
        EventRow::insert_all(&self.events, tx, task_id)?;
        self.fan_out.enqueue(tx, now)
    }
}

impl SqliteStore {
    /// Creates many tasks in one transaction, each as [`TaskLogStore::create_task`] would
    /// (the same rows, checks and push fan-out): all of them, or none and `Conflict` if one's
    /// id is taken. For bulk loads (the benchmark fills a store with a million tasks this
    /// way): one commit for the lot instead of one per task. The writer runs nothing else
    /// meanwhile, so keep batches to thousands.
    pub async fn create_tasks(
        &self,
        tasks: &[(StoredTask, Vec<LoggedEvent>)],
    ) -> Result<(), StoreError> {
        let creates = tasks
            .iter()
            .map(|(head, events)| NewTask::new(head, events))
            .collect::<Result<Vec<_>, _>>()?;
        let pushed = self
            .write(move |tx| {
                let now = now_ms();
                creates
                    .iter()
                    .map(|create| create.insert(tx, now))
                    .sum::<Result<usize, DbError>>()
            })
            .await?;
        self.push_enqueued(pushed);
        Ok(())
    }
}

/// Whether `error` is an insert refused because its primary key is taken.
fn is_primary_key_taken(error: &rusqlite::Error) -> bool {
    matches!(
        error,
        rusqlite::Error::SqliteFailure(e, _)
            if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
    )
}

/// Whether a live reply record holds `task_id`; an expired one is deleted (its id is free).
fn reply_holds(conn: &Connection, task_id: &str, now: i64) -> Result<bool, DbError> {
    let expires: Option<i64> = conn
        .query_row_cached(
            "SELECT expires_at_ms FROM message_replies WHERE task_id = ?1",
            [task_id],
            |r| r.get(0),
        )
        .optional()?;
    match expires {
        Some(at) if at > now => Ok(true),
        Some(_) => {
            conn.execute_cached("DELETE FROM message_replies WHERE task_id = ?1", [task_id])?;
            Ok(false)
        }
        None => Ok(false),
    }
}

/// What `task_id` holds for `owner` ([`a2a_core::TaskLogStore::load_send`]), with one statement for both
/// kinds of record the id may hold: the task's head, or the reply record of a message answered
/// without a task.
fn send_record(
    conn: &Connection,
    owner: Owner,
    task_id: &str,
) -> Result<Option<SendRecord>, DbError> {
    let row: Option<(bool, String, Option<String>, i64, i64)> = conn
        .query_row_cached(
            "SELECT 0, head, events, version, expires_at_ms FROM tasks
             WHERE task_id = ?1 AND owner = ?2 AND expires_at_ms > ?3
             UNION ALL
             SELECT 1, body, NULL, 0, expires_at_ms FROM message_replies
             WHERE task_id = ?1 AND owner = ?2 AND expires_at_ms > ?3
             LIMIT 1",
            params![task_id, owner.as_str(), now_ms()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .optional()?;
    let Some((reply, body, events, version, expires_at_ms)) = row else {
        return Ok(None);
    };
    if reply {
        return Ok(Some(SendRecord::Reply(serde_json::from_str(&body)?)));
    }
    Ok(Some(SendRecord::Task(StoredTask {
        task: task_of_row(&body, events.as_deref())?,
        owner,
        version: u64::try_from(version).unwrap_or(0),
        expires_at: Timestamp::from_millis(expires_at_ms),
    })))
}

/// Whether a ListTasks query's `totalSize` comes from the kept counts
/// ([`super::counts::counted_total`]):
/// no context and no timestamp filter. Its page is then one short index range too.
fn counted(query: &TaskQuery) -> bool {
    query.context_id.is_none() && query.status_timestamp_after.is_none()
}

/// A ListTasks page of `owner`'s tasks: keyset paging on the by-owner indexes, newest status
/// first, and the matches' count, in one read transaction.
fn list_page(
    conn: &mut Connection,
    owner: &str,
    query: &TaskQuery,
    cursor: Option<Cursor>,
) -> Result<TaskPage, DbError> {
    // The query is validated upstream; a zero would only make the page useless.
    let page_size = query.page_size.max(1);
    let now = now_ms();
    let mut filter = String::from("owner = ?1 AND expires_at_ms > ?2");
    let mut args: Vec<Value> = vec![owner.to_owned().into(), now.into()];
    if let Some(context_id) = query.context_id.clone() {
        args.push(context_id.into());
        filter.push_str(&format!(" AND context_id = ?{}", args.len()));
    }
    if let Some(state) = query.state {
        args.push(state.as_str().to_owned().into());
        filter.push_str(&format!(" AND state = ?{}", args.len()));
    }
    if let Some(after) = query.status_timestamp_after {
        args.push(after.millis().into());
        filter.push_str(&format!(" AND status_ts_ms >= ?{}", args.len()));
    }

    // One read transaction, so the count and the page see the same snapshot.
    let tx = conn.transaction()?;
    let total = if counted(query) {
        super::counts::counted_total(&tx, owner, query.state.map(|s| s.as_str()), now)?
    } else {
        tx.query_row_cached(
            &format!("SELECT COUNT(*) FROM tasks WHERE {filter}"),
            params_from_iter(&args),
            |r| r.get(0),
        )?
    };

    // Keyset paging: continue strictly after the last task of the previous page. This
    // stays correct when tasks of earlier pages were deleted or expired meanwhile.
    if let Some(cursor) = cursor {
        args.push(cursor.ts.into());
        args.push(cursor.id.into());
        filter.push_str(&format!(
            " AND (status_ts_ms, task_id) < (?{}, ?{})",
            args.len() - 1,
            args.len()
        ));
    }
    // One more row than the page tells whether a next page exists.
    args.push(i64::try_from(page_size + 1).unwrap_or(i64::MAX).into());
    let sql = format!(
        "SELECT head, events, status_ts_ms, task_id FROM tasks WHERE {filter}
         ORDER BY status_ts_ms DESC, task_id DESC LIMIT ?{}",
        args.len()
    );
    let mut rows = {
        let mut stmt = tx.prepare_cached(&sql)?;
        let rows = stmt
            .query_map(params_from_iter(&args), |r| {
                Ok((
                    (r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?),
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        rows
    };
    tx.finish()?;

    let next_page_token = if rows.len() > page_size {
        rows.truncate(page_size);
        match rows.last() {
            Some((_, ts, id)) => Cursor {
                ts: *ts,
                id: id.clone(),
            }
            .encode()?,
            None => String::new(),
        }
    } else {
        String::new()
    };
    let tasks = rows
        .iter()
        .map(|((head, events), _, _)| task_of_row(head, events.as_deref()))
        .collect::<Result<Vec<Task>, _>>()?;
    Ok(TaskPage {
        tasks,
        next_page_token,
        total_size: usize::try_from(total).unwrap_or(0),
    })
}

/// The status timestamp a task is listed by, in ms (0 when it has none).
fn status_ts_ms(task: &Task) -> i64 {
    task.status.timestamp.map_or(0, Timestamp::millis)
}

/// The keyset cursor inside a ListTasks page token: the last task of the previous page.
#[derive(Serialize, Deserialize)]
struct Cursor {
    ts: i64,
    id: String,
}

impl Cursor {
    fn encode(&self) -> Result<String, DbError> {
        Ok(URL_SAFE_NO_PAD.encode(serde_json::to_vec(self)?))
    }

    /// `None` for the first page; `InvalidPageToken` for anything this store did not produce.
    fn decode(token: &str) -> Result<Option<Self>, StoreError> {
        if token.is_empty() {
            return Ok(None);
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| StoreError::InvalidPageToken)?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|_| StoreError::InvalidPageToken)
    }
}

impl SqliteStore {
    /// The stored version of a task, whoever owns it (for wake-ups only).
    async fn version_of(&self, task_id: &str) -> Result<Option<u64>, StoreError> {
        let task_id = task_id.to_owned();
        self.read(move |conn| {
            let version: Option<i64> = conn
                .query_row_cached(
                    "SELECT version FROM tasks WHERE task_id = ?1",
                    [&task_id],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(version.map(|v| u64::try_from(v).unwrap_or(0)))
        })
        .await
    }
}

#[async_trait]
impl TaskLogStore for SqliteStore {
    async fn create_task(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        let create = NewTask::new(head, events)?;
        let (task_id, version) = (create.row.task_id.clone(), head.version);
        let pushed = self.write(move |tx| create.insert(tx, now_ms())).await?;
        self.inner.appends.wrote(&task_id, version);
        self.push_enqueued(pushed);
        Ok(())
    }

    async fn create_task_with_push_configs(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
        configs: &[TaskPushNotificationConfig],
    ) -> Result<(), StoreError> {
        // The create's transaction reads the task's configs for its fan-out: store them first.
        for config in configs {
            self.put_push_config(&head.owner, config, head.expires_at)
                .await?;
        }
        self.create_task(head, events).await
    }

    async fn append_events(
        &self,
        head: &StoredTask,
        expected_version: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        let row = HeadRow::new(head)?;
        let fan_out = FanOut::new(head, events);
        let events = EventRow::all(events, expected_version, head.version)?;
        let expected = to_i64(expected_version);
        let (task_id, version) = (row.task_id.clone(), head.version);
        let pushed = self
            .write(move |tx| {
                let now = now_ms();
                // The check and the write are in one immediate transaction: no other
                // connection, in this process or another, can write between them.
                let stored: Option<(i64, String, i64)> = tx
                    .query_row_cached(
                        "SELECT version, owner, expires_at_ms FROM tasks WHERE task_id = ?1",
                        [&row.task_id],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                    )
                    .optional()?;
                match stored {
                    Some((version, owner, expires_at))
                        if version == expected && owner == row.owner && expires_at > now => {}
                    // Gone, expired, someone else's or moved on: the caller re-reads and decides.
                    _ => return Err(StoreError::Conflict.into()),
                }
                EventRow::insert_all(&events, tx, &row.task_id)?;
                row.update(tx)?;
                fan_out.enqueue(tx, now)
            })
            .await?;
        self.inner.appends.wrote(&task_id, version);
        self.push_enqueued(pushed);
        Ok(())
    }

    async fn load_task(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<StoredTask>, StoreError> {
        let owner = owner.clone();
        let task_id = task_id.to_owned();
        self.read(move |conn| {
            let row: Option<(String, Option<String>, i64, i64)> = conn
                .query_row_cached(
                    "SELECT head, events, version, expires_at_ms FROM tasks
                     WHERE task_id = ?1 AND owner = ?2 AND expires_at_ms > ?3",
                    params![task_id, owner.as_str(), now_ms()],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .optional()?;
            let Some((head, events, version, expires_at_ms)) = row else {
                return Ok(None);
            };
            Ok(Some(StoredTask {
                task: task_of_row(&head, events.as_deref())?,
                owner,
                version: u64::try_from(version).unwrap_or(0),
                expires_at: Timestamp::from_millis(expires_at_ms),
            }))
        })
        .await
    }

    async fn load_send(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<SendRecord>, StoreError> {
        let owner = owner.clone();
        let task_id = task_id.to_owned();
        // On a read connection, on the calling thread. It ran on the writer's thread once (8e7a273:
        // the writer's page cache stays warm across its commits), but the hop there and back
        // cost two thread wake-ups per send, more than the pages it saved: pinned, 4 to 16
        // connections, 1.09-1.28x the echoes per second without it (docs/performance.md).
        self.read(move |conn| send_record(conn, owner, &task_id))
            .await
    }

    async fn put_reply(&self, task_id: &str, reply: &StoredReply) -> Result<bool, StoreError> {
        let task_id = task_id.to_owned();
        let owner = reply.owner.as_str().to_owned();
        let expires_at_ms = reply.expires_at.millis();
        let body = serde_json::to_string(reply).map_err(DbError::from)?;
        self.write(move |tx| {
            let now = now_ms();
            let task_live: Option<i64> = tx
                .query_row_cached(
                    "SELECT 1 FROM tasks WHERE task_id = ?1 AND expires_at_ms > ?2",
                    params![task_id, now],
                    |r| r.get(0),
                )
                .optional()?;
            if task_live.is_some() || reply_holds(tx, &task_id, now)? {
                return Ok(false);
            }
            tx.execute_cached(
                "INSERT INTO message_replies (task_id, owner, body, expires_at_ms)
                 VALUES (?1, ?2, ?3, ?4)",
                params![task_id, owner, body, expires_at_ms],
            )?;
            Ok(true)
        })
        .await
    }

    async fn read_events(
        &self,
        owner: &Owner,
        task_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let owner = owner.as_str().to_owned();
        let task_id = task_id.to_owned();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |conn| {
            // The head applies the owner and expiry of the task to its events; a task born
            // terminal carries them itself.
            let head: Option<Option<String>> = conn
                .query_row_cached(
                    "SELECT events FROM tasks
                     WHERE task_id = ?1 AND owner = ?2 AND expires_at_ms > ?3",
                    params![task_id, owner, now_ms()],
                    |r| r.get(0),
                )
                .optional()?;
            match head {
                None => Ok(Vec::new()),
                Some(Some(carried)) => {
                    let events: Vec<LoggedEvent> = serde_json::from_str(&carried)?;
                    Ok(events
                        .into_iter()
                        .filter(|e| e.seq > after_seq)
                        .take(usize::try_from(limit).unwrap_or(usize::MAX))
                        .collect())
                }
                Some(None) => {
                    let mut stmt = conn.prepare_cached(
                        "SELECT body FROM events WHERE task_id = ?1 AND seq > ?2
                         ORDER BY seq LIMIT ?3",
                    )?;
                    let bodies = stmt
                        .query_map(params![task_id, to_i64(after_seq), limit], |r| {
                            r.get::<_, String>(0)
                        })?
                        .collect::<Result<Vec<_>, _>>()?;
                    bodies
                        .iter()
                        .map(|body| Ok(serde_json::from_str(body)?))
                        .collect()
                }
            }
        })
        .await
    }

    async fn list_tasks(&self, owner: &Owner, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let cursor = Cursor::decode(&query.page_token)?;
        let owner = owner.as_str().to_owned();
        let query = query.clone();
        if counted(&query) {
            // A page and a few count rows: as quick as a GetTask, so it runs where GetTask does.
            self.read(move |conn| list_page(conn, &owner, &query, cursor))
                .await
        } else {
            self.read_blocking(move |conn| list_page(conn, &owner, &query, cursor))
                .await
        }
    }

    async fn wait_for_append(&self, task_id: &str, after_version: u64, max_wait: Duration) {
        let deadline = tokio::time::Instant::now() + max_wait;
        // Watch first, read second: a write of this process that lands after the read then
        // shows in the watch. Writes of other processes only show in a read: one per tick.
        let mut watch = self.inner.appends.watch(task_id);
        let mut read = true;
        loop {
            if *watch.receiver.borrow_and_update() > after_version {
                return;
            }
            if read {
                match self.version_of(task_id).await {
                    Ok(Some(version)) if version > after_version => return,
                    Ok(_) => {}
                    Err(e) => {
                        // Only a hint: the caller re-reads and will meet the error itself.
                        tracing::warn!(error = %e, "wait_for_append could not read the task version");
                        return;
                    }
                }
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return;
            }
            let tick = deadline.min(now + POLL_INTERVAL);
            read = tokio::select! {
                // The sender lives while this watch does: a change is this process's write.
                changed = watch.receiver.changed() => changed.is_err(),
                () = tokio::time::sleep_until(tick) => true,
            };
        }
    }
}
