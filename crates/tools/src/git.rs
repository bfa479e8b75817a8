//! The `git` tool: read-only views (`status`, `diff`, `log`, `show`,
//! `blame`) of the repository whose work tree contains the root.
//!
//! It must never run a program the repository names. A repository's config
//! can name many (`core.fsmonitor`, `core.pager`, `diff.external`, diff
//! and filter drivers, hooks, aliases, credential helpers, and any file it
//! includes may name more), so git never reads it: every call runs the
//! system `git` with a cleared environment against a private shadow git
//! directory whose config leash writes (`repo`), with every setting that
//! could run something forced off on the command line (`run`), and with
//! the model's arguments passed only when on a whitelist (`args`). Paths
//! go through the sandbox; dotenv files are left out of every view, as the
//! readers never open them. Output is capped like `read_file`'s.

mod args;
mod error;
mod limits;
mod repo;
mod revs;
mod run;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

pub use self::args::GitCommand;
pub use self::error::GitError;
use self::error::NAME;
pub(crate) use self::limits::TIME_LIMIT;
pub(crate) use self::repo::Repository;
pub use self::repo::RepositoryError;
pub(crate) use self::run::find_git;
use self::run::{Invocation, run_error, run_git};
use super::read_file::MAX_BYTES;
use super::sandbox::{Sandbox, push_escaped};
use super::{ToolUpdates, TypedTool, run_blocking_call};
use leash_protocol::{Content, ToolOutput};

/// The most bytes of `git config --list` read to copy the format keys.
const CONFIG_LIST_BYTES: usize = 256 * 1024;
/// How much of git's error message a failed call repeats.
const STDERR_SHOWN_CHARS: usize = 400;

/// Pathspecs added to every view but `blame`: dotenv files anywhere in the
/// work tree are left out, as the sandbox never opens them.
const DOTENV_EXCLUDES: [&str; 2] = [":(top,exclude,glob)**/.env", ":(top,exclude,glob)**/.env.*"];

/// The `git` tool.
#[derive(Debug)]
pub struct Git {
    sandbox: Arc<Sandbox>,
    repository: Repository,
    binary: PathBuf,
}

/// The arguments of `git`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitArgs {
    /// Which view: status, diff, log, show or blame.
    pub command: GitCommand,
    /// Arguments as on git's command line: whitelisted options,
    /// revisions or ranges ('HEAD~3', 'main..HEAD'), and after '--' the
    /// paths (relative to the root). E.g. ["--stat", "main", "--", "src"].
    #[serde(default)]
    pub args: Vec<String>,
}

/// Why the `git` tool cannot be offered for a root.
#[derive(Debug, thiserror::Error)]
pub enum GitUnavailable {
    /// The root is in no git work tree.
    #[error("the root '{0}' is not inside a git work tree")]
    NoRepository(String),
    /// No `git` binary on `PATH`.
    #[error("no git binary on PATH")]
    NoBinary,
    /// The repository around the root is broken.
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

/// The argument whitelist as a call applies it, for the fuzz target
/// (`fuzz/`); not the tool's API.
pub mod whitelist {
    use super::{GitCommand, GitError, args, revs};

    /// `args` sorted into options, revisions and paths, each revision with
    /// the ends that are checked as commits, or the refusal.
    pub fn sort_args(command: GitCommand, args: &[String]) -> Result<SortedArgs, GitError> {
        let parsed = args::parse(command, args)?;
        let ends = parsed
            .revisions
            .iter()
            .map(|rev| revs::ends(rev).into_iter().map(str::to_owned).collect())
            .collect();
        Ok(SortedArgs {
            options: parsed.options,
            revisions: parsed.revisions,
            ends,
            paths: parsed.paths,
        })
    }

    /// What [`sort_args`] gives.
    #[derive(Debug)]
    pub struct SortedArgs {
        /// Whitelisted options.
        pub options: Vec<String>,
        /// Revisions and ranges.
        pub revisions: Vec<String>,
        /// Per revision, the ends checked as commits.
        pub ends: Vec<Vec<String>>,
        /// Paths, before the sandbox.
        pub paths: Vec<String>,
    }
}

impl GitUnavailable {
    /// Whether there is a repository around the root, but leash will not
    /// show it (not the root's own, or not plainly a git directory): worth
    /// a notice even when `git` was only going to join the default tools.
    pub fn is_refusal(&self) -> bool {
        matches!(self, GitUnavailable::Repository(_))
    }
}

impl Git {
    /// A `git` tool for the repository whose work tree contains
    /// `sandbox`'s root, run by the `git` found on `PATH`.
    pub fn for_root(sandbox: Arc<Sandbox>) -> Result<Git, GitUnavailable> {
        let repository = Repository::discover(sandbox.root())?
            .ok_or_else(|| GitUnavailable::NoRepository(sandbox.root().display().to_string()))?;
        let binary = find_git().ok_or(GitUnavailable::NoBinary)?;
        Ok(Git {
            sandbox,
            repository,
            binary,
        })
    }

    /// The repository it shows.
    #[cfg(test)]
    pub(crate) fn repository(&self) -> &Repository {
        &self.repository
    }
}

impl TypedTool for Git {
    const NAME: &'static str = NAME;
    type Args = GitArgs;
    type Error = GitError;

    fn description(&self) -> String {
        format!(
            "Read-only git views of the repository holding the root: status, diff, log, show, \
             blame. args is git's argument list: revisions or ranges of commits ('HEAD~1', \
             'main..HEAD'; no 'REV:PATH', no blob or tree ids), then '--' and paths relative \
             to the root. Options allowed: \
             diff/log/show: --stat --numstat --shortstat --name-only --name-status --summary \
             -p -s -U<n> -w -b -M --no-renames --word-diff --diff-filter=X -S<text> -G<regex>; \
             diff: --cached --staged --merge-base; log: -n <n> --max-count=<n> --skip=<n> \
             --oneline --since=X --until=X --author=X --grep=X --no-merges --first-parent \
             --reverse --graph --follow (one path, no patch) --all --pretty=<builtin>; show: --oneline \
             --pretty=<builtin>; status: -s -b --porcelain[=v2] -u<mode> --ignored; blame: \
             -L <range> -w -M -C -s -e --porcelain (one path, at most one revision). Anything \
             else is refused. Output is cut at {} KiB with a note; narrow a view with paths \
             or -n.",
            MAX_BYTES / 1024
        )
    }

    async fn call(
        &self,
        args: GitArgs,
        cancel: CancellationToken,
        _updates: ToolUpdates,
    ) -> Result<ToolOutput, GitError> {
        let sandbox = Arc::clone(&self.sandbox);
        let repository = self.repository.clone();
        let binary = self.binary.clone();
        run_blocking_call(Self::NAME, &cancel, move |cancel| {
            let view = View {
                sandbox: &sandbox,
                repository: &repository,
                binary: &binary,
            };
            view.run(&args, cancel)
        })
        .await
    }
}

/// One call's fixed context, on the blocking thread.
struct View<'a> {
    sandbox: &'a Sandbox,
    repository: &'a Repository,
    binary: &'a Path,
}

impl View<'_> {
    fn run(&self, args: &GitArgs, cancel: &CancellationToken) -> Result<ToolOutput, GitError> {
        let command = args.command;
        let parsed = args::parse(command, &args.args)?;
        // Links planted since start-up (by the shell, or anything else
        // writing the checkout) are refused before git reads them.
        self.repository.recheck()?;
        let paths = parsed
            .paths
            .iter()
            .map(|path| self.sandbox.locate(path))
            .collect::<Result<Vec<_>, _>>()?;
        let scratch = tempfile::Builder::new()
            .prefix("leash-git-")
            .tempdir()
            .map_err(|e| GitError::Repository(RepositoryError::Shadow(e)))?;
        let home = scratch.path().join("home");
        std::fs::create_dir(&home).map_err(|e| GitError::Repository(RepositoryError::Shadow(e)))?;
        let mut how = Invocation {
            git: self.binary,
            cwd: scratch.path(),
            home: &home,
            repo: None,
            cap: CONFIG_LIST_BYTES,
            limit: TIME_LIMIT,
        };
        let config = self.real_config(&how, cancel)?;
        let shadow = self.repository.shadow(scratch.path(), &config)?;
        how.repo = Some((&shadow, self.repository.top()));
        how.cwd = self.sandbox.root();
        how.cap = MAX_BYTES;
        revs::check_commits(command, &how, &parsed.revisions, cancel)?;
        let argv = command_line(command, &parsed, &paths);
        let ran = run_git(&how, &argv, cancel).map_err(|e| run_error(command, e))?;
        if ran.code != Some(0) && !ran.cut {
            return Err(GitError::Failed {
                command: command.name(),
                code: ran.code.unwrap_or(-1),
                message: first_lines(&ran.stderr),
            });
        }
        let text = render(command, &ran.stdout, ran.cut);
        Ok(ToolOutput {
            content: vec![Content::text(text)],
            details: json!({
                "command": command.name(),
                "args": args.args,
                "bytes": ran.stdout.len().min(MAX_BYTES),
                "truncated": ran.cut,
                "cutPiece": ran.cut,
            }),
            terminate: false,
            usage: None,
        })
    }

    /// The real config's entries (`key\nvalue\0`), read as data by `git
    /// config --file` (on a private copy: the real file was opened as a
    /// regular file only) with includes off; empty when there is none.
    fn real_config(
        &self,
        how: &Invocation<'_>,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, GitError> {
        let bytes = self.repository.config_bytes()?;
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        let copy = how.cwd.join("real-config");
        std::fs::write(&copy, bytes)
            .map_err(|e| GitError::Repository(RepositoryError::Shadow(e)))?;
        let argv: Vec<OsString> = vec![
            "config".into(),
            "--file".into(),
            copy.into_os_string(),
            "--no-includes".into(),
            "-z".into(),
            "--list".into(),
        ];
        let ran = run_git(how, &argv, cancel).map_err(|e| run_error(GitCommand::Status, e))?;
        Ok(if ran.code == Some(0) && !ran.cut {
            ran.stdout
        } else {
            Vec::new()
        })
    }
}

/// The argument list after `git --no-pager -c …`: the command, the guards
/// that keep external programs out, the model's options, its revisions
/// after `--end-of-options`, and after `--` the pathspecs.
fn command_line(command: GitCommand, parsed: &args::Parsed, paths: &[PathBuf]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![command.name().into()];
    let guards: &[&str] = match command {
        GitCommand::Status => &["--ignore-submodules=all"],
        GitCommand::Diff => &[
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--ignore-submodules=all",
        ],
        GitCommand::Log | GitCommand::Show => &[
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--no-show-signature",
            "--ignore-submodules=all",
        ],
        GitCommand::Blame => &["--no-textconv"],
    };
    argv.extend(guards.iter().map(OsString::from));
    argv.extend(parsed.options.iter().map(OsString::from));
    if matches!(command, GitCommand::Log | GitCommand::Show) && paths.is_empty() {
        // The pathspecs below only trim the diffs; every commit is shown.
        argv.extend(["--full-history", "--sparse"].map(OsString::from));
    }
    if !parsed.revisions.is_empty() {
        if command != GitCommand::Blame {
            argv.push("--end-of-options".into());
        }
        argv.extend(parsed.revisions.iter().map(OsString::from));
    }
    argv.push("--".into());
    if command == GitCommand::Blame {
        argv.extend(paths.iter().map(|p| p.clone().into_os_string()));
        return argv;
    }
    if paths.is_empty() {
        argv.push(".".into());
    }
    for path in paths {
        if path.as_os_str().is_empty() {
            argv.push(".".into());
        } else {
            let mut spec = OsString::from(":(literal)");
            spec.push(path);
            argv.push(spec);
        }
    }
    // `--follow` takes one pathspec only (its one path is no dotenv file:
    // the sandbox refused that, and `args` refused a patch with it).
    if !parsed.options.iter().any(|option| option == "--follow") {
        argv.extend(DOTENV_EXCLUDES.iter().map(OsString::from));
    }
    argv
}

/// The text the model sees: git's output as lossy UTF-8 with control
/// characters but newline, tab and carriage return escaped, cut at
/// [`MAX_BYTES`] (at a line end when one is near) with a note.
fn render(command: GitCommand, stdout: &[u8], cut: bool) -> String {
    let shown = if cut {
        let head = &stdout[..MAX_BYTES.min(stdout.len())];
        match head.iter().rposition(|&b| b == b'\n') {
            Some(end) if end + 1 >= MAX_BYTES / 2 => &head[..=end],
            _ => head,
        }
    } else {
        stdout
    };
    let text = String::from_utf8_lossy(shown);
    let mut out = String::with_capacity(text.len() + 128);
    for c in text.chars() {
        if c.is_control() && !matches!(c, '\n' | '\t' | '\r') {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if cut {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "\n[truncated: git {} printed more than {} KiB; showed the first {} bytes. Narrow \
             it: paths after '--', -n <count>, --stat or --name-only]",
            command.name(),
            MAX_BYTES / 1024,
            shown.len()
        ));
    } else if out.is_empty() {
        out = format!("[git {} printed nothing]", command.name());
    }
    out
}

/// The first lines of git's stderr as one line, escaped.
fn first_lines(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let joined = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .take(3)
        .collect::<Vec<_>>()
        .join(" / ");
    if joined.is_empty() {
        return "no message".to_owned();
    }
    let mut out = String::new();
    match joined.char_indices().nth(STDERR_SHOWN_CHARS) {
        Some((end, _)) => {
            push_escaped(&mut out, &joined[..end]);
            out.push('…');
        }
        None => push_escaped(&mut out, &joined),
    }
    out
}

#[cfg(test)]
mod tests;
