//! The sends that write before the agent runs: a queued execution (its task created, or its
//! follow-up recorded, and its job enqueued) and an inline follow-up (its message recorded).
//! `A2aService::start_as` runs them detached from the caller (`send::detached`), so that a
//! client that hangs up cannot stop one between its writes.

use a2a_protocol::{A2AError, Message, SendMessageRequest, TaskPushNotificationConfig};

use super::send::{repeat_of, waits_on, Place, Placed, Recording, Started};
use super::A2aService;
use crate::context::CallContext;
use crate::execution::{new_emitter, take_follow_up_lease, FollowUpClaim};
use crate::journal::DurableRun;
use crate::ports::{SendRecord, StoreError, StoredTask, WorkJob};
use crate::request::AgentRequest;
use crate::task_log::{internal, store_error, AppendError};

impl A2aService {
    /// [`Self::start_as`] once the message has a place that writes before the agent runs: a
    /// queued execution, or an inline follow-up of an existing task.
    pub(super) async fn start_placed(
        &self,
        ctx: &CallContext,
        sent: &Message,
        agent_request: AgentRequest,
        placed: Placed,
        retry: Option<(&SendMessageRequest, bool)>,
    ) -> Result<Started, A2AError> {
        let Placed {
            place,
            recording,
            inline_push,
        } = placed;
        let existing = match &place {
            Place::Queued(existing) => existing.as_ref(),
            Place::FollowUp(head) => Some(head),
        };
        if let (Some(cfg), Some(_)) = (&inline_push, existing) {
            self.core
                .log
                .put_push_config(&ctx.owner, &agent_request.task_id, cfg.clone())
                .await?;
        }
        // Each boxed: their futures are large, and unboxed they would size this one for both.
        match place {
            Place::Queued(existing) => {
                let follow_up = (existing, recording);
                Box::pin(self.start_queued(ctx, sent, agent_request, follow_up, inline_push, retry))
                    .await
            }
            Place::FollowUp(head) => {
                Box::pin(self.start_inline_follow_up(ctx, sent, agent_request, head, recording))
                    .await
            }
        }
    }

    /// Starts a queued execution: the task is created (or the follow-up recorded) and a work
    /// job enqueued for the worker.
    async fn start_queued(
        &self,
        ctx: &CallContext,
        sent: &Message,
        agent_request: AgentRequest,
        (existing, recording): (Option<StoredTask>, Recording),
        inline_push: Option<TaskPushNotificationConfig>,
        retry: Option<(&SendMessageRequest, bool)>,
    ) -> Result<Started, A2AError> {
        let task_id = agent_request.task_id.clone();
        let head = match existing {
            None => match self
                .core
                .log
                .create(&ctx.owner, &agent_request, Vec::new(), inline_push.as_ref())
                .await
            {
                Ok(head) => head,
                // A concurrent copy of the message created the task first.
                Err(AppendError::Store(StoreError::Conflict)) => {
                    return self.superseded(ctx, sent, &task_id, retry).await
                }
                // The store failed through its retries: the create may have landed all the
                // same (its answer lost, and the store's check of it failed too), and then a
                // retry of the message is a repeat of a task nobody queued work for. The job
                // is marked for the sweep, which queues it: it runs the task if it exists, and
                // ends at once if it does not.
                Err(AppendError::Store(err @ StoreError::Backend(_))) => {
                    self.mark_for_the_sweep(ctx, &task_id, 1).await;
                    return Err(AppendError::Store(err).into());
                }
                Err(err) => return Err(err.into()),
            },
            Some(head) => match self
                .record_follow_up(ctx, sent, &agent_request, head, recording)
                .await
            {
                Ok(head) => head,
                Err(err) => return self.follow_up_failed(ctx, sent, &task_id, err.into()).await,
            },
        };
        let job = WorkJob::run(&ctx.owner, &task_id, head.version).traced(ctx.traceparent.clone());
        if let Err(err) = self.core.work.enqueue_work(&job).await {
            return self.unqueued(ctx, head, err).await;
        }
        Ok(Started::Task {
            task_id,
            from_seq: head.version,
            head: Some(Box::new(head)),
            execution: None,
        })
    }

    /// Marks the job of the message at `trigger_seq` of the owner's task `task_id` for the next
    /// sweep (an inline lease that has already ended, held by
    /// [`crate::execution::unqueued_holder`]), which queues it: whether the mark was written.
    ///
    /// `Some(false)`: the lease is held by another holder, which for a task just recorded is a
    /// worker running its job; `None`: the store failed through its retries.
    async fn mark_for_the_sweep(
        &self,
        ctx: &CallContext,
        task_id: &str,
        trigger_seq: u64,
    ) -> Option<bool> {
        let holder = crate::execution::unqueued_holder(trigger_seq);
        // Made again after a failure of the backend: the lease is ours to take again (the
        // same holder), so a repeat of a mark that landed is a mark too.
        let marked = crate::task_log::with_store_retries("a mark for the sweep", task_id, || {
            self.core.store.acquire_inline_lease(
                &ctx.owner,
                task_id,
                &holder,
                a2a_protocol::Timestamp::now(),
            )
        })
        .await;
        marked.ok()
    }

    /// A queued job the queue refused through its retries: the message is recorded, and a lease
    /// that has already ended marks its job for the next sweep, which queues it
    /// ([`crate::execution::unqueued_holder`]). The send is answered as any queued one: the
    /// work starts a sweep later, and a client's retry of the message is a repeat that finds
    /// the task. An enqueue whose answer was lost may have landed all the same, and a worker
    /// already holds a new task's lease, running the job: the mark finds it held, and the send
    /// is answered as queued too. Only if the mark cannot be written either does the task end
    /// FAILED (never SUBMITTED forever) and the client get an error.
    async fn unqueued(
        &self,
        ctx: &CallContext,
        head: StoredTask,
        err: impl std::fmt::Display,
    ) -> Result<Started, A2AError> {
        let task_id = head.task.id.clone();
        tracing::warn!(%task_id, error = %err, "the work queue refused a job; the sweep queues it");
        // A new task's (its first message, at 1) lease can be held only by a worker that
        // received its job; a follow-up's could be the run before it, still letting go.
        let marked = self.mark_for_the_sweep(ctx, &task_id, head.version).await;
        if marked == Some(true) || (marked == Some(false) && head.version == 1) {
            return Ok(Started::Task {
                task_id,
                from_seq: head.version,
                head: Some(Box::new(head)),
                execution: None,
            });
        }
        let _ = self
            .core
            .log
            .finish_failed(&ctx.owner, head, "the work could not be queued")
            .await;
        Err(internal("work queue enqueue failed", err))
    }

    /// Starts an inline execution on a task waiting for this follow-up.
    async fn start_inline_follow_up(
        &self,
        ctx: &CallContext,
        sent: &Message,
        agent_request: AgentRequest,
        head: StoredTask,
        recording: Recording,
    ) -> Result<Started, A2AError> {
        let task_id = agent_request.task_id.clone();
        // Claimed before the message is recorded, so that a copy of it that finds it recorded
        // also finds its run here, and goes on with it only if it has none.
        let claim = match recording {
            Recording::Append { .. } => FollowUpClaim::of(&self.core.executions, &task_id),
            Recording::Recorded => match FollowUpClaim::sole(&self.core.executions, &task_id) {
                Some(claim) => claim,
                None => {
                    return repeat_of(&self.new_task_id(ctx, sent), sent, SendRecord::Task(head))
                }
            },
        };
        // The message makes the task active again: lease first (see the emitter). A
        // racing copy of this message may hold it: then this one is a repeat.
        if let Err(err) =
            take_follow_up_lease(&*self.core.store, &ctx.owner, &task_id, &self.core.config).await
        {
            return self.follow_up_failed(ctx, sent, &task_id, err).await;
        }
        // A recorded message's run may have begun and ended between this copy's read and its
        // claim: read again under the lease.
        let head = match recording {
            Recording::Append { .. } => head,
            Recording::Recorded => match self.core.log.load_retried(&ctx.owner, &task_id).await {
                Ok(Some(now)) if waits_on(&now, sent) => now,
                Ok(Some(now)) => {
                    let holder = &self.core.config.worker_id;
                    let _ = self.core.store.release_lease(&task_id, holder).await;
                    return repeat_of(&self.new_task_id(ctx, sent), sent, SendRecord::Task(now));
                }
                Ok(None) => return Err(A2AError::task_not_found(&task_id)),
                Err(err) => return Err(store_error(err)),
            },
        };
        let head = match self
            .record_follow_up(ctx, sent, &agent_request, head, recording)
            .await
        {
            Ok(head) => head,
            Err(err) => {
                let started = self.follow_up_failed(ctx, sent, &task_id, err.into()).await;
                // Give the lease back, unless a copy of this message won the append:
                // its run (in this process, the same holder) works under that lease.
                if started.is_err() {
                    let holder = &self.core.config.worker_id;
                    let _ = self.core.store.release_lease(&task_id, holder).await;
                }
                return started;
            }
        };
        let from_seq = head.version;
        let snapshot = Box::new(head.clone());
        let (emitter, _first) = new_emitter(
            &self.core.log,
            &self.core.durable,
            &ctx.owner,
            agent_request,
            Some(head),
            None,
            DurableRun::fresh(from_seq, ctx.traceparent.clone()),
        );
        let emitter = emitter.leased(&self.core.config, true);
        let execution = self.spawn_inline(emitter, Some(claim));
        Ok(Started::Task {
            task_id,
            from_seq,
            head: Some(snapshot),
            execution: Some(execution),
        })
    }
}
