//! The process-wide default provider (Pi's `setDefaultStreamFn`): a host
//! sets it once, and every `Agent` made without a provider of its own uses
//! it.
//!
//! It holds one shared reference and nothing else; it must never start a
//! request itself.

use std::sync::{Arc, PoisonError, RwLock};

use crate::provider::Provider;

static DEFAULT: RwLock<Option<Arc<dyn Provider>>> = RwLock::new(None);

/// Sets (or, with `None`, clears) the provider [`Agent::with_default_provider`](super::Agent::with_default_provider)
/// uses. Agents made earlier keep the provider they were made with.
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
