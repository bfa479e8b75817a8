//! `leash batch`, declared: the batch's own flags beside every run flag,
//! `leash batch merge`, and the split of a batch's command line into the
//! batch's settings and the run words every item is parsed from.
//!
//! *Never* reads the input or resolves a run flag: the run words go
//! through the same layered parse as a single run's, item by item.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};

use super::parser::{run_command, takes_value};

/// The items run at once without `--parallel`.
pub const DEFAULT_PARALLEL: &str = "4";

/// The batch's own flags (their long names); every other flag is a run
/// flag and goes to every item.
const BATCH_FLAGS: [&str; 7] = [
    "parallel",
    "unordered",
    "events-dir",
    "rate",
    "tpm",
    "resume",
    "shard",
];

/// `--shard K/N`: this copy takes the items whose index ≡ K (mod N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// K, from 0 to N - 1.
    pub index: u64,
    /// N, at least 1.
    pub count: u64,
}

impl Shard {
    /// Whether the item at `index` (0-based, in input order) is this shard's.
    pub fn takes(self, index: u64) -> bool {
        index % self.count == self.index
    }
}

fn parse_shard(text: &str) -> Result<Shard, String> {
    let wrong = || format!("{text:?} is not K/N with 0 <= K < N (e.g. 0/4)");
    let (k, n) = text.split_once('/').ok_or_else(wrong)?;
    let (index, count): (u64, u64) = (
        k.trim().parse().map_err(|_| wrong())?,
        n.trim().parse().map_err(|_| wrong())?,
    );
    if count == 0 || index >= count {
        return Err(wrong());
    }
    Ok(Shard { index, count })
}

/// `leash batch [INPUT.jsonl|-] [RUN FLAGS…]`, read.
#[derive(Debug, Clone)]
pub struct BatchArgs {
    /// The program name, then every run flag of the command line: what
    /// each item's own flags and prompt are appended to.
    pub run_words: Vec<OsString>,
    /// The input file; `None` or `-`: stdin.
    pub input: Option<PathBuf>,
    /// `--parallel`: how many items run at once.
    pub parallel: usize,
    /// `--unordered`: lines in completion order.
    pub unordered: bool,
    /// `--events-dir`: each item's `--events jsonl` as `DIR/ID.jsonl`.
    pub events_dir: Option<PathBuf>,
    /// `--rate`: requests per minute, for the whole batch.
    pub rate: Option<u32>,
    /// `--tpm`: tokens per minute, for the whole batch.
    pub tpm: Option<u64>,
    /// `--resume`: the output file whose complete ids are skipped.
    pub resume: Option<PathBuf>,
    /// `--shard K/N`.
    pub shard: Option<Shard>,
    /// The whole command line as clap read it (the `.env` choice reads it).
    pub matches: ArgMatches,
}

/// `leash batch merge [--input INPUT.jsonl] SHARD.jsonl…`, read.
#[derive(Debug, Clone)]
pub struct MergeArgs {
    /// `--input`: every id of it must appear exactly once.
    pub input: Option<PathBuf>,
    /// The shards' output files.
    pub shards: Vec<PathBuf>,
}

/// What `leash batch …` asks for.
#[derive(Debug, Clone)]
pub enum BatchInvocation {
    /// Run the items.
    Run(Box<BatchArgs>),
    /// Merge shards' outputs.
    Merge(MergeArgs),
}

/// The parser of `leash batch`: every run flag (the prompt and
/// `--resume` left out),
/// the batch's own, the input, and `merge`.
pub fn batch_command() -> Command {
    let run_flags: Vec<Arg> = run_command()
        .get_arguments()
        // A run's `--resume TRANSCRIPT` is no batch flag: there, `--resume`
        // is the batch's own (its output file). Every line is the JSON
        // result, so `--output` is none either; each item's prompt is its
        // line's, so `-p` neither.
        .filter(|arg| {
            !arg.is_positional()
                && !matches!(
                    arg.get_id().as_str(),
                    "help" | "version" | "resume" | "prompt_flag" | "output"
                )
        })
        .cloned()
        .collect();
    Command::new("batch")
        .about("Run every line of a JSONL file as one run, N at a time, one JSON line each")
        .args(run_flags)
        .arg(
            Arg::new("input")
                .value_name("INPUT")
                .value_parser(clap::value_parser!(PathBuf))
                .help("The items, one JSON object (or plain-text prompt) a line; - or none: stdin"),
        )
        .arg(
            Arg::new("parallel")
                .long("parallel")
                .value_name("N")
                .default_value(DEFAULT_PARALLEL)
                .value_parser(clap::value_parser!(u16).range(1..=1024))
                .help("How many items run at once"),
        )
        .arg(
            Arg::new("unordered")
                .long("unordered")
                .action(ArgAction::SetTrue)
                .help("Write each item's line when it ends, not in input order"),
        )
        .arg(
            Arg::new("events-dir")
                .long("events-dir")
                .value_name("DIR")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Write each item's events (as --events jsonl) to DIR/ID.jsonl"),
        )
        .arg(
            Arg::new("rate")
                .long("rate")
                .value_name("RPM")
                .value_parser(clap::value_parser!(u32).range(1..))
                .help("At most this many requests a minute, for the whole batch"),
        )
        .arg(
            Arg::new("tpm")
                .long("tpm")
                .value_name("TOKENS")
                .value_parser(clap::value_parser!(u64).range(1..))
                .help("At most this many tokens a minute, for the whole batch"),
        )
        .arg(
            Arg::new("resume")
                .long("resume")
                .value_name("OUT.jsonl")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Skip the ids already complete in OUT and append the rest to it"),
        )
        .arg(
            Arg::new("shard")
                .long("shard")
                .value_name("K/N")
                .value_parser(parse_shard)
                .help("Only the items whose index (0-based) is K modulo N"),
        )
        .subcommand(
            Command::new("merge")
                .about("Merge shards' outputs in input order; fail naming a missing or repeated id")
                .arg(
                    Arg::new("input")
                        .long("input")
                        .value_name("INPUT.jsonl")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help("The batch's input: every id of it must appear exactly once"),
                )
                .arg(
                    Arg::new("shards")
                        .value_name("SHARD.jsonl")
                        .required(true)
                        .num_args(1..)
                        .value_parser(clap::value_parser!(PathBuf)),
                ),
        )
}

/// Reads `leash batch …` (`args`: the program name, `batch`, the rest).
pub fn read(args: &[OsString]) -> Result<BatchInvocation, clap::Error> {
    let words = args.iter().take(1).chain(args.iter().skip(2));
    let mut command = batch_command().bin_name("leash batch");
    let matches = command.try_get_matches_from_mut(words.clone())?;
    if let Some(("merge", merge)) = matches.subcommand() {
        return Ok(BatchInvocation::Merge(MergeArgs {
            input: merge.get_one::<PathBuf>("input").cloned(),
            shards: merge
                .get_many::<PathBuf>("shards")
                .map(|shards| shards.cloned().collect())
                .unwrap_or_default(),
        }));
    }
    Ok(BatchInvocation::Run(Box::new(BatchArgs {
        run_words: run_words(&command, words.cloned().collect()),
        input: matches.get_one::<PathBuf>("input").cloned(),
        parallel: usize::from(matches.get_one::<u16>("parallel").copied().unwrap_or(4)),
        unordered: matches.get_flag("unordered"),
        events_dir: matches.get_one::<PathBuf>("events-dir").cloned(),
        rate: matches.get_one::<u32>("rate").copied(),
        tpm: matches.get_one::<u64>("tpm").copied(),
        resume: matches.get_one::<PathBuf>("resume").cloned(),
        shard: matches.get_one::<Shard>("shard").copied(),
        matches,
    })))
}

/// `words` (program name first) without the batch's own flags and the
/// input: the run flags, in order, each with its value. clap accepted
/// `words` already, so only the shapes it takes are handled. A word is
/// read as bytes: a value that is not UTF-8 (`--root=` a Latin-1 path)
/// stays with its flag, never dropped.
fn run_words(command: &Command, words: Vec<OsString>) -> Vec<OsString> {
    let mut kept = Vec::new();
    let mut words = words.into_iter();
    kept.extend(words.next());
    while let Some(word) = words.next() {
        match shape(command, &word) {
            Shape::End => break,
            Shape::Long { name, value } => {
                let next = if value { words.next() } else { None };
                if !BATCH_FLAGS.contains(&name.as_str()) {
                    kept.push(word);
                    kept.extend(next);
                }
            }
            Shape::Shorts { value } => {
                kept.push(word);
                if value {
                    kept.extend(words.next());
                }
            }
            // The input: it is not a run flag.
            Shape::Word => {}
        }
    }
    kept
}

/// What a word of a command line is, read as bytes.
enum Shape {
    /// `--`: what follows is no flag.
    End,
    /// `--NAME` or `--NAME=VALUE`; `value`: the next word is its value.
    Long { name: String, value: bool },
    /// A cluster of shorts (`-qs TEXT`); `value`: the next word is the
    /// value of its last short.
    Shorts { value: bool },
    /// No flag: the input (or `-`).
    Word,
}

fn shape(command: &Command, word: &OsString) -> Shape {
    let bytes = word.as_bytes();
    if bytes == b"--" {
        return Shape::End;
    }
    if let Some(long) = bytes.strip_prefix(b"--") {
        let (name, inline) = match long.iter().position(|byte| *byte == b'=') {
            Some(at) => (&long[..at], true),
            None => (long, false),
        };
        let name = String::from_utf8_lossy(name).into_owned();
        let value = !inline && takes_value(command, &format!("--{name}"));
        return Shape::Long { name, value };
    }
    match bytes.strip_prefix(b"-") {
        Some(shorts) if !shorts.is_empty() => {
            // The first short that takes a value takes the rest of the
            // word, or the next word when it is the last.
            let taker = shorts.iter().position(|short| {
                short.is_ascii() && takes_value(command, &format!("-{}", char::from(*short)))
            });
            Shape::Shorts {
                value: taker == Some(shorts.len() - 1),
            }
        }
        _ => Shape::Word,
    }
}

/// `words` without the run flag `--LONG` (and its value), wherever it is:
/// an item's `system` drops the batch's `--system-file` as it replaces
/// its `--system`.
pub fn without_flag(words: &[OsString], long: &str) -> Vec<OsString> {
    let command = run_command();
    let mut kept = Vec::new();
    let mut words = words.iter();
    kept.extend(words.next().cloned());
    while let Some(word) = words.next() {
        match shape(&command, word) {
            Shape::End => {
                kept.push(word.clone());
                kept.extend(words.by_ref().cloned());
            }
            Shape::Long { name, value } => {
                let next = if value { words.next() } else { None };
                if name != long {
                    kept.push(word.clone());
                    kept.extend(next.cloned());
                }
            }
            Shape::Shorts { value } => {
                kept.push(word.clone());
                if value {
                    kept.extend(words.next().cloned());
                }
            }
            Shape::Word => kept.push(word.clone()),
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_words(words: &[&str]) -> BatchArgs {
        let args: Vec<OsString> = words.iter().map(OsString::from).collect();
        match read(&args).unwrap() {
            BatchInvocation::Run(batch) => *batch,
            BatchInvocation::Merge(_) => panic!("not a run"),
        }
    }

    #[test]
    fn batch_flags_and_the_input_leave_the_run_words() {
        let batch = read_words(&[
            "leash",
            "batch",
            "--parallel",
            "8",
            "-qs",
            "be brief",
            "in.jsonl",
            "--shard=1/3",
            "-m",
            "gpt",
            "--unordered",
            "--max-turns=3",
        ]);
        let words: Vec<&str> = batch.run_words.iter().filter_map(|w| w.to_str()).collect();
        assert_eq!(
            words,
            ["leash", "-qs", "be brief", "-m", "gpt", "--max-turns=3"]
        );
        assert_eq!(batch.input, Some(PathBuf::from("in.jsonl")));
        assert_eq!(batch.parallel, 8);
        assert!(batch.unordered);
        assert_eq!(batch.shard, Some(Shard { index: 1, count: 3 }));
    }

    #[test]
    fn a_shard_is_k_of_n() {
        assert!(parse_shard("3/3").is_err());
        assert!(parse_shard("0/0").is_err());
        assert!(parse_shard("x/2").is_err());
        let shard = parse_shard("1/2").unwrap();
        assert!(shard.takes(3) && !shard.takes(4));
    }

    #[test]
    fn a_flag_value_that_is_not_utf8_stays_with_its_flag() {
        use std::os::unix::ffi::OsStringExt;
        let latin = |prefix: &[u8]| OsString::from_vec([prefix, b"caf\xe9"].concat());
        let args = vec![
            OsString::from("leash"),
            OsString::from("batch"),
            latin(b"--root="),
            OsString::from("--system-file"),
            latin(b""),
            latin(b""),
        ];
        let BatchInvocation::Run(batch) = read(&args).unwrap() else {
            panic!("not a run");
        };
        assert_eq!(
            batch.run_words,
            [
                OsString::from("leash"),
                latin(b"--root="),
                OsString::from("--system-file"),
                latin(b""),
            ]
        );
        // A text flag's value that is not UTF-8 is refused by clap.
        let text = vec![
            OsString::from("leash"),
            OsString::from("batch"),
            OsString::from("-s"),
            latin(b""),
        ];
        assert!(read(&text).is_err());
        assert_eq!(batch.input, Some(PathBuf::from(latin(b""))));
    }

    #[test]
    fn without_flag_drops_the_flag_and_its_value_only() {
        let words: Vec<OsString> = [
            "leash",
            "--system-file",
            "s.txt",
            "-s",
            "--system-file",
            "--system-file=t.txt",
            "-m",
            "x",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let kept = without_flag(&words, "system-file");
        assert_eq!(kept, ["leash", "-s", "--system-file", "-m", "x"]);
    }
}
