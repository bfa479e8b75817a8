//! The one seam between the loop and a tool. The loop sees every tool
//! through one object-safe trait, [`Tool`]: a name, a description and a
//! JSON Schema for the arguments ([`ToolSpec`]), and a call with raw JSON
//! arguments the loop has already checked. A tool whose schema is only
//! known at run time implements [`Tool`] directly; a tool written in Rust
//! implements [`TypedTool`] instead, with a serde arguments type whose
//! schema is derived, and gets [`Tool`] from the blanket adapter in `typed`.
//! The built-in tools live in `leash-tools`.
//!
//! A tool must never panic, must report failure as an error (it becomes an
//! `isError` result the model can read), and must stop promptly when its
//! cancellation token fires.

mod typed;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use typed::{InvalidArguments, TypedTool, parameters_of};

use crate::{ToolOutput, ToolSpec};

/// A tool's failure; its `Display` text is what the model reads.
pub type ToolError = Box<dyn std::error::Error + Send + Sync>;

/// Where a running tool may report progress (`tool_execution_update`).
/// Cheap to clone; sending never blocks and never fails the tool.
#[derive(Debug, Clone)]
pub struct ToolUpdates {
    index: usize,
    sink: tokio::sync::mpsc::UnboundedSender<(usize, Value)>,
}

impl ToolUpdates {
    /// A sink that tags every update with the call's position in its batch.
    pub fn new(index: usize, sink: tokio::sync::mpsc::UnboundedSender<(usize, Value)>) -> Self {
        ToolUpdates { index, sink }
    }

    /// Reports progress. Ignored once the batch stopped listening.
    pub fn send(&self, partial: Value) {
        let _ = self.sink.send((self.index, partial));
    }
}

/// Something the model can call, as the loop sees it.
pub trait Tool: Send + Sync {
    /// The name, description and argument schema shown to the model. Asked
    /// once per run; the loop keeps what it returns.
    fn spec(&self) -> ToolSpec;

    /// Whether calls of this tool must not overlap with any other call of
    /// the batch (a batch holding one runs fully sequentially).
    fn sequential(&self) -> bool {
        false
    }

    /// Folds older argument shapes into the one the schema wants, before
    /// validation (Pi's `prepareArguments`); the tool, the hooks and the
    /// schema check all see what it returns. The default keeps the
    /// arguments as the model sent them.
    fn prepare_arguments(&self, args: Value) -> Value {
        args
    }

    /// Runs one call. `args` already passed the schema check.
    fn execute<'a>(
        &'a self,
        call_id: &'a str,
        args: Value,
        cancel: CancellationToken,
        updates: ToolUpdates,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}
