//! Flags people bring from the peers (`claude -p`, `gemini`, `codex
//! exec`), and the answer leash gives each instead of clap's generic
//! "unexpected argument": which of leash's own flags does that job. (`-p`
//! itself is a flag of leash's: the prompt.)

/// A peer's flag leash refuses, and what to use instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerFlag {
    /// The flag as the peers spell it.
    pub flag: &'static str,
    /// What leash has for it.
    pub instead: &'static str,
}

const JSON: &str = "use --output json (one result object on stdout) \
                    or --events jsonl (the event stream on stderr)";
const VERBOSE: &str = "the events on stderr are the detail: --events text (the default) \
                       for people, --events jsonl for programs";
const BLANKET: &str = "there is no blanket switch: --allow-write lets the model change \
                       files under --root; --tools, --allow-tool and --deny-tool say what \
                       else it may call";

/// The peers' flags leash answers, each with what to use instead.
pub const PEER_FLAGS: [PeerFlag; 5] = [
    PeerFlag {
        flag: "--json",
        instead: JSON,
    },
    PeerFlag {
        flag: "--output-format",
        instead: JSON,
    },
    PeerFlag {
        flag: "--verbose",
        instead: VERBOSE,
    },
    PeerFlag {
        flag: "--yolo",
        instead: BLANKET,
    },
    PeerFlag {
        flag: "--dangerously-skip-permissions",
        instead: BLANKET,
    },
];

/// The one line for `word` (a refused argument, `--flag` or
/// `--flag=value`) when it is a peer's flag.
pub fn peer_flag_reason(word: &str) -> Option<String> {
    let flag = word.split_once('=').map_or(word, |(flag, _)| flag);
    let peer = PEER_FLAGS.iter().find(|peer| peer.flag == flag)?;
    Some(format!("{flag} is no flag of leash's: {}", peer.instead))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_flag_gets_leash_s_own_and_other_words_none() {
        let json = peer_flag_reason("--output-format=json").unwrap();
        assert!(json.starts_with("--output-format is no flag of leash's: use --output json"));
        assert!(
            peer_flag_reason("--yolo")
                .unwrap()
                .contains("--allow-write")
        );
        assert!(peer_flag_reason("--verbose").unwrap().contains("--events"));
        assert_eq!(peer_flag_reason("--jsonl"), None);
        assert_eq!(peer_flag_reason("--output"), None);
    }
}
