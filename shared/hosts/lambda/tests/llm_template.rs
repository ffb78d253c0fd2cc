//! The template of an LLM project (`a2a-local new --llm`), as SAM translates it: on Bedrock the
//! functions that run the agent may invoke the one model the parameters name, and nothing
//! broader; on an OpenAI-compatible endpoint they may read the one secret holding its key, and
//! no model. `sam validate` and cfn-lint pass on it. (The SAM CLI venv: `infra/check-template.sh
//! --setup`; without it these skip unless `A2A_REQUIRE_SAM` is set.)

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use a2a_local::new_project::{KitSource, NewProject};
use serde_json::{json, Value};

mod sam;

/// The functions that run the agent: they call its model.
const RUN_THE_AGENT: [&str; 7] = [
    "send", "stream", "rpc", "channel", "front", "relay", "worker",
];

const MODEL: &str = "anthropic.claude-haiku-4-5-20251001-v1:0";
const SECRET: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:llm-key-AbCdEf";
const ACCOUNT: &str = "123456789012";

/// A generated LLM project's template, in a temporary directory (kept while the value lives).
struct Generated {
    _dir: tempfile::TempDir,
    template: PathBuf,
}

fn generated() -> Generated {
    let dir = tempfile::tempdir().unwrap();
    let project = NewProject::new(dir.path().join("my-llm"), KitSource::this_checkout())
        .unwrap()
        .llm(true);
    let files = project.files().unwrap();
    let (_, text) = files
        .iter()
        .find(|(path, _)| path == Path::new("template.yaml"))
        .expect("a template.yaml");
    let template = dir.path().join("template.yaml");
    std::fs::write(&template, text).unwrap();
    Generated {
        _dir: dir,
        template,
    }
}

/// `s` (a resolved value: a string, a parameter's `Ref` or a `Fn::Sub`) with the stack's parameters and pseudo
/// parameters (us-east-1, account [`ACCOUNT`]) put in.
fn text(stack: &Value, params: &[(&str, &str)], s: &Value) -> String {
    let value = |name: &str| -> String {
        if let Some((_, v)) = params.iter().find(|(n, _)| *n == name) {
            return (*v).to_owned();
        }
        match name {
            "AWS::Partition" => "aws".into(),
            "AWS::Region" => "us-east-1".into(),
            "AWS::AccountId" => ACCOUNT.into(),
            _ => stack["Parameters"][name]["Default"]
                .as_str()
                .unwrap_or_else(|| panic!("no value for ${{{name}}}"))
                .to_owned(),
        }
    };
    if let Some(name) = s.get("Ref").and_then(Value::as_str) {
        return value(name);
    }
    let Some(template) = s.get("Fn::Sub") else {
        return s
            .as_str()
            .unwrap_or_else(|| panic!("not text: {s}"))
            .to_owned();
    };
    let mut out = template.as_str().unwrap().to_owned();
    while let Some(start) = out.find("${") {
        let end = out[start..].find('}').unwrap() + start;
        let name = out[start + 2..end].to_owned();
        out.replace_range(start..=end, &value(&name));
    }
    out
}

/// Every policy statement of the stack (inline in roles and functions' roles, and managed
/// policies the stack creates), with where it is: (policy, statement).
fn statements(stack: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut push = |owner: String, document: &Value| {
        let listed = match &document["Statement"] {
            Value::Array(list) => list.clone(),
            one => vec![one.clone()],
        };
        out.extend(listed.into_iter().map(|s| (owner.clone(), s)));
    };
    for (name, role) in sam::of_type(stack, "AWS::IAM::Role") {
        for policy in role["Properties"]["Policies"]
            .as_array()
            .into_iter()
            .flatten()
        {
            push(name.to_owned(), &policy["PolicyDocument"]);
        }
    }
    for (name, policy) in sam::of_type(stack, "AWS::IAM::ManagedPolicy") {
        push(name.to_owned(), &policy["Properties"]["PolicyDocument"]);
    }
    out
}

/// The roles `managed` (a managed policy of the stack) is attached to, by their functions'
/// roles (`A2A_FUNCTION`).
fn attached_to(stack: &Value, managed: &str) -> BTreeSet<String> {
    let mut roles = BTreeSet::new();
    for (_, function) in sam::of_type(stack, "AWS::Lambda::Function") {
        let role = sam::target(&function["Properties"]["Role"]).unwrap();
        let role = role.trim_end_matches(".Arn");
        let arns = &stack["Resources"][role]["Properties"]["ManagedPolicyArns"];
        if arns.as_array().unwrap().contains(&json!({"Ref": managed})) {
            let name = &function["Properties"]["Environment"]["Variables"]["A2A_FUNCTION"];
            roles.insert(name.as_str().unwrap().to_owned());
        }
    }
    roles
}

/// The functions that run the agent in `stack` (the channel function only with the A2A-Lite
/// channels on and behind API Gateway; the front and relay functions behind the Function URL).
fn running_the_agent(stack: &Value) -> BTreeSet<String> {
    sam::of_type(stack, "AWS::Lambda::Function")
        .into_iter()
        .map(|(_, f)| f["Properties"]["Environment"]["Variables"]["A2A_FUNCTION"].clone())
        .map(|role| role.as_str().unwrap().to_owned())
        .filter(|role| RUN_THE_AGENT.contains(&role.as_str()))
        .collect()
}

/// Each function's environment variables.
fn environments(stack: &Value) -> Vec<serde_json::Map<String, Value>> {
    sam::of_type(stack, "AWS::Lambda::Function")
        .into_iter()
        .map(|(_, f)| {
            f["Properties"]["Environment"]["Variables"]
                .as_object()
                .unwrap()
                .clone()
        })
        .collect()
}

fn bedrock_statement(resource: &str) -> Value {
    json!({"Effect": "Allow", "Action": ["bedrock:InvokeModelWithResponseStream"], "Resource": resource})
}

#[test]
fn on_bedrock_the_functions_that_run_the_agent_may_invoke_the_one_model_and_nothing_else() {
    let project = generated();
    for front_door in ["ApiGateway", "FunctionUrl"] {
        let params = [
            ("FrontDoor", front_door),
            ("LiteChannels", "on"),
            ("LlmModel", MODEL),
        ];
        let Some(stack) = sam::created_from(&project.template, &params) else {
            return;
        };
        assert_eq!(stack["FailedRules"], json!([]), "{front_door}");
        // Exactly one statement in the whole stack names Bedrock: ConverseStream on the one
        // foundation model, in the stack's region.
        let bedrock: Vec<_> = statements(&stack)
            .into_iter()
            .filter(|(_, s)| s.to_string().contains("bedrock"))
            .collect();
        assert_eq!(bedrock.len(), 1, "{front_door}: {bedrock:?}");
        let (policy, statement) = &bedrock[0];
        assert_eq!(policy, "LlmModelPolicy");
        let resource = text(&stack, &params, &statement["Resource"]);
        assert_eq!(
            resource,
            format!("arn:aws:bedrock:us-east-1::foundation-model/{MODEL}")
        );
        let mut expected = bedrock_statement(&resource);
        expected["Resource"] = statement["Resource"].clone();
        assert_eq!(statement, &expected, "{front_door}: nothing more");
        // Attached to the functions that run the agent, and to no other.
        let running = running_the_agent(&stack);
        let expected: &[&str] = match front_door {
            "ApiGateway" => &["channel", "rpc", "send", "stream", "worker"],
            _ => &["front", "relay", "worker"],
        };
        assert_eq!(running, expected.iter().map(|r| r.to_string()).collect());
        assert_eq!(
            attached_to(&stack, "LlmModelPolicy"),
            running,
            "{front_door}"
        );
        // No key's secret: no policy for it, no variable.
        assert!(stack["Resources"].get("LlmKeyPolicy").is_none());
        for env in environments(&stack) {
            assert_eq!(text(&stack, &params, &env["A2A_LLM_PROVIDER"]), "bedrock");
            assert_eq!(text(&stack, &params, &env["A2A_LLM_MODEL"]), MODEL);
            assert!(env.keys().all(|k| !k.starts_with("OPENAI_")), "{env:?}");
        }
    }
}

#[test]
fn through_an_inference_profile_the_model_may_be_invoked_only_through_that_profile() {
    let project = generated();
    let params = [("LlmModel", MODEL), ("BedrockInferenceProfile", "us")];
    let Some(stack) = sam::created_from(&project.template, &params) else {
        return;
    };
    let profile = format!("arn:aws:bedrock:us-east-1:{ACCOUNT}:inference-profile/us.{MODEL}");
    let found: Vec<(String, Value)> = statements(&stack)
        .into_iter()
        .filter(|(_, s)| s.to_string().contains("bedrock"))
        .map(|(policy, mut s)| {
            s["Resource"] = json!(text(&stack, &params, &s["Resource"]));
            if s.get("Condition").is_some() {
                let condition = &mut s["Condition"]["StringEquals"]["bedrock:InferenceProfileArn"];
                *condition = json!(text(&stack, &params, condition));
            }
            (policy, s)
        })
        .collect();
    let mut through_it = bedrock_statement(&format!("arn:aws:bedrock:*::foundation-model/{MODEL}"));
    through_it["Condition"] = json!({"StringEquals": {"bedrock:InferenceProfileArn": profile}});
    assert_eq!(
        found,
        vec![
            ("LlmModelPolicy".to_owned(), bedrock_statement(&profile)),
            ("LlmModelPolicy".to_owned(), through_it),
        ]
    );
    for env in environments(&stack) {
        let model = text(&stack, &params, &env["A2A_LLM_MODEL"]);
        assert_eq!(model, format!("us.{MODEL}"));
    }
}

#[test]
fn on_an_openai_compatible_endpoint_the_functions_may_read_the_key_s_secret_and_no_model() {
    let project = generated();
    let params = [
        ("LlmProvider", "openai"),
        ("LlmModel", "gpt-4o-mini"),
        ("OpenAiBaseUrl", "https://llm.example/v1"),
        ("OpenAiApiKeySecretArn", SECRET),
    ];
    let Some(stack) = sam::created_from(&project.template, &params) else {
        return;
    };
    let all = statements(&stack);
    assert!(
        all.iter().all(|(_, s)| !s.to_string().contains("bedrock")),
        "no model on Bedrock"
    );
    assert!(stack["Resources"].get("LlmModelPolicy").is_none());
    // The one secret, read by the functions that run the agent alone.
    let key: Vec<Value> = all
        .iter()
        .filter(|(p, _)| p == "LlmKeyPolicy")
        .map(|(_, s)| {
            let mut s = s.clone();
            s["Resource"] = json!(text(&stack, &params, &s["Resource"]));
            s
        })
        .collect();
    assert_eq!(
        key,
        vec![
            json!({"Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"], "Resource": SECRET})
        ]
    );
    assert_eq!(
        attached_to(&stack, "LlmKeyPolicy"),
        running_the_agent(&stack)
    );
    for env in environments(&stack) {
        let var = |name: &str| text(&stack, &params, &env[name]);
        assert_eq!(var("A2A_LLM_PROVIDER"), "openai");
        assert_eq!(var("A2A_LLM_MODEL"), "gpt-4o-mini");
        assert_eq!(var("OPENAI_BASE_URL"), "https://llm.example/v1");
        assert_eq!(var("OPENAI_API_KEY_SECRET_ARN"), SECRET);
        assert!(
            !env.contains_key("OPENAI_API_KEY"),
            "the key is never a variable"
        );
    }
    // A secret under your own KMS key: decrypted through Secrets Manager only.
    let kms = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab";
    let mut with_key = params.to_vec();
    with_key.push(("SecretsKmsKeyArn", kms));
    let stack = sam::created_from(&project.template, &with_key).unwrap();
    let key: Vec<_> = statements(&stack)
        .into_iter()
        .filter(|(p, _)| p == "LlmKeyPolicy")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(key.len(), 2, "{key:?}");
    assert_eq!(key[1]["Action"], json!(["kms:Decrypt"]));
    assert_eq!(text(&stack, &with_key, &key[1]["Resource"]), kms);
    assert!(key[1]["Condition"]["StringEquals"]["kms:ViaService"].is_object());
    // No secret (a server that takes no key): nothing to read.
    let stack = sam::created_from(&project.template, &params[..3]).unwrap();
    assert!(stack["Resources"].get("LlmKeyPolicy").is_none());
    for env in environments(&stack) {
        assert!(!env.contains_key("OPENAI_API_KEY_SECRET_ARN"));
    }
}

#[test]
fn the_model_parameters_cannot_widen_the_policy() {
    let project = generated();
    let Some(stack) = sam::created_from(&project.template, &[]) else {
        return;
    };
    let params = &stack["Parameters"];
    let cases = json!([
        [
            params["LlmModel"]["AllowedPattern"],
            [
                "amazon.nova-lite-v1:0",
                MODEL,
                "meta.llama3-1-8b-instruct-v1:0",
                "gpt-4o-mini"
            ],
            [
                "",
                "*",
                "amazon.*",
                "anthropic.claude-?",
                "a/b",
                "foundation-model/x",
                " amazon.nova"
            ]
        ],
        [
            params["BedrockInferenceProfile"]["AllowedPattern"],
            ["", "us", "eu", "apac", "global", "us-gov"],
            ["*", "us.", "US", "us*", "a/b"]
        ],
        [
            params["OpenAiApiKeySecretArn"]["AllowedPattern"],
            ["", SECRET],
            [
                "llm-key",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:llm-key",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:*-AbCdEf*"
            ]
        ],
        [
            params["OpenAiBaseUrl"]["AllowedPattern"],
            ["https://api.openai.com/v1", "https://llm.example:8443/v1"],
            ["http://llm.example/v1", "", "https://a b"]
        ],
    ]);
    // Python's re, as CloudFormation's patterns are checked in infra/check-template.sh.
    let check = r#"
import json, re, sys
for pattern, good, bad in json.load(sys.stdin):
    for v in good:
        assert re.fullmatch(pattern, v), (pattern, v)
    for v in bad:
        assert not re.fullmatch(pattern, v), (pattern, v)
"#;
    let mut child = Command::new(sam::root().join(".venv-sam/bin/python"))
        .args(["-c", check])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        cases.to_string().as_bytes(),
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Lambda refuses a function whose environment passes 4 KB (`template.rs` holds the kit's
/// template to it): with the model's settings at their parameters' bounds too, on Bedrock
/// through an inference profile or on an OpenAI-compatible endpoint with its key's secret,
/// each function's environment still fits, with the kit's margin.
#[test]
fn every_function_s_environment_fits_in_4_kb_with_the_model_s_settings_at_their_bounds() {
    let project = generated();
    let bedrock: &[(&str, &str)] = &[("LlmModel", MODEL), ("BedrockInferenceProfile", "us")];
    let openai: &[(&str, &str)] = &[("LlmProvider", "openai"), ("OpenAiApiKeySecretArn", SECRET)];
    let Some(largest) = sam::environment::largest(&project.template, &[bedrock, openai]) else {
        return;
    };
    sam::environment::assert_fits(&largest);
}

#[test]
fn sam_validate_and_cfn_lint_pass_on_the_generated_template() {
    let project = generated();
    let venv = sam::root().join(".venv-sam/bin");
    if sam::created_from(&project.template, &[]).is_none() {
        return;
    }
    for (tool, args) in [
        ("sam", vec!["validate", "--template-file"]),
        ("cfn-lint", vec![]),
    ] {
        let out = Command::new(venv.join(tool))
            .args(args)
            .arg(&project.template)
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("SAM_CLI_TELEMETRY", "0")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{tool}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
