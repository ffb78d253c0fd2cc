//! Tables written by the previous layout stay readable and writable: a task as that layout left
//! it (the head with the task in `tb` and no events, one `E#<seq>` item per event written by a
//! transaction, a push config whose id is not on the head) loads, replays, takes appends in
//! this layout, and from its first append on its writes fan out to its push config.

mod common;

use std::collections::HashMap;
use std::io::Write as _;

use a2a_aws::fanout::{appended_in_records, passes_filter, Checkpoints, StreamPoller};
use a2a_core::{LoggedEvent, Owner, StoredTask, TaskEvent, TaskLogStore, TaskQuery};
use a2a_protocol::{
    Artifact, Message, Part, Task, TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskState,
    TaskStatus, TaskStatusUpdateEvent, Timestamp,
};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use common::Env;

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn status(task: &Task, state: TaskState) -> TaskEvent {
    TaskEvent::Status {
        update: TaskStatusUpdateEvent {
            generation: 0,
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: Some(Timestamp::now()),
            },
            metadata: None,
        },
    }
}

#[tokio::test]
async fn a_task_of_the_previous_layout_reads_appends_and_fans_out() {
    let Some(env) = Env::new().await else {
        return;
    };
    let store = env.store();
    let owner = Owner::anonymous("");
    let id = a2a_core::new_id();
    let exp = Timestamp::now().millis() + 3_600_000;
    let created = Task {
        id: id.clone(),
        context_id: a2a_core::new_id(),
        status: TaskStatus {
            state: TaskState::Submitted,
            message: None,
            timestamp: Some(Timestamp::now()),
        },
        history: vec![Message::user_text(a2a_core::new_id(), "hello")],
        ..Default::default()
    };
    let mut log = vec![LoggedEvent {
        seq: 1,
        at: Timestamp::now(),
        event: TaskEvent::Created {
            task: created.clone(),
        },
    }];
    log.push(LoggedEvent {
        seq: 2,
        at: Timestamp::now(),
        event: status(&created, TaskState::Working),
    });
    let mut task = Task::default();
    for e in &log {
        e.event.apply(&mut task).unwrap();
    }

    // The items as the previous layout wrote them.
    let mut deflate =
        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    deflate
        .write_all(&serde_json::to_vec(&task).unwrap())
        .unwrap();
    let ts = task.status.timestamp.unwrap().millis();
    let common = |sk: String| -> HashMap<String, AttributeValue> {
        HashMap::from([
            ("pk".to_owned(), s(format!("T#{id}"))),
            ("sk".to_owned(), s(sk)),
            ("own".to_owned(), s(owner.as_str())),
            ("exp".to_owned(), n(exp)),
            ("ttl".to_owned(), n(exp / 1000 + 1)),
        ])
    };
    let mut head = common("H".into());
    head.extend([
        ("v".to_owned(), n(2)),
        ("ctx".to_owned(), s(&task.context_id)),
        ("st".to_owned(), s(task.status.state.as_str())),
        ("ts".to_owned(), n(ts)),
        ("gpk".to_owned(), s(owner.as_str())),
        ("gsk".to_owned(), s(format!("{ts:015}#{id}"))),
        (
            "tb".to_owned(),
            AttributeValue::B(Blob::new(deflate.finish().unwrap())),
        ),
    ]);
    let mut items = vec![head];
    for e in &log {
        let mut item = common(format!("E#{:020}", e.seq));
        item.insert("ev".into(), s(serde_json::to_string(e).unwrap()));
        items.push(item);
    }
    let config = TaskPushNotificationConfig {
        id: "hook".into(),
        task_id: id.clone(),
        url: "https://receiver.example/hook".into(),
        ..Default::default()
    };
    let mut cfg = common("P#hook".into());
    cfg.insert("cfg".into(), s(serde_json::to_string(&config).unwrap()));
    items.push(cfg);
    for item in items {
        env.clients
            .dynamodb
            .put_item()
            .table_name(&env.config.table)
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
    }

    // Read as they are.
    let loaded = store
        .load_task(&owner, &id)
        .await
        .unwrap()
        .expect("the task");
    assert_eq!((loaded.version, &loaded.task), (2, &task));
    assert_eq!(store.read_events(&owner, &id, 0, 100).await.unwrap(), log);

    // An append in this layout goes on from them.
    let current = StoredTask {
        owner: owner.clone(),
        task: task.clone(),
        version: 2,
        expires_at: Timestamp::from_millis(exp),
    };
    let mut next = current.clone();
    let mut appended = Vec::new();
    for event in [
        TaskEvent::Artifact {
            update: TaskArtifactUpdateEvent {
                task_id: id.clone(),
                context_id: task.context_id.clone(),
                artifact: Artifact {
                    artifact_id: "a".into(),
                    parts: vec![Part::text("42")],
                    ..Default::default()
                },
                ..Default::default()
            },
        },
        status(&task, TaskState::Completed),
    ] {
        event.apply(&mut next.task).unwrap();
        next.version += 1;
        appended.push(LoggedEvent {
            seq: next.version,
            at: Timestamp::now(),
            event,
        });
    }
    store
        .append_events(&next, current.version, &appended)
        .await
        .unwrap();
    let mut whole = log.clone();
    whole.extend(appended.clone());
    assert_eq!(store.read_events(&owner, &id, 0, 100).await.unwrap(), whole);
    assert_eq!(
        store.read_events(&owner, &id, 1, 2).await.unwrap(),
        whole[1..3]
    );
    let loaded = store
        .load_task(&owner, &id)
        .await
        .unwrap()
        .expect("the task");
    assert_eq!(loaded, next);

    // Its write fans out to the config made before the upgrade: the append put its id on
    // the head.
    let mut poller = StreamPoller::from_env(&env.config.table, Checkpoints::Memory)
        .await
        .unwrap();
    let mut records = Vec::new();
    while let Some(batch) = poller.next_batch().await.unwrap() {
        records.extend(batch.records.clone());
        poller.commit(&batch).await.unwrap();
    }
    let passed: Vec<_> = records.into_iter().filter(passes_filter).collect();
    let writes = appended_in_records(&passed);
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0].events, appended);
    assert_eq!(writes[0].config_ids, ["hook"]);
    env.cleanup().await;
}

/// A head as the layout before the split index wrote it: in the bare owner's partition of the
/// by-owner index, with no by-context entry, and (like a task written before the counts) in no
/// count.
async fn put_unsplit_head(env: &Env, owner: &Owner, task: &Task, exp: i64) {
    let mut deflate =
        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    deflate
        .write_all(&serde_json::to_vec(task).expect("a task serialises"))
        .expect("deflate");
    let ts = task.status.timestamp.expect("a status timestamp").millis();
    let head = HashMap::from([
        ("pk".to_owned(), s(format!("T#{}", task.id))),
        ("sk".to_owned(), s("H")),
        ("own".to_owned(), s(owner.as_str())),
        ("exp".to_owned(), n(exp)),
        ("ttl".to_owned(), n(exp / 1000 + 1)),
        ("v".to_owned(), n(1)),
        ("nv".to_owned(), n(0)),
        ("ctx".to_owned(), s(&task.context_id)),
        ("st".to_owned(), s(task.status.state.as_str())),
        ("ts".to_owned(), n(ts)),
        ("gpk".to_owned(), s(owner.as_str())),
        ("gsk".to_owned(), s(format!("{ts:015}#{}", task.id))),
        (
            "tb".to_owned(),
            AttributeValue::B(Blob::new(deflate.finish().expect("deflate"))),
        ),
    ]);
    env.clients
        .dynamodb
        .put_item()
        .table_name(&env.config.table)
        .set_item(Some(head))
        .send()
        .await
        .expect("PutItem of the head");
}

/// A task `id` in `context` and `state`, its status `age_ms` old.
fn task_in(id: &str, context: &str, state: TaskState, age_ms: i64) -> Task {
    Task {
        id: id.into(),
        context_id: context.into(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: Some(Timestamp::from_millis(Timestamp::now().millis() - age_ms)),
        },
        ..Default::default()
    }
}

/// Task ids of every page of `query`, and the first page's total.
async fn listed(
    store: &a2a_aws::DynamoTaskStore,
    owner: &Owner,
    query: TaskQuery,
) -> (Vec<String>, usize) {
    let mut query = TaskQuery {
        page_size: 1,
        ..query
    };
    let mut ids = Vec::new();
    let mut total = None;
    loop {
        let page = store.list_tasks(owner, &query).await.expect("ListTasks");
        total.get_or_insert(page.total_size);
        ids.extend(page.tasks.into_iter().map(|t| t.id));
        if page.next_page_token.is_empty() {
            return (ids, total.unwrap_or_default());
        }
        query.page_token = page.next_page_token;
    }
}

#[tokio::test]
async fn tasks_written_before_the_split_index_are_listed_by_every_filter() {
    let Some(env) = Env::new().await else {
        return;
    };
    let store = env.store();
    let owner = Owner::new("", &format!("migrating-{}", a2a_core::new_id()));
    let exp = Timestamp::now().millis() + 3_600_000;
    let conversation = format!("conversation-{}", a2a_core::new_id());

    // Two tasks of the layout before (oldest), two of this one (newest).
    let old_working = task_in(
        &a2a_core::new_id(),
        &conversation,
        TaskState::Working,
        40_000,
    );
    let old_done = task_in(
        &a2a_core::new_id(),
        "old-own-context",
        TaskState::Completed,
        30_000,
    );
    for task in [&old_working, &old_done] {
        put_unsplit_head(&env, &owner, task, exp).await;
    }
    let mut new_ids = Vec::new();
    for (context, state, age) in [
        (conversation.as_str(), TaskState::Working, 20_000),
        ("another", TaskState::Completed, 10_000),
    ] {
        let id = a2a_core::new_id();
        let head = StoredTask {
            owner: owner.clone(),
            task: task_in(&id, context, state, age),
            version: 1,
            expires_at: Timestamp::from_millis(exp),
        };
        let created = LoggedEvent {
            seq: 1,
            at: Timestamp::now(),
            event: TaskEvent::Created {
                task: head.task.clone(),
            },
        };
        store.create_task(&head, &[created]).await.unwrap();
        new_ids.push(id);
    }
    let by_state = |state| TaskQuery {
        state: Some(state),
        ..Default::default()
    };
    let by_context = TaskQuery {
        context_id: Some(conversation.clone()),
        ..Default::default()
    };
    let all = TaskQuery::default();

    assert_eq!(
        listed(&store, &owner, all.clone()).await,
        (
            vec![
                new_ids[1].clone(),
                new_ids[0].clone(),
                old_done.id.clone(),
                old_working.id.clone()
            ],
            4
        )
    );
    assert_eq!(
        listed(&store, &owner, by_state(TaskState::Working)).await,
        (vec![new_ids[0].clone(), old_working.id.clone()], 2)
    );
    assert_eq!(
        listed(&store, &owner, by_context.clone()).await,
        (vec![new_ids[0].clone(), old_working.id.clone()], 2)
    );

    // Its first append moves the old head into its new state's partition and gives it its
    // by-context entry: still listed once by each filter.
    let current = StoredTask {
        owner: owner.clone(),
        task: old_working.clone(),
        version: 1,
        expires_at: Timestamp::from_millis(exp),
    };
    let mut next = current.clone();
    let event = status(&old_working, TaskState::Completed);
    event.apply(&mut next.task).unwrap();
    next.version = 2;
    let appended = LoggedEvent {
        seq: 2,
        at: Timestamp::now(),
        event,
    };
    store.append_events(&next, 1, &[appended]).await.unwrap();
    let (ids, total) = listed(&store, &owner, all).await;
    assert_eq!((ids.len(), total), (4, 4), "{ids:?}");
    assert_eq!(ids[0], old_working.id, "newest status first");
    // It left WORKING without ever having been counted there: the count of WORKING says
    // none, the index one, and the index is what ListTasks answers from.
    assert_eq!(
        listed(&store, &owner, by_state(TaskState::Working)).await,
        (vec![new_ids[0].clone()], 1)
    );
    assert_eq!(
        listed(&store, &owner, by_state(TaskState::Completed)).await,
        (
            vec![
                old_working.id.clone(),
                new_ids[1].clone(),
                old_done.id.clone()
            ],
            3
        )
    );
    assert_eq!(
        listed(&store, &owner, by_context).await,
        (vec![old_working.id.clone(), new_ids[0].clone()], 2)
    );
}

/// Every due entry in the table's due partitions, as (partition, sort key).
async fn due_entries(env: &Env) -> Vec<(String, String)> {
    let mut entries = Vec::new();
    for shard in 0..8 {
        for item in env.partition(format!("WAITS#{shard}")).await {
            let key = |name: &str| match item.get(name) {
                Some(AttributeValue::S(v)) => v.clone(),
                other => panic!("{name}: {other:?}"),
            };
            entries.push((key("pk"), key("sk")));
        }
    }
    entries
}

/// A wait parked by the previous layout (its due entry keyed by the task id alone, its record
/// without the due time) is found by the first sweep of a process, which moves the entry to
/// its time key and tells the record; the record's next save then removes it.
#[tokio::test]
async fn a_wait_parked_by_the_previous_layout_is_swept_and_its_entry_moved() {
    use a2a_core::ExecutionStore;
    let Some(env) = Env::new().await else {
        return;
    };
    let owner = Owner::anonymous("");
    let task = a2a_core::new_id();
    let due = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    env.store()
        .save_execution(
            &a2a_store_contract::durable::record(&owner, &task, 1, Some(due)),
            None,
        )
        .await
        .unwrap();
    // Made as the previous layout left it: no due time on the record, the entry keyed by id.
    let db = &env.clients.dynamodb;
    for (pk, sk) in due_entries(&env).await {
        db.delete_item()
            .table_name(&env.config.table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .send()
            .await
            .unwrap();
    }
    db.update_item()
        .table_name(&env.config.table)
        .key("pk", s(format!("T#{task}")))
        .key("sk", s("X"))
        .update_expression("REMOVE #due")
        .expression_attribute_names("#due", "due")
        .send()
        .await
        .unwrap();
    let exp = Timestamp::now().millis() + 3_600_000;
    db.put_item()
        .table_name(&env.config.table)
        .item("pk", s("WAITS#0"))
        .item("sk", s(task.clone()))
        .item("own", s(owner.as_str()))
        .item("due", n(due.millis()))
        .item("exp", n(exp))
        .item("ttl", n(exp / 1000))
        .send()
        .await
        .unwrap();

    // A new process: its first sweep finds the wait, and the entry moves to its time key.
    let store = env.store();
    let listed = store
        .list_due_executions(Timestamp::now(), 100)
        .await
        .unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|d| d.task_id.as_str())
            .collect::<Vec<_>>(),
        [task.as_str()]
    );
    assert_eq!(listed[0].due_at, due);
    let entries = due_entries(&env).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(
        entries[0].1.starts_with('@') && entries[0].1.ends_with(&format!("#{task}")),
        "{entries:?}"
    );
    // Its wait over, the record's save removes the moved entry: nothing is listed or left.
    store
        .save_execution(
            &a2a_store_contract::durable::record(&owner, &task, 2, None),
            Some(1),
        )
        .await
        .unwrap();
    assert!(due_entries(&env).await.is_empty());
    assert!(store
        .list_due_executions(Timestamp::now(), 100)
        .await
        .unwrap()
        .is_empty());
    env.cleanup().await;
}
