//! The agent loop (SPEC 1): the pure two-level loop, the tool-call pipeline,
//! the stateful wrapper, and the types they share.

pub mod types;
