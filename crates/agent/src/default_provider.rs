//! The process-wide default provider (Pi's `setDefaultStreamFn`): a host
//! sets it once, and every `Agent` made without a provider of its own, and
//! every loop run given [`DefaultProvider`], uses it.
//!
//! It holds one shared reference and nothing else; it must never start a
//! request itself.

use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use futures::stream::{self, BoxStream, StreamExt};

use leash_protocol::StreamEvent;
use leash_protocol::provider::{Provider, Request};

static DEFAULT: RwLock<Option<Arc<dyn Provider>>> = RwLock::new(None);

/// Sets (or, with `None`, clears) the provider [`Agent::with_default_provider`](super::Agent::with_default_provider)
/// and [`DefaultProvider`] use. Agents made earlier keep the provider they
/// were made with.
pub fn set_default_provider(provider: Option<Arc<dyn Provider>>) {
    *DEFAULT.write().unwrap_or_else(PoisonError::into_inner) = provider;
}

/// The provider set by [`set_default_provider`], if any.
pub fn default_provider() -> Option<Arc<dyn Provider>> {
    DEFAULT
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// What a request through [`DefaultProvider`] answers when no default is
/// set: an error reply, so the run ends as any failed request does.
pub const NO_DEFAULT_PROVIDER: &str = "No provider given and no default provider set";

/// The loop's way to omit a provider (Pi's `streamFn ?? getDefaultStreamFn()`):
/// it stands for the default provider as set when it is first used (its
/// name, its requests), so every message of a run names one provider.
#[derive(Default)]
pub struct DefaultProvider {
    resolved: OnceLock<Option<Arc<dyn Provider>>>,
}

impl DefaultProvider {
    fn resolved(&self) -> Option<&Arc<dyn Provider>> {
        self.resolved.get_or_init(default_provider).as_ref()
    }
}

impl Provider for DefaultProvider {
    fn name(&self) -> &str {
        self.resolved()
            .map_or("default", |provider| provider.name())
    }

    fn stream(&self, request: Request<'_>) -> BoxStream<'static, StreamEvent> {
        match self.resolved() {
            Some(provider) => provider.stream(request),
            None => stream::iter([StreamEvent::Error(NO_DEFAULT_PROVIDER.to_owned())]).boxed(),
        }
    }
}
