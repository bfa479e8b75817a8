//! What a run prints (docs/src/events.md "Events", docs/src/events.md "The JSON result"): the reviewed snapshots of
//! the event stream and stdout, and the reasons a person reads at the end.

mod reasons;
mod snapshots;
