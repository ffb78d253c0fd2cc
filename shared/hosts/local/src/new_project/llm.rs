//! `a2a-local new --llm`: the project's agent is an LLM agent on the kit's `a2a-llm` adapter
//! (`shared/adapters/llm`), its own workspace (rig-core changes serde_json's features, so the
//! kit's own server never depends on it: only such a project does).

use super::NewProjectError;

/// The adapter's directory in the kit.
pub(super) const DIR: &str = "shared/adapters/llm";

/// The adapter's lock file: the kit's versions, and rig's dependencies.
pub(super) const LOCK: &str = "shared/adapters/llm/Cargo.lock";

/// The files an LLM project has instead of the plain project's: (path in the project, text).
const FILES: &[(&str, &str)] = &[
    ("src/lib.rs", include_str!("../../new-project/llm/lib.rs")),
    (
        "tests/agent.rs",
        include_str!("../../new-project/llm/agent_test.rs"),
    ),
];

/// The LLM project's text for `path`, if it has its own.
pub(super) fn file(llm: bool, path: &str) -> Option<&'static str> {
    FILES
        .iter()
        .find(|(p, _)| llm && *p == path)
        .map(|(_, text)| *text)
}

/// The project's extra dependencies: the adapter (at `location`) and serde_json for the tools'
/// schemas; none for a plain project.
pub(super) fn dependencies(llm: bool, location: &str) -> String {
    if llm {
        format!("a2a-llm = {{ {location}, default-features = false }}\nserde_json = \"1\"")
    } else {
        String::new()
    }
}

/// The LLM project's manifest: the adapter without its AWS SDK (`default-features = false`),
/// which the Lambda binary turns on (`lambda`) and a local run on Bedrock can (`aws`).
pub(super) fn manifest(llm: bool, text: String) -> Result<String, NewProjectError> {
    const LAMBDA: &str = "lambda = [\"dep:a2a-lambda-glue\"]\n";
    if !llm {
        return Ok(text);
    }
    if !text.contains(LAMBDA) {
        return Err(NewProjectError::Template(format!(
            "Cargo.toml.in has no {:?}",
            LAMBDA.trim()
        )));
    }
    Ok(text.replacen(
        LAMBDA,
        "lambda = [\"dep:a2a-lambda-glue\", \"aws\"]\n# Amazon Bedrock, and the model's key from \
         Secrets Manager (a2a-llm's AWS SDK): on Lambda,\n# or `cargo run --features aws` to run \
         locally on Bedrock.\naws = [\"a2a-llm/aws\"]\n",
        1,
    ))
}

/// The parameters an LLM project's template adds to the kit's: the provider, the model, and
/// for an OpenAI-compatible endpoint its URL and its key's secret.
const PARAMETERS: &str = include_str!("../../new-project/llm/template-parameters.yaml");

/// The policies the functions that run the agent get: the one Bedrock model, or the one secret.
const RESOURCES: &str = include_str!("../../new-project/llm/template-resources.yaml");

const CONDITIONS: &str = "  # The LLM agent's model (a2a-local new --llm).
  LlmOnBedrock: !Equals [!Ref LlmProvider, bedrock]
  LlmViaInferenceProfile: !And
    - !Condition LlmOnBedrock
    - !Not [!Equals [!Ref BedrockInferenceProfile, \"\"]]
  LlmKeyInSecret: !And
    - !Equals [!Ref LlmProvider, openai]
    - !Not [!Equals [!Ref OpenAiApiKeySecretArn, \"\"]]
";

/// The model's settings, in every function's environment (those that run the agent read them).
const VARIABLES: &str = "        # The LLM agent's model (docs/llm-agents.md, \"On Lambda\").
        A2A_LLM_PROVIDER: !Ref LlmProvider
        A2A_LLM_MODEL: !If [LlmViaInferenceProfile, !Sub \"${BedrockInferenceProfile}.${LlmModel}\", !Ref LlmModel]
        OPENAI_BASE_URL: !If [LlmOnBedrock, !Ref AWS::NoValue, !Ref OpenAiBaseUrl]
        OPENAI_API_KEY_SECRET_ARN: !If [LlmKeyInSecret, !Ref OpenAiApiKeySecretArn, !Ref AWS::NoValue]
";

/// The policies' attachment, in a function's `Policies` or a role's `ManagedPolicyArns`.
const ATTACHED: &str = "        # The LLM agent's model (LlmModelPolicy) or its key (LlmKeyPolicy).
        - !If [LlmOnBedrock, !Ref LlmModelPolicy, !Ref AWS::NoValue]
        - !If [LlmKeyInSecret, !Ref LlmKeyPolicy, !Ref AWS::NoValue]
";

/// Kit parameters an LLM project bounds tighter, to make room for the model's settings in the
/// functions' environment (Lambda refuses one over 4 KB of JSON, and the kit's template fills
/// its largest, the front function's, to 3,999 bytes at every parameter's bound; the model's
/// settings take up to 384): (parameter, the kit's `MaxLength`, the project's). 240 bytes from `AgentDescription` (3 a character; an LLM agent's description
/// is in its code, `LlmAgent::description`) and 160 from `CorsAllowedOrigins` (1 a character).
/// `llm_template.rs` in the Lambda host's tests adds it up.
const TIGHTER: [(&str, &str, &str); 2] = [
    ("AgentDescription", "180", "100"),
    ("CorsAllowedOrigins", "360", "200"),
];

/// The kit's template with [`TIGHTER`]'s bounds: each parameter's `MaxLength`, and the
/// "at most" of its description.
fn tighten(kit: &str) -> Result<String, NewProjectError> {
    let mut text = kit.to_owned();
    for (name, from, to) in TIGHTER {
        let header = format!("\n  {name}:\n");
        let missing = || {
            NewProjectError::Template(format!("template.yaml has no {name} of MaxLength {from}"))
        };
        let start = text.find(&header).ok_or_else(missing)? + header.len();
        // The parameter's block: to the next line indented no deeper than its name.
        let end = text[start..]
            .split_inclusive('\n')
            .take_while(|line| line.starts_with("   ") || line.trim().is_empty())
            .map(str::len)
            .sum::<usize>()
            + start;
        let block = &text[start..end];
        let bound = format!("    MaxLength: {from}\n");
        if !block.contains(&bound) {
            return Err(missing());
        }
        let block = block
            .replacen(&bound, &format!("    MaxLength: {to}\n"), 1)
            .replace(&format!("at most {from}"), &format!("at most {to}"));
        text.replace_range(start..end, &block);
    }
    Ok(text)
}

/// The kit's template (already adapted to the project) for an LLM project: the model's
/// parameters, its settings in the functions' environment, and its policy attached to the
/// functions that run the agent, alone, and room for them ([`TIGHTER`]). The kit's own
/// template is unchanged.
pub(super) fn template(llm: bool, kit: &str) -> Result<String, NewProjectError> {
    if !llm {
        return Ok(kit.to_owned());
    }
    let kit = &tighten(kit)?;
    let missing = |what: &str| NewProjectError::Template(format!("template.yaml has no {what}"));
    let after = |text: &str, anchor: &str, insert: &str| -> Result<String, NewProjectError> {
        let at = text.find(anchor).ok_or_else(|| missing(anchor.trim()))? + anchor.len();
        Ok(format!("{}{insert}{}", &text[..at], &text[at..]))
    };
    let text = after(kit, "\nParameters:\n", PARAMETERS)?;
    let text = after(&text, "\nConditions:\n", CONDITIONS)?;
    let globals = text
        .find("\nGlobals:\n")
        .ok_or_else(|| missing("Globals"))?;
    let variables = "\n    Environment:\n      Variables:\n";
    let at = text[globals..]
        .find(variables)
        .ok_or_else(|| missing("Globals.Function.Environment.Variables"))?
        + globals
        + variables.len();
    let text = format!("{}{VARIABLES}{}", &text[..at], &text[at..]);
    let text = after(&text, "\nResources:\n", RESOURCES)?;
    attach(&text)
}

/// Attaches the model's policies to every function that runs the agent: those that read the
/// credentials of the agents it calls, but `cancel` (it cancels the agent's calls and runs no
/// model). A function with the stack's own role gets them on that role.
fn attach(text: &str) -> Result<String, NewProjectError> {
    let blocks = resource_blocks(text);
    let mut inserts = Vec::new();
    let mut attached = Vec::new();
    for (name, range) in &blocks {
        let block = &text[range.clone()];
        if !block.contains("Type: AWS::Serverless::Function")
            || !block.contains("A2A_AGENT_CREDENTIALS_SECRET_ARN:")
            || block.contains("A2A_FUNCTION: cancel\n")
        {
            continue;
        }
        let (target, anchor) = match block.split_once("      Role: !GetAtt ") {
            Some((_, rest)) => {
                let role = rest.split('.').next().unwrap_or_default();
                let role = blocks.iter().find(|(n, _)| n == role).ok_or_else(|| {
                    NewProjectError::Template(format!(
                        "{name}'s role {role} is not in template.yaml"
                    ))
                })?;
                (role.1.clone(), "\n      ManagedPolicyArns:\n")
            }
            None => (range.clone(), "\n      Policies:\n"),
        };
        let at = text[target.clone()]
            .find(anchor)
            .ok_or_else(|| NewProjectError::Template(format!("{name} has no {}", anchor.trim())))?;
        // After the list's items: the next line indented no deeper than the key.
        let list = target.start + at + anchor.len();
        let end = text[list..]
            .split_inclusive('\n')
            .take_while(|line| line.starts_with("        ") || line.trim().is_empty())
            .map(str::len)
            .sum::<usize>();
        inserts.push(list + end);
        attached.push(name.clone());
    }
    if attached.is_empty() {
        return Err(NewProjectError::Template(
            "no function reads A2A_AGENT_CREDENTIALS_SECRET_ARN: which run the agent?".into(),
        ));
    }
    inserts.sort_unstable();
    let mut out = text.to_owned();
    for at in inserts.into_iter().rev() {
        out.insert_str(at, ATTACHED);
    }
    Ok(out)
}

/// The resources of `text`: (logical id, byte range of its block).
fn resource_blocks(text: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let Some(start) = text.find("\nResources:\n") else {
        return Vec::new();
    };
    let mut blocks: Vec<(String, std::ops::Range<usize>)> = Vec::new();
    let mut at = start + "\nResources:\n".len();
    for line in text[at..].split_inclusive('\n') {
        let top = !line.starts_with(' ') && !line.trim().is_empty();
        let header = line.starts_with("  ")
            && !line.starts_with("   ")
            && line.trim_end().ends_with(':')
            && !line.trim_start().starts_with('#');
        if top || header {
            if let Some(last) = blocks.last_mut() {
                last.1.end = at;
            }
            if top {
                return blocks;
            }
            let name = line.trim().trim_end_matches(':').to_owned();
            blocks.push((name, at..text.len()));
        }
        at += line.len();
    }
    blocks
}

/// What the README says the agent is.
pub(super) fn about(llm: bool) -> &'static str {
    if llm {
        "The agent is `src/lib.rs`: an LLM agent (the kit's `a2a-llm` adapter) with a system prompt, \
one local tool (`word_count`) and another A2A agent as a tool (`helper`, at `HELPER_AGENT_URL`, \
default `http://127.0.0.1:9001`). Its model is any OpenAI-compatible Chat Completions endpoint: \
set `OPENAI_BASE_URL` (with its `/v1`, e.g. `http://127.0.0.1:11434/v1` for Ollama), \
`OPENAI_API_KEY` (if the server wants one) and `A2A_LLM_MODEL` before `cargo run` (or \
`A2A_LLM_PROVIDER=bedrock` and a Bedrock model id, with `cargo run --features aws`). Deployed \
(`sam build && sam deploy --guided`), it runs on Amazon Bedrock: the template's `LlmModel` \
(default `amazon.nova-lite-v1:0`, enabled in your account's Bedrock console) is the one model \
its functions may invoke; `LlmProvider=openai` with `OpenAiBaseUrl` and `OpenAiApiKeySecretArn` \
(a Secrets Manager secret holding the key) calls an OpenAI-compatible endpoint instead. Every \
model and tool call is a durable step; the kit's `docs/llm-agents.md` explains what that means \
and what a streamed answer costs."
    } else {
        "The agent is `src/lib.rs`: it answers every message with the message's text, upper-cased. Replace
its `execute` with your own logic; `agent()` at the bottom is the one place that names it, for the
local server and for every Lambda function."
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::{kit_root, KitFiles, KitSource, NewProject};

    fn files(llm: bool) -> Vec<(PathBuf, String)> {
        let kit = KitFiles::read(&kit_root()).expect("the kit's files");
        NewProject::new("/tmp/my-llm", KitSource::Path(PathBuf::from("/kit")))
            .expect("a good name")
            .llm(llm)
            .files_from(&kit)
            .expect("the files")
    }

    fn file<'a>(files: &'a [(PathBuf, String)], path: &str) -> &'a str {
        files
            .iter()
            .find(|(p, _)| p == Path::new(path))
            .map(|(_, text)| text.as_str())
            .unwrap_or_else(|| panic!("no {path}"))
    }

    #[test]
    fn an_llm_project_is_a_short_agent_on_the_adapter() {
        let files = files(true);
        let lib = file(&files, "src/lib.rs");
        // The agent, its tools and its prompt: about twenty lines.
        assert!(lib.lines().count() <= 30, "{lib}");
        assert!(lib.contains("LlmAgent::new(\"my-llm\")"), "{lib}");
        assert!(
            lib.contains("Tool::local(") && lib.contains("Tool::agent("),
            "{lib}"
        );
        let manifest = file(&files, "Cargo.toml");
        assert!(
            manifest.contains(
                "a2a-llm = { path = \"/kit/shared/adapters/llm\", default-features = false }"
            ),
            "{manifest}"
        );
        // The AWS SDK (Bedrock, the key's secret) only in the Lambda binary, or when asked.
        assert!(
            manifest.contains("lambda = [\"dep:a2a-lambda-glue\", \"aws\"]")
                && manifest.contains("aws = [\"a2a-llm/aws\"]"),
            "{manifest}"
        );
        assert!(file(&files, "tests/agent.rs").contains("my_llm::agent()"));
        // The lock pins the Lambda binary's dependencies too (the adapter's `pin-lambda-host`).
        let lock = file(&files, "Cargo.lock");
        for pinned in [
            "rig-core",
            "a2a-lambda-glue",
            "lambda_runtime",
            "aws-sdk-dynamodb",
        ] {
            assert!(lock.contains(&format!("name = \"{pinned}\"")), "{pinned}");
        }
        assert!(file(&files, "README.md").contains("A2A_LLM_MODEL"));
        for (path, text) in &files {
            assert!(
                !text.contains("{{"),
                "{}: a placeholder is left",
                path.display()
            );
        }
    }

    #[test]
    fn a_plain_project_has_no_llm_dependency() {
        let files = files(false);
        let manifest = file(&files, "Cargo.toml");
        assert!(!manifest.contains("a2a-llm"), "{manifest}");
        assert!(!file(&files, "Cargo.lock").contains("name = \"rig-core\""));
        assert!(file(&files, "README.md").contains("upper-cased"));
    }

    #[test]
    fn an_llm_project_s_template_is_the_kit_s_with_the_model_s_settings_and_policies() {
        let kit = KitFiles::read(&kit_root())
            .expect("the kit's files")
            .template;
        let plain = super::template(false, &kit).expect("unchanged");
        assert_eq!(plain, kit);
        let llm = super::template(true, &kit).expect("adapted");
        // Two of the kit's bounds tighter, for the model's settings' room in the 4 KB.
        let tighter = super::tighten(&kit).expect("tightened");
        for (name, from, to) in super::TIGHTER {
            let block = |text: &str| {
                text.split(&format!("\n  {name}:\n"))
                    .nth(1)
                    .map(|b| b[..200].to_owned())
            };
            assert!(block(&kit)
                .unwrap()
                .contains(&format!("MaxLength: {from}\n")));
            assert!(
                block(&llm).unwrap().contains(&format!("MaxLength: {to}\n")),
                "{name}"
            );
        }
        assert_eq!(tighter.lines().count(), kit.lines().count());
        // Every line of the kit's (so tightened), in order; what it adds is the model's.
        let mut added = Vec::new();
        let mut kit_lines = tighter.lines().peekable();
        for line in llm.lines() {
            if kit_lines.peek() == Some(&line) {
                kit_lines.next();
            } else {
                added.push(line);
            }
        }
        assert_eq!(
            kit_lines.next(),
            None,
            "a line of the kit's template is gone"
        );
        let added = added.join("\n");
        for name in [
            "LlmProvider:",
            "LlmModel:",
            "BedrockInferenceProfile:",
            "OpenAiBaseUrl:",
            "OpenAiApiKeySecretArn:",
            "LlmOnBedrock:",
            "A2A_LLM_MODEL:",
            "LlmModelPolicy:",
            "LlmKeyPolicy:",
        ] {
            assert_eq!(added.matches(name).count(), 1, "{name}: {added}");
        }
        // Attached to the seven functions that run the agent (the worker through its role).
        assert_eq!(added.matches("!Ref LlmModelPolicy,").count(), 7, "{added}");
        assert!(
            !added.contains("OPENAI_API_KEY:"),
            "the key is never a variable"
        );
    }

    #[test]
    fn a_template_without_what_the_llm_generator_adapts_is_a_clear_error() {
        let err = super::template(true, "Transform: x\nParameters:\n").expect_err("no bounds");
        assert!(
            err.to_string()
                .contains("AgentDescription of MaxLength 180"),
            "{err}"
        );
        let params = "Transform: x\nParameters:\n  AgentDescription:\n    MaxLength: 180\n  \
                      CorsAllowedOrigins:\n    MaxLength: 360\n";
        let err = super::template(true, params).expect_err("no conditions");
        assert!(err.to_string().contains("Conditions"), "{err}");
        let bare = "Transform: x\nParameters:\n  AgentDescription:\n    MaxLength: 180\n  \
                    CorsAllowedOrigins:\n    MaxLength: 360\nConditions:\nGlobals:\n  Function:\n    Environment:\n      \
                    Variables:\n        A: b\nResources:\n  X:\n    Type: AWS::SQS::Queue\n";
        let err = super::template(true, bare).expect_err("no agent function");
        assert!(err.to_string().contains("run the agent"), "{err}");
    }
}
