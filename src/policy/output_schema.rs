//! `--output-schema`: the final reply must be one JSON value valid against
//! a JSON Schema. Providers are asked for it natively where they can; leash
//! checks the reply itself in every case, and builds the corrective message
//! the model gets once when it does not comply.
//!
//! A reply is never "fixed up" beyond removing one surrounding Markdown
//! code fence: what is printed is what the model produced. It is validated
//! on a parsed copy and printed from its own text, never re-serialised, so
//! big integers, `1e400`, key order and duplicate keys reach the user as
//! the model wrote them.

use std::collections::BTreeMap;

use serde_json::Value;
use serde_json::value::RawValue;

use leash_agent::tool_call::violations;

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

    /// The schema as JSON, for the provider request.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Parses and validates a reply: the JSON as the model wrote it, or
    /// what is wrong.
    pub fn check(&self, reply: &str) -> Result<ValidJson, NonCompliance> {
        let text = strip_code_fence(reply);
        let value = parse_for_validation(text).map_err(|error| NonCompliance {
            problems: vec![format!("the reply is not a single JSON value: {error}")],
        })?;
        let problems = violations(&self.validator, &value, MAX_REPORTED_ERRORS, "at ");
        if problems.is_empty() {
            Ok(ValidJson(text.to_owned()))
        } else {
            Err(NonCompliance { problems })
        }
    }
}

/// A reply that passed `--output-schema`: the JSON text exactly as the
/// model wrote it (one surrounding code fence and the blank space around
/// it removed). Embedded in a JSON document it stays that text too, only
/// without the whitespace between tokens (see [`ValidJson::compact`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidJson(String);

impl ValidJson {
    /// The JSON as the model wrote it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The same JSON on one line: the whitespace between tokens removed,
    /// every token — numbers, strings, keys in their order — untouched.
    pub fn compact(&self) -> String {
        compact(&self.0)
    }
}

impl serde::Serialize for ValidJson {
    /// The JSON itself, verbatim (compacted), not a string holding it.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw = RawValue::from_string(self.compact()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// How deep the lenient second reading of a reply may nest, as deep as
/// serde_json's own parser goes.
const MAX_DEPTH: usize = 128;

/// The reply as a value to validate. serde_json refuses a number beyond
/// the range of a double (`1e400`, a 400-digit integer) that JSON allows;
/// such a reply is read again with each such number taken as the largest
/// double of its sign, which any bound a schema can state compares the
/// same way. A big integer within range is validated as the nearest
/// double. Either way the reply is printed from its own text.
fn parse_for_validation(text: &str) -> Result<Value, serde_json::Error> {
    let error = match serde_json::from_str::<Value>(text) {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    // The raw reading checks the syntax and skips over number values.
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else {
        return Err(error);
    };
    lenient_value(raw, 0).ok_or(error)
}

/// One value of a syntactically valid JSON text, numbers out of range
/// clamped; `None` past [`MAX_DEPTH`].
fn lenient_value(raw: &RawValue, depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'{') => {
            // Duplicate keys: the last one counts, as in serde_json.
            let members: BTreeMap<String, &RawValue> = serde_json::from_str(text).ok()?;
            let mut map = serde_json::Map::new();
            for (key, value) in members {
                map.insert(key, lenient_value(value, depth + 1)?);
            }
            Some(Value::Object(map))
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(text).ok()?;
            items
                .into_iter()
                .map(|item| lenient_value(item, depth + 1))
                .collect::<Option<Vec<_>>>()
                .map(Value::Array)
        }
        Some(b'-' | b'0'..=b'9') => serde_json::from_str(text).ok().or_else(|| {
            let number: f64 = text.parse().ok()?;
            let clamped = if number.is_finite() {
                number
            } else {
                f64::MAX.copysign(number)
            };
            Some(Value::from(clamped))
        }),
        _ => serde_json::from_str(text).ok(),
    }
}

/// `json` without the whitespace between its tokens. The text must be
/// valid JSON: only space, tab, CR and LF outside strings are removed.
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
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
        assert_eq!(value.as_str(), r#"{"verdict": "pass", "reasons": []}"#);
    }

    #[test]
    fn one_code_fence_is_removed() {
        let value = verdict_schema()
            .check("```json\n{\"verdict\": \"fail\", \"reasons\": [\"x\"]}\n```")
            .unwrap();
        assert_eq!(value.as_str(), r#"{"verdict": "fail", "reasons": ["x"]}"#);
    }

    #[test]
    fn the_reply_is_kept_as_written_big_numbers_order_and_all() {
        let schema = OutputSchema::new(
            json!({
                "type": "object",
                "properties": {"big": {"type": "integer"}, "huge": {"type": "number", "minimum": 0}},
                "required": ["big", "huge"]
            }),
            "s.json",
        )
        .unwrap();
        let reply = "{\n  \"zeta\": 1.50,\n  \"big\": 123456789012345678901234567890,\n  \"huge\": 1e400,\n  \"s\": \"a \\\" b\\n c\",\n  \"alpha\": [1.0, -0]\n}";
        let valid = schema.check(reply).unwrap();
        assert_eq!(valid.as_str(), reply);
        assert_eq!(
            valid.compact(),
            r#"{"zeta":1.50,"big":123456789012345678901234567890,"huge":1e400,"s":"a \" b\n c","alpha":[1.0,-0]}"#
        );
        assert_eq!(
            serde_json::to_string(&json!({"output": 1})).unwrap().len(),
            12,
            "serde_json stays without arbitrary_precision"
        );
        let embedded = serde_json::to_string(&[&valid]).unwrap();
        assert_eq!(embedded, format!("[{}]", valid.compact()));
        // Out of range is still checked: -1e400 is below the minimum.
        let below = schema.check(r#"{"big": 1, "huge": -1e400}"#).unwrap_err();
        assert!(below.problems[0].starts_with("at /huge: "), "{below:?}");
        // And a 400-digit integer is an integer.
        let digits = format!(r#"{{"big": {}, "huge": 0}}"#, "9".repeat(400));
        assert_eq!(schema.check(&digits).unwrap().as_str(), digits);
    }

    #[test]
    fn the_lenient_reading_never_goes_deeper_than_the_parser() {
        let deep = format!("{}1e400{}", "[".repeat(10_000), "]".repeat(10_000));
        let problem = verdict_schema().check(&deep).unwrap_err();
        assert!(
            problem.problems[0].starts_with("the reply is not a single JSON value"),
            "{problem:?}"
        );
        let broken = verdict_schema().check("{\"a\": 1e400").unwrap_err();
        assert!(broken.problems[0].starts_with("the reply is not a single JSON value"));
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
}
