//! The SSRF guard over real sockets: every URL form that reaches a non-public address is
//! refused when the config is created and again at delivery, and a listener on 127.0.0.1
//! proves that no connection was made.

mod support;

use a2a_core::{
    CallContext, KeySet, Owner, PushAttemptResult, PushJob, PushPolicy, SigningAlgorithm,
    SigningKey, JOB_FORMAT_VERSION,
};
use a2a_protocol::{TaskPushNotificationConfig, Timestamp};
use a2a_test_support::webhook::RawListener;
use support::AgentServer;

fn keys() -> KeySet {
    KeySet::single(
        SigningKey::generate(SigningAlgorithm::Es256)
            .expect("generate")
            .0,
    )
}

/// No allow-list, http allowed: only the public-address rule stands between a URL and a
/// connection.
fn guarded() -> PushPolicy {
    PushPolicy {
        allowed_hosts: Vec::new(),
        require_https: false,
    }
}

/// Every spelling of a non-public target the matrix tries; `{p}` is the counting listener's
/// port, so any of them that got through would connect to it (or to a private address).
const MATRIX: &[&str] = &[
    "http://127.0.0.1:{p}/hook",
    "https://127.0.0.1:{p}/hook",
    "http://2130706433:{p}/decimal",
    "http://017700000001:{p}/octal",
    "http://0x7f000001:{p}/hex",
    "http://0177.0.0.1:{p}/octal-dotted",
    "http://0x7f.0.0.1:{p}/hex-dotted",
    "http://0x7f.1:{p}/hex-short",
    "http://127.1:{p}/short",
    "http://127.0.1:{p}/short",
    "http://127.000.000.001:{p}/zero-padded",
    "http://%31%32%37.0.0.1:{p}/percent-encoded",
    "http://[::1]:{p}/ipv6-loopback",
    "http://[0:0:0:0:0:0:0:1]:{p}/ipv6-loopback-long",
    "http://[::ffff:127.0.0.1]:{p}/ipv4-mapped",
    "http://[::ffff:7f00:1]:{p}/ipv4-mapped-hex",
    "http://[0:0:0:0:0:ffff:127.0.0.1]:{p}/ipv4-mapped-long",
    "http://[::127.0.0.1]:{p}/ipv4-compatible",
    "http://[::ffff:0:127.0.0.1]:{p}/ipv4-translated",
    "http://[64:ff9b::127.0.0.1]:{p}/nat64",
    "http://[2002:7f00:1::1]:{p}/6to4",
    "http://localhost:{p}/name",
    "http://LocalHost.:{p}/name-trailing-dot",
    "http://0.0.0.0:{p}/unspecified",
    "http://0:{p}/unspecified-short",
    "http://[::]:{p}/ipv6-unspecified",
    "http://169.254.169.254:{p}/latest/meta-data/",
    "http://[::ffff:169.254.169.254]:{p}/metadata-mapped",
    "http://[fd00:ec2::254]:{p}/metadata-ipv6",
    "http://10.0.0.1:{p}/rfc1918",
    "http://172.16.0.1:{p}/rfc1918",
    "http://192.168.0.1:{p}/rfc1918",
    "http://100.64.0.1:{p}/cgnat",
    "http://224.0.0.1:{p}/multicast",
    "http://255.255.255.255:{p}/broadcast",
    "http://[fd00::1]:{p}/ula",
    "http://[fe80::1]:{p}/link-local",
    "http://[ff02::1]:{p}/multicast",
    "http://user:secret@127.0.0.1:{p}/credentials",
    "ftp://127.0.0.1:{p}/scheme",
    "file:///etc/passwd",
];

#[tokio::test]
async fn non_public_targets_are_refused_at_creation_and_at_delivery() {
    let listener = RawListener::ok().await;
    let agent = AgentServer::start(keys(), guarded(), 3).await;
    let ctx = CallContext::anonymous("");
    let owner = Owner::anonymous("");
    // A task to attach configs to; its first event (seq 1, the Task) is what gets delivered.
    let task = agent.run_task_without_push("hold").await;
    let urls: Vec<String> = MATRIX
        .iter()
        .map(|u| u.replace("{p}", &listener.port.to_string()))
        .collect();
    assert!(urls.len() >= 25);

    for (n, url) in urls.iter().enumerate() {
        // At creation: InvalidParams (400 on REST), nothing stored.
        let created = agent
            .service
            .create_push_config(
                &ctx,
                TaskPushNotificationConfig {
                    task_id: task.id.clone(),
                    url: url.clone(),
                    ..TaskPushNotificationConfig::default()
                },
            )
            .await;
        let err = created.expect_err(url);
        assert_eq!(err.json_rpc_code(), -32602, "{url}: {}", err.message());

        // At delivery: stored behind the creation check's back (as if a name changed what it
        // resolves to, or the policy tightened), it is still never contacted.
        let config_id = format!("c{n}");
        agent
            .store
            .put_push_config(
                &owner,
                &TaskPushNotificationConfig {
                    id: config_id.clone(),
                    task_id: task.id.clone(),
                    url: url.clone(),
                    ..TaskPushNotificationConfig::default()
                },
                Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
            )
            .await
            .unwrap();
        let job = PushJob {
            v: JOB_FORMAT_VERSION,
            owner: owner.clone(),
            task_id: task.id.clone(),
            seq: 1,
            config_id: config_id.clone(),
        };
        agent.service.deliver_push(&job, 1).await;
        let record = agent
            .store
            .get_push_delivery(&owner, &task.id, &config_id)
            .await
            .unwrap()
            .expect("the attempt is recorded");
        // Refused by the guard, or (a name that does not resolve) failed before connecting.
        assert!(
            matches!(
                record.last_result,
                Some(PushAttemptResult::Refused | PushAttemptResult::Failed)
            ),
            "{url}: {record:?}"
        );
        assert_eq!(record.delivered, 0, "{url}");
        let error = record.last_error.unwrap_or_default();
        assert!(
            !error.contains("secret"),
            "no credentials in the record: {error}"
        );
        assert_eq!(listener.accepted(), 0, "{url} reached the listener");
    }
    let configs = agent
        .service
        .list_push_configs(
            &ctx,
            a2a_protocol::ListTaskPushNotificationConfigsRequest {
                task_id: task.id.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        configs.configs.len(),
        urls.len(),
        "only the planted configs: every creation was refused"
    );

    // The control: the same listener, allow-listed, is reached. The zero above means
    // something.
    let allowed = AgentServer::start(
        keys(),
        PushPolicy {
            allowed_hosts: vec!["127.0.0.1".into()],
            require_https: false,
        },
        3,
    )
    .await;
    allowed
        .run_task(
            "steps 1",
            &format!("http://127.0.0.1:{}/hook", listener.port),
        )
        .await;
    allowed.drain().await;
    assert!(
        listener.accepted() > 0,
        "the control push reached the listener"
    );
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let target = RawListener::ok().await;
    let policy = PushPolicy {
        // Both the redirecting webhook and the target's address are allowed: only the
        // no-redirect rule stops the second hop.
        allowed_hosts: vec!["127.0.0.1".into()],
        require_https: false,
    };
    let agent = AgentServer::start(keys(), policy, 2).await;
    let owner = Owner::anonymous("");
    for location in [
        format!("http://127.0.0.1:{}/allowed-host", target.port),
        format!("http://localhost:{}/private-name", target.port),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/private".to_string(),
    ] {
        let redirector = RawListener::redirect(&location).await;
        let hook = format!("http://127.0.0.1:{}/hook", redirector.port);
        let task = agent.run_task("steps 1", &hook).await;
        agent.drain().await;
        assert!(redirector.accepted() > 0, "the webhook itself was called");
        assert_eq!(
            target.accepted(),
            0,
            "the redirect to {location} was followed"
        );
        let configs = agent
            .store
            .list_push_configs(&owner, &task.id)
            .await
            .unwrap();
        let record = agent
            .store
            .get_push_delivery(&owner, &task.id, &configs[0].id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.last_status, Some(302));
        assert_eq!(record.delivered, 0);
        assert!(record
            .last_error
            .unwrap_or_default()
            .contains("redirects are not followed"));
    }
}

#[tokio::test]
async fn the_cloud_default_requires_https_and_public_addresses() {
    let agent = AgentServer::start(keys(), PushPolicy::default(), 3).await;
    let ctx = CallContext::anonymous("");
    let task = agent.run_task_without_push("hold").await;
    for url in [
        "http://8.8.8.8/hook",
        "https://127.0.0.1/hook",
        "https://localhost/hook",
        "https://name.invalid/hook",
    ] {
        let err = agent
            .service
            .create_push_config(
                &ctx,
                TaskPushNotificationConfig {
                    task_id: task.id.clone(),
                    url: url.into(),
                    ..TaskPushNotificationConfig::default()
                },
            )
            .await
            .expect_err(url);
        assert_eq!(err.json_rpc_code(), -32602, "{url}");
    }
}
