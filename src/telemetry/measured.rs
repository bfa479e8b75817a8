//! A run's model requests as the GenAI client metrics record them
//! ([`super::metrics`]): the duration of each `chat` operation (with its
//! `error.type` when it failed) and its tokens, from the same events its
//! span is built from.

use super::metrics::ChatPoint;
use super::run_span::{Chat, RunTrace, State};
use super::semconv::{metric_attributes, token_counts};
use leash_protocol::AssistantMessage;

impl RunTrace {
    /// The metrics of a model request that ended (`reply`: its reply, if
    /// any; `error`: its `error.type`, if it failed): its duration, and its
    /// tokens when the provider counted them.
    pub(super) fn measured(
        &self,
        chat: &Chat,
        state: &State,
        reply: Option<&AssistantMessage>,
        error: Option<&str>,
    ) {
        let Some(metrics) = self.telemetry.metrics() else {
            return;
        };
        let facts = &state.facts;
        let answered = reply
            .filter(|reply| !reply.model.is_empty())
            .map(|reply| self.telemetry.clean(&reply.model));
        let attributes = metric_attributes(
            &facts.provider,
            &self.telemetry.clean(&facts.model),
            &facts.server,
            answered,
        );
        let tokens = reply.and_then(|reply| token_counts(&reply.usage));
        metrics.chat(ChatPoint {
            attributes,
            seconds: chat.began.elapsed().as_secs_f64(),
            error,
            tokens,
            // Streaming calls only, as the conventions ask.
            first_chunk: chat.first_chunk.filter(|_| facts.stream),
        });
    }
}
