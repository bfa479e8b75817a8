//! `--output-schema`: the final reply must be one JSON value valid against
//! a JSON Schema. Providers are asked for it natively where they can; leash
//! checks the reply itself in every case, and builds the corrective message
//! the model gets once when it does not comply.
//!
//! A reply is never "fixed up" beyond removing one surrounding Markdown
//! code fence: what is printed is what the model produced.

use std::path::Path;

use serde_json::Value;

use crate::json_schema::violations;

/// How many validation errors are reported to the model and the user.
pub const MAX_REPORTED_ERRORS: usize = 5;

/// A compiled output schema.
pub struct OutputSchema {
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// Why a schema file could not be used (a usage error).
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The file could not be read.
    #[error("cannot read --output-schema {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("--output-schema {path} is not JSON: {message}")]
    NotJson {
        /// The path.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// The JSON is not a valid JSON Schema.
    #[error("--output-schema {path} is not a valid JSON Schema: {message}")]
    Invalid {
        /// The path.
        path: String,
        /// The validator's message.
        message: String,
    },
}

/// Why a reply does not comply; the list is what the model is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonCompliance {
    /// One line per problem, at most [`MAX_REPORTED_ERRORS`].
    pub problems: Vec<String>,
}

impl NonCompliance {
    /// The problems on one line, for the last stderr line.
    pub fn summary(&self) -> String {
        self.problems.join("; ")
    }
}

impl OutputSchema {
    /// Compiles a schema value.
    pub fn new(schema: Value, path: &str) -> Result<Self, SchemaError> {
        let validator =
            jsonschema::validator_for(&schema).map_err(|error| SchemaError::Invalid {
                path: path.to_owned(),
                message: error.to_string(),
            })?;
        Ok(OutputSchema { schema, validator })
    }

    /// Reads and compiles a schema file.
    pub fn load(path: &Path) -> Result<Self, SchemaError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SchemaError::Read {
            path: shown.clone(),
            source,
        })?;
        let schema: Value = serde_json::from_str(&text).map_err(|error| SchemaError::NotJson {
            path: shown.clone(),
            message: error.to_string(),
        })?;
        OutputSchema::new(schema, &shown)
    }

    /// The schema as JSON, for the provider request.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Parses and validates a reply: the JSON value, or what is wrong.
    pub fn check(&self, reply: &str) -> Result<Value, NonCompliance> {
        let text = strip_code_fence(reply);
        let value: Value = serde_json::from_str(text).map_err(|error| NonCompliance {
            problems: vec![format!("the reply is not a single JSON value: {error}")],
        })?;
        let problems = violations(&self.validator, &value, MAX_REPORTED_ERRORS, "at ");
        if problems.is_empty() {
            Ok(value)
        } else {
            Err(NonCompliance { problems })
        }
    }
}

/// The user message of the one corrective turn.
pub fn correction_message(problem: &NonCompliance) -> String {
    let mut text = String::from(
        "Your reply must be exactly one JSON value that is valid against the required JSON Schema, with no other text. It was not:\n",
    );
    for line in &problem.problems {
        text.push_str("- ");
        text.push_str(line);
        text.push('\n');
    }
    text.push_str("Reply again with only the corrected JSON.");
    text
}

/// Whether OpenAI's `strict: true` can be used: every object schema lists
/// all its properties as required and forbids others. A schema that does
/// not is sent with `strict: false` (the server would refuse it otherwise);
/// leash validates the reply either way.
pub fn strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            let is_object = map.get("type") == Some(&Value::String("object".into()));
            if is_object {
                let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
                let properties = map.get("properties").and_then(Value::as_object);
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let all_required = properties
                    .is_none_or(|props| props.keys().all(|k| required.contains(&k.as_str())));
                if !closed || !all_required {
                    return false;
                }
            }
            map.values().all(strict_compatible)
        }
        Value::Array(items) => items.iter().all(strict_compatible),
        _ => true,
    }
}

/// Removes one Markdown code fence around the whole reply, if present.
fn strip_code_fence(reply: &str) -> &str {
    let trimmed = reply.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return trimmed;
    };
    // Drop the info string (`json`) on the opening line.
    match body.find('\n') {
        Some(newline) => body[newline + 1..].trim(),
        None => trimmed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verdict_schema() -> OutputSchema {
        OutputSchema::new(
            json!({
                "type": "object",
                "properties": {"verdict": {"enum": ["pass", "fail"]}, "reasons": {"type": "array", "items": {"type": "string"}}},
                "required": ["verdict", "reasons"],
                "additionalProperties": false
            }),
            "s.json",
        )
        .unwrap()
    }

    #[test]
    fn a_valid_reply_parses() {
        let value = verdict_schema()
            .check(r#"{"verdict": "pass", "reasons": []}"#)
            .unwrap();
        assert_eq!(value, json!({"verdict": "pass", "reasons": []}));
    }

    #[test]
    fn one_code_fence_is_removed() {
        let value = verdict_schema()
            .check("```json\n{\"verdict\": \"fail\", \"reasons\": [\"x\"]}\n```")
            .unwrap();
        assert_eq!(value["verdict"], "fail");
    }

    #[test]
    fn prose_is_not_json() {
        let problem = verdict_schema().check("It passes.").unwrap_err();
        assert!(problem.problems[0].starts_with("the reply is not a single JSON value"));
    }

    #[test]
    fn each_violation_is_named_with_its_place() {
        let problem = verdict_schema()
            .check(r#"{"verdict": "maybe", "reasons": [1]}"#)
            .unwrap_err();
        assert_eq!(problem.problems.len(), 2, "{problem:?}");
        assert!(
            problem
                .problems
                .iter()
                .any(|p| p.starts_with("at /verdict: "))
        );
        assert!(
            problem
                .problems
                .iter()
                .any(|p| p.starts_with("at /reasons/0: "))
        );
        let message = correction_message(&problem);
        assert!(message.contains("- at /verdict: "));
    }

    #[test]
    fn an_invalid_schema_is_refused() {
        let error = OutputSchema::new(json!({"type": 5}), "bad.json").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("--output-schema bad.json is not a valid JSON Schema")
        );
    }

    #[test]
    fn strictness_needs_closed_objects_with_everything_required() {
        assert!(strict_compatible(verdict_schema().schema()));
        assert!(!strict_compatible(
            &json!({"type": "object", "properties": {"a": {}}})
        ));
        assert!(!strict_compatible(&json!({
            "type": "object", "properties": {"a": {"type": "object", "properties": {}}},
            "required": ["a"], "additionalProperties": false
        })));
    }
}
