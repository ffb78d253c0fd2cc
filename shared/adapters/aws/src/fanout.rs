//! The push fan-out of the DynamoDB store: the table's stream (`NEW_IMAGE`) carries every
//! write of a task head, and a write's new events are in it (the head carries them, and `nv`
//! says which are new). So the fan-out happens because the write happened, whatever became of
//! its writer: on AWS the fan-out function reads the stream (Lambda's event source mapping,
//! whose filter passes only heads with push configs, `pf = "1"`); locally [`StreamPoller`]
//! reads it. Both hand [`AppendedEvents`] to [`a2a_core::A2aService::fan_out`].
//!
//! Records are handled as Lambda delivers them: JSON, with the image in DynamoDB's JSON form
//! (`{"S": …}`, `{"N": "…"}`, binary as base64).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use a2a_core::{AppendedEvents, LoggedEvent, Owner, StoreError};
use aws_sdk_dynamodbstreams::types::{AttributeValue, ShardIteratorType};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::items::{attr, HEAD_SK};

/// What Lambda's filter passes to the fan-out function (and [`StreamPoller`] does too): only
/// writes of heads of tasks with push configs. Other records never invoke it.
pub const FILTER_PATTERN: &str = r#"{"dynamodb":{"NewImage":{"pf":{"S":["1"]}}}}"#;

/// Whether a record passes [`FILTER_PATTERN`].
pub fn passes_filter(record: &Value) -> bool {
    record
        .pointer("/dynamodb/NewImage/pf/S")
        .and_then(Value::as_str)
        == Some("1")
}

fn s<'a>(image: &'a Value, name: &str) -> Option<&'a str> {
    image.get(name)?.get("S")?.as_str()
}

/// The events a stream record of a task head says its write added, with the task's push
/// configs at that moment; `None` for any other record (another item, a removal, a write that
/// added no event, a task without push configs).
pub fn appended_in_record(record: &Value) -> Result<Option<AppendedEvents>, String> {
    let Some(image) = record.pointer("/dynamodb/NewImage") else {
        return Ok(None);
    };
    let (Some(pk), Some(HEAD_SK)) = (s(image, attr::PK), s(image, attr::SK)) else {
        return Ok(None);
    };
    let Some(task_id) = pk.strip_prefix("T#") else {
        return Ok(None);
    };
    let number = |name: &str| -> Option<u64> { image.get(name)?.get("N")?.as_str()?.parse().ok() };
    // A head of an older layout (no `nv`) does not say which events are new.
    let (Some(version), Some(before)) = (number(attr::VERSION), number(attr::PREV_VERSION)) else {
        return Ok(None);
    };
    let config_ids: Vec<String> = image
        .pointer(&format!("/{}/SS", attr::CONFIG_IDS))
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if version <= before || config_ids.is_empty() {
        return Ok(None);
    }
    let owner = s(image, attr::OWNER).ok_or("the head has no owner")?;
    let packed = image
        .pointer(&format!("/{}/B", attr::HEAD_EVENTS))
        .and_then(Value::as_str)
        .ok_or("the head carries no events")?;
    let deflated = STANDARD
        .decode(packed)
        .map_err(|e| format!("the head's events are not base64: {e}"))?;
    let text = crate::deflate::inflate(&deflated)
        .map_err(|e| format!("the head's events do not inflate: {e}"))?;
    let carried: Vec<LoggedEvent> =
        serde_json::from_slice(&text).map_err(|e| format!("the head's events: {e}"))?;
    let mut config_ids = config_ids;
    config_ids.sort();
    Ok(Some(AppendedEvents {
        owner: Owner(owner.to_owned()),
        task_id: task_id.to_owned(),
        events: carried.into_iter().filter(|e| e.seq > before).collect(),
        config_ids,
    }))
}

/// The writes of a batch of records, in order. A record that cannot be read is logged and
/// left out: it can never be read, and holding the stream back for it would stop every push.
pub fn appended_in_records(records: &[Value]) -> Vec<AppendedEvents> {
    records
        .iter()
        .filter(|r| passes_filter(r))
        .filter_map(|record| match appended_in_record(record) {
            Ok(appended) => appended,
            Err(err) => {
                tracing::error!(error = %err, "a stream record of a task head cannot be read; its pushes are lost");
                None
            }
        })
        .collect()
}

/// An attribute value of the Streams API in DynamoDB's JSON form, as Lambda hands it over.
fn to_json(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::S(v) => json!({ "S": v }),
        AttributeValue::N(v) => json!({ "N": v }),
        AttributeValue::B(v) => json!({ "B": STANDARD.encode(v.as_ref()) }),
        AttributeValue::Ss(v) => json!({ "SS": v }),
        AttributeValue::Ns(v) => json!({ "NS": v }),
        AttributeValue::Bs(v) => {
            json!({ "BS": v.iter().map(|b| STANDARD.encode(b.as_ref())).collect::<Vec<_>>() })
        }
        AttributeValue::Bool(v) => json!({ "BOOL": v }),
        AttributeValue::Null(v) => json!({ "NULL": v }),
        AttributeValue::L(v) => json!({ "L": v.iter().map(to_json).collect::<Vec<_>>() }),
        AttributeValue::M(v) => json!({ "M": image_json(v) }),
        _ => Value::Null,
    }
}

fn image_json(image: &HashMap<String, AttributeValue>) -> Map<String, Value> {
    image.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()
}

/// A record of the Streams API as Lambda's DynamoDB event delivers it.
pub(crate) fn record_json(record: &aws_sdk_dynamodbstreams::types::Record) -> Value {
    let mut dynamodb = Map::new();
    if let Some(change) = record.dynamodb() {
        if let Some(keys) = change.keys() {
            dynamodb.insert("Keys".into(), Value::Object(image_json(keys)));
        }
        if let Some(image) = change.new_image() {
            dynamodb.insert("NewImage".into(), Value::Object(image_json(image)));
        }
        if let Some(seq) = change.sequence_number() {
            dynamodb.insert("SequenceNumber".into(), json!(seq));
        }
        dynamodb.insert("StreamViewType".into(), json!("NEW_IMAGE"));
    }
    json!({
        "eventID": record.event_id(),
        "eventName": record.event_name().map(|n| n.as_str()),
        "eventSource": "aws:dynamodb",
        "dynamodb": dynamodb,
    })
}

/// Where a [`StreamPoller`] remembers how far it got.
#[derive(Debug, Clone)]
pub enum Checkpoints {
    /// In memory: a restarted poller starts from the oldest record the stream keeps (24 h).
    Memory,
    /// In the table itself, one item per shard under `pk = FANOUT#<name>`, so a restarted
    /// poller (a local server after a crash) goes on after the last batch it handed over.
    /// Such a write is itself a record of the stream: a batch of nothing but position writes
    /// is not written again (see [`StreamPoller::commit`]), or the poller would read its own
    /// write, write again, and never go idle.
    Table(String),
}

/// The partition of the pollers' position items (`FANOUT#<name>`).
const CHECKPOINT_PREFIX: &str = "FANOUT#";

/// Whether a stream record is the write of a poller's position item (any poller's).
pub fn is_checkpoint(record: &Value) -> bool {
    record
        .pointer(&format!("/dynamodb/Keys/{}/S", attr::PK))
        .and_then(Value::as_str)
        .is_some_and(|pk| pk.starts_with(CHECKPOINT_PREFIX))
}

/// One shard's reading position.
#[derive(Debug)]
struct Shard {
    id: String,
    iterator: Option<String>,
    /// The sequence number of the last record handed over and committed.
    committed: Option<String>,
    /// The shard was closed and read to its end.
    done: bool,
}

/// A batch of records of one shard, in order, as Lambda would hand them to the function.
#[derive(Debug, Clone)]
pub struct StreamBatch {
    shard: String,
    /// The records.
    pub records: Vec<Value>,
    last: String,
    /// Whether any record is more than a poller's own position write: only then is the
    /// position after it worth a write of its own.
    news: bool,
}

/// Reads a table's stream the way Lambda's event source mapping does, for hosts without one
/// (the local server on DynamoDB, and the local Lambda harness): batches per shard, in order,
/// and the position after a batch only once it is committed.
pub struct StreamPoller {
    streams: aws_sdk_dynamodbstreams::Client,
    dynamodb: aws_sdk_dynamodb::Client,
    table: String,
    stream_arn: String,
    checkpoints: Checkpoints,
    shards: Vec<Shard>,
    described: Option<Instant>,
}

impl std::fmt::Debug for StreamPoller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamPoller")
            .field("stream_arn", &self.stream_arn)
            .finish_non_exhaustive()
    }
}

fn backend(what: &str, err: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("{what}: {err}"))
}

impl StreamPoller {
    /// A poller of `table`'s stream, with the SDK's standard configuration
    /// (`AWS_ENDPOINT_URL` points it at an emulator). Fails if the table has no stream.
    pub async fn from_env(table: &str, checkpoints: Checkpoints) -> Result<Self, StoreError> {
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .load()
            .await;
        Self::new(&crate::with_call_limits(&sdk), table, checkpoints).await
    }

    /// A poller of `table`'s stream with the clients of `sdk`. Fails if the table has no
    /// stream.
    pub async fn new(
        sdk: &aws_config::SdkConfig,
        table: &str,
        checkpoints: Checkpoints,
    ) -> Result<Self, StoreError> {
        let sdk = sdk.clone();
        let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
        let described = dynamodb
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| {
                backend(
                    "DescribeTable",
                    aws_sdk_dynamodb::error::DisplayErrorContext(e),
                )
            })?;
        let stream_arn = described
            .table()
            .and_then(|t| t.latest_stream_arn())
            .ok_or_else(|| {
                StoreError::Backend(format!(
                    "table {table} has no stream: the push fan-out needs its stream (NEW_IMAGE)"
                ))
            })?
            .to_owned();
        Ok(Self {
            streams: aws_sdk_dynamodbstreams::Client::new(&sdk),
            dynamodb,
            table: table.to_owned(),
            stream_arn,
            checkpoints,
            shards: Vec::new(),
            described: None,
        })
    }

    /// The stream's ARN.
    pub fn stream_arn(&self) -> &str {
        &self.stream_arn
    }

    fn checkpoint_key(
        &self,
        shard: &str,
    ) -> Option<HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
        use aws_sdk_dynamodb::types::AttributeValue as A;
        match &self.checkpoints {
            Checkpoints::Memory => None,
            Checkpoints::Table(name) => Some(HashMap::from([
                (
                    attr::PK.to_owned(),
                    A::S(format!("{CHECKPOINT_PREFIX}{name}")),
                ),
                (attr::SK.to_owned(), A::S(shard.to_owned())),
            ])),
        }
    }

    /// Finds shards it does not know yet (at most every 10 s).
    async fn describe(&mut self) -> Result<(), StoreError> {
        if self
            .described
            .is_some_and(|at| at.elapsed() < Duration::from_secs(10))
        {
            return Ok(());
        }
        let out = self
            .streams
            .describe_stream()
            .stream_arn(&self.stream_arn)
            .send()
            .await
            .map_err(|e| {
                backend(
                    "DescribeStream",
                    aws_sdk_dynamodbstreams::error::DisplayErrorContext(e),
                )
            })?;
        self.described = Some(Instant::now());
        let shards = out
            .stream_description()
            .map(|d| d.shards().to_vec())
            .unwrap_or_default();
        for shard in shards {
            let Some(id) = shard.shard_id() else { continue };
            if self.shards.iter().any(|s| s.id == id) {
                continue;
            }
            let committed = match self.checkpoint_key(id) {
                Some(key) => self
                    .dynamodb
                    .get_item()
                    .table_name(&self.table)
                    .set_key(Some(key))
                    .consistent_read(true)
                    .send()
                    .await
                    .map_err(|e| {
                        backend("GetItem", aws_sdk_dynamodb::error::DisplayErrorContext(e))
                    })?
                    .item()
                    .and_then(|i| i.get("seq"))
                    .and_then(|v| v.as_s().ok())
                    .cloned(),
                None => None,
            };
            self.shards.push(Shard {
                id: id.to_owned(),
                iterator: None,
                committed,
                done: false,
            });
        }
        Ok(())
    }

    /// A fresh iterator for `shard`: after its committed record, or from the oldest kept.
    async fn iterator(&self, shard: &Shard) -> Result<Option<String>, StoreError> {
        let request = self
            .streams
            .get_shard_iterator()
            .stream_arn(&self.stream_arn)
            .shard_id(&shard.id);
        let request = match &shard.committed {
            Some(seq) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(seq),
            None => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        let out = request.send().await.map_err(|e| {
            backend(
                "GetShardIterator",
                aws_sdk_dynamodbstreams::error::DisplayErrorContext(e),
            )
        })?;
        Ok(out.shard_iterator().map(str::to_owned))
    }

    /// The next batch of records (of the first shard that has any), or `None` when no shard
    /// has a new record now.
    pub async fn next_batch(&mut self) -> Result<Option<StreamBatch>, StoreError> {
        self.describe().await?;
        for index in 0..self.shards.len() {
            if self.shards[index].done {
                continue;
            }
            if self.shards[index].iterator.is_none() {
                let iterator = self.iterator(&self.shards[index]).await?;
                let shard = &mut self.shards[index];
                shard.iterator = iterator;
                if shard.iterator.is_none() {
                    shard.done = true;
                    continue;
                }
            }
            let iterator = self.shards[index].iterator.clone().unwrap_or_default();
            let out = self
                .streams
                .get_records()
                .shard_iterator(iterator)
                .limit(100)
                .send()
                .await
                .map_err(|e| {
                    backend(
                        "GetRecords",
                        aws_sdk_dynamodbstreams::error::DisplayErrorContext(e),
                    )
                })?;
            let shard = &mut self.shards[index];
            shard.iterator = out.next_shard_iterator().map(str::to_owned);
            if shard.iterator.is_none() {
                shard.done = true;
            }
            let records: Vec<Value> = out.records().iter().map(record_json).collect();
            let last = out
                .records()
                .last()
                .and_then(|r| r.dynamodb())
                .and_then(|d| d.sequence_number())
                .map(str::to_owned);
            if let Some(last) = last {
                let news = records.iter().any(|r| !is_checkpoint(r));
                return Ok(Some(StreamBatch {
                    shard: shard.id.clone(),
                    records,
                    last,
                    news,
                }));
            }
        }
        Ok(None)
    }

    /// Records that `batch` was handed over: the poller (or the next one, with table
    /// checkpoints) goes on after it. With table checkpoints, a batch holding only position
    /// writes moves the position in memory alone: writing it would add one more such record
    /// for the next batch, without end (a restarted poller reads those few records again and
    /// skips them).
    pub async fn commit(&mut self, batch: &StreamBatch) -> Result<(), StoreError> {
        if let Some(mut key) = self.checkpoint_key(&batch.shard).filter(|_| batch.news) {
            key.insert(
                "seq".to_owned(),
                aws_sdk_dynamodb::types::AttributeValue::S(batch.last.clone()),
            );
            self.dynamodb
                .put_item()
                .table_name(&self.table)
                .set_item(Some(key))
                .send()
                .await
                .map_err(|e| backend("PutItem", aws_sdk_dynamodb::error::DisplayErrorContext(e)))?;
        }
        if let Some(shard) = self.shards.iter_mut().find(|s| s.id == batch.shard) {
            shard.committed = Some(batch.last.clone());
        }
        Ok(())
    }

    /// Forgets where `batch` left the reading: the next [`Self::next_batch`] reads it again
    /// from after the last committed record (after a failed hand-over).
    pub fn rewind(&mut self, batch: &StreamBatch) {
        if let Some(shard) = self.shards.iter_mut().find(|s| s.id == batch.shard) {
            shard.iterator = None;
            shard.done = false;
        }
    }
}

/// What one [`poll_once`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polled {
    /// A batch was read, handed over and committed: read on at once.
    Handed,
    /// No shard had a new record.
    Idle,
    /// Reading, handing over or committing failed: try again after a pause.
    Failed,
}

/// One step of [`run_stream_fan_out`]: reads the next batch, hands the writes it holds to
/// `fan_out`, and commits the batch once they are enqueued (a batch that fails is read again).
pub async fn poll_once<F, Fut>(poller: &mut StreamPoller, fan_out: &F) -> Polled
where
    F: Fn(Vec<AppendedEvents>) -> Fut,
    Fut: std::future::Future<Output = Result<(), StoreError>>,
{
    let batch = match poller.next_batch().await {
        Ok(Some(batch)) => batch,
        Ok(None) => return Polled::Idle,
        Err(err) => {
            tracing::warn!(error = %err, "stream fan-out: reading the stream failed");
            return Polled::Failed;
        }
    };
    let appended = appended_in_records(&batch.records);
    if !appended.is_empty() {
        if let Err(err) = fan_out(appended).await {
            tracing::warn!(error = %err, "stream fan-out: enqueueing failed; retrying");
            poller.rewind(&batch);
            return Polled::Failed;
        }
    }
    match poller.commit(&batch).await {
        Ok(()) => Polled::Handed,
        Err(err) => {
            tracing::warn!(error = %err, "stream fan-out: committing failed");
            Polled::Failed
        }
    }
}

/// Runs the fan-out of `table`'s stream into `fan_out` until `stop` turns true: what the
/// fan-out function does on AWS, for a host without it (the local server on DynamoDB). A
/// batch that fails is read again after a pause; a record is committed only once its jobs are
/// enqueued.
pub async fn run_stream_fan_out<F, Fut>(
    mut poller: StreamPoller,
    fan_out: F,
    mut stop: tokio::sync::watch::Receiver<bool>,
) where
    F: Fn(Vec<AppendedEvents>) -> Fut,
    Fut: std::future::Future<Output = Result<(), StoreError>>,
{
    // An idle stream is polled less and less often, down to once a second (a `GetRecords` is a
    // billed request outside Lambda); a record brings the next poll back at once.
    const FIRST_IDLE: Duration = Duration::from_millis(100);
    const MAX_IDLE: Duration = Duration::from_secs(1);
    let mut idle = FIRST_IDLE;
    loop {
        if *stop.borrow() {
            return;
        }
        let pause = match poll_once(&mut poller, &fan_out).await {
            Polled::Handed => {
                idle = FIRST_IDLE;
                continue;
            }
            Polled::Idle => {
                let pause = idle;
                idle = (idle * 2).min(MAX_IDLE);
                pause
            }
            Polled::Failed => Duration::from_secs(1),
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            _ = stop.changed() => {}
        }
    }
}
