//! `a2a-local new --llm`: the project's agent is an LLM agent on the kit's `a2a-llm` adapter
//! (`shared/adapters/llm`), its own workspace (rig-core changes serde_json's features, so the
//! kit's own server never depends on it: only such a project does).

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
        format!("a2a-llm = {{ {location} }}\nserde_json = \"1\"")
    } else {
        String::new()
    }
}

/// What the README says the agent is.
pub(super) fn about(llm: bool) -> &'static str {
    if llm {
        "The agent is `src/lib.rs`: an LLM agent (the kit's `a2a-llm` adapter) with a system prompt, \
one local tool (`word_count`) and another A2A agent as a tool (`helper`, at `HELPER_AGENT_URL`, \
default `http://127.0.0.1:9001`). Its model is any OpenAI-compatible Chat Completions endpoint: \
set `OPENAI_BASE_URL` (with its `/v1`, e.g. `http://127.0.0.1:11434/v1` for Ollama), \
`OPENAI_API_KEY` (if the server wants one) and `A2A_LLM_MODEL` before `cargo run`. Every model \
and tool call is a durable step; the kit's `docs/llm-agents.md` explains what that means and what \
a streamed answer costs."
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
            manifest.contains("a2a-llm = { path = \"/kit/shared/adapters/llm\" }"),
            "{manifest}"
        );
        assert!(file(&files, "tests/agent.rs").contains("my_llm::agent()"));
        assert!(file(&files, "Cargo.lock").contains("name = \"rig-core\""));
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
}
