//! Typed tools (as rig's `Tool`): a tool written in Rust names its
//! arguments as a serde type, the JSON Schema the model is shown is derived
//! from that type, and one blanket adapter turns every [`TypedTool`] into
//! the loop's object-safe [`Tool`]: it parses the (already validated) JSON
//! into the arguments type and words a failure the same way for every tool.

use std::future::Future;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Tool, ToolError, ToolUpdates};
use crate::{ToolOutput, ToolSpec};

/// A tool with typed arguments. Implement this, not [`Tool`]; the blanket
/// adapter provides [`Tool`].
///
/// ```
/// use leash_protocol::ToolOutput;
/// use leash_protocol::tool::{Tool, ToolUpdates, TypedTool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use tokio_util::sync::CancellationToken;
///
/// /// Adds two integers.
/// struct Add;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// The first term.
///     a: i64,
///     /// The second term.
///     b: i64,
/// }
///
/// impl TypedTool for Add {
///     const NAME: &'static str = "add";
///     type Args = AddArgs;
///     type Error = std::convert::Infallible;
///
///     fn description(&self) -> String {
///         "Adds two integers.".to_owned()
///     }
///
///     async fn call(
///         &self,
///         args: AddArgs,
///         _cancel: CancellationToken,
///         _updates: ToolUpdates,
///     ) -> Result<ToolOutput, Self::Error> {
///         Ok(ToolOutput::text((args.a + args.b).to_string()))
///     }
/// }
///
/// # fn main() -> Result<(), leash_protocol::tool::ToolError> {
/// // The adapter's `Tool`: the schema the model is shown, from `AddArgs`...
/// let spec = Add.spec();
/// assert_eq!(spec.name, "add");
/// assert_eq!(spec.parameters["properties"]["a"]["description"], "The first term.");
/// // ...and a call with the JSON arguments the loop validated against it.
/// let (sink, _) = tokio::sync::mpsc::unbounded_channel();
/// let call = Add.execute(
///     "call_1",
///     serde_json::json!({"a": 2, "b": 40}),
///     CancellationToken::new(),
///     ToolUpdates::new(0, sink),
/// );
/// let output = tokio::runtime::Builder::new_current_thread().build()?.block_on(call)?;
/// assert_eq!(output, ToolOutput::text("42"));
/// # Ok(())
/// # }
/// ```
pub trait TypedTool: Send + Sync {
    /// The name the model calls it by.
    const NAME: &'static str;
    /// Whether calls of this tool must not overlap with any other call of
    /// the batch (a batch holding one runs fully sequentially).
    const SEQUENTIAL: bool = false;

    /// The arguments. Their schema ([`parameters_of`]) is what the model is
    /// shown and what the loop validates against; doc comments on the
    /// fields become the properties' descriptions.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// Why a call failed; `Display` is one line the model reads.
    type Error: std::error::Error + Send + Sync + 'static;

    /// What the tool does, for the model.
    fn description(&self) -> String;

    /// Runs one call with its parsed arguments.
    fn call(
        &self,
        args: Self::Args,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> impl Future<Output = Result<ToolOutput, Self::Error>> + Send;
}

/// Arguments that do not parse into the tool's arguments type. The loop
/// validated them against the same schema, but a hook may replace them and
/// a tool never trusts that.
#[derive(Debug, thiserror::Error)]
#[error("invalid arguments: {0}")]
pub struct InvalidArguments(#[from] pub serde_json::Error);

impl<T: TypedTool> Tool for T {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: T::NAME.to_owned(),
            description: self.description(),
            parameters: parameters_of::<T::Args>(),
        }
    }

    fn sequential(&self) -> bool {
        T::SEQUENTIAL
    }

    /// A `null` argument is one left out: every optional argument of a
    /// built-in tool may be absent ([`parameters_of`]), and what strict
    /// tool schemas send for an optional field they do not use is `null`.
    fn prepare_arguments(&self, args: Value) -> Value {
        match args {
            Value::Object(mut fields) => {
                fields.retain(|_, value| !value.is_null());
                Value::Object(fields)
            }
            other => other,
        }
    }

    fn execute<'a>(
        &'a self,
        _call_id: &'a str,
        args: Value,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args = serde_json::from_value::<T::Args>(args).map_err(InvalidArguments)?;
            Ok(self.call(args, cancel, updates).await?)
        })
    }
}

/// The JSON Schema of a tool's arguments, as providers are sent it: the
/// draft 2020-12 schema schemars derives, without a `$schema`, a title or a
/// description of its own (the tool's description says it), where an
/// optional argument is one that may be left out (not `null`) and a number
/// carries no Rust type name as its `format`.
pub fn parameters_of<A: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    let mut schema = settings.into_generator().into_root_schema_for::<A>();
    schema.remove("title");
    schema.remove("description");
    let mut value = schema.to_value();
    tidy(&mut value);
    value
}

/// Drops `null` from the types (and the `null` defaults) of optional
/// arguments and the Rust type names (`uint64`, `int32`, `double`) schemars
/// gives numbers as formats, in a schema and the properties and items below
/// it.
fn tidy(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.get("default") == Some(&Value::Null) {
        object.remove("default");
    }
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|kind| kind != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            object.insert("type".to_owned(), only);
        }
    }
    if matches!(
        object.get("type").and_then(Value::as_str),
        Some("integer" | "number")
    ) {
        object.remove("format");
    }
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.values_mut().for_each(tidy);
    }
    if let Some(items) = object.get_mut("items") {
        tidy(items);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed setup step should fail the test loudly
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Arguments of the echo tool.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct EchoArgs {
        /// What to say.
        text: String,
        /// How often.
        #[serde(default)]
        #[schemars(range(min = 1))]
        times: Option<u32>,
        /// Tags.
        #[serde(default)]
        tags: Vec<String>,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("echo refused: {0}")]
    struct EchoError(String);

    struct Echo;

    impl TypedTool for Echo {
        const NAME: &'static str = "echo";
        const SEQUENTIAL: bool = true;
        type Args = EchoArgs;
        type Error = EchoError;

        fn description(&self) -> String {
            "Says it again.".to_owned()
        }

        async fn call(
            &self,
            args: EchoArgs,
            _cancel: CancellationToken,
            _updates: ToolUpdates,
        ) -> Result<ToolOutput, EchoError> {
            if args.text.is_empty() {
                return Err(EchoError("nothing to say".to_owned()));
            }
            let times = args.times.unwrap_or(1) as usize;
            Ok(ToolOutput::text(
                args.text.repeat(times) + &args.tags.concat(),
            ))
        }
    }

    /// One call of `tool` as the loop makes it: its text, or its error's.
    async fn run(tool: &dyn Tool, args: Value) -> Result<String, String> {
        let (sink, _rx) = tokio::sync::mpsc::unbounded_channel();
        let output = tool
            .execute(
                "call_1",
                args,
                CancellationToken::new(),
                ToolUpdates::new(0, sink),
            )
            .await
            .map_err(|error| error.to_string())?;
        Ok(output
            .content
            .iter()
            .filter_map(crate::Content::as_text)
            .collect())
    }

    #[test]
    fn the_spec_is_derived_from_the_arguments_type() {
        let spec = Echo.spec();
        assert_eq!(spec.name, "echo");
        assert_eq!(spec.description, "Says it again.");
        assert_eq!(
            spec.parameters,
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "What to say."},
                    "times": {"type": "integer", "minimum": 1, "description": "How often."},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "default": [],
                        "description": "Tags."
                    }
                },
                "required": ["text"],
                "additionalProperties": false
            })
        );
        assert!(Tool::sequential(&Echo));
    }

    #[tokio::test]
    async fn arguments_are_parsed_once_and_errors_worded_once() {
        assert_eq!(
            run(&Echo, json!({"text": "ab", "times": 2, "tags": ["!"]})).await,
            Ok("abab!".to_owned())
        );
        assert_eq!(
            run(&Echo, json!({"text": ""})).await,
            Err("echo refused: nothing to say".to_owned())
        );
        assert_eq!(
            run(&Echo, json!({"text": "a", "loud": true})).await,
            Err(
                "invalid arguments: unknown field `loud`, expected one of `text`, `times`, `tags`"
                    .to_owned()
            )
        );
        assert_eq!(
            run(&Echo, json!({})).await,
            Err("invalid arguments: missing field `text`".to_owned())
        );
    }
}
