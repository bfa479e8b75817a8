//! What a JSON value violates in a compiled JSON Schema, in words: the one
//! formatter behind tool-argument validation and `--output-schema`, so the
//! model reads violations the same way in both places.

use serde_json::Value;

/// The first `max` violations of `value`, each `{prefix}{path}: {message}`
/// (just the message when the whole value is at fault).
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
