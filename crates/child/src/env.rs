//! The environment policy: what each kind of child inherits from leash's
//! own environment, side by side (ARCHITECTURE.md "No child outlives leash" has
//! the table). Each child's environment is built here and set on a
//! cleared command, so a kind of child never gets a variable by accident.
//!
//! - A hook gets the real environment (the operator's own program, run as
//!   the operator would run it), minus every provider key variable and any
//!   variable whose value holds a key leash knows.
//! - A stdio MCP server gets the real environment minus leash's settings
//!   (`LEASH_*`), the providers' variables (`OPENAI_*`, `ANTHROPIC_*`) and
//!   any variable holding a known key, plus its config entry's `env`, the
//!   one way an operator hands a server a key on purpose.
//! - `git` gets no inherited variable but `PATH` (its absolute entries)
//!   and the locale, and a fixed hardening set: no system or global
//!   config, an empty private `HOME`, no pager, no prompt, no optional
//!   locks, no lazy fetch, no protocol.
//!
//! Nothing from a `.env` file reaches any child: a `.env` is read as data
//! for leash's own settings (docs/src/configuration.md "Configuration"), never exported to
//! the process environment these policies start from.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;

use leash_protocol::secret::{ApiKey, KEY_VARIABLES, holds_a_key};

/// One variable of a child's environment.
pub type Variable = (OsString, OsString);

/// A hook's environment: `inherited` without any variable that may hold
/// a provider key (by name) or holds one of `keys` (by value, even copied
/// into another variable).
pub fn for_hook(inherited: impl Iterator<Item = Variable>, keys: &[ApiKey]) -> Vec<Variable> {
    inherited
        .filter(|(name, value)| {
            !KEY_VARIABLES.iter().any(|key| OsStr::new(key) == name) && !carries_a_key(value, keys)
        })
        .collect()
}

/// A stdio MCP server's environment: `inherited` without leash's settings,
/// the providers' variables and any variable holding one of `keys`, plus
/// `extra`, the server's `env` from the config (which may name a key on
/// purpose).
pub fn for_mcp_server(
    inherited: impl Iterator<Item = Variable>,
    extra: &BTreeMap<String, String>,
    keys: &[ApiKey],
) -> Vec<Variable> {
    const STRIPPED: [&str; 3] = ["LEASH_", "OPENAI_", "ANTHROPIC_"];
    inherited
        .filter(|(name, value)| {
            let name = name.to_string_lossy();
            !STRIPPED.iter().any(|prefix| name.starts_with(prefix)) && !carries_a_key(value, keys)
        })
        .chain(
            extra
                .iter()
                .map(|(name, value)| (OsString::from(name), OsString::from(value))),
        )
        .collect()
}

/// `git`'s environment: from `inherited` only `PATH` (without relative
/// entries) and the locale; `home` as `HOME` and `XDG_CONFIG_HOME` (an
/// empty private directory); `repo` as `GIT_DIR` and `GIT_WORK_TREE`
/// (`None`: a command that needs no repository, given a `GIT_DIR` that
/// does not exist so none is discovered); and the hardening set.
pub fn for_git(
    inherited: impl Iterator<Item = Variable>,
    home: &Path,
    repo: Option<(&Path, &Path)>,
) -> Vec<Variable> {
    const LOCALE: [&str; 4] = ["LANG", "LC_ALL", "LC_MESSAGES", "LC_CTYPE"];
    const HARDENING: [(&str, &str); 10] = [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_SYSTEM", "/dev/null"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_ATTR_NOSYSTEM", "1"),
        ("GIT_OPTIONAL_LOCKS", "0"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_NO_LAZY_FETCH", "1"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_ALLOW_PROTOCOL", ""),
    ];
    let mut env: Vec<Variable> = Vec::new();
    for (name, value) in inherited {
        if name == "PATH" {
            if let Some(path) = absolute_entries(&value) {
                env.push((name, path));
            }
        } else if LOCALE.iter().any(|locale| OsStr::new(locale) == name) {
            env.push((name, value));
        }
    }
    env.push(("HOME".into(), home.into()));
    env.push(("XDG_CONFIG_HOME".into(), home.into()));
    env.extend(
        HARDENING
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value))),
    );
    match repo {
        Some((git_dir, work_tree)) => {
            env.push(("GIT_DIR".into(), git_dir.into()));
            env.push(("GIT_WORK_TREE".into(), work_tree.into()));
        }
        None => env.push(("GIT_DIR".into(), home.join("no-repository").into())),
    }
    env
}

/// The toolchain variables a command inherits as they are: where the
/// toolchains are, which version to use (docs/src/tools.md "Toolchains").
pub const TOOLCHAIN_VARIABLES: [&str; 22] = [
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "VIRTUAL_ENV",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "UV_PYTHON_INSTALL_DIR",
    "POETRY_VIRTUALENVS_PATH",
    "WORKON_HOME",
    "NVM_DIR",
    "NVM_BIN",
    "NVM_INC",
    "NODE_PATH",
    "JAVA_HOME",
    "GOROOT",
    "GOPATH",
    "GOMODCACHE",
    "CI",
    "GITHUB_ACTIONS",
    "RUST_BACKTRACE",
    "PYTHONDONTWRITEBYTECODE",
];

/// The standard switches that make package managers fail at once,
/// offline, in their own words, rather than wait on a network a command
/// does not have (docs/src/tools.md "Toolchains").
pub const OFFLINE: [(&str, &str); 12] = [
    ("CARGO_NET_OFFLINE", "true"),
    ("npm_config_offline", "true"),
    ("npm_config_audit", "false"),
    ("npm_config_fund", "false"),
    ("npm_config_update_notifier", "false"),
    ("PIP_NO_INDEX", "1"),
    ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
    ("UV_OFFLINE", "1"),
    ("GOFLAGS", "-mod=mod"),
    ("GOPROXY", "off"),
    ("GOTOOLCHAIN", "local"),
    ("RUSTUP_AUTO_INSTALL", "0"),
];

/// What a command's environment takes besides the fixed policy.
#[derive(Debug, Clone, Default)]
pub struct ShellExtras {
    /// The operator's `--allow-env` names, passed as they are.
    pub allow_env: Vec<String>,
    /// Toolchain variables found at their defaults (`RUSTUP_HOME`…).
    pub defaults: Vec<Variable>,
    /// The command's private cargo home (`CARGO_HOME`).
    pub cargo_home: Option<std::path::PathBuf>,
}

/// A shell command's environment (the `bash` tool): from `inherited`
/// only `PATH` (absolute entries), the locale, `TERM`, `TZ`, the
/// toolchain variables and the operator's `--allow-env` names, none
/// holding one of `keys` and none a key's or a token's name; `temp` as
/// `HOME`, `TMPDIR`, `TMP` and `TEMP`; the offline switches. Nothing
/// else: no key variable, no `LEASH_*`, no proxy, no token.
pub fn for_shell(
    inherited: impl Iterator<Item = Variable>,
    temp: &Path,
    keys: &[ApiKey],
    extras: &ShellExtras,
) -> Vec<Variable> {
    const KEPT: [&str; 7] = [
        "LANG",
        "LC_ALL",
        "LC_MESSAGES",
        "LC_CTYPE",
        "LANGUAGE",
        "TERM",
        "TZ",
    ];
    let allowed = |name: &OsStr| {
        extras
            .allow_env
            .iter()
            .any(|allowed| OsStr::new(allowed) == name)
            && !super::reach::never_passed(name)
    };
    let mut env: Vec<Variable> = Vec::new();
    for (name, value) in inherited {
        if carries_a_key(&value, keys) {
            continue;
        }
        if name == "PATH" {
            if let Some(path) = absolute_entries(&value) {
                env.push((name, path));
            }
        } else if KEPT.iter().any(|kept| OsStr::new(kept) == name)
            || TOOLCHAIN_VARIABLES
                .iter()
                .any(|kept| OsStr::new(kept) == name)
            || allowed(&name)
        {
            env.push((name, value));
        }
    }
    if !env.iter().any(|(name, _)| name == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    for (name, value) in &extras.defaults {
        if !env.iter().any(|(set, _)| set == name) && !carries_a_key(value, keys) {
            env.push((name.clone(), value.clone()));
        }
    }
    for (name, value) in OFFLINE {
        if !env.iter().any(|(set, _)| set == name) {
            env.push((name.into(), value.into()));
        }
    }
    if let Some(cargo) = &extras.cargo_home {
        env.push(("CARGO_HOME".into(), cargo.into()));
    }
    for name in ["HOME", "TMPDIR", "TMP", "TEMP"] {
        env.push((name.into(), temp.into()));
    }
    env
}

/// `PATH` without its relative entries: a `PATH` holding `.` must not let
/// a `git` (or a helper) inside the repository stand in for the real one.
fn absolute_entries(path: &OsStr) -> Option<OsString> {
    std::env::join_paths(std::env::split_paths(path).filter(|dir| dir.is_absolute())).ok()
}

fn carries_a_key(value: &OsStr, keys: &[ApiKey]) -> bool {
    holds_a_key(&value.to_string_lossy(), keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Iterator<Item = Variable> {
        pairs
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value)))
            .collect::<Vec<_>>()
            .into_iter()
    }

    fn names(env: &[Variable]) -> Vec<String> {
        env.iter()
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect()
    }

    const INHERITED: [(&str, &str); 7] = [
        ("PATH", "/bin:.:bin"),
        ("OPENAI_API_KEY", "sk-run"),
        ("LEASH_MODEL", "m"),
        ("ANTHROPIC_BASE_URL", "http://x"),
        ("MY_COPY", "prefix-sk-run"),
        ("HOME", "/h"),
        ("LANG", "C.UTF-8"),
    ];

    #[test]
    fn a_hook_gets_the_real_environment_without_the_keys() {
        let env = for_hook(vars(&INHERITED), &[ApiKey::new("sk-run")]);
        assert_eq!(
            names(&env),
            ["PATH", "LEASH_MODEL", "ANTHROPIC_BASE_URL", "HOME", "LANG"]
        );
    }

    #[test]
    fn a_server_holds_no_key_or_setting_unless_the_config_names_it() {
        let extra = BTreeMap::from([("GITHUB_TOKEN".to_owned(), "gh".to_owned())]);
        let env = for_mcp_server(vars(&INHERITED), &extra, &[ApiKey::new("sk-run")]);
        assert_eq!(names(&env), ["PATH", "HOME", "LANG", "GITHUB_TOKEN"]);
        let named = BTreeMap::from([("OPENAI_API_KEY".to_owned(), "sk-run".to_owned())]);
        let env = for_mcp_server(std::iter::empty(), &named, &[ApiKey::new("sk-run")]);
        assert_eq!(env.len(), 1, "a key the config names on purpose is passed");
    }

    #[test]
    fn a_shell_gets_no_key_and_no_setting_and_a_private_home() {
        let mut inherited: Vec<(&str, &str)> = INHERITED.to_vec();
        inherited.push(("TERM", "xterm"));
        inherited.push(("LC_ALL", "sk-run"));
        inherited.push(("RUSTUP_HOME", "/opt/rustup"));
        inherited.push(("GITHUB_TOKEN", "ghp"));
        inherited.push(("MY_FLAG", "1"));
        inherited.push(("npm_config_offline", "false"));
        let extras = ShellExtras {
            allow_env: vec!["MY_FLAG".into(), "GITHUB_TOKEN".into()],
            ..ShellExtras::default()
        };
        let env = for_shell(
            vars(&inherited),
            Path::new("/tmp/s"),
            &[ApiKey::new("sk-run")],
            &extras,
        );
        let mut kept = names(&env);
        kept.retain(|name| !OFFLINE.iter().any(|(offline, _)| offline == name));
        assert_eq!(
            kept,
            [
                "PATH",
                "LANG",
                "TERM",
                "RUSTUP_HOME",
                "MY_FLAG",
                "HOME",
                "TMPDIR",
                "TMP",
                "TEMP"
            ]
        );
        assert!(
            env.iter()
                .any(|(name, value)| name == "CARGO_NET_OFFLINE" && value == "true")
        );
        assert!(env.iter().all(|(_, value)| value != "/h"), "the real HOME");
    }

    #[test]
    fn git_gets_only_an_absolute_path_the_locale_and_the_hardening() {
        let env = for_git(vars(&INHERITED), Path::new("/tmp/h"), None);
        let get = |wanted: &str| {
            env.iter()
                .find(|(name, _)| name == wanted)
                .map(|(_, value)| value.to_string_lossy().into_owned())
        };
        assert_eq!(get("PATH").as_deref(), Some("/bin"));
        assert_eq!(get("LANG").as_deref(), Some("C.UTF-8"));
        assert_eq!(get("HOME").as_deref(), Some("/tmp/h"));
        assert_eq!(get("GIT_DIR").as_deref(), Some("/tmp/h/no-repository"));
        assert_eq!(get("GIT_CONFIG_GLOBAL").as_deref(), Some("/dev/null"));
        for gone in ["OPENAI_API_KEY", "LEASH_MODEL", "MY_COPY"] {
            assert_eq!(get(gone), None, "{gone}");
        }
    }
}
