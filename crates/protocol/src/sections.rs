//! The named parts of a system prompt (Pi's `SystemMessage.sections`):
//! `skills`, `note`, `cwd`… beside a system message's `content`. A later
//! system message patches them by name — a text replaces the section, a
//! `null` withdraws it — and the prompt lists them in the order they were
//! first given, so the same transcript always makes the same prompt (a
//! provider's prompt cache keys on that prefix).
//!
//! Kept as a list, not a hash map: JSON object order is the order the
//! model reads, and a hash map would shuffle it from run to run.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A system message's named sections, in the order they were first given.
/// A name maps to its text, or to `None`: the section is withdrawn from
/// this point of the transcript on (Pi's `null`).
///
/// ```
/// use leash_protocol::Sections;
///
/// let first = Sections::default().with("skills", "<skills>grep</skills>").with("note", "Be brief.");
/// let later = Sections::default().with("skills", "<skills>grep, find</skills>").without("note");
/// let mut replayed = first.clone();
/// replayed.patch(&later);
/// assert_eq!(replayed.text("skills"), Some("<skills>grep, find</skills>"));
/// assert_eq!(replayed.text("note"), None);
/// // Written as a JSON object, in order, a withdrawal as `null`:
/// assert_eq!(
///     serde_json::to_string(&later)?,
///     r#"{"skills":"<skills>grep, find</skills>","note":null}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sections(Vec<(String, Option<String>)>);

impl Sections {
    /// These sections with `name` set to `text` (in its old place when it
    /// was there, else last).
    pub fn with(mut self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.set(name.into(), Some(text.into()));
        self
    }

    /// These sections with `name` withdrawn (`null`).
    pub fn without(mut self, name: impl Into<String>) -> Self {
        self.set(name.into(), None);
        self
    }

    /// Sets `name` to `text` (`None`: withdrawn), in its old place when it
    /// was there, else last.
    pub fn set(&mut self, name: String, text: Option<String>) {
        match self.0.iter_mut().find(|(known, _)| *known == name) {
            Some((_, slot)) => *slot = text,
            None => self.0.push((name, text)),
        }
    }

    /// The text of `name`; `None` when it is absent or withdrawn.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(known, _)| known == name)
            .and_then(|(_, text)| text.as_deref())
    }

    /// Every entry in order: a name and its text, `None` for a withdrawal.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.0
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_deref()))
    }

    /// The texts in order, withdrawals left out.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|(_, text)| text.as_deref())
    }

    /// Whether there is no entry at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Applies a later system message's sections, as Pi's replay does: a
    /// text replaces the section (keeping its place), a withdrawal removes
    /// it (given again later, it goes last).
    pub fn patch(&mut self, later: &Sections) {
        for (name, text) in &later.0 {
            match text {
                Some(text) => self.set(name.clone(), Some(text.clone())),
                None => self.0.retain(|(known, _)| known != name),
            }
        }
    }
}

impl Serialize for Sections {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, text) in &self.0 {
            map.serialize_entry(name, text)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Sections {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// Reads a JSON object keeping its order.
        struct InOrder;

        impl<'de> Visitor<'de> for InOrder {
            type Value = Sections;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("an object of section names to text or null")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sections, A::Error> {
                let mut sections = Sections::default();
                while let Some((name, text)) = map.next_entry::<String, Option<String>>()? {
                    sections.set(name, text);
                }
                Ok(sections)
            }
        }

        deserializer.deserialize_map(InOrder)
    }
}

impl schemars::JsonSchema for Sections {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Sections".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Named parts of the system prompt, in order; null withdraws one.",
            "type": "object",
            "additionalProperties": { "type": ["string", "null"] }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_object_reads_back_in_its_own_order() {
        let text = r#"{"zeta":"z","alpha":null,"mid":"m"}"#;
        let sections: Sections = serde_json::from_str(text).unwrap();
        let names: Vec<&str> = sections.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["zeta", "alpha", "mid"]);
        assert_eq!(serde_json::to_string(&sections).unwrap(), text);
    }

    #[test]
    fn a_withdrawn_section_given_again_goes_last() {
        let mut replayed = Sections::default().with("a", "1").with("b", "2");
        replayed.patch(&Sections::default().without("a"));
        replayed.patch(&Sections::default().with("a", "3").with("b", "4"));
        let entries: Vec<_> = replayed.iter().collect();
        assert_eq!(entries, [("b", Some("4")), ("a", Some("3"))]);
    }
}
