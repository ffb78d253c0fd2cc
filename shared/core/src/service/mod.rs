//! The A2A operations. [`A2aService::call`] is what every front door (the local router, each
//! Lambda function) calls with an [`OperationRequest`]; it owns no state between requests beyond
//! configuration and clients. It runs on the kernel (`crate::kernel`).
//!
//! One file per part: [`request`] (an operation's request and answer as the front doors hand
//! them over), [`send`] (the send state machine), [`tasks`] (the operations on a task),
//! [`push_configs`] (the push-config operations), [`card`] (the agent card) and [`typed`] (typed
//! methods over `call`). Here: the service itself, the dispatch, and the entry points of the
//! background work (worker, push delivery, fan-out, sweep, shutdown).

mod card;
mod generation;
mod inline;
mod placed;
mod push_configs;
mod request;
mod send;
mod spans;
mod tasks;
mod timeline;
mod typed;
mod waits;

use std::sync::Arc;

use a2a_protocol::{A2AError, AgentCard};

pub use request::{OperationRequest, OperationResponse, Reply};
pub use waits::{RelayAnswer, RelayCheck, RelayPush};

use crate::agent::Agent;
use crate::auth::Permission;
use crate::config::ServiceConfig;
use crate::context::CallContext;
use crate::execution::Executions;
use crate::idempotency::MessageIdReuse;
use crate::journal::DurableEnv;
use crate::kernel::Core;
use crate::ports::{
    AppendedEvents, JobOutcome, Owner, PushJob, PushQueue, StoreError, StoredTask, TaskStore,
    WorkJob, WorkQueue,
};
use crate::task_log::TaskLog;

/// The A2A operations, for every front door. Cheap to clone.
#[derive(Clone)]
pub struct A2aService {
    core: Arc<Core>,
}

impl A2aService {
    /// Builds the service from its configuration, the agent and the adapters.
    pub fn new(
        config: ServiceConfig,
        agent: Arc<dyn Agent>,
        store: Arc<dyn TaskStore>,
        work: Arc<dyn WorkQueue>,
        push: Arc<dyn PushQueue>,
    ) -> Self {
        let cards = card::build(&config, &agent.describe());
        let log = Arc::new(TaskLog::new(
            store.clone(),
            config.retention,
            config.observer.clone(),
            config.message_id_reuse == MessageIdReuse::Reject,
        ));
        let durable = Arc::new(DurableEnv {
            store: store.clone() as Arc<dyn crate::ports::ExecutionStore>,
            work: work.clone(),
            remote: config.remote_agents.clone(),
            relay_base: config
                .relay_base
                .as_deref()
                .map(|b| b.trim_end_matches('/').to_owned())
                .or_else(|| rest_base(&config)),
            rest_base: rest_base(&config),
            retention: config.retention,
            remote_poll: config.remote_poll,
            relay_limits: config.relay_limits,
            observer: config.observer.clone(),
        });
        Self {
            core: Arc::new(Core {
                config,
                agent,
                store,
                log,
                work,
                push,
                signed_cards: crate::card_signing::CardSigner::new(
                    cards.card.clone(),
                    cards.extended_card,
                ),
                card: cards.card,
                offers_extended_card: cards.offers_extended_card,
                executions: Arc::new(Executions::default()),
                durable,
            }),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &ServiceConfig {
        &self.core.config
    }

    /// The public agent card.
    pub fn agent_card(&self) -> &AgentCard {
        &self.core.card
    }

    /// The public and the extended card as served: signed with the deployment's current
    /// signing keys (the JWKS's), unsigned when there are none yet.
    pub async fn signed_cards(&self) -> Arc<crate::SignedCards> {
        self.core
            .signed_cards
            .current(self.core.config.push_signer.as_ref())
            .await
    }

    /// Runs one operation for `ctx`: the one entry point of every front door. The caller's
    /// permission for the operation ([`Permission::for_operation`]) is checked here, once, before
    /// anything else: it depends on nothing but the caller, so it reveals nothing about tasks.
    pub async fn call(
        &self,
        ctx: &CallContext,
        request: OperationRequest,
    ) -> Result<OperationResponse, A2AError> {
        use tracing::Instrument as _;
        let operation = request.operation();
        let started = std::time::Instant::now();
        let (span, traced) = spans::operation_span(operation, ctx);
        let ctx = traced.as_ref().unwrap_or(ctx);
        // A 1.1 caller's tasks carry their timeline, which the request may bound.
        let timeline = timeline::requested(&request).filter(|_| ctx.version.is_1_1());
        let result = match (
            self.dispatch(ctx, request).instrument(span.clone()).await,
            timeline,
        ) {
            (Ok(response), Some(keep)) => self.with_timelines(ctx, response, keep).await,
            (result, _) => result,
        }
        .map(|response| generation::for_caller(ctx, response));
        spans::record_answer(&span, &result);
        let observer = &self.core.config.observer;
        observer.operation(operation, started.elapsed(), result.as_ref().err());
        result.map(|response| match response {
            OperationResponse::Stream(events) => {
                OperationResponse::Stream(observed(events, operation, observer.clone()))
            }
            other => other,
        })
    }

    async fn dispatch(
        &self,
        ctx: &CallContext,
        request: OperationRequest,
    ) -> Result<OperationResponse, A2AError> {
        ctx.require(Permission::for_operation(request.operation()))?;
        use OperationRequest as R;
        use OperationResponse as Out;
        Ok(match request {
            R::SendMessage(r) => Out::Sent(self.run_send_message(ctx, r).await?),
            R::SendStreamingMessage(r) => {
                Out::Stream(self.run_send_streaming_message(ctx, r).await?)
            }
            R::GetTask(r) => Out::Task(self.run_get_task(ctx, r).await?),
            R::ListTasks(r) => Out::Tasks(self.run_list_tasks(ctx, r).await?),
            R::CancelTask(r) => Out::Task(self.run_cancel_task(ctx, r).await?),
            R::SubscribeToTask(r, after) => {
                Out::Stream(self.run_subscribe_to_task(ctx, r, after).await?)
            }
            R::CreateTaskPushNotificationConfig(r) => {
                Out::PushConfig(self.run_create_push_config(ctx, r).await?)
            }
            R::GetTaskPushNotificationConfig(r) => {
                Out::PushConfig(self.run_get_push_config(ctx, r).await?)
            }
            R::ListTaskPushNotificationConfigs(r) => {
                Out::PushConfigs(self.run_list_push_configs(ctx, r).await?)
            }
            R::DeleteTaskPushNotificationConfig(r) => {
                self.run_delete_push_config(ctx, r).await?;
                Out::Empty
            }
            R::GetExtendedAgentCard(r) => Out::Card(self.run_get_extended_card(ctx, r).await?),
        })
    }

    fn require_streaming(&self) -> Result<(), A2AError> {
        if self.core.config.streaming {
            Ok(())
        } else {
            Err(A2AError::unsupported(
                "Streaming is not supported by this agent",
            ))
        }
    }

    fn check_extensions(&self, ctx: &CallContext) -> Result<(), A2AError> {
        for ext in &self.core.card.capabilities.extensions {
            if ext.required && !ctx.extensions.iter().any(|u| u == &ext.uri) {
                return Err(A2AError::ExtensionSupportRequired(format!(
                    "This agent requires the extension {}; activate it with the A2A-Extensions header",
                    ext.uri
                )));
            }
        }
        Ok(())
    }

    async fn load(&self, owner: &Owner, task_id: &str) -> Result<StoredTask, A2AError> {
        self.core.log.load(owner, task_id).await
    }

    /// Ends the tasks of inline executions still running in this process as FAILED, for a
    /// graceful shutdown: their work dies with the process, and nothing would redeliver it.
    /// Their leases are given back. Queued work is not touched: its job is redelivered to
    /// another worker.
    ///
    /// Then every open stream of this process (SendStreamingMessage, SubscribeToTask, a
    /// blocking SendMessage's wait) delivers what the log holds (those FAILED events
    /// included) and ends cleanly; a client resubscribes elsewhere for a task still running.
    pub async fn shutdown(&self) {
        self.core
            .executions
            .shutdown("The server shut down while the agent was working on this task.")
            .await;
        self.core.log.stop_following();
    }

    /// Ends the tasks of inline executions that stopped without finishing (their process
    /// crashed, a Lambda instance was lost): for up to `limit` inline leases that expired
    /// without being given back, a task still active is ended FAILED with a reason, through
    /// its log like any other final event, and the lease is removed. Returns how many tasks
    /// it ended. Hosts call it on a schedule; it is safe to run anywhere, any number of times
    /// at once.
    pub async fn sweep_expired_executions(&self, limit: usize) -> Result<usize, StoreError> {
        let core = &self.core;
        crate::execution::sweep_expired(&*core.store, &core.log, &*core.work, limit).await
    }

    /// Runs a work job (from the work queue): the agent on the job's message. `receive_count`
    /// is how many times the queue has handed this job out, this time included: for logs only.
    /// Attempts are counted on the task's lease ([`crate::LeaseStore::begin_job_attempt`]); after
    /// `max_job_attempts` the task ends FAILED and the outcome is
    /// [`JobOutcome::DeadLetter`] with the reason.
    pub async fn run_work_job(&self, job: &WorkJob, receive_count: u32) -> JobOutcome {
        self.run_work_job_until(job, receive_count, None).await
    }

    /// [`Self::run_work_job`], stopping the agent at `hand_over_at` if it still runs then: its
    /// run is handed over (what it did is kept, and a resume job on the work queue replays it
    /// from there) and the job is done. For a host whose invocation ends at a known time (a
    /// Lambda function's timeout, which would kill the job with the rest of its batch). Each
    /// hand-over counts as an attempt of the job: a run that never ends within an invocation
    /// fails its task after `max_job_attempts`.
    pub async fn run_work_job_until(
        &self,
        job: &WorkJob,
        receive_count: u32,
        hand_over_at: Option<tokio::time::Instant>,
    ) -> JobOutcome {
        let (outcome, attempt) =
            crate::worker::run_work_job(&self.core, job, receive_count, hand_over_at).await;
        if attempt > 0 {
            self.core.config.observer.work_job(attempt, &outcome);
        }
        outcome
    }

    /// Delivers a push job (from the push queue) to its webhook. `receive_count` is how many
    /// times the queue has handed this job out: a hint only (on the first receive no attempt
    /// can have been made, so the delivery record is not read). Attempts are counted on the
    /// config's delivery record; the last one that fails, after `max_push_attempts`, returns
    /// [`JobOutcome::DeadLetter`] with the reason.
    pub async fn deliver_push(&self, job: &PushJob, receive_count: u32) -> JobOutcome {
        crate::push::deliver(&self.core, job, receive_count).await
    }

    /// The push fan-out of writes a store reports after the fact, in order: one job per visible
    /// event and push config ([`crate::push_jobs`]) on the push queue. The DynamoDB table's
    /// stream feeds it (the fan-out function on Lambda, a stream poller locally), so the fan-out
    /// happens because the write happened, whatever became of its writer. Enqueueing is
    /// idempotent (jobs are de-duplicated by task, event and config), so a batch may be handed
    /// over again after a failure.
    pub async fn fan_out(&self, writes: &[AppendedEvents]) -> Result<(), StoreError> {
        if !self.core.config.push_notifications {
            return Ok(());
        }
        let jobs: Vec<PushJob> = writes
            .iter()
            .flat_map(|w| crate::push_jobs(&w.owner, &w.task_id, &w.events, &w.config_ids))
            .collect();
        if jobs.is_empty() {
            return Ok(());
        }
        self.core.push.enqueue_push(&jobs).await
    }
}

/// The REST base URL this deployment serves (its 1.0 HTTP+JSON interface), where remote agents
/// push back to; `None` when it serves no REST binding (remote tasks are then polled).
fn rest_base(config: &ServiceConfig) -> Option<String> {
    config
        .interfaces
        .iter()
        .find(|i| i.protocol_binding == a2a_protocol::BINDING_HTTP_JSON)
        .map(|i| i.url.trim_end_matches('/').to_owned())
}

/// `events`, each error in them told to `observer` as it goes out: the stream had started, so
/// its operation was counted as a success, and the error event its client gets (an HTTP 200
/// stream) would be in no error metric (issue 52's fault run counted one 5xx fewer than its
/// client saw).
fn observed(
    events: crate::EventStream,
    operation: a2a_protocol::Operation,
    observer: std::sync::Arc<dyn crate::Observer>,
) -> crate::EventStream {
    use futures::StreamExt;
    Box::pin(events.inspect(move |item| {
        if let Err(error) = item {
            observer.stream_failed(operation, error);
        }
    }))
}
