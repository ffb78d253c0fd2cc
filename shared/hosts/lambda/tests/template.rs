//! `template.yaml` against the code: the functions (one build, one binary, a role each in
//! `A2A_FUNCTION`: `a2a_lambda_glue::Function`), the route table
//! (`shared/hosts/lambda/routes.json`, which the local router serves too), response streaming for every
//! streaming function (the linters do not check it), and the table and queues of
//! `a2a_aws::resources::Resources::named`.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use a2a_aws::resources::{QueueDefinition, Resources};
use a2a_lambda_glue::{Function, HttpFunction, ENV_FUNCTION};
use serde_norway::Value;

mod sam;

/// The stack name stands in for the resource prefix: the template names everything
/// `${AWS::StackName}-…`, the code `<prefix>-…`.
const PREFIX: &str = "STACK";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

fn template() -> Value {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    serde_norway::from_str(&text).expect("template.yaml parses")
}

fn routes() -> serde_json::Value {
    let text = std::fs::read_to_string(root().join("shared/hosts/lambda/routes.json"))
        .expect("routes.json");
    serde_json::from_str(&text).expect("routes.json parses")
}

/// A value with its CloudFormation short-form tag (`!Sub`, `!Ref`, …) removed.
fn untag(v: &Value) -> &Value {
    match v {
        Value::Tagged(t) => &t.value,
        other => other,
    }
}

fn str_of(v: &Value) -> String {
    match untag(v) {
        Value::String(s) => s.replace("${AWS::StackName}", PREFIX),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => panic!("not a scalar: {other:?}"),
    }
}

fn num(v: &Value) -> u64 {
    str_of(v).parse().expect("a number")
}

fn resources_of_type<'a>(t: &'a Value, ty: &str) -> BTreeMap<String, &'a Value> {
    t["Resources"]
        .as_mapping()
        .expect("Resources")
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some(ty))
        .map(|(k, r)| (k.as_str().unwrap().to_owned(), r))
        .collect()
}

/// The package and binary every function runs (`functions/Cargo.toml`).
const BINARY: &str = "a2a-function";

/// The functions of the template, by role (their `A2A_FUNCTION`). A function with a role of
/// its own (`Role: !GetAtt X.Arn`) gets that role's policy documents under `Policies`, beside
/// any SAM policies, so every function's grants read alike.
fn functions(t: &Value) -> BTreeMap<String, Value> {
    let mut by_role = BTreeMap::new();
    for (logical, f) in resources_of_type(t, "AWS::Serverless::Function") {
        let role = f["Properties"]["Environment"]["Variables"][ENV_FUNCTION]
            .as_str()
            .unwrap_or_else(|| panic!("{logical} has no {ENV_FUNCTION}"))
            .to_owned();
        let mut f = f.clone();
        if let Some(Value::Tagged(own)) = f["Properties"].get("Role").cloned() {
            assert_eq!(own.tag, "!GetAtt", "{logical}'s Role");
            let name = own
                .value
                .as_str()
                .unwrap()
                .trim_end_matches(".Arn")
                .to_owned();
            let documents: Vec<Value> = t["Resources"][name.as_str()]["Properties"]["Policies"]
                .as_sequence()
                .unwrap_or_else(|| panic!("{name} has no Policies"))
                .iter()
                .map(|p| p["PolicyDocument"].clone())
                .collect();
            let properties = f["Properties"].as_mapping_mut().unwrap();
            assert!(
                properties.get("Policies").is_none(),
                "{logical} has a role of its own and SAM policies"
            );
            properties.insert("Policies".into(), Value::Sequence(documents));
        }
        assert!(
            by_role.insert(role.clone(), f).is_none(),
            "two functions have {ENV_FUNCTION}={role}"
        );
    }
    by_role
}

#[test]
fn every_function_role_is_in_the_template_and_vice_versa() {
    let t = template();
    let in_template: BTreeSet<String> = functions(&t).into_keys().collect();
    let roles: BTreeSet<String> = Function::ALL.iter().map(|f| f.name().to_owned()).collect();
    assert_eq!(in_template, roles);
    let r = routes();
    let in_routes: BTreeSet<String> = r["functions"]
        .as_object()
        .unwrap()
        .keys()
        .chain(r["queueFunctions"].as_object().unwrap().keys())
        .chain(r["streamFunctions"].as_object().unwrap().keys())
        .cloned()
        .chain(r["frontFunction"]["name"].as_str().map(str::to_owned))
        .chain(r["relayFunction"]["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(in_routes, roles);
    let http: BTreeSet<String> = HttpFunction::ALL
        .iter()
        .map(|f| f.name().to_owned())
        .collect();
    let routed: BTreeSet<String> = r["functions"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(http, routed);
    let globals = &t["Globals"]["Function"];
    // The functions behind API Gateway route on the path as sent, without the stage: with the
    // stage in it, a `/{stage}/message:send` would read as the `/{tenant}/message:send` route.
    // The front function (a Function URL: no stage) goes without, to keep its environment small.
    for (role, f) in functions(&t) {
        let ignored = f["Properties"]["Environment"]["Variables"]
            ["AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH"]
            .as_str();
        let expected = routed.contains(&role).then_some("true");
        assert_eq!(ignored, expected, "{role}");
    }
    assert_eq!(globals["Runtime"].as_str(), Some("provided.al2023"));
    assert_eq!(globals["Architectures"][0].as_str(), Some("arm64"));
    assert_eq!(globals["Handler"].as_str(), Some("bootstrap"));
}

/// `cargo lambda watch` starts a function as the binary of its name: every role has one in
/// the functions' package (the same program as the deployed binary).
#[test]
fn every_role_has_a_binary_for_cargo_lambda_watch() {
    let bins = root().join("functions/src/bin");
    let found: BTreeSet<String> = std::fs::read_dir(&bins)
        .expect("functions/src/bin")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let roles: BTreeSet<String> = Function::ALL.iter().map(|f| f.name().to_owned()).collect();
    assert_eq!(found, roles);
}

/// `sam build` builds functions with the same build definition once (CodeUri, Runtime,
/// Architectures, Handler and Metadata: samcli/lib/build/build_graph.py): every function takes
/// those from Globals and has the same Metadata, so the stack's one binary is built once.
#[test]
fn every_function_shares_one_build() {
    let t = template();
    let manifest = std::fs::read_to_string(root().join("functions/Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!("name = \"{BINARY}\"")),
        "functions/Cargo.toml is not the {BINARY} package"
    );
    for (role, f) in functions(&t) {
        assert_eq!(
            f["Metadata"]["BuildMethod"].as_str(),
            Some("rust-cargolambda"),
            "{role}"
        );
        assert_eq!(
            f["Metadata"]["BuildProperties"],
            serde_norway::from_str::<Value>(&format!("Binary: {BINARY}")).unwrap(),
            "{role}: its build must be the others'"
        );
        for key in [
            "CodeUri",
            "Runtime",
            "Architectures",
            "Handler",
            "PackageType",
            "Layers",
        ] {
            assert!(
                f["Properties"].get(key).is_none(),
                "{role} sets {key}: it would get a build of its own"
            );
        }
    }
}

#[test]
fn routes_are_the_api_events_and_streaming_functions_stream() {
    let t = template();
    let fns = functions(&t);
    let r = routes();
    for f in HttpFunction::ALL {
        let declared = r["functions"][f.name()]["streaming"].as_bool().unwrap();
        assert_eq!(
            declared,
            f.streaming(),
            "routes.json and the code disagree on {}",
            f.name()
        );
        let resource = &fns[f.name()];
        let mut events = BTreeSet::new();
        for (_, event) in resource["Properties"]["Events"].as_mapping().unwrap() {
            assert_eq!(event["Type"].as_str(), Some("Api"), "{}", f.name());
            let p = &event["Properties"];
            events.insert((
                p["Method"].as_str().unwrap().to_uppercase(),
                p["Path"].as_str().unwrap().to_owned(),
            ));
            let mode = p.get("ResponseTransferMode").map(str_of);
            if f.streaming() {
                assert_eq!(
                    mode.as_deref(),
                    Some("RESPONSE_STREAM"),
                    "{} must stream",
                    f.name()
                );
                // The stream ends (MaxStreamSeconds) before the function and the integration do.
                let max_stream = num(&t["Parameters"]["MaxStreamSeconds"]["MaxValue"]);
                assert!(num(&resource["Properties"]["Timeout"]) > max_stream);
                assert!(
                    num(&p["TimeoutInMillis"]) >= 1000 * num(&resource["Properties"]["Timeout"])
                );
            } else {
                assert_eq!(mode, None, "{} must not stream", f.name());
            }
        }
        let routed: BTreeSet<(String, String)> = r["routes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["function"] == f.name())
            .map(|x| {
                (
                    x["method"].as_str().unwrap().to_owned(),
                    x["path"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(events, routed, "API events of {}", f.name());
    }
}

/// API Gateway (REST) builds a resource tree from the paths: a resource has at most one
/// `{variable}` child, beside any number of literal ones (`/{tenant}` next to `/tasks`), and no
/// part is empty (so `/jsonrpc/` cannot be declared: a request for it goes to `/jsonrpc`). The
/// linters do not check this; a deployment fails on it.
#[test]
fn routes_form_a_valid_api_gateway_resource_tree() {
    let r = routes();
    let mut variables: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for route in r["routes"].as_array().unwrap() {
        let path = route["path"].as_str().unwrap();
        let method = route["method"].as_str().unwrap();
        assert!(
            seen.insert((method, path)),
            "{method} {path} is declared twice"
        );
        assert!(path.starts_with('/'), "{path}");
        let mut parent = String::new();
        for part in path[1..].split('/') {
            assert!(!part.is_empty(), "{path} has an empty part");
            if part.starts_with('{') {
                assert!(part.ends_with('}') && part.len() > 2, "{path}");
                variables
                    .entry(parent.clone())
                    .or_default()
                    .insert(part.to_owned());
            } else {
                assert!(!part.contains(['{', '}']), "{path}");
            }
            parent = format!("{parent}/{part}");
        }
    }
    for (parent, names) in &variables {
        assert_eq!(
            names.len(),
            1,
            "{parent}/ has several variable children: {names:?}"
        );
    }
    // Every operation route is also served under the REST binding's `/{tenant}` prefix; the
    // documents under /.well-known and JSON-RPC (tenant in params) are not, nor the routes of
    // the older versions (0.3 REST under /v1, the early JSON-RPC paths: `POST /tasks` and
    // the literal paths under /tasks/, python-a2a's /agent.json), which have no tenant, nor
    // the A2A-Lite channels' (a chat's channel is its tenant of sorts).
    for (method, path) in &seen {
        let tenant = path.starts_with("/{tenant}/");
        let plain = path.strip_prefix("/{tenant}").unwrap_or(path);
        let early = (*method == "POST" && plain == "/tasks")
            || plain
                .strip_prefix("/tasks/")
                .is_some_and(|rest| !rest.starts_with('{'));
        let legacy = plain.starts_with("/v1/") || plain == "/agent.json" || early;
        assert!(!(tenant && legacy), "{method} {path}");
        // Called by servers (chat servers, the agents our tasks call), with no tenant form.
        let lite = plain.starts_with("/a2a-lite/") || plain.starts_with("/a2a-relay/");
        assert!(!(tenant && lite), "{method} {path}");
        let document = plain.starts_with("/.well-known/") || plain == "/jsonrpc" || legacy || lite;
        assert!(!(tenant && document), "{method} {path}");
        if !document {
            let other = if tenant {
                plain.to_owned()
            } else {
                format!("/{{tenant}}{path}")
            };
            assert!(
                seen.contains(&(*method, other.as_str())),
                "{method} {path} has no {other}"
            );
        }
    }
}

#[test]
fn queue_functions_report_batch_item_failures_within_the_visibility_timeout() {
    let t = template();
    let fns = functions(&t);
    let resources = Resources::named(PREFIX);
    let r = routes();
    for (name, spec) in r["queueFunctions"].as_object().unwrap() {
        let f = &fns[name.as_str()];
        let queue = match spec["queue"].as_str().unwrap() {
            "work" => &resources.work_queue,
            "push" => &resources.push_queue,
            other => panic!("unknown queue {other}"),
        };
        let events = f["Properties"]["Events"].as_mapping().unwrap();
        // One queue each; beside it, only the worker's sweep schedule.
        let sqs: Vec<&Value> = events
            .values()
            .filter(|e| e["Type"].as_str() == Some("SQS"))
            .collect();
        assert_eq!(sqs.len(), 1);
        for (_, other) in events
            .iter()
            .filter(|(_, e)| e["Type"].as_str() != Some("SQS"))
        {
            assert_eq!(name, "worker", "only the worker has a second trigger");
            assert_eq!(other["Type"].as_str(), Some("Schedule"));
        }
        let event = sqs[0];
        let p = &event["Properties"];
        assert_eq!(
            p["FunctionResponseTypes"][0].as_str(),
            Some("ReportBatchItemFailures")
        );
        let source = untag(&p["Queue"]).as_str().unwrap();
        let logical = source.trim_end_matches(".Arn");
        let q = &t["Resources"][logical]["Properties"];
        assert_eq!(str_of(&q["QueueName"]), queue.name);
        // AWS recommends a visibility of six times the function's timeout for an SQS event
        // source, so the mapping's retries of a throttled invocation fit in it.
        assert!(6 * num(&f["Properties"]["Timeout"]) <= queue.visibility_timeout.as_secs());
        // The event source never takes every instance of the account (at least 2: AWS's
        // minimum for MaximumConcurrency).
        let max = untag(&p["ScalingConfig"]["MaximumConcurrency"])
            .as_str()
            .expect("MaximumConcurrency is a parameter");
        let parameter = &t["Parameters"][max];
        assert!(num(&parameter["Default"]) >= 2, "{name}: {max}");
        assert!(num(&parameter["MinValue"]) >= 2, "{name}: {max}");
    }
}

fn check_queue(t: &Value, logical: &str, q: &QueueDefinition) {
    let p = &t["Resources"][logical]["Properties"];
    assert_eq!(str_of(&p["QueueName"]), q.name, "{logical}");
    let fifo = p.get("FifoQueue").map(str_of).is_some_and(|v| v == "true");
    assert_eq!(fifo, q.fifo, "{logical}");
    assert_eq!(
        num(&p["VisibilityTimeout"]),
        q.visibility_timeout.as_secs(),
        "{logical}"
    );
    assert_eq!(
        num(&p["MessageRetentionPeriod"]),
        q.retention.as_secs(),
        "{logical}"
    );
    assert_eq!(
        num(&p["ReceiveMessageWaitTimeSeconds"]),
        q.receive_wait.as_secs(),
        "{logical}"
    );
    for (name, value) in q.attributes() {
        let key = name.as_str();
        if matches!(
            key,
            "VisibilityTimeout" | "MessageRetentionPeriod" | "ReceiveMessageWaitTimeSeconds"
        ) {
            continue;
        }
        assert_eq!(
            p.get(key).map(str_of),
            Some(value.clone()),
            "{logical}.{key}"
        );
    }
    match &q.redrive {
        None => assert!(p.get("RedrivePolicy").is_none(), "{logical}"),
        Some(redrive) => {
            let policy = &p["RedrivePolicy"];
            assert_eq!(
                num(&policy["maxReceiveCount"]),
                u64::from(redrive.max_receive_count)
            );
            let target = str_of(&policy["deadLetterTargetArn"]);
            let dlq_logical = target.trim_end_matches(".Arn");
            assert_eq!(
                str_of(&t["Resources"][dlq_logical]["Properties"]["QueueName"]),
                redrive.dead_letter_queue,
                "{logical}"
            );
        }
    }
}

#[test]
fn table_and_queues_match_the_resource_definitions() {
    let t = template();
    let resources = Resources::named(PREFIX);
    let tables = resources_of_type(&t, "AWS::DynamoDB::Table");
    assert_eq!(tables.len(), 1);
    let p = &tables.values().next().unwrap()["Properties"];
    let table = &resources.table;
    // No fixed name: an update that replaces the table could not create it under the same one.
    assert!(
        p.get("TableName").is_none(),
        "TasksTable has a fixed TableName"
    );
    // On demand unless the TableCapacity parameter asks for provisioned capacity
    // (the_table_is_billed_on_demand_unless_provisioned_capacity_is_asked_for).
    let billing = untag(&p["BillingMode"]).as_sequence().expect("!If");
    assert_eq!(tag_of(&p["BillingMode"]).as_deref(), Some("If"));
    assert_eq!(str_of(&billing[0]), "ProvisionedTable");
    assert_eq!(str_of(&billing[1]), "PROVISIONED");
    assert_eq!(str_of(&billing[2]), table.billing_mode);
    let keys = |v: &Value| -> Vec<(String, String)> {
        v.as_sequence()
            .unwrap()
            .iter()
            .map(|k| (str_of(&k["AttributeName"]), str_of(&k["KeyType"])))
            .collect()
    };
    assert_eq!(
        keys(&p["KeySchema"]),
        [
            (table.partition_key.to_owned(), "HASH".to_owned()),
            (table.sort_key.to_owned(), "RANGE".to_owned())
        ]
    );
    let attributes: BTreeSet<(String, String)> = p["AttributeDefinitions"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| (str_of(&a["AttributeName"]), str_of(&a["AttributeType"])))
        .collect();
    let expected: BTreeSet<(String, String)> = table
        .key_attributes()
        .into_iter()
        .map(|a| (a.to_owned(), "S".to_owned()))
        .collect();
    assert_eq!(attributes, expected);
    let indexes = p["GlobalSecondaryIndexes"].as_sequence().unwrap();
    assert_eq!(indexes.len(), table.indexes.len());
    for (declared, index) in indexes.iter().zip(&table.indexes) {
        assert_eq!(str_of(&declared["IndexName"]), index.name);
        assert_eq!(
            keys(&declared["KeySchema"]),
            [
                (index.partition_key.to_owned(), "HASH".to_owned()),
                (index.sort_key.to_owned(), "RANGE".to_owned())
            ]
        );
        assert_eq!(str_of(&declared["Projection"]["ProjectionType"]), "INCLUDE");
        let projected: Vec<String> = declared["Projection"]["NonKeyAttributes"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(str_of)
            .collect();
        assert_eq!(projected, index.projected);
    }
    assert_eq!(
        str_of(&p["TimeToLiveSpecification"]["AttributeName"]),
        table.ttl_attribute
    );
    assert_eq!(str_of(&p["TimeToLiveSpecification"]["Enabled"]), "true");

    // The four the code uses, and the fan-out's on-failure destination (template only:
    // a_fan_out_that_keeps_failing_is_bounded_recorded_and_alarmed).
    assert_eq!(resources_of_type(&t, "AWS::SQS::Queue").len(), 5);
    check_queue(&t, "WorkQueue", &resources.work_queue);
    check_queue(&t, "WorkDeadLetterQueue", &resources.work_dead_letter_queue);
    check_queue(&t, "PushQueue", &resources.push_queue);
    check_queue(&t, "PushDeadLetterQueue", &resources.push_dead_letter_queue);
}

/// The stack's secrets a function's policies name (conditions included), in order.
fn secrets_in_policies(t: &Value, function: &Value) -> String {
    let function = untag(function);
    let mut text =
        serde_norway::to_string(&function["Properties"]["Policies"]).expect("policies serialise");
    // A function with a role of its own (the worker, the fan-out): that role's policies.
    if let Some(role) = function["Properties"]["Role"]
        .as_str()
        .and_then(|r| r.strip_suffix(".Arn"))
    {
        let policies = &untag(&t["Resources"][role])["Properties"]["Policies"];
        text.push_str(&serde_norway::to_string(policies).expect("policies serialise"));
    }
    [
        "AgentCredentialsSecretArn",
        "ApiKeysSecret",
        "LiteChannelSecret",
        "PushSigningKeysSecret",
    ]
    .into_iter()
    .filter(|name| text.contains(name))
    .collect::<Vec<_>>()
    .join(",")
}

#[test]
fn only_the_functions_that_need_a_secret_may_read_it() {
    let t = template();
    for (role, function) in functions(&t) {
        // The functions that run the agent (inline, queued, in a room) or cancel its calls
        // read the credentials of the agents it calls (AgentCredentialsSecretArn) and the
        // A2A-Lite channels, whose rooms it may call.
        let expected = match role.as_str() {
            // The card publishes the signing keys and, like every function behind the front
            // door, authenticates callers.
            "card" => "ApiKeysSecret,PushSigningKeysSecret",
            // The rpc function signs the extended card it serves over JSON-RPC.
            "rpc" => {
                "AgentCredentialsSecretArn,ApiKeysSecret,LiteChannelSecret,PushSigningKeysSecret"
            }
            // The front function serves the A2A-Lite channels too, when they are on.
            "front" => {
                "AgentCredentialsSecretArn,ApiKeysSecret,LiteChannelSecret,PushSigningKeysSecret"
            }
            // The chats' tokens are its credentials: it authenticates no A2A caller. The relay
            // function is its twin behind the Function URL (and the relay route checks its
            // own tokens).
            "channel" | "relay" => "AgentCredentialsSecretArn,LiteChannelSecret",
            "push" => "PushSigningKeysSecret",
            "worker" => "AgentCredentialsSecretArn,LiteChannelSecret",
            "fanout" => "",
            "send" | "stream" | "cancel" => {
                "AgentCredentialsSecretArn,ApiKeysSecret,LiteChannelSecret"
            }
            _ => "ApiKeysSecret",
        };
        assert_eq!(secrets_in_policies(&t, &function), expected, "{role}");
    }
    // Every function reads its auth settings from the globals (the template's parameters).
    let env = &untag(&t)["Globals"]["Function"]["Environment"]["Variables"];
    for name in [
        "A2A_AUTH",
        "A2A_API_KEY_SECRET_ARN",
        "A2A_API_KEY_LOCATION",
        "A2A_API_KEY_NAME",
        "A2A_JWT_ISSUER",
        "A2A_JWT_AUDIENCE",
        "A2A_JWT_JWKS_URL",
    ] {
        assert!(!env[name].is_null(), "{name} is not set for the functions");
    }
}

/// The worker function sweeps for lost inline executions on a schedule the deployer sets
/// (once a minute by default), and nothing else gets a schedule.
#[test]
fn the_worker_sweeps_on_the_configured_schedule() {
    let t = template();
    let parameter = &t["Parameters"]["SweepSchedule"];
    assert_eq!(parameter["Default"].as_str(), Some("rate(1 minute)"));
    let mut scheduled = Vec::new();
    for (name, f) in functions(&t) {
        let Some(events) = f["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, event) in events {
            if event["Type"].as_str() == Some("Schedule") {
                assert_eq!(
                    untag(&event["Properties"]["Schedule"]).as_str(),
                    Some("SweepSchedule")
                );
                scheduled.push(name.to_string());
            }
        }
    }
    assert_eq!(scheduled, ["worker"]);
}

/// Issue 45 (low): a sweep is tried once and never run late. Lambda keeps an asynchronous
/// invocation it could not run (throttled, or failed) for up to 6 hours and tries it twice
/// more, and EventBridge retries a target for 24 hours: on a busy worker, stale sweeps would
/// pile up, each doing what the next minute's does anyway. In SAM's translation the sweep's
/// rule targets the worker with no retry and a minute's age, and so does the worker's own
/// configuration of its asynchronous invocations (the sweeps are its only ones).
#[test]
fn a_sweep_is_tried_once_and_never_run_late() {
    let Some(stack) = sam::created(&[]) else {
        return;
    };
    let worker = sam::function_logical_id(&stack, "worker");
    let rules = sam::of_type(&stack, "AWS::Events::Rule");
    assert_eq!(rules.len(), 1, "{rules:?}");
    let targets = rules[0].1["Properties"]["Targets"].as_array().unwrap();
    assert_eq!(targets.len(), 1, "{targets:?}");
    assert_eq!(
        sam::target(&targets[0]["Arn"]),
        Some(format!("{worker}.Arn"))
    );
    let once = serde_json::json!({"MaximumEventAgeInSeconds": 60, "MaximumRetryAttempts": 0});
    assert_eq!(targets[0]["RetryPolicy"], once);
    let configs = sam::of_type(&stack, "AWS::Lambda::EventInvokeConfig");
    assert_eq!(configs.len(), 1, "{configs:?}");
    let config = &configs[0].1["Properties"];
    assert_eq!(sam::target(&config["FunctionName"]), Some(worker.clone()));
    // The function's unqualified ARN, which the rule invokes, is $LATEST.
    assert_eq!(config["Qualifier"], "$LATEST");
    assert_eq!(
        config["MaximumEventAgeInSeconds"],
        once["MaximumEventAgeInSeconds"]
    );
    assert_eq!(config["MaximumRetryAttempts"], once["MaximumRetryAttempts"]);
}

/// Browsers send a CORS preflight (`OPTIONS`) before a cross-origin call: every path of the
/// front door sends it to a function that serves the path (which answers it when the
/// `CorsAllowedOrigins` parameter is set), and the parameter reaches every function, off by
/// default.
#[test]
fn every_path_sends_preflights_to_a_function_and_cors_is_off_by_default() {
    let r = routes();
    let routes = r["routes"].as_array().unwrap();
    let field = |x: &serde_json::Value, k: &str| x[k].as_str().unwrap().to_owned();
    // The A2A-Lite paths are called by chat servers and by this deployment's own pushes, the
    // relay route by the agents our tasks call, never by a browser: no preflight reaches them.
    let paths: BTreeSet<String> = routes
        .iter()
        .map(|x| field(x, "path"))
        .filter(|p| !p.starts_with("/a2a-lite/") && !p.starts_with("/a2a-relay/"))
        .collect();
    for path in &paths {
        let preflight: Vec<String> = routes
            .iter()
            .filter(|x| x["method"] == "OPTIONS" && x["path"] == path.as_str())
            .map(|x| field(x, "function"))
            .collect();
        assert_eq!(preflight.len(), 1, "OPTIONS {path}: {preflight:?}");
        assert!(
            routes.iter().any(|x| x["method"] != "OPTIONS"
                && x["path"] == path.as_str()
                && x["function"] == preflight[0].as_str()),
            "OPTIONS {path} goes to {}, which does not serve the path",
            preflight[0]
        );
    }
    let t = template();
    let parameter = &t["Parameters"]["CorsAllowedOrigins"];
    assert_eq!(parameter["Default"].as_str(), Some(""));
    let env = &untag(&t)["Globals"]["Function"]["Environment"]["Variables"];
    assert_eq!(str_of(&env["A2A_CORS_ORIGINS"]), "CorsAllowedOrigins");
}

/// The short-form tag of a value (`!If`, `!Ref`, …), if it has one.
fn tag_of(v: &Value) -> Option<String> {
    match v {
        Value::Tagged(t) => Some(t.tag.to_string().trim_start_matches('!').to_owned()),
        _ => None,
    }
}

#[test]
fn the_table_survives_deletes_and_replacements_and_can_be_restored() {
    let t = template();
    let table = &t["Resources"]["TasksTable"];
    assert_eq!(table["DeletionPolicy"].as_str(), Some("Retain"));
    assert_eq!(table["UpdateReplacePolicy"].as_str(), Some("Retain"));
    let p = &table["Properties"];
    assert_eq!(
        str_of(&p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"]),
        "true"
    );
    assert_eq!(str_of(&p["DeletionProtectionEnabled"]), "true");
    // The secrets survive with it: the keys callers hold and the keys receivers trust.
    for secret in [
        "PushSigningKeysSecret",
        "ApiKeysSecret",
        "LiteChannelSecret",
    ] {
        let r = &t["Resources"][secret];
        assert_eq!(r["Type"].as_str(), Some("AWS::SecretsManager::Secret"));
        assert_eq!(r["DeletionPolicy"].as_str(), Some("Retain"), "{secret}");
        assert_eq!(
            r["UpdateReplacePolicy"].as_str(),
            Some("Retain"),
            "{secret}"
        );
    }
    assert_eq!(
        resources_of_type(&t, "AWS::SecretsManager::Secret").len(),
        3,
        "every secret is kept"
    );
}

#[test]
fn reserved_concurrency_is_a_parameter_per_function_class_and_off_by_default() {
    let t = template();
    for (name, f) in functions(&t) {
        let class = match name.as_str() {
            "worker" => "Worker",
            "push" => "Push",
            // One batch per shard of the table's stream at a time: the stream bounds it.
            "fanout" => {
                assert!(f["Properties"]
                    .get("ReservedConcurrentExecutions")
                    .is_none());
                continue;
            }
            // a_function_url_front_door_is_capped_by_default.
            "front" => continue,
            // the_machine_to_machine_routes_have_a_url_and_a_pool_of_their_own.
            "relay" => continue,
            _ => "Http",
        };
        let reserved = &f["Properties"]["ReservedConcurrentExecutions"];
        assert_eq!(tag_of(reserved).as_deref(), Some("If"), "{name}");
        let branches = untag(reserved).as_sequence().expect("!If [c, a, b]");
        assert_eq!(
            branches[0].as_str(),
            Some(format!("Reserves{class}").as_str())
        );
        assert_eq!(
            untag(&branches[1]).as_str(),
            Some(format!("{class}ReservedConcurrency").as_str()),
            "{name}"
        );
        assert_eq!(untag(&branches[2]).as_str(), Some("AWS::NoValue"), "{name}");
        // Off unless asked for: a new account's quota would refuse the stack.
        let parameter = &t["Parameters"][format!("{class}ReservedConcurrency").as_str()];
        assert_eq!(parameter["Default"].as_i64(), Some(-1), "{name}");
        let condition = &t["Conditions"][format!("Reserves{class}").as_str()];
        let text = serde_norway::to_string(condition).unwrap();
        assert!(
            text.contains(&format!("{class}ReservedConcurrency")) && text.contains("-1"),
            "{text}"
        );
    }
}

#[test]
fn the_front_door_has_one_throttled_stage_and_blocking_sends_fit_in_it() {
    let t = template();
    // Without OpenApiVersion, SAM adds a stage named "Stage", unthrottled.
    assert!(t["Globals"]["Api"]["OpenApiVersion"].as_str().is_some());
    let apis = resources_of_type(&t, "AWS::Serverless::Api");
    assert_eq!(apis.len(), 1);
    let settings = &apis["A2aApi"]["Properties"]["MethodSettings"][0];
    assert_eq!(
        untag(&settings["ThrottlingRateLimit"]).as_str(),
        Some("ApiThrottlingRateLimit")
    );
    assert_eq!(
        untag(&settings["ThrottlingBurstLimit"]).as_str(),
        Some("ApiThrottlingBurstLimit")
    );
    // API Gateway ends a buffered integration at 29 s; a blocking send must answer before
    // that even on a new instance (docs/lambda.md gives the margin).
    let blocking = &t["Parameters"]["BlockingTimeoutSeconds"];
    assert!(num(&blocking["MaxValue"]) <= 24);
    assert!(num(&blocking["Default"]) <= num(&blocking["MaxValue"]));
}

/// Every AWS call is bounded (`a2a_aws::timeouts`): after the longest blocking wait, one more
/// call that meets a stale connection and gives up still ends inside a buffered function's
/// timeout, rather than the function timing out in the middle of it.
#[test]
fn one_bounded_aws_call_after_the_longest_blocking_wait_fits_in_a_buffered_function() {
    let t = template();
    let longest_wait = num(&t["Parameters"]["BlockingTimeoutSeconds"]["MaxValue"]);
    let call = a2a_aws::CALL_LIMITS.operation;
    for (role, f) in functions(&t) {
        let timeout = f["Properties"]
            .get("Timeout")
            .map(num)
            .unwrap_or_else(|| num(&t["Globals"]["Function"]["Timeout"]));
        assert!(
            std::time::Duration::from_secs(longest_wait) + call
                <= std::time::Duration::from_secs(timeout),
            "{role}: {longest_wait} s of wait and a {call:?} call in {timeout} s"
        );
    }
}

#[test]
fn a_public_base_url_wins_over_the_request_url_everywhere() {
    let t = template();
    assert_eq!(
        t["Parameters"]["PublicBaseUrl"]["Default"].as_str(),
        Some("")
    );
    let global = &t["Globals"]["Function"]["Environment"]["Variables"]["A2A_PUBLIC_BASE_URL"];
    let text = serde_norway::to_string(global).unwrap();
    assert!(
        tag_of(global).as_deref() == Some("If")
            && text.contains("HasPublicBaseUrl")
            && text.contains("PublicBaseUrl")
            && text.contains("AWS::NoValue"),
        "{text}"
    );
    // The push function names the API itself when no custom domain is set.
    let push = &functions(&t)["push"]["Properties"]["Environment"]["Variables"];
    let text = serde_norway::to_string(&push["A2A_PUBLIC_BASE_URL"]).unwrap();
    assert!(
        text.contains("HasPublicBaseUrl") && text.contains("execute-api"),
        "{text}"
    );
}

#[test]
fn queue_functions_are_given_their_dead_letter_queue() {
    let t = template();
    let fns = functions(&t);
    for (name, var, dlq) in [
        ("worker", "A2A_WORK_DLQ_URL", "WorkDeadLetterQueue"),
        ("push", "A2A_PUSH_DLQ_URL", "PushDeadLetterQueue"),
    ] {
        let value = &fns[name]["Properties"]["Environment"]["Variables"][var];
        assert_eq!(tag_of(value).as_deref(), Some("Ref"), "{name}");
        assert_eq!(untag(value).as_str(), Some(dlq), "{name}");
    }
}

#[test]
fn sam_build_runs_without_a_prompt() {
    let text = std::fs::read_to_string(root().join("samconfig.toml")).expect("samconfig.toml");
    // rust-cargolambda is a beta feature: without this `sam build` asks before building.
    let mut section = "";
    let mut beta = false;
    let mut cached = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[default.build.parameters]" {
            beta |= line.replace(' ', "") == "beta_features=true";
            cached |= line.replace(' ', "") == "cached=true";
        }
    }
    assert!(
        beta,
        "samconfig.toml: [default.build.parameters] beta_features = true"
    );
    // SAM's build cache keys on a checksum of CodeUri: every function's is the repository
    // root, target/ included, which each build changes, so it never hits and hashes the whole
    // target directory on every build.
    let code_uri = str_of(&template()["Globals"]["Function"]["CodeUri"]);
    assert_eq!(code_uri, ".");
    assert!(
        !cached,
        "samconfig.toml: cached = true with CodeUri {code_uri}"
    );
}

/// The logical id of a function resource, by role (`push-config` → `PushConfigFunction`).
fn logical_ids(t: &Value) -> BTreeMap<String, String> {
    t["Resources"]
        .as_mapping()
        .expect("Resources")
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::Serverless::Function"))
        .map(|(k, r)| {
            (
                r["Properties"]["Environment"]["Variables"][ENV_FUNCTION]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                k.as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Every function logs in Lambda's JSON format at the configured levels, traces actively, and
/// writes to a log group of its own with the configured retention; the push signing keys'
/// refresh time and the metrics' namespace reach every function.
#[test]
fn every_function_logs_json_with_retention_and_traces() {
    let t = template();
    let globals = &untag(&t)["Globals"]["Function"];
    let logging = &globals["LoggingConfig"];
    assert_eq!(logging["LogFormat"].as_str(), Some("JSON"));
    let app_level = serde_norway::to_string(&logging["ApplicationLogLevel"]).unwrap();
    assert!(app_level.contains("LogLevel"), "{app_level}");
    assert_eq!(str_of(&logging["SystemLogLevel"]), "SystemLogLevel");
    // Active unless the Tracing parameter says PassThrough (docs/cost.md).
    assert_eq!(str_of(&globals["Tracing"]), "Tracing");
    assert_eq!(
        t["Parameters"]["Tracing"]["Default"].as_str(),
        Some("Active")
    );
    let env = &globals["Environment"]["Variables"];
    assert_eq!(str_of(&env["A2A_METRICS_NAMESPACE"]), "MetricsNamespace");
    assert_eq!(str_of(&env["A2A_METRICS_DETAIL"]), "MetricsDetail");
    // Each function that reads the signing keys uses them for as long as the template says.
    for (role, f) in functions(&t) {
        let env = &f["Properties"]["Environment"]["Variables"];
        if env.get("A2A_PUSH_SIGNING_SECRET_ARN").is_some() {
            assert_eq!(
                str_of(&env["A2A_PUSH_KEYS_REFRESH_SECS"]),
                "PushKeysRefreshSeconds",
                "{role}"
            );
        }
    }
    // Every LogLevel value maps to one of Lambda's levels.
    let levels = &t["Mappings"]["LambdaLogLevel"];
    for level in t["Parameters"]["LogLevel"]["AllowedValues"]
        .as_sequence()
        .unwrap()
    {
        let lambda = levels[level.as_str().unwrap()]["Level"].as_str();
        assert!(
            matches!(lambda, Some("ERROR" | "WARN" | "INFO" | "DEBUG" | "TRACE")),
            "{level:?}"
        );
    }

    // (The API's access log group, ApiAccessLogs, is named by CloudFormation.)
    let groups: BTreeMap<String, &Value> = resources_of_type(&t, "AWS::Logs::LogGroup")
        .into_values()
        .filter(|g| g["Properties"].get("LogGroupName").is_some())
        .map(|g| (str_of(&g["Properties"]["LogGroupName"]), g))
        .collect();
    for (role, logical) in logical_ids(&t) {
        let group = groups
            .get(&format!("/aws/lambda/${{{logical}}}"))
            .unwrap_or_else(|| panic!("{role} has no log group"));
        assert_eq!(
            str_of(&group["Properties"]["RetentionInDays"]),
            "LogRetentionDays"
        );
    }
    assert_eq!(groups.len(), logical_ids(&t).len());
    assert_eq!(num(&t["Parameters"]["LogRetentionDays"]["Default"]), 30);
}

/// Alarms on both dead-letter queues and on every function's errors and throttles, notifying
/// the optional topic.
#[test]
fn dead_letters_errors_and_throttles_raise_alarms() {
    let t = template();
    let alarms = resources_of_type(&t, "AWS::CloudWatch::Alarm");
    let watched = |namespace: &str, metric: &str| -> BTreeSet<String> {
        alarms
            .values()
            .map(|a| &a["Properties"])
            .filter(|p| p["Namespace"].as_str() == Some(namespace))
            .filter(|p| p["MetricName"].as_str() == Some(metric))
            .map(|p| {
                assert_eq!(
                    p["ComparisonOperator"].as_str(),
                    Some("GreaterThanThreshold")
                );
                assert_eq!(num(&p["Threshold"]), 0);
                let actions = serde_norway::to_string(&p["AlarmActions"]).unwrap();
                assert!(actions.contains("HasAlarmTopic"), "{actions}");
                let dimensions = p["Dimensions"].as_sequence().unwrap();
                assert_eq!(dimensions.len(), 1);
                let value = untag(&dimensions[0]["Value"]);
                match value {
                    // !GetAtt WorkDeadLetterQueue.QueueName
                    Value::String(s) => s.split('.').next().unwrap().to_owned(),
                    Value::Sequence(parts) => str_of(&parts[0]),
                    other => panic!("dimension value {other:?}"),
                }
            })
            .collect()
    };
    let dlqs: BTreeSet<String> = [
        "FanoutFailureQueue",
        "PushDeadLetterQueue",
        "WorkDeadLetterQueue",
    ]
    .map(String::from)
    .into();
    assert_eq!(
        watched("AWS/SQS", "ApproximateNumberOfMessagesVisible"),
        dlqs
    );
    let functions: BTreeSet<String> = logical_ids(&t).into_values().collect();
    assert_eq!(watched("AWS/Lambda", "Errors"), functions);
    assert_eq!(watched("AWS/Lambda", "Throttles"), functions);
    assert_eq!(
        t["Parameters"]["AlarmTopicArn"]["Default"].as_str(),
        Some("")
    );
}

/// Every function that reads the signing keys (to sign the card, the JWKS or pushes) may write
/// the first one into the stack's own secret, and only there (never into a secret of yours):
/// the card is signed from the first request. No other function may write a secret.
#[test]
fn the_functions_that_read_the_signing_keys_may_write_the_first_one() {
    let t = template();
    let mut writers = BTreeSet::new();
    for (role, function) in functions(&t) {
        let properties = &untag(&function)["Properties"];
        let policies = serde_norway::to_string(&properties["Policies"]).unwrap();
        let reads = properties["Environment"]["Variables"]
            .get("A2A_PUSH_SIGNING_SECRET_ARN")
            .is_some();
        let writes = policies.contains("secretsmanager:PutSecretValue");
        assert_eq!(writes, reads, "{role}: {policies}");
        if writes {
            writers.insert(role.clone());
            // Exactly one write grant, on the stack's own secret, under its condition.
            let grant = policies
                .split("secretsmanager:PutSecretValue")
                .nth(1)
                .unwrap();
            assert_eq!(
                policies.matches("secretsmanager:PutSecretValue").count(),
                1,
                "{role}"
            );
            let resource = grant.split("Resource:").nth(1).unwrap();
            assert!(
                resource
                    .trim_start()
                    .starts_with("!Ref PushSigningKeysSecret"),
                "{role} writes {resource}"
            );
            let before = policies
                .split("secretsmanager:PutSecretValue")
                .next()
                .unwrap();
            let condition = before.rfind("CreatePushSigningSecret").unwrap();
            assert!(
                before[condition..].matches("!If").count() == 0,
                "{role}: the write is under CreatePushSigningSecret"
            );
        }
    }
    let expected: BTreeSet<String> = ["card", "front", "push", "rpc"].map(String::from).into();
    assert_eq!(writers, expected);
}

/// The template as CloudFormation sees it with `CreateTable` `create`: each
/// `!If [CreateTable, a, b]` replaced by its branch, each resource under that condition (or
/// under one that requires it, such as `ProvisionedTable`) kept or dropped.
fn with_create_table(t: &Value, create: bool) -> Value {
    // The conditions that hold only when CreateTable does: itself, and the `!And`s naming it.
    let requiring: BTreeSet<String> = t["Conditions"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(name, c)| {
            name.as_str() == Some("CreateTable")
                || (tag_of(c).as_deref() == Some("And")
                    && untag(c).as_sequence().unwrap().iter().any(|term| {
                        tag_of(term).as_deref() == Some("Condition")
                            && untag(term).as_str() == Some("CreateTable")
                    }))
        })
        .map(|(name, _)| name.as_str().unwrap().to_owned())
        .collect();
    fn rewrite(v: &Value, create: bool, requiring: &BTreeSet<String>) -> Value {
        match v {
            Value::Tagged(t) if t.tag == "!If" => {
                let branches = t.value.as_sequence().expect("!If [condition, then, else]");
                if branches[0].as_str() == Some("CreateTable") {
                    return rewrite(&branches[if create { 1 } else { 2 }], create, requiring);
                }
                v.clone()
            }
            Value::Tagged(t) => Value::Tagged(Box::new(serde_norway::value::TaggedValue {
                tag: t.tag.clone(),
                value: rewrite(&t.value, create, requiring),
            })),
            Value::Sequence(items) => Value::Sequence(
                items
                    .iter()
                    .map(|i| rewrite(i, create, requiring))
                    .collect(),
            ),
            Value::Mapping(map) => Value::Mapping(
                map.iter()
                    .filter(|(_, r)| {
                        create
                            || !r["Condition"]
                                .as_str()
                                .is_some_and(|c| requiring.contains(c))
                    })
                    .map(|(k, v)| (k.clone(), rewrite(v, create, requiring)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    rewrite(t, create, &requiring)
}

/// Every name `v` refers to: `!Ref X`, `!GetAtt X.Attr`, `${X}` / `${X.Attr}` in a `!Sub`.
fn references(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Tagged(t) => {
            match (t.tag.to_string().as_str(), t.value.as_str()) {
                ("!Ref", Some(name)) => {
                    out.insert(name.to_owned());
                }
                ("!GetAtt", Some(target)) => {
                    out.insert(target.split('.').next().unwrap().to_owned());
                }
                ("!Sub", Some(text)) => {
                    for part in text.split("${").skip(1) {
                        let name = part.split(['}', '.']).next().unwrap();
                        out.insert(name.to_owned());
                    }
                }
                _ => {}
            }
            references(&t.value, out);
        }
        Value::Sequence(items) => items.iter().for_each(|i| references(i, out)),
        Value::Mapping(map) => map.values().for_each(|i| references(i, out)),
        _ => {}
    }
}

/// The resources of every `dynamodb:` statement of a function's policies.
fn table_resources(function: &Value) -> Vec<&Value> {
    function["Properties"]["Policies"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|p| p.get("Statement").and_then(Value::as_sequence))
        .flatten()
        .filter(|s| {
            serde_norway::to_string(&s["Action"])
                .unwrap()
                .contains("dynamodb:")
        })
        .flat_map(|s| match &s["Resource"] {
            Value::Sequence(list) => list.iter().collect(),
            one => vec![one],
        })
        .collect()
}

#[test]
fn an_existing_table_replaces_the_stack_s_own_everywhere() {
    let t = template();
    let parameter = &t["Parameters"]["ExistingTableName"];
    assert_eq!(
        parameter["Default"].as_str(),
        Some(""),
        "the stack's own table by default"
    );
    // Default: the stack's table, created and used; the parameter unused.
    let own = with_create_table(&t, true);
    assert!(own["Resources"].get("TasksTable").is_some());
    let mut refs = BTreeSet::new();
    references(&own["Resources"], &mut refs);
    references(&own["Globals"], &mut refs);
    references(&own["Outputs"], &mut refs);
    assert!(refs.contains("TasksTable"));
    assert!(!refs.contains("ExistingTableName"), "{refs:?}");
    // Set: no table created, nothing refers to the stack's table, and every function's
    // table grants and its A2A_TABLE name the existing one.
    let existing = with_create_table(&t, false);
    assert!(existing["Resources"].get("TasksTable").is_none());
    let mut refs = BTreeSet::new();
    references(&existing["Resources"], &mut refs);
    references(&existing["Globals"], &mut refs);
    references(&existing["Outputs"], &mut refs);
    assert!(!refs.contains("TasksTable"), "{refs:?}");
    let mut table = BTreeSet::new();
    references(
        &existing["Globals"]["Function"]["Environment"]["Variables"]["A2A_TABLE"],
        &mut table,
    );
    assert_eq!(table, BTreeSet::from(["ExistingTableName".to_owned()]));
    let mut granted = 0;
    for (role, f) in functions(&existing) {
        for resource in table_resources(&f) {
            let mut r = BTreeSet::new();
            references(resource, &mut r);
            assert!(r.contains("ExistingTableName"), "{role}: {resource:?}");
            let arn = str_of(resource);
            // The fan-out reads the existing table's stream (the one ExistingTableStreamArn
            // names; a table has one stream at a time).
            if arn.ends_with("table/${ExistingTableName}/stream/*") {
                assert_eq!(role, "fanout");
                granted += 1;
                continue;
            }
            assert!(
                arn == "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${ExistingTableName}"
                    || arn.ends_with("table/${ExistingTableName}/index/by_owner")
                    || arn.ends_with("table/${ExistingTableName}/index/by_context"),
                "{role}: {arn}"
            );
            granted += 1;
        }
    }
    assert!(
        granted >= functions(&t).len() - 1,
        "the table grants were found"
    );
}

/// Whether condition `name` holds when the parameters are their defaults except `overrides`.
fn condition(t: &Value, name: &str, overrides: &BTreeMap<&str, &str>) -> bool {
    fn operand(t: &Value, v: &Value, overrides: &BTreeMap<&str, &str>) -> String {
        if tag_of(v).as_deref() == Some("Ref") {
            let param = untag(v).as_str().unwrap();
            if let Some(value) = overrides.get(param) {
                return (*value).to_owned();
            }
            return str_of(&t["Parameters"][param]["Default"]);
        }
        str_of(v)
    }
    fn eval(t: &Value, v: &Value, overrides: &BTreeMap<&str, &str>) -> bool {
        let args = untag(v);
        match tag_of(v).as_deref() {
            Some("Equals") => {
                let pair = args.as_sequence().unwrap();
                operand(t, &pair[0], overrides) == operand(t, &pair[1], overrides)
            }
            Some("Not") => !eval(t, &args.as_sequence().unwrap()[0], overrides),
            Some("And") => args
                .as_sequence()
                .unwrap()
                .iter()
                .all(|c| eval(t, c, overrides)),
            Some("Or") => args
                .as_sequence()
                .unwrap()
                .iter()
                .any(|c| eval(t, c, overrides)),
            Some("Condition") => condition(t, args.as_str().unwrap(), overrides),
            other => panic!("condition function {other:?}"),
        }
    }
    eval(t, &t["Conditions"][name], overrides)
}

/// The logical ids of the resources a stack creates with `FrontDoor` = `front_door`.
fn created(t: &Value, front_door: &str) -> BTreeSet<String> {
    created_with(t, &BTreeMap::from([("FrontDoor", front_door)]))
}

/// As [`created`], with the A2A-Lite channels on (the channel function is one of the HTTP
/// functions then).
fn created_with_channels(t: &Value, front_door: &str) -> BTreeSet<String> {
    created_with(
        t,
        &BTreeMap::from([("FrontDoor", front_door), ("LiteChannels", "on")]),
    )
}

/// The logical ids of the resources a stack creates with the parameters at their defaults
/// except `overrides`.
fn created_with(t: &Value, overrides: &BTreeMap<&str, &str>) -> BTreeSet<String> {
    t["Resources"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, r)| {
            r.get("Condition")
                .and_then(Value::as_str)
                .is_none_or(|c| condition(t, c, overrides))
        })
        .map(|(k, _)| k.as_str().unwrap().to_owned())
        .collect()
}

/// The (action, resource) pairs of a function's policy statements.
fn grants(function: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for policy in untag(&function["Properties"]["Policies"])
        .as_sequence()
        .unwrap()
    {
        let Some(statements) = policy.get("Statement").and_then(Value::as_sequence) else {
            continue;
        };
        for statement in statements {
            let resource = serde_norway::to_string(&statement["Resource"]).unwrap();
            let actions = match untag(&statement["Action"]) {
                Value::Sequence(actions) => actions.iter().map(str_of).collect(),
                one => vec![str_of(one)],
            };
            for action in actions {
                out.insert((action, resource.clone()));
            }
        }
    }
    out
}

/// `FrontDoor` = `ApiGateway` (the default) creates the API and the per-operation functions;
/// `FunctionUrl` creates neither, but one streaming `front` function behind a Function URL,
/// granted exactly the union of the HTTP functions' grants. The worker and push functions stay,
/// and the outputs and the push tokens' issuer name the chosen front door.
#[test]
fn the_front_door_parameter_chooses_api_gateway_or_one_function_url() {
    let t = template();
    let parameter = &t["Parameters"]["FrontDoor"];
    assert_eq!(parameter["Default"].as_str(), Some("ApiGateway"));
    let ids = logical_ids(&t);
    let http: BTreeSet<String> = HttpFunction::ALL
        .iter()
        .map(|f| ids[f.name()].clone())
        .collect();
    let front = ids["front"].clone();
    let api_gateway = created_with_channels(&t, "ApiGateway");
    let function_url = created_with_channels(&t, "FunctionUrl");
    // Off by default: no channel function, no channel secret.
    assert!(!created(&t, "ApiGateway").contains(&ids["channel"]));
    assert!(!created(&t, "ApiGateway").contains("LiteChannelSecret"));
    for stack in [&api_gateway, &function_url] {
        assert!(stack.contains(&ids["worker"]) && stack.contains(&ids["push"]));
        assert!(stack.contains("TasksTable") && stack.contains("WorkQueue"));
    }
    assert!(api_gateway.contains("A2aApi"));
    assert!(http.is_subset(&api_gateway));
    assert!(!api_gateway.contains(&front));
    assert!(!function_url.contains("A2aApi"));
    assert!(http.is_disjoint(&function_url), "{function_url:?}");
    assert!(function_url.contains(&front));
    // Each created function has its log group and alarms, and nothing else differs.
    let only_api: BTreeSet<_> = api_gateway.difference(&function_url).cloned().collect();
    let only_url: BTreeSet<_> = function_url.difference(&api_gateway).cloned().collect();
    // The channel function serves no A2A operation, so it publishes no operation `Errors`
    // for a ServerErrors alarm to watch (its failures are Lambda's `Errors`).
    let channel = ids["channel"].clone();
    let relay = ids["relay"].clone();
    let per_function = |logical: &str| {
        let class = logical.trim_end_matches("Function");
        let mut each = vec![
            logical.to_owned(),
            format!("{class}LogGroup"),
            format!("{class}ErrorsAlarm"),
            format!("{class}ThrottlesAlarm"),
        ];
        if logical != channel && logical != relay {
            each.push(format!("{class}ServerErrorsAlarm"));
        }
        // The functions where a remote agent's push or a room's answer ends a wait.
        if ["Send", "Channel", "Front", "Relay"].contains(&class) {
            each.push(format!("{class}BrokenExecutionsAlarm"));
        }
        each
    };
    let mut expected: BTreeSet<String> = http.iter().flat_map(|f| per_function(f)).collect();
    expected.extend(["A2aApi", "ApiServerErrorsAlarm"].map(String::from));
    assert_eq!(only_api, expected);
    // With the default AuthType NONE, the permissions a public Function URL needs.
    let mut expected: BTreeSet<String> = per_function(&front).into_iter().collect();
    expected.extend(per_function(&relay));
    expected.extend(
        [
            "FrontFunctionUrlPublicAccess",
            "FrontFunctionUrlPublicInvoke",
            "FrontUrlServerErrorsAlarm",
            "RelayFunctionUrlPublicAccess",
            "RelayFunctionUrlPublicInvoke",
            "RelayUrlServerErrorsAlarm",
        ]
        .map(String::from),
    );
    assert_eq!(only_url, expected);

    let fns = functions(&t);
    let f = &fns["front"]["Properties"];
    let url = &f["FunctionUrlConfig"];
    assert_eq!(url["InvokeMode"].as_str(), Some("RESPONSE_STREAM"));
    // FunctionUrlAuthType, said through PublicFunctionUrl (which `sam deploy --guided` reads:
    // infra/check-template.sh): NONE exactly when the parameter is NONE.
    assert_eq!(tag_of(&url["AuthType"]).as_deref(), Some("If"));
    let branches = untag(&url["AuthType"]).as_sequence().unwrap();
    assert_eq!(str_of(&branches[0]), "PublicFunctionUrl");
    assert_eq!(
        (str_of(&branches[1]), str_of(&branches[2])),
        ("NONE".into(), "AWS_IAM".into())
    );
    let allowed: Vec<String> = t["Parameters"]["FunctionUrlAuthType"]["AllowedValues"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(str_of)
        .collect();
    assert_eq!(allowed, ["NONE", "AWS_IAM"]);
    for value in ["NONE", "AWS_IAM"] {
        let overrides =
            BTreeMap::from([("FrontDoor", "FunctionUrl"), ("FunctionUrlAuthType", value)]);
        assert_eq!(
            condition(&t, "PublicFunctionUrl", &overrides),
            value == "NONE"
        );
    }
    assert_eq!(
        t["Parameters"]["FunctionUrlAuthType"]["Default"].as_str(),
        Some("NONE")
    );
    // Streams end (MaxStreamSeconds) before the function does.
    assert!(num(&f["Timeout"]) > num(&t["Parameters"]["MaxStreamSeconds"]["MaxValue"]));
    assert!(f.get("Events").is_none(), "no API events");
    // The memory of the functions it stands for (docs/lambda.md, "Memory").
    for h in HttpFunction::ALL {
        assert_eq!(
            num(&f["MemorySize"]),
            num(&fns[h.name()]["Properties"]["MemorySize"]),
            "{}",
            h.name()
        );
    }
    // Least privilege: what the HTTP functions are granted, together, and nothing more.
    let union: BTreeSet<_> = HttpFunction::ALL
        .iter()
        .flat_map(|h| grants(&fns[h.name()]))
        .collect();
    assert_eq!(grants(&fns["front"]), union);

    // The URLs of the chosen front door: the outputs and the push tokens' issuer.
    for output in ["RestBaseUrl", "JsonRpcUrl", "CardUrl"] {
        let value = &t["Outputs"][output]["Value"];
        let text = serde_norway::to_string(value).unwrap();
        assert_eq!(tag_of(value).as_deref(), Some("If"), "{output}");
        let branches = untag(value).as_sequence().unwrap();
        assert_eq!(branches[0].as_str(), Some("ViaFunctionUrl"), "{output}");
        assert!(
            text.contains("FrontFunctionUrl.FunctionUrl") && text.contains("A2aApi"),
            "{output}: {text}"
        );
    }
    let push = &fns["push"]["Properties"]["Environment"]["Variables"]["A2A_PUBLIC_BASE_URL"];
    let text = serde_norway::to_string(push).unwrap();
    assert!(
        text.contains("ViaFunctionUrl") && text.contains("FrontFunctionUrl.FunctionUrl"),
        "{text}"
    );
}

#[test]
fn the_fanout_reads_the_table_stream_filtered_to_tasks_with_push_configs() {
    let t = template();
    let table = &t["Resources"]["TasksTable"]["Properties"];
    assert_eq!(
        table["StreamSpecification"]["StreamViewType"].as_str(),
        Some(
            a2a_aws::resources::Resources::named("x")
                .table
                .stream_view_type
        )
    );
    let fanout = &t["Resources"]["FanoutFunction"]["Properties"];
    let event = &fanout["Events"]["Heads"];
    assert_eq!(event["Type"].as_str(), Some("DynamoDB"));
    let p = &event["Properties"];
    // (a_stream_is_read_from_its_start_only_when_its_records_are_all_new)
    assert_eq!(tag_of(&p["StartingPosition"]).as_deref(), Some("If"));
    let reports = serde_norway::to_string(&p["FunctionResponseTypes"]).unwrap();
    assert!(reports.contains("ReportBatchItemFailures"), "{reports}");
    let pattern = p["FilterCriteria"]["Filters"][0]["Pattern"]
        .as_str()
        .unwrap();
    let parsed: serde_json::Value = serde_json::from_str(pattern).unwrap();
    let ours: serde_json::Value = serde_json::from_str(a2a_aws::fanout::FILTER_PATTERN).unwrap();
    assert_eq!(parsed, ours);
    // The filter passes what the code expects to see, and nothing else.
    let with = serde_json::json!({"dynamodb": {"NewImage": {"pf": {"S": "1"}}}});
    let without = serde_json::json!({"dynamodb": {"NewImage": {"v": {"N": "3"}}}});
    assert!(a2a_aws::fanout::passes_filter(&with));
    assert!(!a2a_aws::fanout::passes_filter(&without));
}

/// `TableCapacity` = `OnDemand` (the default) bills the table per request and creates no
/// scaling; `Provisioned` gives the table and its index capacity, read and write, each kept by a
/// target tracking policy between the parameters' minimum and maximum; with an existing table
/// (`ExistingTableName`) the stack leaves its billing alone.
#[test]
fn the_table_is_billed_on_demand_unless_provisioned_capacity_is_asked_for() {
    let t = template();
    let parameter = &t["Parameters"]["TableCapacity"];
    assert_eq!(str_of(&parameter["Default"]), "OnDemand");
    let allowed: Vec<String> = parameter["AllowedValues"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(str_of)
        .collect();
    assert_eq!(allowed, ["OnDemand", "Provisioned"]);

    let targets = resources_of_type(&t, "AWS::ApplicationAutoScaling::ScalableTarget");
    let policies = resources_of_type(&t, "AWS::ApplicationAutoScaling::ScalingPolicy");
    let scaling = |overrides: &BTreeMap<&str, &str>| -> BTreeSet<String> {
        created_with(&t, overrides)
            .into_iter()
            .filter(|id| targets.contains_key(id) || policies.contains_key(id))
            .collect()
    };
    assert!(
        scaling(&BTreeMap::new()).is_empty(),
        "on demand scales nothing"
    );
    let provisioned = BTreeMap::from([("TableCapacity", "Provisioned")]);
    assert!(
        scaling(&BTreeMap::from([
            ("TableCapacity", "Provisioned"),
            ("ExistingTableName", "a2a-restored")
        ]))
        .is_empty(),
        "an existing table's billing is its own"
    );
    // A target and a policy for reads and for writes, of the table and of each index.
    let created = scaling(&provisioned);
    assert_eq!(created.len(), 12, "{created:?}");

    // The capacity the table and its indexes start with, only when provisioned.
    let table = &t["Resources"]["TasksTable"]["Properties"];
    let indexes = table["GlobalSecondaryIndexes"].as_sequence().unwrap();
    assert_eq!(indexes.len(), 2);
    for throughput in [
        &table["ProvisionedThroughput"],
        &indexes[0]["ProvisionedThroughput"],
        &indexes[1]["ProvisionedThroughput"],
    ] {
        assert_eq!(tag_of(throughput).as_deref(), Some("If"));
        let branches = untag(throughput).as_sequence().unwrap();
        assert_eq!(str_of(&branches[0]), "ProvisionedTable");
        assert_eq!(
            str_of(&branches[1]["ReadCapacityUnits"]),
            "ProvisionedReadCapacityMin"
        );
        assert_eq!(
            str_of(&branches[1]["WriteCapacityUnits"]),
            "ProvisionedWriteCapacityMin"
        );
        assert_eq!(str_of(&branches[2]), "AWS::NoValue");
    }

    // One target and one policy per (table or index, read or write).
    let index_names: BTreeSet<String> = indexes.iter().map(|i| str_of(&i["IndexName"])).collect();
    let mut scaled = BTreeSet::new();
    let mut dimensions = BTreeSet::new();
    for (logical, target) in &targets {
        assert!(created.contains(logical), "{logical}");
        let p = &target["Properties"];
        assert_eq!(str_of(&p["ServiceNamespace"]), "dynamodb");
        let dimension = str_of(&p["ScalableDimension"]);
        let (scope, capacity) = match dimension.as_str() {
            "dynamodb:table:ReadCapacityUnits" => ("table", "Read"),
            "dynamodb:table:WriteCapacityUnits" => ("table", "Write"),
            "dynamodb:index:ReadCapacityUnits" => ("index", "Read"),
            "dynamodb:index:WriteCapacityUnits" => ("index", "Write"),
            other => panic!("{logical} scales {other}"),
        };
        let resource = str_of(&p["ResourceId"]);
        match scope {
            "table" => assert_eq!(resource, "table/${TasksTable}", "{logical}"),
            _ => {
                let index = resource
                    .strip_prefix("table/${TasksTable}/index/")
                    .unwrap_or_else(|| panic!("{logical} scales {resource}"));
                assert!(index_names.contains(index), "{logical} scales {resource}");
            }
        }
        assert!(
            scaled.insert((resource, capacity)),
            "{logical}: one target per resource and capacity"
        );
        assert_eq!(
            str_of(&p["MinCapacity"]),
            format!("Provisioned{capacity}CapacityMin")
        );
        assert_eq!(
            str_of(&p["MaxCapacity"]),
            format!("Provisioned{capacity}CapacityMax")
        );
        let own: Vec<_> = policies
            .iter()
            .filter(|(_, policy)| str_of(&policy["Properties"]["ScalingTargetId"]) == *logical)
            .collect();
        assert_eq!(own.len(), 1, "{logical} has one policy");
        let (policy_id, policy) = own[0];
        assert!(created.contains(policy_id), "{policy_id}");
        let p = &policy["Properties"];
        assert_eq!(str_of(&p["PolicyType"]), "TargetTrackingScaling");
        let tracking = &p["TargetTrackingScalingPolicyConfiguration"];
        assert_eq!(
            str_of(&tracking["TargetValue"]),
            "ProvisionedTargetUtilization"
        );
        assert_eq!(
            str_of(&tracking["PredefinedMetricSpecification"]["PredefinedMetricType"]),
            format!("DynamoDB{capacity}CapacityUtilization")
        );
        dimensions.insert(dimension);
    }
    assert_eq!(dimensions.len(), 4, "{dimensions:?}");
    assert_eq!(scaled.len(), 2 * (1 + index_names.len()), "{scaled:?}");
    for name in [
        "ProvisionedReadCapacityMin",
        "ProvisionedReadCapacityMax",
        "ProvisionedWriteCapacityMin",
        "ProvisionedWriteCapacityMax",
    ] {
        assert!(
            num(&t["Parameters"][name]["Default"]) >= 1,
            "{name} has a default"
        );
    }
}

/// A fan-out batch that keeps failing holds its shard back, and after 24 hours the stream drops
/// its records: the mapping bounds the retries (count and age, leaving most of the stream's
/// 24 hours to replay the batch), records a batch it gave up on in an on-failure queue the
/// function's role may send to, and three alarms see it: the queue, the records' age, and the
/// function's own count of failed batches (Lambda counts a partial batch response as a
/// success, so `Errors` never would). Read from SAM's translation.
#[test]
fn a_fan_out_that_keeps_failing_is_bounded_recorded_and_alarmed() {
    let Some(stack) = sam::created(&[]) else {
        return;
    };
    let mappings: Vec<&serde_json::Value> = sam::of_type(&stack, "AWS::Lambda::EventSourceMapping")
        .into_iter()
        .map(|(_, m)| &m["Properties"])
        .filter(|p| sam::target(&p["FunctionName"]).as_deref() == Some("FanoutFunction"))
        .collect();
    assert_eq!(mappings.len(), 1);
    let m = mappings[0];
    let retries = m["MaximumRetryAttempts"]
        .as_i64()
        .expect("MaximumRetryAttempts");
    assert!(
        (0..=10_000).contains(&retries),
        "bounded retries: {retries}"
    );
    let age = m["MaximumRecordAgeInSeconds"]
        .as_i64()
        .expect("MaximumRecordAgeInSeconds");
    assert!(
        (60..=6 * 3600).contains(&age),
        "a failed batch leaves the stream's 24 hours to be replayed: at least 18 of them ({age} s)"
    );
    assert_eq!(m["BisectBatchOnFunctionError"], true);
    assert_eq!(
        m["FunctionResponseTypes"],
        serde_json::json!(["ReportBatchItemFailures"])
    );
    let destination = &m["DestinationConfig"]["OnFailure"]["Destination"];
    assert_eq!(
        sam::target(destination).as_deref(),
        Some("FanoutFailureQueue.Arn")
    );
    let queue = &stack["Resources"]["FanoutFailureQueue"];
    assert_eq!(queue["Type"], "AWS::SQS::Queue");
    assert!(
        queue["Properties"].get("FifoQueue").is_none(),
        "Lambda's on-failure destination must be a standard queue"
    );

    // The mapping sends to the destination with the function's role.
    let role = &stack["Resources"]["FanoutFunctionRole"]["Properties"];
    let sends: Vec<&serde_json::Value> = role["Policies"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["PolicyDocument"]["Statement"].as_array().unwrap())
        .filter(|s| s["Action"] == serde_json::json!(["sqs:SendMessage"]))
        .map(|s| &s["Resource"])
        .collect();
    assert!(
        sends
            .iter()
            .any(|r| sam::target(r).as_deref() == Some("FanoutFailureQueue.Arn")),
        "{sends:?}"
    );

    let alarms: Vec<&serde_json::Value> = sam::of_type(&stack, "AWS::CloudWatch::Alarm")
        .into_iter()
        .map(|(_, a)| &a["Properties"])
        .collect();
    let alarmed = |namespace: serde_json::Value, metric: &str, dimension: &str| {
        alarms.iter().any(|p| {
            p["Namespace"] == namespace
                && p["MetricName"] == metric
                && sam::target(&p["Dimensions"][0]["Value"]).as_deref() == Some(dimension)
        })
    };
    assert!(alarmed(
        "AWS/SQS".into(),
        "ApproximateNumberOfMessagesVisible",
        "FanoutFailureQueue.QueueName"
    ));
    assert!(alarmed(
        "AWS/Lambda".into(),
        "IteratorAge",
        "FanoutFunction"
    ));
    assert!(alarmed(
        serde_json::json!({"Ref": "MetricsNamespace"}),
        a2a_lambda_glue::metrics::FANOUT_FAILURES,
        "FanoutFunction"
    ));
}

/// What Lambda's JSON log filter does with an application log line under `ApplicationLogLevel`
/// `threshold` (docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html):
/// it reads the line's `level`; a missing or invalid `level`, or a missing or invalid RFC 3339
/// `timestamp`, makes the line INFO; it keeps lines of the threshold's level and more severe.
fn lambda_keeps(line: &serde_json::Value, threshold: &str) -> bool {
    const LEVELS: [&str; 6] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"];
    let rank = |l: &str| LEVELS.iter().position(|x| x.eq_ignore_ascii_case(l));
    let timestamp_valid = line["timestamp"]
        .as_str()
        .is_some_and(|t| a2a_protocol::Timestamp::parse(t).is_ok());
    let level = line["level"]
        .as_str()
        .and_then(rank)
        .filter(|_| timestamp_valid)
        .unwrap_or(2);
    level >= rank(threshold).expect("a Lambda log level")
}

/// Lambda drops log lines below `ApplicationLogLevel`, and EMF metric lines are log lines: at
/// every `LogLevel` the template allows, the metric lines a function writes (its settings read
/// `AWS_LAMBDA_LOG_LEVEL`, which Lambda sets from `ApplicationLogLevel`) pass the filter.
#[test]
fn metric_lines_pass_lambdas_log_filter_at_every_log_level() {
    let t = template();
    let allowed = t["Parameters"]["LogLevel"]["AllowedValues"]
        .as_sequence()
        .unwrap();
    assert!(allowed.len() >= 5);
    let global = &t["Globals"]["Function"]["LoggingConfig"];
    assert_eq!(
        tag_of(&global["ApplicationLogLevel"]).as_deref(),
        Some("FindInMap")
    );
    for value in allowed {
        let log_level = str_of(value);
        let lambda_level = str_of(&t["Mappings"]["LambdaLogLevel"][log_level.as_str()]["Level"]);
        let settings = a2a_lambda_glue::Settings::from_lookup(|name| match name {
            "A2A_TABLE" => Some("t".into()),
            "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
            "AWS_LAMBDA_LOG_LEVEL" => Some(lambda_level.clone()),
            _ => None,
        })
        .unwrap();
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        let metrics = settings.metrics_to(std::sync::Arc::new(move |line: &str| {
            sink.lock().unwrap().push(line.to_owned());
        }));
        use a2a_core::Observer as _;
        metrics.operation(a2a_protocol::Operation::GetTask, Default::default(), None);
        metrics.task_finished(a2a_protocol::TaskState::Completed);
        metrics.fanout_failure(3, "queue gone");
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 3);
        for line in lines.iter() {
            let parsed: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(
                lambda_keeps(&parsed, &lambda_level),
                "LogLevel {log_level} (ApplicationLogLevel {lambda_level}) drops {line}"
            );
            assert!(parsed["_aws"]["CloudWatchMetrics"].is_array());
        }
    }
}

/// SAM adds AWS's managed `AWSLambdaSQSQueueExecutionRole` / `AWSLambdaDynamoDBExecutionRole`
/// to a role it generates for a function with an SQS or DynamoDB event: receiving and deleting
/// on every queue, reading every stream, of the account. In SAM's translation, behind either
/// front door, no role carries a managed policy beyond writing logs and traces (`iam.rs` checks
/// the inline grants against what the code calls).
#[test]
fn no_role_carries_a_managed_policy_beyond_logs_and_traces() {
    for front_door in ["ApiGateway", "FunctionUrl"] {
        let Some(stack) = sam::created(&[("FrontDoor", front_door)]) else {
            return;
        };
        let roles = sam::of_type(&stack, "AWS::IAM::Role");
        assert!(roles.len() >= 4, "{front_door}: {} roles", roles.len());
        for (name, role) in roles {
            for arn in role["Properties"]["ManagedPolicyArns"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let arn = arn
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| {
                        arn["Fn::Sub"]
                            .as_str()
                            .map(|a| a.replace("${AWS::Partition}", "aws"))
                    })
                    .unwrap_or_else(|| panic!("{name}: {arn}"));
                assert!(
                    [
                        "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
                        "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
                    ]
                    .contains(&arn.as_str()),
                    "{front_door}: {name} has {arn}"
                );
            }
        }
    }
}

/// `ExistingTableName` without the stream's ARN would fail mid-deploy (the fan-out's event
/// source mapping has no stream) and roll the stack back: the template's `Rules` refuse it
/// before anything is created, and a stream ARN without the table it belongs to.
#[test]
fn an_existing_table_without_its_stream_is_refused_before_anything_is_created() {
    let stream =
        "arn:aws:dynamodb:us-east-1:123456789012:table/a2a-restored/stream/2026-11-26T10:00:00.000";
    // (parameters, the rule that refuses them).
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);
    let cases: [Case<'_>; 4] = [
        (&[], None),
        (
            &[
                ("ExistingTableName", "a2a-restored"),
                ("ExistingTableStreamArn", stream),
            ],
            None,
        ),
        (
            &[("ExistingTableName", "a2a-restored")],
            Some("ExistingTableName needs ExistingTableStreamArn"),
        ),
        (
            &[("ExistingTableStreamArn", stream)],
            Some("ExistingTableStreamArn is the stream of the table ExistingTableName names"),
        ),
    ];
    for (overrides, refused) in cases {
        let Some(stack) = sam::created(overrides) else {
            return;
        };
        let failed: Vec<&str> = stack["FailedRules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        match refused {
            None => assert!(failed.is_empty(), "{overrides:?}: {failed:?}"),
            Some(why) => assert!(
                failed.len() == 1 && failed[0].starts_with(why),
                "{overrides:?}: {failed:?}"
            ),
        }
    }
}

/// Failures of ours that callers see are alarmed, not only a function's own `Errors` (an
/// invocation that failed): API Gateway's 5xx on the stage, or the Function URL's; and, per
/// HTTP function, the operations that failed on our side (the EMF metric `Errors` by
/// `FunctionName`, which `EmfObserver` publishes), which include JSON-RPC errors answered with
/// HTTP 200. Read from SAM's translation, behind each front door.
#[test]
fn server_errors_are_alarmed_at_the_front_door_and_per_function() {
    for front_door in ["ApiGateway", "FunctionUrl"] {
        let Some(stack) = sam::created(&[("FrontDoor", front_door)]) else {
            return;
        };
        let alarms: Vec<&serde_json::Value> = sam::of_type(&stack, "AWS::CloudWatch::Alarm")
            .into_iter()
            .map(|(_, a)| &a["Properties"])
            .collect();
        let dimension = |p: &serde_json::Value, name: &str| -> Option<serde_json::Value> {
            p["Dimensions"]
                .as_array()?
                .iter()
                .find(|d| d["Name"] == name)
                .map(|d| d["Value"].clone())
        };
        let watches = |namespace: serde_json::Value, metric: &str, function: &str| {
            alarms.iter().any(|p| {
                p["Namespace"] == namespace
                    && p["MetricName"] == metric
                    && p["Threshold"] == 0
                    && p["ComparisonOperator"] == "GreaterThanThreshold"
                    && dimension(p, "FunctionName")
                        .is_some_and(|v| sam::target(&v).as_deref() == Some(function))
            })
        };
        let http: Vec<String> = sam::of_type(&stack, "AWS::Lambda::Function")
            .into_iter()
            .filter(|(_, f)| {
                let role = f["Properties"]["Environment"]["Variables"][ENV_FUNCTION]
                    .as_str()
                    .unwrap();
                role == "front" || HttpFunction::ALL.iter().any(|h| h.name() == role)
            })
            .map(|(logical, _)| logical.to_owned())
            .collect();
        assert!(!http.is_empty());
        for function in &http {
            assert!(
                watches(
                    serde_json::json!({"Ref": "MetricsNamespace"}),
                    "Errors",
                    function
                ),
                "{front_door}: {function}'s failed operations are not alarmed"
            );
        }
        if front_door == "ApiGateway" {
            let title = &stack["Resources"]["A2aApi"]["Properties"]["Body"]["info"]["title"];
            let stage = &stack["Resources"]["A2aApiStage"]["Properties"]["StageName"];
            assert!(
                alarms.iter().any(|p| p["Namespace"] == "AWS/ApiGateway"
                    && p["MetricName"] == "5XXError"
                    && dimension(p, "ApiName").as_ref() == Some(title)
                    && dimension(p, "Stage").as_ref() == Some(stage)),
                "API Gateway's 5xx on the stage"
            );
        } else {
            assert!(watches("AWS/Lambda".into(), "Url5xxCount", "FrontFunction"));
            assert!(watches("AWS/Lambda".into(), "Url5xxCount", "RelayFunction"));
        }
    }
}

/// Durable executions that break (a record that no longer reads, a remote agent's answer too
/// large to keep: the EMF metric `BrokenExecutions`, each a task failed for a reason of ours)
/// are alarmed on every function where a wait can end: the worker (its sweep, polls and
/// resumes), the relay route's function (remote agents' pushes) and the A2A-Lite rooms'
/// (their answers), behind each front door. Read from SAM's translation.
#[test]
fn broken_durable_executions_are_alarmed_where_waits_end() {
    for front_door in ["ApiGateway", "FunctionUrl"] {
        let Some(stack) = sam::created(&[("FrontDoor", front_door), ("LiteChannels", "on")]) else {
            return;
        };
        let watched: BTreeSet<String> = sam::of_type(&stack, "AWS::CloudWatch::Alarm")
            .into_iter()
            .map(|(_, a)| &a["Properties"])
            .filter(|p| p["MetricName"] == "BrokenExecutions")
            .map(|p| {
                assert_eq!(
                    p["Namespace"],
                    serde_json::json!({"Ref": "MetricsNamespace"})
                );
                assert_eq!(
                    (&p["Threshold"], &p["ComparisonOperator"]),
                    (&0.into(), &"GreaterThanThreshold".into())
                );
                let dimensions = p["Dimensions"].as_array().unwrap();
                assert_eq!(dimensions.len(), 1, "{dimensions:?}");
                assert_eq!(dimensions[0]["Name"], "FunctionName");
                sam::target(&dimensions[0]["Value"]).unwrap()
            })
            .collect();
        // The relay route's function and the rooms' routes', as routes.json sends them.
        let r = routes();
        let served_by = |prefix: &str| -> BTreeSet<String> {
            r["routes"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|x| x["path"].as_str().unwrap().starts_with(prefix))
                .map(|x| x["function"].as_str().unwrap().to_owned())
                .collect()
        };
        let mut roles: BTreeSet<String> = ["worker".to_owned()].into();
        if front_door == "FunctionUrl" {
            // The front function for relay URLs handed out before the relay function's.
            roles.insert("front".into());
            roles.insert("relay".into());
        } else {
            roles.extend(served_by("/a2a-relay/"));
            roles.extend(served_by("/a2a-lite/"));
        }
        let expected: BTreeSet<String> = roles
            .iter()
            .map(|role| sam::function_logical_id(&stack, role))
            .collect();
        assert_eq!(watched, expected, "{front_door}");
    }
}

/// A Function URL has no throttle of its own: behind it, a flood would take the account's
/// concurrency from the worker, push and fan-out functions. The front function is capped by
/// default (its reserved concurrency, `FunctionUrlMaxConcurrency`, 100), and -1 lifts the cap
/// (an account whose quota cannot spare the reservation). Read from SAM's translation.
#[test]
fn a_function_url_front_door_is_capped_by_default() {
    let t = template();
    let parameter = &t["Parameters"]["FunctionUrlMaxConcurrency"];
    assert_eq!(parameter["Default"].as_i64(), Some(100));
    for (overrides, expected) in [
        (&[("FrontDoor", "FunctionUrl")][..], Some(100)),
        (
            &[
                ("FrontDoor", "FunctionUrl"),
                ("FunctionUrlMaxConcurrency", "-1"),
            ][..],
            None,
        ),
        (
            &[
                ("FrontDoor", "FunctionUrl"),
                ("FunctionUrlMaxConcurrency", "40"),
            ][..],
            Some(40),
        ),
    ] {
        let Some(stack) = sam::created(overrides) else {
            return;
        };
        let reserved =
            &stack["Resources"]["FrontFunction"]["Properties"]["ReservedConcurrentExecutions"];
        let value = reserved.get("Ref").map(|r| {
            assert_eq!(r, "FunctionUrlMaxConcurrency");
            overrides
                .iter()
                .find(|(k, _)| *k == "FunctionUrlMaxConcurrency")
                .map_or(100, |(_, v)| v.parse().unwrap())
        });
        assert_eq!(value, expected, "{overrides:?}: {reserved}");
    }
}

/// Lambda refuses a function whose environment passes 4 KB, measured as the compact JSON of
/// its `Variables` map in UTF-8 bytes (its refusal quotes the string it measured); the deploy
/// fails then, mid-stack. Every value a parameter or resource puts there is bounded (a
/// parameter by `MaxLength` and what its `AllowedPattern` lets a character be, its allowed
/// values or its `MaxValue`; a resource by what AWS names it), and at every bound at once, in
/// every case the conditions make (each front door, each auth mode, the stack's own secrets or
/// yours), each function's environment still fits with a margin.
#[test]
fn every_function_s_environment_fits_in_4_kb_of_json_at_every_parameter_s_bound() {
    let template = sam::root().join("template.yaml");
    let Some(largest) = sam::environment::largest(&template, &[&[]]) else {
        return;
    };
    sam::environment::assert_fits(&largest);
}

#[test]
fn a_character_s_json_bytes_are_read_from_its_parameter_s_pattern() {
    assert_eq!(sam::environment::json_bytes_per_char(None), 6);
    assert_eq!(
        sam::environment::json_bytes_per_char(Some("^[A-Za-z0-9_-]{1,64}$")),
        1
    );
    assert_eq!(
        sam::environment::json_bytes_per_char(Some("^$|^(/[A-Za-z0-9._~-]+)+$")),
        1
    );
    // `\s` admits a tab (escaped as \t, but a vertical tab as \u000b).
    assert_eq!(
        sam::environment::json_bytes_per_char(Some("^[^/?#\\s]+$")),
        6
    );
    assert_eq!(
        sam::environment::json_bytes_per_char(Some("^[^\\x00-\\x1F]*$")),
        3
    );
    assert_eq!(sam::environment::json_bytes_per_char(Some("^[ -~]*$")), 2);
    assert_eq!(
        sam::environment::json_bytes_per_char(Some("^[!#-\\[\\]-~]*$")),
        1
    );
    assert_eq!(sam::environment::json_bytes_per_char(Some("^a.b$")), 6);
}

/// Your own secrets (`PushSigningKeySecretArn`, `ApiKeySecretArn`, `AgentCredentialsSecretArn`,
/// `LiteChannelSecretArn`) encrypted with your own KMS
/// key: Secrets Manager decrypts them with the caller's permission, so every function that
/// reads a secret may decrypt with the key `SecretsKmsKeyArn` names, through Secrets Manager
/// only; a function that reads no secret may not, and without the parameter nobody may.
#[test]
fn functions_that_read_secrets_may_decrypt_them_with_your_kms_key() {
    let key = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab";
    let credentials = "arn:aws:secretsmanager:us-east-1:123456789012:secret:agents-AbCdEf";
    let with_key: [&[(&str, &str)]; 5] = [
        &[("SecretsKmsKeyArn", key)],
        &[("SecretsKmsKeyArn", key), ("FrontDoor", "FunctionUrl")],
        &[
            ("SecretsKmsKeyArn", key),
            ("AuthMode", "jwt"),
            ("JwtIssuer", "https://issuer.example"),
            ("JwtAudience", "a2a"),
        ],
        // The agents' credentials: the functions that run the agent read them, the worker too.
        &[
            ("SecretsKmsKeyArn", key),
            ("AuthMode", "jwt"),
            ("JwtIssuer", "https://issuer.example"),
            ("JwtAudience", "a2a"),
            ("AgentCredentialsSecretArn", credentials),
        ],
        &[
            ("SecretsKmsKeyArn", key),
            ("AgentCredentialsSecretArn", credentials),
            ("LiteChannels", "on"),
        ],
    ];
    let cases = with_key
        .iter()
        .map(|o| (*o, true))
        .chain([(&[][..], false)]);
    for (overrides, keyed) in cases {
        let Some(stack) = sam::created(overrides) else {
            return;
        };
        let mut readers = 0;
        for (name, role) in sam::of_type(&stack, "AWS::IAM::Role") {
            let statements: Vec<&serde_json::Value> = role["Properties"]["Policies"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|p| p["PolicyDocument"]["Statement"].as_array().unwrap())
                .collect();
            let has = |action: &str| {
                statements.iter().any(|s| {
                    s["Action"] == action
                        || s["Action"]
                            .as_array()
                            .is_some_and(|a| a.iter().any(|x| x == action))
                })
            };
            let reads = has("secretsmanager:GetSecretValue");
            let decrypts: Vec<&&serde_json::Value> = statements
                .iter()
                .filter(|s| s["Action"] == serde_json::json!(["kms:Decrypt"]))
                .collect();
            if reads && keyed {
                readers += 1;
                assert_eq!(decrypts.len(), 1, "{overrides:?}: {name}");
                assert_eq!(
                    decrypts[0]["Resource"],
                    serde_json::json!({"Ref": "SecretsKmsKeyArn"})
                );
                assert_eq!(
                    decrypts[0]["Condition"]["StringEquals"]["kms:ViaService"],
                    serde_json::json!({"Fn::Sub": "secretsmanager.${AWS::Region}.amazonaws.com"})
                );
            } else {
                assert!(decrypts.is_empty(), "{overrides:?}: {name} may decrypt");
            }
        }
        assert!(!keyed || readers >= 2, "{overrides:?}: {readers} readers");
    }
}

/// API Gateway throttles each method on its own (`MethodSettings` `/*` `*` is every method):
/// the parameters say so, and the number of methods they multiply. The stage traces every
/// request into X-Ray (docs/operations.md promises a trace per request from the front door
/// on), and writes access logs when `ApiAccessLogs` is on: JSON with the request and trace ids,
/// never the query string (an API key may be in it). Read from SAM's translation.
#[test]
fn the_stage_throttles_each_method_traces_and_can_log_access() {
    let Some(stack) = sam::created(&[]) else {
        return;
    };
    let stage = &stack["Resources"]["A2aApiStage"]["Properties"];
    assert_eq!(stage["TracingEnabled"], true);
    assert!(
        stage.get("AccessLogSetting").is_none(),
        "access logs are off by default"
    );
    assert_eq!(stage["MethodSettings"].as_array().unwrap().len(), 1);
    assert_eq!(stage["MethodSettings"][0]["ResourcePath"], "/*");
    assert_eq!(stage["MethodSettings"][0]["HttpMethod"], "*");
    let methods: usize = stack["Resources"]["A2aApi"]["Properties"]["Body"]["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|ops| ops.as_object().unwrap().len())
        .sum();
    let t = template();
    let description = str_of(&t["Parameters"]["ApiThrottlingRateLimit"]["Description"]);
    assert!(
        description.contains("each method")
            && description.contains(&format!("({methods} of them)")),
        "{description}"
    );

    let Some(logged) = sam::created(&[("ApiAccessLogs", "on")]) else {
        return;
    };
    let setting = &logged["Resources"]["A2aApiStage"]["Properties"]["AccessLogSetting"];
    assert_eq!(
        sam::target(&setting["DestinationArn"]).as_deref(),
        Some("ApiAccessLogGroup.Arn")
    );
    let group = &logged["Resources"]["ApiAccessLogGroup"];
    assert_eq!(group["Type"], "AWS::Logs::LogGroup");
    assert_eq!(
        group["Properties"]["RetentionInDays"],
        serde_json::json!({"Ref": "LogRetentionDays"})
    );
    let format = setting["Format"].as_str().unwrap();
    for needed in [
        "$context.requestId",
        "$context.xrayTraceId",
        "$context.status",
    ] {
        assert!(format.contains(needed), "{format}");
    }
    for never in ["querystring", "$input", "header", "$context.authorizer"] {
        assert!(
            !format.to_lowercase().contains(&never.to_lowercase()),
            "{format}"
        );
    }
    // A line of it is JSON: each variable as API Gateway fills it in (messageString comes
    // quoted).
    let mut line = format.replace(
        "$context.error.messageString",
        "\"Missing Authentication Token\"",
    );
    while let Some(start) = line.find("$context.") {
        let end = line[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '$'))
            .map_or(line.len(), |e| start + e);
        line.replace_range(start..end, "x");
    }
    let parsed: serde_json::Value =
        serde_json::from_str(&line).expect("an access log line is JSON");
    assert_eq!(parsed["requestId"], "x");
}

/// The fan-out's mapping reads the stack's own new table's stream from its oldest record (a
/// write made before the mapping existed still fans out), but an existing table's stream may
/// hold up to 24 hours of records another deployment already fanned out, and reading it from
/// its start pushes them again, older than any de-duplication window: from now on by default,
/// from its start only when the deployer says its records are all new. Read from SAM's
/// translation.
#[test]
fn a_stream_is_read_from_its_start_only_when_its_records_are_all_new() {
    let stream =
        "arn:aws:dynamodb:us-east-1:123456789012:table/a2a-restored/stream/2026-11-26T10:00:00.000";
    let existing = [
        ("ExistingTableName", "a2a-restored"),
        ("ExistingTableStreamArn", stream),
    ];
    let fresh = [
        ("ExistingTableName", "a2a-restored"),
        ("ExistingTableStreamArn", stream),
        ("ExistingTableStreamStart", "TRIM_HORIZON"),
    ];
    for (overrides, start) in [
        (&[][..], serde_json::json!("TRIM_HORIZON")),
        (
            &existing[..],
            serde_json::json!({"Ref": "ExistingTableStreamStart"}),
        ),
        (
            &fresh[..],
            serde_json::json!({"Ref": "ExistingTableStreamStart"}),
        ),
    ] {
        let Some(stack) = sam::created(overrides) else {
            return;
        };
        let mapping = sam::of_type(&stack, "AWS::Lambda::EventSourceMapping")
            .into_iter()
            .map(|(_, m)| &m["Properties"])
            .find(|p| sam::target(&p["FunctionName"]).as_deref() == Some("FanoutFunction"))
            .expect("the fan-out's mapping");
        assert_eq!(mapping["StartingPosition"], start, "{overrides:?}");
    }
    let t = template();
    let parameter = &t["Parameters"]["ExistingTableStreamStart"];
    assert_eq!(parameter["Default"].as_str(), Some("LATEST"));
}

/// What docs/lambda.md says of the signing keys and of IAM callers of a Function URL matches
/// the code and the template: the first function that needs a key generates it (the card
/// and front functions too: the card is signed from the first request), and an `AWS_IAM`
/// caller needs both invoke permissions (the ones the template grants everybody for a public
/// URL).
#[test]
fn the_docs_say_who_makes_the_first_key_and_what_iam_callers_need() {
    use a2a_lambda_glue::KeyUse;
    // Words compared with the lines' wrapping undone: rewrapping a paragraph changes nothing.
    let docs = std::fs::read_to_string(root().join("docs/lambda.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for f in HttpFunction::ALL.into_iter().chain([HttpFunction::Front]) {
        assert_ne!(f.key_use(), KeyUse::Sign, "{}", f.name());
    }
    assert!(
        !docs.contains("serves an empty JWKS until that first delivery"),
        "docs/lambda.md says the card waits for the push function's key"
    );
    assert!(docs.contains(
        "the first function that needs a key (`card`, `front`, `rpc` or `push`) generates an \
         ES256 key into it"
    ));
    let t = template();
    let mut granted = BTreeSet::new();
    for (_, permission) in resources_of_type(&t, "AWS::Lambda::Permission") {
        granted.insert(str_of(&permission["Properties"]["Action"]));
    }
    for action in ["lambda:InvokeFunctionUrl", "lambda:InvokeFunction"] {
        assert!(granted.contains(action), "a public URL needs {action}");
        assert!(
            docs.contains(&format!("`{action}`")),
            "docs/lambda.md does not tell AWS_IAM callers they need {action}"
        );
    }
}

/// The bill's optional parts can be turned down (docs/cost.md, "The monthly bill"): X-Ray
/// tracing (`Tracing` PassThrough: no function and no stage samples on its own) and the
/// metrics' breakdown (`MetricsDetail`, which every function reads). Read from SAM's
/// translation.
#[test]
fn tracing_and_the_metrics_breakdown_can_be_turned_down() {
    for (tracing, stage_traces) in [("Active", true), ("PassThrough", false)] {
        let Some(stack) = sam::created(&[("Tracing", tracing), ("MetricsDetail", "function")])
        else {
            return;
        };
        for (name, f) in sam::of_type(&stack, "AWS::Lambda::Function") {
            assert_eq!(
                f["Properties"]["TracingConfig"]["Mode"],
                serde_json::json!({"Ref": "Tracing"}),
                "{name}"
            );
            assert_eq!(
                f["Properties"]["Environment"]["Variables"]["A2A_METRICS_DETAIL"],
                serde_json::json!({"Ref": "MetricsDetail"}),
                "{name}"
            );
        }
        assert_eq!(
            stack["Resources"]["A2aApiStage"]["Properties"]["TracingEnabled"], stage_traces,
            "{tracing}"
        );
    }
    let t = template();
    let allowed = |name: &str| -> Vec<String> {
        t["Parameters"][name]["AllowedValues"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(str_of)
            .collect()
    };
    assert_eq!(allowed("Tracing"), ["Active", "PassThrough"]);
    for value in allowed("MetricsDetail") {
        assert!(
            value
                .parse::<a2a_lambda_glue::metrics::MetricsDetail>()
                .is_ok(),
            "{value}"
        );
    }
}

/// A constant of the cost test's bill (`shared/adapters/aws/tests/prices/bill.rs`), by name.
fn bill_constant(name: &str) -> String {
    let text = std::fs::read_to_string(root().join("shared/adapters/aws/tests/prices/bill.rs"))
        .expect("prices/bill.rs");
    let start = text
        .find(&format!("const {name}"))
        .unwrap_or_else(|| panic!("no {name} in prices/bill.rs"));
    let rest = &text[start..];
    let value = &rest[rest.find(" = ").unwrap() + 3..];
    value[..value.find(';').unwrap()].trim().to_owned()
}

/// The custom metrics the bill counts (docs/cost.md, "The monthly bill") are what the
/// functions publish once every operation is used: per HTTP function, `Requests`, `Latency`,
/// `Errors` and `ClientErrors` per operation it serves, `Errors` by function, and
/// `TasksFinished` per final state it can reach; the worker's two job metrics and its final
/// states; the push function's four; the fan-out's one. By function alone, one of each.
#[test]
fn the_metric_count_the_bill_assumes() {
    use a2a_protocol::Operation as O;
    let count = |http: &[HttpFunction], detail: &str| -> usize {
        let mut n = 0;
        // The channel function (off by default) serves no operation and publishes nothing.
        for f in http.iter().filter(|f| **f != HttpFunction::Channel) {
            let ops = f.surface().operations;
            let runs = ops.contains(&O::SendMessage) || ops.contains(&O::SendStreamingMessage);
            // A function that only cancels ends tasks CANCELED; one that runs agents, in any
            // of the four final states.
            let states = if runs {
                4
            } else if ops.contains(&O::CancelTask) {
                1
            } else {
                0
            };
            n += match detail {
                "operation" => 4 * ops.len() + 1 + states,
                _ => 4 + usize::from(states > 0),
            };
        }
        // worker: JobAttempts, JobRetries and the final states; push: four; fan-out: one.
        n + match detail {
            "operation" => 2 + 4,
            _ => 2 + 1,
        } + 4
            + 1
    };
    let counted = [
        (
            "ApiGateway",
            "operation",
            count(&HttpFunction::ALL, "operation"),
        ),
        (
            "ApiGateway",
            "function",
            count(&HttpFunction::ALL, "function"),
        ),
        (
            "FunctionUrl",
            "operation",
            count(&[HttpFunction::Front], "operation"),
        ),
        (
            "FunctionUrl",
            "function",
            count(&[HttpFunction::Front], "function"),
        ),
    ];
    let assumed = bill_constant("CUSTOM_METRICS: [(FrontDoor, &str, usize); 4]");
    for (door, detail, n) in counted {
        let row = format!("(FrontDoor::{door}, \"{detail}\", {n})");
        assert!(
            assumed.contains(&row),
            "prices/bill.rs should say {row}: {assumed}"
        );
    }
}

/// The EMF lines the bill counts per blocking echo are no longer than it says, at a function
/// name of Lambda's longest (64) and with an X-Ray trace id on the line.
#[test]
fn the_metric_lines_the_bill_assumes() {
    use a2a_core::Observer as _;
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let observer = a2a_lambda_glue::EmfObserver::with_sink(
        "a2a-lambda",
        "x".repeat(64),
        std::sync::Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_owned())),
    );
    observer.operation(
        a2a_protocol::Operation::ListTaskPushNotificationConfigs,
        std::time::Duration::from_millis(12),
        Some(&a2a_protocol::A2AError::task_not_found("t")),
    );
    observer.task_finished(a2a_protocol::TaskState::Completed);
    let trace = r#","traceId":"Root=1-6561abcd-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=1""#;
    let lines = lines.lock().unwrap();
    for (line, constant) in lines
        .iter()
        .zip(["EMF_OPERATION_LINE_BYTES", "EMF_TASK_LINE_BYTES"])
    {
        let assumed: usize = bill_constant(&format!("{constant}: usize"))
            .parse()
            .unwrap();
        assert!(
            line.len() + trace.len() <= assumed,
            "{constant} = {assumed}, but a line takes {}: {line}",
            line.len() + trace.len()
        );
    }
}

/// The variables of `role` in `stack` (translated and resolved), by name.
fn variables_of<'a>(
    stack: &'a serde_json::Value,
    role: &str,
) -> &'a serde_json::Map<String, serde_json::Value> {
    let logical = sam::function_logical_id(stack, role);
    stack["Resources"][logical.as_str()]["Properties"]["Environment"]["Variables"]
        .as_object()
        .unwrap()
}

/// The roles of the functions `stack` creates.
fn roles_of(stack: &serde_json::Value) -> BTreeSet<String> {
    sam::of_type(stack, "AWS::Lambda::Function")
        .into_iter()
        .map(|(_, f)| {
            f["Properties"]["Environment"]["Variables"]["A2A_FUNCTION"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// Issue 45, item 1: an agent call started on the worker (a `returnImmediately` send, an
/// A2A-Lite room task, a run handed over at a deadline) gives the remote agent our relay URL
/// only if the worker knows the front door's URL; without it the remote task is polled every
/// 30 s. Every function that runs the agent (those that may read the agents' credentials) has
/// that URL: the HTTP ones from each request (their front door's URL: naming it in their
/// environment would be a cycle), the others in `A2A_PUBLIC_BASE_URL`, the same as the push
/// function's (the front door's URL, or `PublicBaseUrl`), whichever the front door.
#[test]
fn every_function_that_can_start_an_agent_call_knows_the_relay_url() {
    let credentials = "arn:aws:secretsmanager:us-east-1:123456789012:secret:agents-AbCdEf";
    for front_door in ["ApiGateway", "FunctionUrl"] {
        for public in ["", "https://agent.example"] {
            let Some(stack) = sam::created(&[
                ("FrontDoor", front_door),
                ("AgentCredentialsSecretArn", credentials),
                ("LiteChannels", "on"),
                ("PublicBaseUrl", public),
            ]) else {
                return;
            };
            let push = variables_of(&stack, "push")["A2A_PUBLIC_BASE_URL"].clone();
            let expected = if public.is_empty() {
                let named = if front_door == "FunctionUrl" {
                    "FrontFunctionUrl"
                } else {
                    "A2aApi"
                };
                assert!(
                    push.to_string().contains(named),
                    "{front_door}: push names {push}"
                );
                push.clone()
            } else {
                serde_json::json!({"Ref": "PublicBaseUrl"})
            };
            let mut agent_runners = BTreeSet::new();
            for role in roles_of(&stack) {
                let env = variables_of(&stack, &role);
                if !env.contains_key("A2A_AGENT_CREDENTIALS_SECRET_ARN") {
                    continue;
                }
                agent_runners.insert(role.clone());
                match Function::named(&role).unwrap() {
                    // Behind the front door: the request names its URL, unless PublicBaseUrl
                    // does (it wins everywhere). Not the relay function, reached at a URL of
                    // its own: it is told the front door's, as the worker is.
                    Function::Http(http) if http != HttpFunction::Relay => assert_eq!(
                        env.get("A2A_PUBLIC_BASE_URL"),
                        (!public.is_empty()).then_some(&expected),
                        "{front_door} {public:?}: {role}"
                    ),
                    _ => assert_eq!(
                        env.get("A2A_PUBLIC_BASE_URL"),
                        Some(&expected),
                        "{front_door} {public:?}: {role} starts agent calls without the relay URL"
                    ),
                }
            }
            assert!(agent_runners.contains("worker"), "{agent_runners:?}");
            // Behind the Function URL the relay URLs the worker hands out are the relay
            // function's (its own pool); the relay function reads its own from each request
            // (its own URL in its environment would be a cycle), the front function's are its
            // own (its 4 KB have no room, and the relay function names its URL).
            for role in &agent_runners {
                let relay_base = variables_of(&stack, role).get("A2A_RELAY_BASE_URL");
                let expected = (front_door == "FunctionUrl" && role == "worker").then(
                    || serde_json::json!({"Fn::GetAtt": ["RelayFunctionUrl", "FunctionUrl"]}),
                );
                assert_eq!(
                    relay_base,
                    expected.as_ref(),
                    "{front_door} {public:?}: {role}"
                );
            }
            if front_door == "FunctionUrl" {
                assert!(agent_runners.contains("front") && agent_runners.contains("relay"));
            }
        }
    }
}

/// Issue 45, item 3: a blocking SendMessage waits as long as its front door allows, no longer
/// and not (much) shorter: 20 s (`BlockingTimeoutSeconds`, at most 24) on the buffered route
/// behind API Gateway, which ends it at 29 s; 240 s on the streaming JSON-RPC route there
/// (API Gateway's idle timeout of a stream is 5 minutes); 840 s behind the Function URL,
/// which streams for the function's 900 s. The template sets exactly the code's default of
/// each function (`HttpFunction::default_blocking_timeout`), and only on the functions that
/// serve SendMessage.
#[test]
fn each_front_door_s_blocking_sends_wait_as_long_as_it_allows() {
    use a2a_protocol::Operation;
    let call = a2a_aws::CALL_LIMITS.operation;
    for front_door in ["ApiGateway", "FunctionUrl"] {
        let Some(stack) = sam::created(&[("FrontDoor", front_door), ("LiteChannels", "on")]) else {
            return;
        };
        let parameter = &stack["Parameters"]["BlockingTimeoutSeconds"];
        let mut seen = BTreeSet::new();
        for role in roles_of(&stack) {
            let env = variables_of(&stack, &role);
            let value = env.get("A2A_BLOCKING_TIMEOUT_SECS");
            let Some(Function::Http(http)) = Function::named(&role) else {
                assert_eq!(value, None, "{role} serves no blocking send");
                continue;
            };
            if !http.surface().operations.contains(&Operation::SendMessage) {
                assert_eq!(value, None, "{role} serves no blocking send");
                continue;
            }
            let value = value.unwrap_or_else(|| panic!("{role} has no blocking timeout"));
            let (secs, bound) = if value == &serde_json::json!({"Ref": "BlockingTimeoutSeconds"}) {
                (
                    parameter["Default"].as_u64().unwrap(),
                    parameter["MaxValue"].as_u64().unwrap(),
                )
            } else {
                let secs: u64 = value.as_str().unwrap().parse().unwrap();
                (secs, secs)
            };
            let logical = sam::function_logical_id(&stack, &role);
            let timeout = stack["Resources"][logical.as_str()]["Properties"]["Timeout"]
                .as_u64()
                .unwrap();
            let longest = std::time::Duration::from_secs(bound);
            if http == HttpFunction::Front {
                // The Function URL: the function's own timeout, a minute of margin.
                assert!(
                    longest + std::time::Duration::from_secs(60)
                        <= std::time::Duration::from_secs(timeout),
                    "{role}"
                );
            } else if http.streaming() {
                // A streaming route: API Gateway's idle timeout (5 min), a minute of margin.
                assert!(
                    longest + std::time::Duration::from_secs(60)
                        <= std::time::Duration::from_secs(300),
                    "{role}"
                );
                assert!(
                    longest + call <= std::time::Duration::from_secs(timeout),
                    "{role}"
                );
            } else {
                // A buffered route: API Gateway's 29 s, 5 s for a cold start and the answer.
                assert!(bound <= 24, "{role}: {bound} s");
                assert!(
                    longest + call <= std::time::Duration::from_secs(timeout),
                    "{role}"
                );
            }
            // Not handed over sooner than the door allows: the code's default for the function.
            assert_eq!(
                std::time::Duration::from_secs(secs),
                http.default_blocking_timeout(),
                "{front_door}: {role}"
            );
            seen.insert(role);
        }
        let expected: BTreeSet<String> = match front_door {
            "ApiGateway" => ["send", "rpc"].map(String::from).into(),
            _ => ["front"].map(String::from).into(),
        };
        assert_eq!(seen, expected);
    }
}

/// Issue 45, item 4: each variable moved out of the globals goes to exactly the functions
/// whose code reads it, as the code says which function serves what.
#[test]
fn per_function_variables_go_to_the_functions_that_read_them() {
    use a2a_lambda_glue::KeyUse;
    use a2a_protocol::Operation;
    let reads = |role: &str, name: &str| -> bool {
        let http = match Function::named(role).unwrap() {
            Function::Http(http) => http,
            Function::Push => return name == "A2A_PUSH_KEYS_REFRESH_SECS",
            _ => return false,
        };
        let surface = http.surface();
        match name {
            "A2A_AGENT_NAME" | "A2A_AGENT_DESCRIPTION" => {
                surface.card
                    || surface
                        .operations
                        .contains(&Operation::GetExtendedAgentCard)
                    || http.serves_channels()
            }
            "A2A_MAX_STREAM_SECS" => http.streaming(),
            "A2A_LONG_POLL_SECS" | "A2A_LONG_POLL_MAX_HELD" => {
                surface.operations.contains(&Operation::GetTask)
            }
            "A2A_PUSH_KEYS_REFRESH_SECS" => http.key_use() != KeyUse::None,
            other => panic!("{other}"),
        }
    };
    for front_door in ["ApiGateway", "FunctionUrl"] {
        let Some(stack) = sam::created(&[("FrontDoor", front_door), ("LiteChannels", "on")]) else {
            return;
        };
        for role in roles_of(&stack) {
            let env = variables_of(&stack, &role);
            for name in [
                "A2A_AGENT_NAME",
                "A2A_AGENT_DESCRIPTION",
                "A2A_MAX_STREAM_SECS",
                "A2A_LONG_POLL_SECS",
                "A2A_LONG_POLL_MAX_HELD",
                "A2A_PUSH_KEYS_REFRESH_SECS",
            ] {
                assert_eq!(env.contains_key(name), reads(&role, name), "{role}: {name}");
            }
        }
    }
    // Auth settings only in their own mode (the 4 KB hold one mode's at their bounds).
    for (mode, present, absent) in [
        ("jwt", "A2A_JWT_ISSUER", "A2A_API_KEY_NAME"),
        ("api-key", "A2A_API_KEY_NAME", "A2A_JWT_ISSUER"),
    ] {
        let Some(stack) = sam::created(&[("AuthMode", mode)]) else {
            return;
        };
        let env = variables_of(&stack, "send");
        assert!(
            env.contains_key(present) && !env.contains_key(absent),
            "{mode}: {env:?}"
        );
    }
}

/// Issue 45, item 8: behind the Function URL, `FunctionUrlAuthType AWS_IAM` would refuse
/// every caller that does not sign SigV4: the agents pushing to the relay route, the chat
/// servers of the A2A-Lite channels, the push receivers fetching the JWKS. A rule refuses it
/// before anything is created; behind API Gateway the parameter changes nothing.
#[test]
fn a_function_url_that_would_refuse_unsigned_callers_is_refused_before_anything_is_created() {
    let failed = |overrides: &[(&str, &str)]| -> Option<Vec<String>> {
        let stack = sam::created(overrides)?;
        Some(
            stack["FailedRules"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_str().unwrap().to_owned())
                .collect(),
        )
    };
    let Some(iam) = failed(&[
        ("FrontDoor", "FunctionUrl"),
        ("FunctionUrlAuthType", "AWS_IAM"),
    ]) else {
        return;
    };
    assert_eq!(iam.len(), 1, "{iam:?}");
    for route in ["relay route", "A2A-Lite channels", "JWKS"] {
        assert!(iam[0].contains(route), "{iam:?}");
    }
    for ok in [
        vec![
            ("FrontDoor", "FunctionUrl"),
            ("FunctionUrlAuthType", "NONE"),
        ],
        vec![
            ("FrontDoor", "ApiGateway"),
            ("FunctionUrlAuthType", "AWS_IAM"),
        ],
        vec![],
    ] {
        assert_eq!(failed(&ok).unwrap(), Vec::<String>::new(), "{ok:?}");
    }
}

/// Issue 52, item 1: the local Lambda runs give each function the environment SAM's
/// translation of the template gives it (`infra/sam-translate.py --local-env`, what
/// `infra/lambda-local.sh` runs), with only the endpoints swapped, the secrets in their local
/// form, and the overrides the local file lists: no variable of their own, none missing. So
/// the worker has the relay URL locally exactly when it has it deployed.
#[test]
fn the_local_runs_give_each_function_the_template_s_environment() {
    let dir = tempfile::tempdir().unwrap();
    let local = serde_json::json!({
        "resources": {
            "table": "local-table", "work_queue_url": "http://127.0.0.1:1/q/work",
            "push_queue_url": "http://127.0.0.1:1/q/push.fifo", "work_dlq_url": "http://127.0.0.1:1/q/work-dlq",
            "push_dlq_url": "http://127.0.0.1:1/q/push-dlq.fifo", "front_door_url": "http://127.0.0.1:9100",
            "relay_url": "http://127.0.0.1:9101",
        },
        "secrets": {"PushSigningKeysSecret": {"A2A_PUSH_SIGNING_KEYS_FILE": "/keys.json"}},
        "overrides": [
            {"name": "A2A_PUSH_ALLOW_HTTP", "value": "true", "to": "every function", "why": "test"},
            {"name": "A2A_WORK_VISIBILITY_SECS", "value": "20", "to": "where the template sets it", "why": "test"},
            {"name": "A2A_PUBLIC_BASE_URL", "value": "http://127.0.0.1:9100", "to": "every HTTP function without one", "why": "test"},
            {"name": "A2A_RELAY_BASE_URL", "value": "http://127.0.0.1:9101", "to": "the relay function", "why": "test"},
        ],
    });
    let local_file = dir.path().join("local.json");
    std::fs::write(&local_file, local.to_string()).unwrap();
    for front_door in ["ApiGateway", "FunctionUrl"] {
        let parameters = [("FrontDoor", front_door), ("AuthMode", "none")];
        let Some(stack) = sam::created(&parameters) else {
            return;
        };
        let out = dir.path().join(front_door);
        let status = std::process::Command::new(root().join(".venv-sam/bin/python"))
            .arg(root().join("infra/sam-translate.py"))
            .arg("--template")
            .arg(root().join("template.yaml"))
            .arg("--local-env")
            .arg(&out)
            .arg("--local")
            .arg(&local_file)
            .args(parameters.iter().map(|(k, v)| format!("{k}={v}")))
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .status()
            .unwrap();
        assert!(status.success());
        let written: BTreeSet<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| {
                e.unwrap()
                    .file_name()
                    .to_string_lossy()
                    .trim_end_matches(".env")
                    .to_owned()
            })
            .collect();
        assert_eq!(written, roles_of(&stack), "{front_door}");
        for role in roles_of(&stack) {
            let text = std::fs::read_to_string(out.join(format!("{role}.env"))).unwrap();
            let env: BTreeMap<String, String> = text
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| {
                    let (k, v) = l.split_once('=').unwrap();
                    (k.to_owned(), v.trim_matches('\'').to_owned())
                })
                .collect();
            let template = variables_of(&stack, &role);
            let mut expected = BTreeMap::new();
            for (name, value) in template {
                let value = match value {
                    serde_json::Value::String(s) => s.clone(),
                    v if v.get("Ref").is_some_and(|r| {
                        stack["Parameters"].get(r.as_str().unwrap()).is_some()
                    }) =>
                    {
                        let parameter = v["Ref"].as_str().unwrap();
                        match parameters.iter().find(|(p, _)| *p == parameter) {
                            Some((_, given)) => (*given).to_owned(),
                            None => match &stack["Parameters"][parameter]["Default"] {
                                serde_json::Value::String(s) => s.clone(),
                                serde_json::Value::Null => String::new(),
                                other => other.to_string(),
                            },
                        }
                    }
                    v => {
                        let text = v.to_string();
                        if name == "A2A_PUSH_SIGNING_SECRET_ARN" {
                            expected.insert(
                                "A2A_PUSH_SIGNING_KEYS_FILE".to_owned(),
                                "/keys.json".to_owned(),
                            );
                            continue;
                        }
                        let key = [
                            ("TasksTable", "table"),
                            ("DeadLetterQueue", ""),
                            ("WorkQueue", "work_queue_url"),
                            ("PushQueue", "push_queue_url"),
                            ("A2aApi", "front_door_url"),
                            ("FrontFunctionUrl", "front_door_url"),
                            ("RelayFunctionUrl", "relay_url"),
                        ]
                        .iter()
                        .find(|(logical, _)| text.contains(logical))
                        .map(|(_, key)| *key)
                        .unwrap_or_else(|| panic!("{role}: {name} = {text}"));
                        let key = match (key, text.contains("WorkDeadLetterQueue")) {
                            ("", true) => "work_dlq_url",
                            ("", false) => "push_dlq_url",
                            (key, _) => key,
                        };
                        local["resources"][key].as_str().unwrap().to_owned()
                    }
                };
                expected.insert(name.clone(), value);
            }
            expected.insert("A2A_PUSH_ALLOW_HTTP".into(), "true".into());
            if template.contains_key("A2A_WORK_VISIBILITY_SECS") {
                expected.insert("A2A_WORK_VISIBILITY_SECS".into(), "20".into());
            }
            // An HTTP function reads its public URL from each request, which watch cannot give.
            let http = ["worker", "push", "fanout"].iter().all(|q| role != *q);
            if http {
                expected
                    .entry("A2A_PUBLIC_BASE_URL".into())
                    .or_insert_with(|| "http://127.0.0.1:9100".into());
            }
            // And the relay function the URL it is reached at: its own.
            if role == "relay" {
                expected.insert("A2A_RELAY_BASE_URL".into(), "http://127.0.0.1:9101".into());
            }
            // The function's Timeout stands in for the deadline Lambda gives each invocation.
            let logical = sam::function_logical_id(&stack, &role);
            let timeout = &stack["Resources"][logical.as_str()]["Properties"]["Timeout"];
            expected.insert(
                a2a_lambda_glue::LOCAL_TIMEOUT_VARIABLE.into(),
                timeout.as_u64().unwrap_or(3).to_string(),
            );
            assert_eq!(env, expected, "{front_door}: {role}");
        }
        let worker = std::fs::read_to_string(out.join("worker.env")).unwrap();
        assert!(
            worker.contains("A2A_LOCAL_INVOCATION_TIMEOUT_SECS='900'\n"),
            "{worker}"
        );
        assert!(
            worker.contains("A2A_PUBLIC_BASE_URL='http://127.0.0.1:9100'\n"),
            "{worker}"
        );
    }
}

/// Issue 45, item 7: behind the Function URL the front function's pool (its reserved
/// concurrency, `FunctionUrlMaxConcurrency`) serves streams and long polls; 100 SSE
/// subscribers would turn away every relay push (retried, then dropped) and every chat webhook
/// (never retried). The machine-to-machine routes have a function of their own there, on a
/// Function URL anyone may call (its callers never sign; each route checks its own token) and
/// a small reserved concurrency of its own (`RelayReservedConcurrency`, 10; -1 none): the
/// relay function, which serves the relay route and the A2A-Lite channels and nothing else.
/// The relay URLs the worker hands out point at it, as does the webhook URL the stack tells
/// chat services. Behind API Gateway nothing changes (those routes have functions of their
/// own there). Read from SAM's translation.
#[test]
fn the_machine_to_machine_routes_have_a_url_and_a_pool_of_their_own() {
    let t = template();
    let parameter = &t["Parameters"]["RelayReservedConcurrency"];
    assert_eq!(parameter["Default"].as_i64(), Some(10));
    assert_eq!(parameter["MinValue"].as_i64(), Some(-1));
    assert!(parameter["MaxValue"].as_i64().is_some());
    for (overrides, reserved) in [
        (&[("FrontDoor", "FunctionUrl")][..], Some(10)),
        (
            &[
                ("FrontDoor", "FunctionUrl"),
                ("RelayReservedConcurrency", "3"),
            ][..],
            Some(3),
        ),
        (
            &[
                ("FrontDoor", "FunctionUrl"),
                ("RelayReservedConcurrency", "-1"),
            ][..],
            None,
        ),
    ] {
        let Some(stack) = sam::created(overrides) else {
            return;
        };
        let r = &stack["Resources"];
        let f = &r["RelayFunction"]["Properties"];
        assert_eq!(f["Environment"]["Variables"]["A2A_FUNCTION"], "relay");
        let value = f["ReservedConcurrentExecutions"].get("Ref").map(|p| {
            assert_eq!(p, "RelayReservedConcurrency");
            overrides
                .iter()
                .find(|(k, _)| *k == "RelayReservedConcurrency")
                .map_or(10, |(_, v)| v.parse::<i64>().unwrap())
        });
        assert_eq!(value, reserved, "{overrides:?}");
        // Its own URL, public (the routes check their own tokens), buffered (no SSE).
        let url = &r["RelayFunctionUrl"];
        assert_eq!(url["Type"], "AWS::Lambda::Url");
        assert_eq!(url["Properties"]["AuthType"], "NONE");
        assert_eq!(url["Properties"]["InvokeMode"], "BUFFERED");
        assert_eq!(
            sam::target(&url["Properties"]["TargetFunctionArn"]).as_deref(),
            Some("RelayFunction")
        );
        for (permission, action) in [
            ("RelayFunctionUrlPublicAccess", "lambda:InvokeFunctionUrl"),
            ("RelayFunctionUrlPublicInvoke", "lambda:InvokeFunction"),
        ] {
            let p = &r[permission]["Properties"];
            assert_eq!(
                (&p["Action"], &p["Principal"]),
                (&action.into(), &"*".into())
            );
            assert_eq!(
                sam::target(&p["FunctionName"]).as_deref(),
                Some("RelayFunction")
            );
        }
        // The worker, which starts most agent calls (queued sends, rooms, runs handed over),
        // points their relay URLs at it; it reads its own from each request (its own URL in
        // its environment would be a cycle), and names the front door's for the A2A card.
        let relay_url = serde_json::json!({"Fn::GetAtt": ["RelayFunctionUrl", "FunctionUrl"]});
        assert_eq!(
            variables_of(&stack, "worker").get("A2A_RELAY_BASE_URL"),
            Some(&relay_url)
        );
        for role in ["relay", "front"] {
            assert!(
                !variables_of(&stack, role).contains_key("A2A_RELAY_BASE_URL"),
                "{role}"
            );
        }
        assert_eq!(
            variables_of(&stack, "relay").get("A2A_PUBLIC_BASE_URL"),
            Some(&serde_json::json!({"Fn::GetAtt": ["FrontFunctionUrl", "FunctionUrl"]}))
        );
        // The front function keeps its own pool, separate.
        assert!(r["FrontFunction"]["Properties"]
            .get("ReservedConcurrentExecutions")
            .is_some());
    }
    // Behind API Gateway: no relay function, no relay URL variable anywhere.
    let Some(api) = sam::created(&[("LiteChannels", "on")]) else {
        return;
    };
    assert!(!roles_of(&api).contains("relay"));
    for role in roles_of(&api) {
        assert!(
            !variables_of(&api, &role).contains_key("A2A_RELAY_BASE_URL"),
            "{role}"
        );
    }
    // The webhook URL chat services are given: the relay function's, behind the Function URL.
    let Some(lite) = sam::created(&[("FrontDoor", "FunctionUrl"), ("LiteChannels", "on")]) else {
        return;
    };
    let webhook = lite["Outputs"]["LiteWebhookUrl"]["Value"].to_string();
    assert!(
        webhook.contains("RelayFunctionUrl") && !webhook.contains("FrontFunctionUrl"),
        "{webhook}"
    );
    // What it serves: the relay route and the channels, no operation, no card, no key.
    let surface = HttpFunction::Relay.surface();
    assert!(surface.relay && HttpFunction::Relay.serves_channels());
    assert!(surface.operations.is_empty() && !surface.card && !surface.jsonrpc && !surface.rest);
    assert!(!HttpFunction::Relay.streaming());
    assert_eq!(HttpFunction::Relay.key_use(), a2a_lambda_glue::KeyUse::None);
    // Least privilege: the table's items and the work queue; no index, no query, no push
    // queue (iam.rs proves these are what the relay route and the bridge call: a wait that
    // ends deletes its due entry).
    let fns = functions(&t);
    let granted: BTreeSet<String> = grants(&fns["relay"]).into_iter().map(|(a, _)| a).collect();
    let expected: BTreeSet<String> = [
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "sqs:SendMessage",
    ]
    .map(String::from)
    .into();
    assert_eq!(granted, expected);
}

/// `SpanExport` (docs/tracing.md, "On Lambda"): off by default, nothing in any function's
/// environment and no X-Ray grant; `xray` sends every function's spans to X-Ray's OTLP endpoint
/// in the stack's region, signed for `xray`, and lets each role `xray:PutSpans` (and
/// `PutSpansForIndexing`) and nothing else more; a collector's URL is the endpoint as given,
/// unsigned and with no grant.
#[test]
fn span_export_sets_the_endpoint_the_signing_and_the_grant_only_when_asked() {
    let url = "https://collector.example/v1/traces";
    for front_door in ["ApiGateway", "FunctionUrl"] {
        for export in ["", "xray", url] {
            let Some(stack) = sam::created(&[("FrontDoor", front_door), ("SpanExport", export)])
            else {
                return;
            };
            let functions = sam::of_type(&stack, "AWS::Lambda::Function");
            assert!(
                functions.len() >= 5,
                "{front_door}: {} functions",
                functions.len()
            );
            for (name, f) in functions {
                let env = &f["Properties"]["Environment"]["Variables"];
                // A `Fn::Sub` or a `Ref` stays one in the translation: read it as deployed (in
                // us-east-1).
                let endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").map(|e| {
                    let text = match &e["Ref"] {
                        serde_json::Value::String(p) if p == "SpanExport" => export,
                        _ => e
                            .as_str()
                            .or_else(|| e["Fn::Sub"].as_str())
                            .unwrap_or_default(),
                    };
                    serde_json::Value::from(text.replace("${AWS::Region}", "us-east-1"))
                });
                let signed = env.get(a2a_lambda_glue::ENV_SIGN_FOR);
                match export {
                    "" => assert!(endpoint.is_none() && signed.is_none(), "{name}: {env}"),
                    "xray" => {
                        assert_eq!(
                            endpoint.as_ref().and_then(|e| e.as_str()),
                            Some("https://xray.us-east-1.amazonaws.com/v1/traces"),
                            "{name}"
                        );
                        assert_eq!(signed.and_then(|s| s.as_str()), Some("xray"), "{name}");
                    }
                    _ => {
                        assert_eq!(
                            endpoint.as_ref().and_then(|e| e.as_str()),
                            Some(url),
                            "{name}"
                        );
                        assert!(signed.is_none(), "{name}: {env}");
                    }
                }
            }
            for (name, role) in sam::of_type(&stack, "AWS::IAM::Role") {
                let xray: Vec<&serde_json::Value> = role["Properties"]["Policies"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|p| p["PolicyDocument"]["Statement"].as_array().unwrap().iter())
                    .filter(|s| s.to_string().contains("xray:"))
                    .collect();
                if export == "xray" && name.contains("Function") {
                    assert_eq!(xray.len(), 1, "{front_door}: {name}: {xray:?}");
                    assert_eq!(
                        xray[0]["Action"],
                        serde_json::json!(["xray:PutSpans", "xray:PutSpansForIndexing"]),
                        "{name}"
                    );
                    assert_eq!(xray[0]["Resource"], "*", "{name}");
                } else {
                    assert!(xray.is_empty(), "{front_door} {export:?}: {name}: {xray:?}");
                }
            }
        }
    }
}
