//! What the unit tests of the driver and of both wire formats share.

use serde_json::Value;
use wiremock::MockServer;

use crate::protocol::{Content, Message, UserMessage};

/// A user message of `text`.
pub(crate) fn user(text: &str) -> Message {
    Message::User(UserMessage {
        content: vec![Content::text(text)],
        timestamp: 0,
    })
}

/// The JSON bodies `server` received, in order.
pub(crate) async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect()
}
