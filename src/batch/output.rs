//! Where a batch's lines go: one whole JSON line per item, flushed at
//! once ([`Lines`]), in input order unless `--unordered` ([`Order`]).
//! `--resume`'s file is opened by `resume`, an item's events file by
//! `events`.
//!
//! *Never* writes part of a line: each line is one buffer handed to one
//! `write_all`, then flushed.

use std::collections::BTreeMap;
use std::io::Write;

use crate::render::transcript::reader_left;

/// The batch's result lines: stdout, or the `--resume` file.
pub struct Lines {
    out: Box<dyn Write + Send>,
    /// A write failed: no later line is written (one would follow a gap).
    failed: Option<String>,
}

impl Lines {
    /// Lines to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Lines { out, failed: None }
    }

    /// Writes `line` and its newline whole, and flushes it.
    pub fn write(&mut self, line: &str) {
        if self.failed.is_some() {
            return;
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if let Err(error) = self.out.write_all(&bytes).and_then(|()| self.out.flush()) {
            self.failed = Some(match reader_left(&error) {
                true => String::new(),
                false => format!("cannot write a result line: {error}"),
            });
        }
    }

    /// Why a write failed (empty: the reader went away), if one did.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}

/// Input order: an item's line waits for every earlier item's; an item
/// that ends without a line (stopped by a signal) lets the later ones go.
pub struct Order {
    ordered: bool,
    next: u64,
    waiting: BTreeMap<u64, Option<String>>,
}

impl Order {
    /// `ordered`: input order; otherwise each line as it comes.
    pub fn new(ordered: bool) -> Self {
        Order {
            ordered,
            next: 0,
            waiting: BTreeMap::new(),
        }
    }

    /// The item at `position` (from 0, in the order the items were
    /// started) ended with `line`; returns the lines now due, in order.
    pub fn done(&mut self, position: u64, line: Option<String>) -> Vec<String> {
        if !self.ordered {
            return line.into_iter().collect();
        }
        self.waiting.insert(position, line);
        let mut due = Vec::new();
        while let Some(line) = self.waiting.remove(&self.next) {
            due.extend(line);
            self.next += 1;
        }
        due
    }

    /// Every line still waiting, in order (the batch is over: the items
    /// before them will never end).
    pub fn rest(&mut self) -> Vec<String> {
        std::mem::take(&mut self.waiting)
            .into_values()
            .flatten()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_order_waits_for_every_earlier_item() {
        let mut order = Order::new(true);
        assert!(order.done(1, Some("b".into())).is_empty());
        assert!(order.done(2, Some("c".into())).is_empty());
        assert_eq!(order.done(0, Some("a".into())), ["a", "b", "c"]);
        assert!(order.done(4, Some("e".into())).is_empty());
        assert!(order.done(3, None).contains(&"e".to_owned()));
        assert!(order.rest().is_empty());
    }
}
