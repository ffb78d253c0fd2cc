//! The task store on one DynamoDB table (layout in [`crate::items`] and `docs/aws-adapters.md`).
//!
//! Correctness rests on conditional writes only: a create is conditional on the head not
//! existing (or having expired), an append is one `UpdateItem` of the head conditional on its
//! version, owner and expiry. No locks; in-process state is a cache of the heads this process
//! last saw ([`heads`]), which saves reads, never decides anything.
//!
//! One file per part of the store: [`table`] (what they share: expressions, metering, the one
//! paged query), [`log`] (heads and events), [`heads`] (what the log knows of a head and tells
//! one head write from another by), [`list`] (ListTasks on the by-owner and by-context indexes),
//! [`push_configs`] (push configs and delivery records) and [`leases`]. Each part implements
//! its store port ([`a2a_core::TaskLogStore`] in `log` with `list`,
//! [`a2a_core::PushConfigStore`], [`a2a_core::LeaseStore`], [`a2a_core::ExecutionStore`] in
//! [`executions`]).

mod counts;
mod executions;
mod heads;
mod landed;
mod leases;
mod list;
mod log;
mod push_configs;
mod table;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::meter::Meter;
use heads::HeadCache;

/// The condition of a conditional write that creates an item (a task's head or event, a
/// reply, a push delivery record): none at its key, or an expired one. An expired item is gone
/// as far as readers are concerned, even before DynamoDB's TTL deletes it, so its key is free
/// again. Uses `#pk`, `#exp` and `:now`.
const ABSENT_OR_EXPIRED: &str = "attribute_not_exists(#pk) OR #exp <= :now";

/// First pause of `TaskLogStore::wait_for_append`'s polling (and of a batch read's retry); it
/// doubles up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(50);
/// Longest pause between two polls: the worst added latency of a stream that waits for
/// another instance's events, traded against one small query per pause while idle.
const MAX_POLL: Duration = Duration::from_millis(500);

/// The task store on DynamoDB.
///
/// Cloning is cheap and shares the client. Build it once per process with a client built once
/// ([`crate::AwsClients`]).
#[derive(Clone)]
pub struct DynamoTaskStore {
    client: aws_sdk_dynamodb::Client,
    table: Arc<str>,
    meter: Option<Meter>,
    heads: HeadCache,
    /// Whether this process moved the due entries of the previous layout yet
    /// (`executions.rs`): the first sweep does, once.
    legacy_waits_moved: Arc<std::sync::atomic::AtomicBool>,
}

impl fmt::Debug for DynamoTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoTaskStore")
            .field("table", &self.table)
            .field("metered", &self.meter.is_some())
            .finish_non_exhaustive()
    }
}

impl DynamoTaskStore {
    /// A store on `table`, through `client`.
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str) -> Self {
        Self {
            client,
            table: Arc::from(table),
            meter: None,
            heads: HeadCache::default(),
            legacy_waits_moved: Arc::default(),
        }
    }

    /// Records every request of this store (and asks DynamoDB to report consumed capacity).
    pub fn with_meter(mut self, meter: Meter) -> Self {
        self.meter = Some(meter);
        self
    }

    /// The table this store writes to.
    pub fn table(&self) -> &str {
        &self.table
    }
}
