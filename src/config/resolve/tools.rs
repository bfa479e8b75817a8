//! The tools step: `--tools` and `--allow-write` over `--root`, opened
//! once; `git` joins the default list when the root is in a work tree.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cli::{AllowExec, Cli};
use crate::config::dotenv::DotEnvStatus;
use crate::config::error::named_by_source;
use crate::config::layers::{Environment, Source};
use crate::config::{ConfigError, FileTools, Inputs, ToolName};
use leash_child::reach::{self, Access};
use leash_child::shell::find_bash;
use leash_protocol::secret::KEY_VARIABLES;
use leash_tools::bash::{ExecMode, cannot_confine};
use leash_tools::git::Git;
use leash_tools::sandbox::Sandbox;

/// The run's file tools; `None` for none.
pub(super) fn resolve(cli: &Cli, inputs: &Inputs<'_>) -> Result<Option<FileTools>, ConfigError> {
    let named = |id: &'static str| named_by_source(inputs, id);
    let mut names = parse_tools(&cli.tools).map_err(named("tools"))?;
    let shell = shell(cli.allow_exec).map_err(named("allow_exec"))?;
    let shell = match shell {
        Some((mode, bash)) => Some((mode, bash, access(cli, inputs)?)),
        None => None,
    };
    match (shell.is_some(), names.contains(&ToolName::Bash)) {
        (true, false) => names.push(ToolName::Bash),
        (false, true) => return Err(named("tools")(ConfigError::BashWithoutExec)),
        _ => {}
    }
    if cli.allow_write {
        for tool in [ToolName::WriteFile, ToolName::EditFile] {
            if !names.contains(&tool) {
                names.push(tool);
            }
        }
    }
    if names.is_empty() {
        return Ok(None);
    }
    let mut sandbox = open_root(&cli.root).map_err(named("root"))?;
    let credentials =
        super::vertex::credentials_path(inputs).and_then(|path| sandbox.hide(Path::new(&path)));
    let mut tools = file_tools(
        names,
        Arc::new(sandbox),
        inputs.origins.source("tools") == Source::Default,
        shell,
    )
    .map_err(named("tools"))?;
    if matches!(tools.shell, Some((ExecMode::Confined, _, _))) {
        tools.shell_hidden =
            key_file_in_root(inputs.env, tools.sandbox.root()).map_err(named("allow_exec"))?;
        if let Some(file) = credentials {
            tools
                .shell_hidden
                .push(credentials_file_hidden(file).map_err(named("allow_exec"))?);
        }
    }
    Ok(Some(tools))
}

/// The `.env` leash took a key from, when it lies under the root a
/// confined command may read: hidden from the command by a private mount
/// where the system gives one; else `--allow-exec` is refused, since
/// `rev .env` would put the key in the model's hands
/// (docs/src/tools.md "What the kernel holds, ABI by ABI").
fn key_file_in_root(env: &Environment, root: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let DotEnvStatus::Read { path, taken, .. } = env.dotenv() else {
        return Ok(Vec::new());
    };
    let holds_a_key = taken
        .iter()
        .any(|name| KEY_VARIABLES.contains(&name.as_str()));
    let file = match path.canonicalize() {
        Ok(file) if holds_a_key && file.starts_with(root) => file,
        _ => return Ok(Vec::new()),
    };
    if leash_child::confine::private_mounts_available() {
        return Ok(vec![file]);
    }
    Err(ConfigError::ExecUnavailable(format!(
        "the API key comes from {}, under the root, where a confined command could read it \
         (this system gives leash no private mount namespace to hide it); export the key in \
         the environment instead, or pass --no-env-file",
        file.display()
    )))
}

/// The credentials file `GOOGLE_APPLICATION_CREDENTIALS` names, under the
/// root (`google-github-actions/auth` writes it into the workspace):
/// hidden from a confined command by a private mount, or `--allow-exec`
/// is refused, as for a `.env` that holds a key.
fn credentials_file_hidden(file: PathBuf) -> Result<PathBuf, ConfigError> {
    if leash_child::confine::private_mounts_available() {
        return Ok(file);
    }
    Err(ConfigError::ExecUnavailable(format!(
        "GOOGLE_APPLICATION_CREDENTIALS names {}, under the root, where a confined command \
         could read it (this system gives leash no private mount namespace to hide it); \
         write the credentials file outside the root",
        file.display()
    )))
}

/// `--root` must be a directory the tools can open; opened once, here.
pub(super) fn open_root(root: &Path) -> Result<Sandbox, ConfigError> {
    Sandbox::new(root).map_err(|error| ConfigError::Root {
        path: root.display().to_string(),
        problem: error.to_string(),
    })
}

/// The tools named, over the root; with the default list, `git` joins
/// them when the root is in a git work tree. Naming `git` for a root in
/// none (or with no git binary) is a usage error.
fn file_tools(
    mut names: Vec<ToolName>,
    sandbox: Arc<Sandbox>,
    default_list: bool,
    shell: Option<(ExecMode, PathBuf, Access)>,
) -> Result<FileTools, ConfigError> {
    let named_git = names.contains(&ToolName::Git);
    let mut git_left_out = None;
    let git = match (named_git || default_list).then(|| Git::for_root(Arc::clone(&sandbox))) {
        Some(Ok(git)) => Some(Arc::new(git)),
        Some(Err(error)) if named_git => {
            return Err(ConfigError::GitUnavailable(error));
        }
        Some(Err(error)) => {
            git_left_out = error
                .is_refusal()
                .then(|| format!("git is left out: {error}"));
            None
        }
        None => None,
    };
    if git.is_some() && !named_git {
        names.push(ToolName::Git);
    }
    Ok(FileTools {
        names,
        sandbox,
        git,
        git_left_out,
        shell,
        shell_hidden: Vec::new(),
    })
}

/// What the commands may read and see beyond the fixed policy: the
/// toolchains of the operator's environment, `--allow-read` and
/// `--allow-env`.
pub(crate) fn access(cli: &Cli, inputs: &Inputs<'_>) -> Result<Access, ConfigError> {
    let named = |id: &'static str| named_by_source(inputs, id);
    if let Some(name) = cli
        .allow_env
        .iter()
        .find(|name| name.is_empty() || reach::never_passed(std::ffi::OsStr::new(name)))
    {
        return Err(named("allow_env")(ConfigError::AllowEnv(name.clone())));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let reach = reach::reach(
        &|name| std::env::var_os(name),
        reach::user_home(),
        &cli.allow_read,
        &cwd,
    )
    .map_err(|error| named("allow_read")(ConfigError::AllowRead(error)))?;
    Ok(Access {
        reach,
        allow_env: cli.allow_env.clone(),
    })
}

/// `--allow-exec`: how commands run and the `bash` that runs them; a usage
/// error when there is no `bash`, or when the kernel cannot confine and
/// the operator did not say `unconfined`.
fn shell(allow: AllowExec) -> Result<Option<(ExecMode, PathBuf)>, ConfigError> {
    let mode = match allow {
        AllowExec::Off => return Ok(None),
        AllowExec::Confined => ExecMode::Confined,
        AllowExec::Unconfined => ExecMode::Unconfined,
    };
    let bash = find_bash(std::env::var_os("PATH").as_deref()).ok_or_else(|| {
        ConfigError::ExecUnavailable("no bash on PATH or at /bin/bash".to_owned())
    })?;
    if mode == ExecMode::Confined
        && let Some(missing) = cannot_confine()
    {
        return Err(ConfigError::ExecUnavailable(format!(
            "this system cannot confine commands: it lacks {missing}"
        )));
    }
    Ok(Some((mode, bash)))
}

/// `read_file,list_dir,grep,find,git,write_file,edit_file,bash` (any of
/// them; `bash` needs `--allow-exec`), or `none`.
pub fn parse_tools(list: &str) -> Result<Vec<ToolName>, ConfigError> {
    if list.trim() == "none" {
        return Ok(Vec::new());
    }
    let mut tools = Vec::new();
    for name in list
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
    {
        let tool = match name {
            "read_file" => ToolName::ReadFile,
            "list_dir" => ToolName::ListDir,
            "grep" => ToolName::Grep,
            "find" => ToolName::Find,
            "git" => ToolName::Git,
            "write_file" => ToolName::WriteFile,
            "edit_file" => ToolName::EditFile,
            // Offered only with `--allow-exec` (checked by the caller).
            "bash" => ToolName::Bash,
            other => return Err(ConfigError::UnknownTool(other.to_owned())),
        };
        if !tools.contains(&tool) {
            tools.push(tool);
        }
    }
    Ok(tools)
}
