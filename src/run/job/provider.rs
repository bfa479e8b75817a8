//! The provider a run's plan names, made: one arm per provider, so the
//! job knows no provider's type.

use std::sync::Arc;

use crate::config::ProviderConfig;
use leash_faux::FauxProvider;
use leash_provider::Provider;
use leash_provider::anthropic::AnthropicProvider;
use leash_provider::azure::{AzureProvider, AzureResponsesProvider};
use leash_provider::bedrock::BedrockProvider;
use leash_provider::gemini::GeminiProvider;
use leash_provider::openai::OpenAiProvider;
use leash_provider::openai_responses::ResponsesProvider;
use leash_provider::vertex::{VertexClaudeProvider, VertexGeminiProvider};

/// The provider `config` names, with its settings.
pub(super) fn of(config: &ProviderConfig) -> Arc<dyn Provider> {
    match config {
        ProviderConfig::Faux(script) => Arc::new(FauxProvider::new(script.clone())),
        ProviderConfig::OpenAi(settings) => Arc::new(OpenAiProvider::new(settings.clone())),
        ProviderConfig::OpenAiResponses(settings) => {
            Arc::new(ResponsesProvider::new(settings.clone()))
        }
        ProviderConfig::Anthropic(settings) => Arc::new(AnthropicProvider::new(settings.clone())),
        ProviderConfig::Azure(settings) => Arc::new(AzureProvider::new(settings.clone())),
        ProviderConfig::AzureResponses(settings) => {
            Arc::new(AzureResponsesProvider::new(settings.clone()))
        }
        ProviderConfig::Gemini(settings) => Arc::new(GeminiProvider::new(settings.clone())),
        ProviderConfig::Bedrock(settings) => Arc::new(BedrockProvider::new(settings.clone())),
        ProviderConfig::VertexGemini(settings) => {
            Arc::new(VertexGeminiProvider::new(settings.clone()))
        }
        ProviderConfig::VertexClaude(settings) => {
            Arc::new(VertexClaudeProvider::new(settings.clone()))
        }
    }
}
