//! The two roles a transcript may hold beside the conversation itself
//! (ARCHITECTURE.md §1.2, "System and custom messages"): a system message,
//! which changes the system prompt or the tools the model is told of from
//! that point on (Pi's `SystemMessage`), and a message of the host's own
//! role, which the model never sees unless `convert_to_llm` makes it into
//! one it can read (Pi's `CustomAgentMessages`).
//!
//! Neither is ever sent as it is: the loop folds system messages into the
//! request's system prompt and tools, and leaves custom ones out.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{AssistantMessage, Message, Sections, ToolResultMessage, UserMessage};

/// A tool as the model is told about it: what a system message declares
/// and every request carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A JSON Schema (an object schema) for its arguments.
    pub parameters: Value,
}

/// A tool a system message withdraws, by name (Pi's `ToolReference`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolReference {
    /// The tool's name.
    pub name: String,
}

/// A change to what the model is told before the conversation: text
/// added to the system prompt, named sections set or withdrawn, and tools
/// declared or withdrawn from this point of the transcript on (Pi's
/// `SystemMessage`).
///
/// ```
/// use leash_protocol::{Message, Sections, SystemMessage};
///
/// let system = SystemMessage {
///     content: "You are a careful reviewer.".to_owned(),
///     sections: Sections::default().with("skills", "<skills>grep</skills>"),
///     ..SystemMessage::default()
/// };
/// let line = serde_json::to_string(&Message::System(system))?;
/// assert_eq!(
///     line,
///     r#"{"role":"system","content":"You are a careful reviewer.","sections":{"skills":"<skills>grep</skills>"},"timestamp":0}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessage {
    /// Text appended to the system prompt; empty for a message that only
    /// changes tools or sections.
    pub content: String,
    /// Named sections of the system prompt (Pi's `sections`), set or
    /// withdrawn by name; the prompt lists them after every `content`, in
    /// the order they were first given. Absent, and not written, when empty.
    #[serde(default, skip_serializing_if = "Sections::is_empty")]
    pub sections: Sections,
    /// Tools declared from here on (a changed tool is withdrawn and
    /// declared again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_added: Vec<ToolSpec>,
    /// Tools withdrawn from here on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_removed: Vec<ToolReference>,
    /// When the message was made.
    pub timestamp: u64,
}

/// The roles leash itself gives meaning to; a custom message may not take
/// one, or it would read back as something it is not.
pub const RESERVED_ROLES: [&str; 5] = ["user", "assistant", "toolResult", "system", "session"];

/// A message of the host's own role: a notification, a marker for a
/// user interface. It stays in the transcript and its events; a request
/// never carries it unless `convert_to_llm` turns it into a message the
/// model reads.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomMessage {
    role: String,
    fields: Map<String, Value>,
}

/// A custom message was given a role leash reserves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the role {0:?} is reserved; a custom message needs a role of its own")]
pub struct ReservedRole(pub String);

impl CustomMessage {
    /// A message of `role` carrying `fields` (any `role` key among them
    /// is dropped: the role is the first argument).
    pub fn new(
        role: impl Into<String>,
        mut fields: Map<String, Value>,
    ) -> Result<Self, ReservedRole> {
        let role = role.into();
        if RESERVED_ROLES.contains(&role.as_str()) {
            return Err(ReservedRole(role));
        }
        fields.remove("role");
        Ok(CustomMessage { role, fields })
    }

    /// The host's role name.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// Everything else the message carries, as the host gave it.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }
}

impl Serialize for CustomMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = Map::with_capacity(self.fields.len() + 1);
        object.insert("role".to_owned(), Value::String(self.role.clone()));
        object.extend(self.fields.iter().map(|(k, v)| (k.clone(), v.clone())));
        object.serialize(serializer)
    }
}

impl schemars::JsonSchema for CustomMessage {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CustomMessage".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A message of the host's own role; never sent to a model as it is.",
            "type": "object",
            "required": ["role"],
            "properties": {
                "role": { "type": "string", "not": { "enum": RESERVED_ROLES } }
            }
        })
    }
}

/// Reads a message by its `role`: the four leash knows by their shapes,
/// any other as a custom message. A known role with a bad shape is an
/// error naming what is wrong, never a custom message.
impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut object = Map::<String, Value>::deserialize(deserializer)?;
        let role = match object.remove("role") {
            Some(Value::String(role)) => role,
            Some(_) => return Err(D::Error::custom("`role` is not a string")),
            None => return Err(D::Error::missing_field("role")),
        };
        let message = match role.as_str() {
            "user" => UserMessage::deserialize(Value::Object(object)).map(Message::User),
            "assistant" => {
                AssistantMessage::deserialize(Value::Object(object)).map(Message::Assistant)
            }
            "toolResult" => {
                ToolResultMessage::deserialize(Value::Object(object)).map(Message::ToolResult)
            }
            "system" => SystemMessage::deserialize(Value::Object(object)).map(Message::System),
            "session" => return Err(D::Error::custom("a session line is not a message")),
            _ => {
                return Ok(Message::Custom(CustomMessage {
                    role,
                    fields: object,
                }));
            }
        };
        message.map_err(D::Error::custom)
    }
}
