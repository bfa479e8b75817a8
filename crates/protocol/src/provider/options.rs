//! What a request may ask of a provider beyond the conversation: how much
//! the model should reason (Pi's `ThinkingLevel`). The loop and the `Agent`
//! set it; each wire maps it to its own option or leaves it out.
//!
//! Nothing here sends anything: it is vocabulary only.

use serde::{Deserialize, Serialize};

/// How much reasoning the model is asked for (Pi's `ThinkingLevel`). `Off`
/// asks for nothing: the request carries no reasoning option at all.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning option is sent (the provider's default).
    #[default]
    Off,
    /// The least reasoning a model offers.
    Minimal,
    /// Little reasoning.
    Low,
    /// Some reasoning.
    Medium,
    /// Much reasoning.
    High,
    /// The most a model offers.
    #[serde(rename = "xhigh")]
    XHigh,
}

impl ThinkingLevel {
    /// The level's name as Pi spells it (`off`, `minimal`, …, `xhigh`).
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::XHigh => "xhigh",
        }
    }
}

impl ThinkingLevel {
    /// The Anthropic thinking budget in tokens for this level (Pi's default
    /// budgets; `XHigh` doubles `High`); `None` for `Off`.
    pub fn anthropic_budget(self) -> Option<u32> {
        match self {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => Some(1024),
            ThinkingLevel::Low => Some(2048),
            ThinkingLevel::Medium => Some(8192),
            ThinkingLevel::High => Some(16384),
            ThinkingLevel::XHigh => Some(32768),
        }
    }

    /// The OpenAI reasoning effort for this level (`reasoning_effort` on
    /// Chat Completions, `reasoning.effort` on Responses): the level's own
    /// name; `None` for `Off`, which sends no effort at all.
    pub fn openai_effort(self) -> Option<&'static str> {
        match self {
            ThinkingLevel::Off => None,
            level => Some(level.as_str()),
        }
    }
}

/// What a request asks beyond the conversation (Pi's stream options). The
/// default asks nothing: no reasoning option, no session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestOptions<'a> {
    /// How much reasoning to ask for; `Off` sends no reasoning option.
    pub thinking: ThinkingLevel,
    /// The host's session, for providers that key a cache on it (Pi's
    /// `sessionId`).
    pub session_id: Option<&'a str>,
}
