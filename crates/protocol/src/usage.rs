//! Token usage and what it cost (ARCHITECTURE.md §1.1; Pi's `Usage`):
//! what a provider reports for one reply, what a tool that ran a model of
//! its own reports on its result, and the sums a run keeps.

use serde::{Deserialize, Serialize};

/// Token counts as the provider reported them, with what they cost when
/// someone priced them (Pi's `Usage`). A tool-result message carries one
/// when its tool spent tokens of its own:
///
/// ```
/// use leash_protocol::{Usage, UsageCost};
///
/// let mut run = Usage { input: 100, output: 20, ..Usage::default() }.with_total();
/// let sub_agent = Usage {
///     input: 50,
///     output: 10,
///     cost: Some(UsageCost { input: 0.01, output: 0.02, total: 0.03, ..UsageCost::default() }),
///     ..Usage::default()
/// }
/// .with_total();
/// run.add(&sub_agent);
/// assert_eq!(run.total_tokens, 180);
/// assert_eq!(run.cost.map(|cost| cost.total), Some(0.03));
/// // Without a cost, nothing of it is written: `{"input":100,…,"totalTokens":120}`.
/// let plain = Usage { input: 100, output: 20, ..Usage::default() }.with_total();
/// assert!(!serde_json::to_string(&plain)?.contains("cost"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens not served from a cache.
    pub input: u64,
    /// Generated tokens.
    pub output: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write: u64,
    /// The sum of the four above.
    pub total_tokens: u64,
    /// What the tokens cost, in US dollars, when whoever reported them
    /// priced them (a sub-agent's tool, a host's `after_tool_call`);
    /// absent otherwise, and then not written at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<UsageCost>,
}

/// What one usage cost, in US dollars, part by part (Pi's `Usage.cost`).
///
/// ```
/// use leash_protocol::UsageCost;
///
/// let mut cost = UsageCost { input: 0.002, output: 0.006, total: 0.008, ..UsageCost::default() };
/// cost.add(&UsageCost { cache_read: 0.0001, total: 0.0001, ..UsageCost::default() });
/// assert!((cost.total - 0.0081).abs() < 1e-12);
/// assert_eq!(
///     serde_json::to_value(cost)?["cacheRead"],
///     serde_json::json!(0.0001)
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageCost {
    /// For the uncached prompt tokens.
    pub input: f64,
    /// For the generated tokens.
    pub output: f64,
    /// For the prompt tokens read from a cache.
    pub cache_read: f64,
    /// For the prompt tokens written to a cache.
    pub cache_write: f64,
    /// The whole cost.
    pub total: f64,
}

impl UsageCost {
    /// Adds another cost to this one, part by part.
    pub fn add(&mut self, other: &UsageCost) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total += other.total;
    }
}

impl Usage {
    /// Adds another message's usage to this one (for run totals).
    pub fn add(&mut self, other: &Usage) {
        // Saturating: the counts come from a server, which may send any number.
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
        if let Some(other) = &other.cost {
            self.cost.get_or_insert_with(UsageCost::default).add(other);
        }
    }

    /// Takes a later piece of a reply's usage: providers report it in
    /// pieces (Anthropic: input at the start, output at the end), and a
    /// later non-zero count replaces an earlier one; the total follows.
    pub fn merge(&mut self, later: &Usage) {
        for (field, new) in [
            (&mut self.input, later.input),
            (&mut self.output, later.output),
            (&mut self.cache_read, later.cache_read),
            (&mut self.cache_write, later.cache_write),
        ] {
            if new != 0 {
                *field = new;
            }
        }
        if later.cost.is_some() {
            self.cost = later.cost;
        }
        *self = self.with_total();
    }

    /// Recomputes `total_tokens` from the parts.
    pub fn with_total(mut self) -> Self {
        self.total_tokens = self
            .input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write);
        self
    }
}
