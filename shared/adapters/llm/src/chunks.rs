//! The answer as it streams: tokens coalesced into artifact chunks, each chunk one write to the
//! task's log (one DynamoDB write on Lambda), none held longer than [`HOLD`] while tokens flow.

use std::sync::Mutex;
use std::time::Duration;

use a2a_core::{AgentError, Emitter};
use a2a_protocol::{Artifact, Part};

/// The longest a token waits for its chunk to be written: a person watching sees the answer
/// grow about twice a second, and a fast model's answer takes a few writes, not one per token.
pub(crate) const HOLD: Duration = Duration::from_millis(500);

/// The answer artifact of one message: its id, and its text so far.
pub(crate) struct Answer {
    id: String,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Everything the model wrote for this message so far, the pending tokens included.
    text: String,
    /// Tokens not yet in a chunk.
    pending: String,
    /// The next chunk replaces the artifact with the whole text (the first of a model call).
    replace_next: bool,
}

impl Answer {
    pub(crate) fn new(id: String) -> Self {
        Self {
            id,
            state: Mutex::new(State::default()),
        }
    }

    /// The artifact's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The whole text so far.
    pub(crate) fn text(&self) -> String {
        self.lock().text.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A model call starts: its first chunk rewrites the artifact whole, so that the chunks of
    /// a call cut short (a crash before its step was recorded) are not there twice when the
    /// replay calls the model again.
    pub(crate) fn begin_call(&self) {
        self.lock().replace_next = true;
    }

    /// Tokens arrived.
    pub(crate) fn push(&self, text: &str) {
        let mut state = self.lock();
        state.text.push_str(text);
        state.pending.push_str(text);
    }

    /// Whether tokens wait for a chunk.
    pub(crate) fn holds(&self) -> bool {
        !self.lock().pending.is_empty()
    }

    /// Emits the pending tokens as one chunk; returns the tokens it carried (none: no chunk).
    pub(crate) async fn emit_chunk(&self, emitter: &Emitter) -> Result<Option<String>, AgentError> {
        let (piece, text, replace) = {
            let mut state = self.lock();
            if state.pending.is_empty() {
                return Ok(None);
            }
            let piece = std::mem::take(&mut state.pending);
            let replace = std::mem::take(&mut state.replace_next);
            let text = if replace {
                state.text.clone()
            } else {
                piece.clone()
            };
            (piece, text, replace)
        };
        let artifact = Artifact {
            artifact_id: self.id.clone(),
            name: "answer".into(),
            parts: vec![Part::text(text)],
            ..Artifact::default()
        };
        emitter.artifact(artifact, !replace, false).await?;
        Ok(Some(piece))
    }

    /// A recorded model call again: the same chunks, emitted in the same order (the emitter
    /// skips what the replayed run wrote, counting them), so the text and the emit count are
    /// what the first run had.
    pub(crate) async fn replay(
        &self,
        emitter: &Emitter,
        chunks: &[String],
    ) -> Result<(), AgentError> {
        self.begin_call();
        for chunk in chunks {
            self.push(chunk);
            self.emit_chunk(emitter).await?;
        }
        Ok(())
    }
}
