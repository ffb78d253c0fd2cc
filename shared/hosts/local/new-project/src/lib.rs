//! {{name}}: an A2A 1.0 agent. It answers every message with the message's text, upper-cased;
//! replace `execute` with your own logic.

use std::sync::Arc;

use a2a_core::{Agent, AgentDescription, AgentError, AgentRequest, Emitter};
use a2a_protocol::{AgentSkill, Artifact, Part};
use async_trait::async_trait;

struct {{Agent}};

#[async_trait]
impl Agent for {{Agent}} {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "{{name}}".into(),
            description: "Repeats what you say, louder.".into(),
            version: "0.1.0".into(),
            skills: vec![AgentSkill {
                id: "shout".into(),
                name: "Shout".into(),
                description: "Upper-cases the text it receives.".into(),
                tags: vec!["text".into()],
                ..AgentSkill::default()
            }],
            default_input_modes: vec!["text/plain".into()],
            default_output_modes: vec!["text/plain".into()],
            ..AgentDescription::default()
        }
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        let loud = request.text().to_uppercase();
        emitter.working(None).await?;
        let artifact = Artifact {
            // Derived from the task: a re-run after a crash replaces this artifact.
            artifact_id: format!("{}-shout", request.task_id),
            name: "shout".into(),
            parts: vec![Part::text(&loud)],
            ..Artifact::default()
        };
        emitter.artifact(artifact, false, true).await?;
        emitter.complete(Some(&loud)).await
    }
}

/// The agent the local server (`src/main.rs`) and every Lambda function (`src/bin/lambda.rs`)
/// serve: to host your own agent, return it here.
pub fn agent() -> Arc<dyn Agent> {
    Arc::new({{Agent}})
}
