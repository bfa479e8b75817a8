//! `leash schema events|result`: the published JSON Schemas of the two
//! machine-readable outputs, generated from the very types that serialize
//! them (`render::jsonl::JsonlEvent`, `render::result::JsonResult`), so a
//! schema cannot drift from what leash writes.
//!
//! Schemas describe what leash *writes* (serde's serialize contract):
//! a field skipped when empty is optional, an `Option` written as `null`
//! is required and nullable.

use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::render::jsonl::{JsonlEvent, SCHEMA_VERSION};
use crate::render::result::JsonResult;

/// Which schema `leash schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaKind {
    /// One line of `--events jsonl` (a `oneOf` over the event types).
    Events,
    /// The object `--output json` prints.
    Result,
}

/// The JSON Schema (draft 2020-12) of `kind`.
pub fn schema(kind: SchemaKind) -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let (mut schema, title, description) = match kind {
        SchemaKind::Events => (
            generator.into_root_schema_for::<JsonlEvent<'static>>(),
            "leash event".to_owned(),
            format!(
                "One line of `leash --events jsonl` (schemaVersion {SCHEMA_VERSION}): the first \
                 line is `agent_start`, the last `run_end`."
            ),
        ),
        SchemaKind::Result => (
            generator.into_root_schema_for::<JsonResult<'static>>(),
            "leash result".to_owned(),
            "The object `leash --output json` prints on stdout, after every run.".to_owned(),
        ),
    };
    if kind == SchemaKind::Events {
        drop_library_only_roles(&mut schema);
    }
    schema.insert("title".to_owned(), Value::String(title));
    schema.insert("description".to_owned(), Value::String(description));
    schema.to_value()
}

/// The library's `Message` also has system and custom roles (ARCHITECTURE.md
/// §1.2), but the CLI keeps its system prompt and tools beside the
/// transcript and has no host roles: an event line never holds one, so the
/// published schema refuses them.
fn drop_library_only_roles(schema: &mut schemars::Schema) {
    let Some(defs) = schema.get_mut("$defs").and_then(Value::as_object_mut) else {
        return;
    };
    for name in [
        "SystemMessage",
        "CustomMessage",
        "ToolReference",
        "ToolSpec",
    ] {
        defs.remove(name);
    }
    if let Some(variants) = defs
        .get_mut("Message")
        .and_then(|message| message.get_mut("anyOf"))
        .and_then(Value::as_array_mut)
    {
        variants.retain(|variant| {
            let target = variant["$ref"].as_str().unwrap_or_default();
            !target.ends_with("/SystemMessage") && !target.ends_with("/CustomMessage")
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_schema_is_a_one_of_over_every_event_type() {
        let schema = schema(SchemaKind::Events);
        let variants = schema["oneOf"].as_array().unwrap();
        let mut types: Vec<&str> = variants
            .iter()
            .map(|variant| variant["properties"]["type"]["const"].as_str().unwrap())
            .collect();
        types.sort_unstable();
        assert_eq!(
            types,
            [
                "agent_end",
                "agent_start",
                "hook_failed",
                "message_end",
                "message_start",
                "message_update",
                "notice",
                "retry",
                "run_end",
                "tool_execution_end",
                "tool_execution_start",
                "tool_execution_update",
                "turn_end",
                "turn_start",
            ]
        );
        assert!(jsonschema::validator_for(&schema).is_ok());
        let end = variants
            .iter()
            .find(|v| v["properties"]["type"]["const"] == "tool_execution_end")
            .unwrap();
        assert!(end["properties"].get("changed").is_some(), "{end}");
        let required = end["required"].as_array().unwrap();
        assert!(!required.contains(&serde_json::json!("changed")));
    }

    #[test]
    fn the_result_schema_names_the_statuses_and_the_optional_fields() {
        let schema = schema(SchemaKind::Result);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(required.contains(&"reply") && required.contains(&"stopReason"));
        assert!(required.contains(&"lastAssistantText"));
        let reply = schema["properties"]["reply"]["description"]
            .as_str()
            .unwrap();
        assert!(reply.contains("--output text"), "{reply}");
        assert!(!required.contains(&"errorMessage") && !required.contains(&"output"));
        assert!(required.contains(&"changedFiles") && required.contains(&"attachments"));
        assert_eq!(schema["properties"]["status"]["enum"][3], "turn_limit");
        let validator = jsonschema::validator_for(&schema).unwrap();
        let ok = serde_json::json!({
            "status": "ok", "exitCode": 0, "reply": "hi", "lastAssistantText": "hi",
            "stopReason": "stop", "turns": 1,
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
            "turnUsage": [{"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}],
            "durationMs": 3, "provider": "faux", "model": "faux", "changedFiles": [],
            "attachments": []
        });
        assert!(validator.is_valid(&ok));
        // An attachment is a record: name, type, size, hash.
        let mut attached = ok.clone();
        attached["attachments"] = serde_json::json!([{"name": "shot.png",
            "mediaType": "image/png", "size": 33, "sha256": "ab"}]);
        assert!(validator.is_valid(&attached));
        attached["attachments"][0]["mediaType"] = "image/bmp".into();
        assert!(!validator.is_valid(&attached));
        // With --price: the run's cost and each turn's.
        let mut priced = ok.clone();
        priced["cost"] = 0.25.into();
        priced["turnUsage"][0]["cost"] = 0.25.into();
        assert!(validator.is_valid(&priced));
        priced["cost"] = "$0.25".into();
        assert!(!validator.is_valid(&priced));
        let mut bad = ok.clone();
        bad["status"] = "fine".into();
        assert!(!validator.is_valid(&bad));
    }
}
