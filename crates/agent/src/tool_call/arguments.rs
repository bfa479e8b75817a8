//! A call's arguments judged before it may run (ARCHITECTURE.md §1.3):
//! the size cap, the JSON Schema check and the one formatter of schema
//! violations, worded so the model can act on them. The schema check is
//! the `schema-validation` feature (jsonschema), on in the `leash` binary;
//! a host without it gets the size cap and the object check, and a
//! `TypedTool` still refuses what its serde type cannot read.

use serde_json::Value;

/// Whether the arguments' JSON text is longer than [`MAX_ARGUMENT_BYTES`].
/// Serialization stops at the cap, so a huge value costs no more than that.
pub(super) fn arguments_too_large(arguments: &Value) -> bool {
    /// Counts bytes and fails once past the cap.
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > MAX_ARGUMENT_BYTES {
                return Err(std::io::Error::other("past the cap"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    match arguments {
        Value::String(raw) => raw.len() > MAX_ARGUMENT_BYTES,
        other => serde_json::to_writer(Counter(0), other).is_err(),
    }
}

/// Checks arguments against the tool's JSON Schema. The error says what is
/// wrong in words the model can act on.
pub(crate) fn validate_arguments(schema: &ArgumentSchema, args: &Value) -> Result<(), String> {
    if let Value::String(raw) = args {
        return Err(format!(
            "the arguments are not valid JSON: {}",
            snippet(raw, 200)
        ));
    }
    if !args.is_object() {
        return Err(format!(
            "the arguments must be a JSON object, got {}",
            json_kind(args)
        ));
    }
    #[cfg(feature = "schema-validation")]
    {
        let validator = schema.as_ref().map_err(Clone::clone)?;
        let problems = violations(validator, args, 5, "");
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
    }
    #[cfg(not(feature = "schema-validation"))]
    schema.as_ref().map_err(Clone::clone)?;
    Ok(())
}

/// The first `max` violations of `value` against a compiled JSON Schema, in
/// words, each `{prefix}{path}: {message}` (just the message when the whole
/// value is at fault). The one formatter behind tool-argument validation and
/// `--output-schema`, so the model reads violations the same way in both.
#[cfg(feature = "schema-validation")]
pub fn violations(
    validator: &jsonschema::Validator,
    value: &Value,
    max: usize,
    prefix: &str,
) -> Vec<String> {
    validator
        .iter_errors(value)
        .take(max)
        .map(|error| {
            let at = error.instance_path().to_string();
            if at.is_empty() {
                error.to_string()
            } else {
                format!("{prefix}{at}: {error}")
            }
        })
        .collect()
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The first `max` characters of `text`, marked when cut.
pub(super) fn snippet(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The most bytes of argument JSON one call may carry. The file tools need
/// a few hundred; a larger call is answered with an error without running.
pub const MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

/// A tool's argument schema, compiled; the error says why it does not compile.
#[cfg(feature = "schema-validation")]
pub(crate) type ArgumentSchema = Result<jsonschema::Validator, String>;
/// Without `schema-validation` there is nothing to compile.
#[cfg(not(feature = "schema-validation"))]
pub(crate) type ArgumentSchema = Result<(), String>;

#[cfg(all(test, feature = "schema-validation"))]
mod tests {
    use super::super::compile_argument_schema;
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["path"],
            "additionalProperties": false
        })
    }

    #[test]
    fn valid_arguments_pass() {
        assert_eq!(
            validate_arguments(
                &compile_argument_schema(&schema()),
                &json!({"path": "a", "limit": 3})
            ),
            Ok(())
        );
    }

    #[test]
    fn a_missing_property_is_named() {
        let error =
            validate_arguments(&compile_argument_schema(&schema()), &json!({})).unwrap_err();
        assert!(error.contains("\"path\" is a required property"), "{error}");
    }

    #[test]
    fn a_wrong_type_names_the_field() {
        let error = validate_arguments(&compile_argument_schema(&schema()), &json!({"path": 3}))
            .unwrap_err();
        assert!(error.starts_with("/path: "), "{error}");
    }

    #[test]
    fn the_argument_size_cap_counts_the_json_text() {
        let fits = "x".repeat(MAX_ARGUMENT_BYTES - 20);
        assert!(!arguments_too_large(&json!({ "path": fits })));
        let big = "x".repeat(MAX_ARGUMENT_BYTES);
        assert!(arguments_too_large(&json!({ "path": big })));
        assert!(!arguments_too_large(&Value::String(big.clone())));
        assert!(arguments_too_large(&Value::String(big + "x")));
        let many: Vec<u32> = vec![7; MAX_ARGUMENT_BYTES / 2 + 1];
        assert!(arguments_too_large(&json!({ "items": many })));
    }

    #[test]
    fn arguments_that_are_not_an_object_are_refused() {
        let error =
            validate_arguments(&compile_argument_schema(&schema()), &json!([1])).unwrap_err();
        assert_eq!(error, "the arguments must be a JSON object, got an array");
        let error = validate_arguments(
            &compile_argument_schema(&schema()),
            &Value::String("{\"pa".into()),
        )
        .unwrap_err();
        assert_eq!(error, "the arguments are not valid JSON: {\"pa");
    }
}

/// Without `schema-validation` only the shape is judged: the arguments
/// must be a JSON object, and what the schema would refuse reaches the
/// tool (a `TypedTool`'s serde type judges it there).
#[cfg(all(test, not(feature = "schema-validation")))]
mod unchecked_tests {
    use super::super::compile_argument_schema;
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_passes_whatever_the_schema_and_anything_else_is_refused() {
        let schema = compile_argument_schema(&json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"]
        }));
        assert_eq!(validate_arguments(&schema, &json!({"path": 3})), Ok(()));
        assert_eq!(validate_arguments(&schema, &json!({})), Ok(()));
        assert_eq!(
            validate_arguments(&schema, &json!([1])),
            Err("the arguments must be a JSON object, got an array".to_owned())
        );
        assert_eq!(
            validate_arguments(&schema, &json!("{\"path\": ")),
            Err("the arguments are not valid JSON: {\"path\": ".to_owned())
        );
    }
}
