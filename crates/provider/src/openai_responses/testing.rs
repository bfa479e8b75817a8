//! The request builders and mock server the Responses unit tests share;
//! the events come from the shared builders (`provider::testing::responses`).

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub(crate) use crate::openai::testing::{read_file_tool, request, settings};
pub(crate) use crate::testing::responses::{Events, reasoning_parts, usage};
pub(crate) use crate::testing::{bodies, user};

pub(crate) async fn server_replying(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

pub(crate) fn sse_reply(events: &Events) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(events.body().into_bytes(), "text/event-stream")
}
