//! The violation formatter now lives with tool-argument validation
//! ([`crate::agent::tool_call`]); this path stays for `--output-schema`
//! until the layout settles.

pub use crate::agent::tool_call::violations;
