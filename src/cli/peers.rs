//! Flags people bring from the peers (`claude -p`, `gemini`, `codex
//! exec`), and the answer leash gives each instead of clap's generic
//! "unexpected argument": which of leash's own flags does that job. (`-p`
//! itself is a flag of leash's: the prompt.) `codex exec PROMPT` gets the
//! same kind of answer: leash has no `exec`, the prompt is the argument.

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

const SANDBOX: &str = "leash reads only, unless told: --allow-write lets the model change \
                       files under --root, --allow-exec lets it run commands there \
                       (confined by the kernel)";
const DIRECTORY: &str = "the tools work in --root DIR (default: the current directory): \
                         use --root DIR, or cd DIR first";

/// The peers' flags leash answers, each with what to use instead.
pub const PEER_FLAGS: [PeerFlag; 9] = [
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
    PeerFlag {
        flag: "--full-auto",
        instead: SANDBOX,
    },
    PeerFlag {
        flag: "--sandbox",
        instead: SANDBOX,
    },
    PeerFlag {
        flag: "-C",
        instead: DIRECTORY,
    },
    PeerFlag {
        flag: "--cd",
        instead: DIRECTORY,
    },
];

/// The one line for `word` (a refused argument, `--flag` or
/// `--flag=value`) when it is a peer's flag.
pub fn peer_flag_reason(word: &str) -> Option<String> {
    let flag = word.split_once('=').map_or(word, |(flag, _)| flag);
    let peer = PEER_FLAGS.iter().find(|peer| peer.flag == flag)?;
    Some(format!("{flag} is no flag of leash's: {}", peer.instead))
}

/// The peers' commands that take the prompt after them (`codex exec
/// PROMPT`); leash takes the prompt itself.
const PEER_COMMANDS: [&str; 1] = ["exec"];

/// The one line for a command line whose words (no flags, no flag
/// values) start with a peer's command and go on with its prompt:
/// `leash exec "hi"` is told `leash [OPTIONS] "hi"`.
pub fn peer_command_reason(words: &[&str]) -> Option<String> {
    let (first, prompt) = words.split_first()?;
    if prompt.is_empty() || !PEER_COMMANDS.contains(first) {
        return None;
    }
    Some(format!(
        "{first} is no command of leash's: the prompt is the argument, so: leash [OPTIONS] \"{}\"",
        prompt.join(" ")
    ))
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
        assert!(peer_flag_reason("-C").unwrap().contains("--root DIR"));
        assert!(
            peer_flag_reason("--sandbox=workspace-write")
                .unwrap()
                .starts_with("--sandbox is no flag of leash's")
        );
        assert_eq!(peer_flag_reason("--jsonl"), None);
        assert_eq!(peer_flag_reason("--output"), None);
    }

    #[test]
    fn a_peer_command_with_a_prompt_gets_the_prompt_as_the_argument() {
        assert_eq!(
            peer_command_reason(&["exec", "fix", "it"]).unwrap(),
            "exec is no command of leash's: the prompt is the argument, so: leash [OPTIONS] \"fix it\""
        );
        assert_eq!(peer_command_reason(&["exec"]), None);
        assert_eq!(peer_command_reason(&["fix", "exec"]), None);
        assert_eq!(peer_command_reason(&[]), None);
    }
}
