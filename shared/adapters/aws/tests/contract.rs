//! The store contract suite against DynamoDB (moto's server): each check on its own table, so
//! a failure names the check, then the whole suite on one shared table.

mod common;

use std::sync::Arc;

use a2a_store_contract as store_contract;
use common::Env;

macro_rules! contract_tests {
    ($($check:ident),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                let Some(env) = Env::new().await else {
        return;
    };
                store_contract::$check(&env.store()).await;
                env.cleanup().await;
            }
        )+
    };
}

contract_tests!(
    create_then_load,
    a_task_created_terminal_keeps_its_log,
    create_twice_conflicts,
    append_with_expected_version,
    stale_append_conflicts_and_changes_nothing,
    read_events_after_seq_and_limit,
    a_long_log_reads_back_whole_from_any_point,
    owner_scoping,
    expired_task_is_gone,
    list_orders_newest_status_first,
    list_paging,
    list_empty,
    list_cursor_survives_expiry_of_previous_page,
    list_filters,
    list_total_size_follows_every_change,
    list_invalid_page_token,
    push_config_crud,
    push_delivery_records,
    leases,
    job_attempts_are_counted_on_the_lease,
    push_attempts_are_counted_per_event,
    inline_leases,
    large_items_are_kept_whole_or_refused,
    reply_records,
    create_with_an_id_another_owner_holds_conflicts,
    push_config_keeps_its_protocol_version,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_are_gapless() {
    let Some(env) = Env::new().await else {
        return;
    };
    store_contract::concurrent_appends_are_gapless(Arc::new(env.store())).await;
    env.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_ends_orphaned_inline_executions() {
    let Some(env) = Env::new().await else {
        return;
    };
    store_contract::sweep_ends_orphaned_inline_executions(Arc::new(env.store())).await;
    env.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_suite_on_one_shared_table() {
    let Some(env) = Env::new().await else {
        return;
    };
    store_contract::run_all_shared(Arc::new(env.store())).await;
    env.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_remote_answer_is_kept_or_fails_the_call_clearly() {
    let Some(env) = Env::new().await else {
        return;
    };
    store_contract::durable::a_large_remote_answer_is_kept_or_fails_the_call_clearly(Arc::new(
        env.store(),
    ))
    .await;
    env.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_record_does_not_hold_up_the_sweep() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let Some(env) = Env::new().await else {
        return;
    };
    let (client, table) = (env.clients.dynamodb.clone(), env.config.table.clone());
    // What an older layout would have left: JSON text this code does not read as a record.
    let poison: store_contract::durable::Poison = Box::new(move |_owner, task_id| {
        let (client, table) = (client.clone(), table.clone());
        Box::pin(async move {
            client
                .update_item()
                .table_name(table)
                .key("pk", AttributeValue::S(format!("T#{task_id}")))
                .key("sk", AttributeValue::S("X".into()))
                .update_expression("SET xb = :b REMOVE xz")
                .expression_attribute_values(":b", AttributeValue::S(r#"{"owner": 5}"#.into()))
                .send()
                .await
                .expect("damage the record");
        })
    });
    store_contract::durable::a_broken_record_does_not_hold_up_the_sweep(
        Arc::new(env.store()),
        poison,
    )
    .await;
    env.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_pushes_are_checked_before_anything_else() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let Some(env) = Env::new().await else {
        return;
    };
    let (client, table) = (env.clients.dynamodb.clone(), env.config.table.clone());
    // What the previous version left: a parked wait without a gate.
    let forget: store_contract::relay::ForgetGate = Box::new(move |_owner, task_id| {
        let (client, table) = (client.clone(), table.clone());
        Box::pin(async move {
            client
                .delete_item()
                .table_name(table)
                .key("pk", AttributeValue::S(format!("T#{task_id}")))
                .key("sk", AttributeValue::S("G".into()))
                .send()
                .await
                .expect("forget the gate");
        })
    });
    store_contract::relay::relay_pushes_are_checked_before_anything_else(
        Arc::new(env.store()),
        forget,
    )
    .await;
    env.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_remote_does_not_hold_up_the_sweep() {
    let Some(env) = Env::new().await else {
        return;
    };
    store_contract::relay::a_slow_remote_does_not_hold_up_the_sweep(Arc::new(env.store())).await;
    env.cleanup().await;
}

/// A push with a wrong token costs one small read, whatever the task's record holds: the
/// gate's (1 RRU), never the record's. With a step's 60 KB answer in the record, the token
/// holder's push reads it (about 12 RRU, deflate cannot shrink noise); a stranger's does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_s_push_costs_one_small_read() {
    let Some(env) = Env::new().await else {
        return;
    };
    let meter = a2a_aws::Meter::new();
    let store = Arc::new(env.store().with_meter(meter.clone()));
    let p = store_contract::relay::park_a_delegation(store, 60_000).await;
    meter.take();
    let refused = p
        .service
        .authenticate_relay_push(&p.task_id, None, "wrong")
        .await
        .expect("answered");
    assert!(
        matches!(
            refused,
            a2a_core::RelayCheck::Answer(a2a_core::RelayAnswer::Refused)
        ),
        "{refused:?}"
    );
    let stranger = meter.take();
    let stranger_rru: f64 = stranger.iter().map(|c| c.estimated_rru).sum();
    let admitted = p
        .service
        .authenticate_relay_push(&p.task_id, None, &p.token)
        .await
        .expect("answered");
    assert!(
        matches!(admitted, a2a_core::RelayCheck::Push(_)),
        "{admitted:?}"
    );
    let holder = meter.take();
    let holder_rru: f64 = holder.iter().map(|c| c.estimated_rru).sum();
    eprintln!("a stranger's push: {stranger_rru} est. RRU; the token holder's: {holder_rru}");
    // The parked run's last write (its lease given back) may land in the window: reads only.
    let reads: Vec<_> = stranger
        .iter()
        .filter(|c| c.estimated_wru == 0.0)
        .map(|c| c.api)
        .collect();
    assert_eq!(reads, ["GetItem"], "one read: {stranger:?}");
    assert!(stranger_rru <= 1.0, "{stranger:?}");
    assert!(
        holder_rru > 10.0,
        "the record is read once the token holds: {holder:?}"
    );
    env.cleanup().await;
}

/// The sweep of due waits reads what is due, not what waits for later: with 400 executions
/// parked for an hour and 3 due, a pass is one query per due partition that reads the 3
/// (DynamoDB bills a query what it reads before any filter, so a partition queried whole and
/// filtered on the time would bill every parked entry, at every pass).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_of_due_waits_reads_only_what_is_due() {
    use a2a_core::{ExecutionStore, Owner};
    use a2a_protocol::Timestamp;
    use futures::StreamExt;
    let Some(env) = Env::new().await else {
        return;
    };
    let meter = a2a_aws::Meter::new();
    let store = env.store().with_meter(meter.clone());
    let owner = Owner::anonymous("");
    let now = Timestamp::now().millis();
    let parked = |due_ms: i64| {
        store_contract::durable::record(
            &owner,
            &a2a_core::new_id(),
            1,
            Some(Timestamp::from_millis(due_ms)),
        )
    };
    let later: Vec<_> = (0..400).map(|_| parked(now + 3_600_000)).collect();
    let due: Vec<_> = (0..3).map(|i| parked(now - 1_000 - i)).collect();
    futures::stream::iter(later.iter().chain(&due))
        .for_each_concurrent(16, |record| {
            let store = &store;
            async move { store.save_execution(record, None).await.unwrap() }
        })
        .await;
    // A process's first sweep also looks for the previous layout's entries, once.
    store
        .list_due_executions(Timestamp::now(), 100)
        .await
        .unwrap();
    meter.take();

    let listed = store
        .list_due_executions(Timestamp::now(), 100)
        .await
        .unwrap();
    let calls = meter.take();
    let mut want: Vec<&str> = due.iter().map(|r| r.task_id.as_str()).collect();
    want.reverse();
    assert_eq!(
        listed
            .iter()
            .map(|d| d.task_id.as_str())
            .collect::<Vec<_>>(),
        want,
        "the due ones, soonest first"
    );
    let rru: f64 = calls.iter().map(|c| c.estimated_rru).sum();
    eprintln!(
        "a sweep pass with 400 waits parked for later and 3 due: {} queries, {rru} est. RRU",
        calls.len()
    );
    assert!(calls.iter().all(|c| c.api == "Query"), "{calls:?}");
    assert_eq!(calls.len(), 8, "one query per due partition");
    // The least a query bills (0.5 RRU, eventually consistent) in each: nothing parked for
    // later was read (those 400 entries are about 50 KB: 8 RRU read whole).
    assert!(rru <= 4.0, "{rru} est. RRU: {calls:?}");
    env.cleanup().await;
}
