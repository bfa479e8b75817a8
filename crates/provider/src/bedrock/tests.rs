//! The address, the frames on hostile bytes, and the whole stream.

use super::*;
use crate::testing::bedrock::*;
use futures::StreamExt;
use leash_protocol::StopReason;
use pretty_assertions::assert_eq;

#[test]
fn the_model_id_is_one_escaped_segment() {
    let settings = HttpSettings {
        aws: Some(AwsAuth {
            region: "eu-west-3".into(),
            keys: None,
        }),
        ..HttpSettings::new("", None)
    };
    assert_eq!(
        ConverseStream::url(&settings, "us.anthropic.claude-x-v1:0"),
        "https://bedrock-runtime.eu-west-3.amazonaws.com/model/us.anthropic.claude-x-v1%3A0/converse-stream"
    );
    let arn = "arn:aws:bedrock:us-east-1:123:inference-profile/x?y#z";
    assert!(ConverseStream::url(&settings, arn).ends_with(
        "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fx%3Fy%23z/converse-stream"
    ));
}

async fn events_of(bytes: Vec<Vec<u8>>) -> Vec<StreamEvent> {
    let chunks = futures::stream::iter(bytes.into_iter().map(Ok::<_, std::io::Error>));
    decode(chunks).collect().await
}

#[tokio::test]
async fn a_reply_split_anywhere_decodes_the_same() {
    let whole = text_reply(&["Hel", "lo"]);
    let bytes: Vec<Vec<u8>> = whole.chunks(7).map(<[u8]>::to_vec).collect();
    let events = events_of(bytes).await;
    assert_eq!(events[0], StreamEvent::Text("Hel".into()));
    assert_eq!(events[1], StreamEvent::Text("lo".into()));
    assert_eq!(events.last(), Some(&StreamEvent::Done(StopReason::Stop)));
}

#[tokio::test]
async fn hostile_frames_end_in_one_error() {
    // A length past the cap: refused before its bytes are waited for.
    let events = events_of(vec![vec![0x7f, 0xff, 0xff, 0xff, 0, 0]]).await;
    assert!(
        matches!(&events[..], [StreamEvent::Error(e)] if e.contains("larger than")),
        "{events:?}"
    );
    // A length too short to be a frame.
    let events = events_of(vec![vec![0, 0, 0, 0, 1, 2, 3, 4]]).await;
    assert!(
        matches!(&events[..], [StreamEvent::Error(e)] if e.contains("broken event-stream frame")),
        "{events:?}"
    );
    // A flipped byte: the CRC says so.
    let mut frame = text_reply(&["x"]);
    frame[20] ^= 0xff;
    let events = events_of(vec![frame]).await;
    assert!(
        matches!(events.last(), Some(StreamEvent::Error(e)) if e.contains("broken event-stream frame")),
        "{events:?}"
    );
    // Cut inside a frame, before the reply said how it ended.
    let mut frames = start();
    frames.extend(text(0, "x"));
    frames.truncate(frames.len() - 3);
    let events = events_of(vec![frames]).await;
    assert!(
        matches!(events.last(), Some(StreamEvent::Error(e)) if e.contains("inside an event-stream frame")),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_session_token_a_server_echoes_is_redacted_like_the_secret() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const SECRET: &str = "bedrock-unit-secret-access-key-0123";
    const SESSION: &str = "bedrock-unit-session-token-IQoJb3JpZ2luX2Vj";
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(403).set_body_raw(
            format!(r#"{{"message":"token {SESSION} and secret {SECRET} refused"}}"#),
            "application/json",
        ))
        .mount(&server)
        .await;
    let keys = AwsKeys {
        access_key_id: "AKIDUNIT".into(),
        secret_access_key: leash_protocol::secret::ApiKey::new(SECRET),
        session_token: Some(leash_protocol::secret::ApiKey::new(SESSION)),
    };
    let settings = HttpSettings {
        aws: Some(AwsAuth {
            region: "us-east-1".into(),
            keys: Some(keys),
        }),
        retries: 0,
        ..HttpSettings::new(
            server.uri(),
            Some(leash_protocol::secret::ApiKey::new(SECRET)),
        )
    };
    let provider = BedrockProvider::new(settings);
    let messages = [leash_protocol::Message::user_text("hi")];
    let request = crate::Request {
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        transcript: &[],
        options: Default::default(),
    };
    let events: Vec<StreamEvent> = crate::Provider::stream(&provider, request).collect().await;
    let Some(StreamEvent::Error(message)) = events.last() else {
        panic!("{events:?}");
    };
    assert!(
        message.contains("token *** and secret *** refused"),
        "{message}"
    );
    assert!(!message.contains(SESSION), "{message}");
}
