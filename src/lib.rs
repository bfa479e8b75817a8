//! leash: a one-shot agent runner for shells and CI.

pub mod agent;
pub mod provider;
pub mod tools;
