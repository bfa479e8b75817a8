//! A transcript as `--resume` reads it (docs/src/resume.md "Resume"), on
//! any text after a session line: no panic; what is restored never holds
//! more assistant turns than the text has lines, and restoring is the same
//! for the text and for its whole lines (a cut last line left out, a
//! missing newline added). The first byte picks the wire that resumes.

#![no_main]

use leash::internals::resume::{Restored, Tail, Wire, restore};
use libfuzzer_sys::fuzz_target;

const WIRES: [Wire; 8] = [
    Wire::Faux,
    Wire::Chat,
    Wire::Responses,
    Wire::Anthropic,
    Wire::AzureChat,
    Wire::AzureResponses,
    Wire::Gemini,
    Wire::Bedrock,
];

const SESSION: &str = "{\"role\":\"session\",\"schemaVersion\":1,\"provider\":\"faux\",\"api\":\"faux\",\"model\":\"m\",\"system\":\"\"}\n";

fuzz_target!(|data: &[u8]| {
    let Some((&wire, rest)) = data.split_first() else {
        return;
    };
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let target = WIRES[usize::from(wire) % WIRES.len()];
    // Odd: the text after a faux session line, so messages are reached.
    let text = match wire & 0x80 {
        0 => format!("{SESSION}{rest}"),
        _ => rest.to_owned(),
    };
    let restored = restore(&text, target);
    if let Ok(restored) = &restored {
        let lines = text.lines().count() as u64;
        assert!(u64::from(restored.turns) <= lines);
        assert!(restored.messages.len() as u64 <= lines);
        let whole = Restored::whole_lines(&text);
        assert!(whole.ends_with('\n'));
        let again = restore(&whole, target).expect("its whole lines restore too");
        assert_eq!(again.messages, restored.messages);
        assert_eq!(again.turns, restored.turns);
        if restored.tail == Tail::Whole {
            assert_eq!(whole, text);
        }
    }
});
