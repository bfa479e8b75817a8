//! What a confined command may read beyond the root, its temporary
//! directory and the system's directories (docs/src/tools.md
//! "Toolchains"): the toolchains the operator's environment points at,
//! each with why, and never a secret of the home.
//!
//! Landlock only allows: a grant of a directory grants everything below
//! it. So no grant is ever a parent of a secret. A toolchain home or a
//! `PATH` entry that is one (`PATH` holding `$HOME` itself) is withheld
//! and named, with the flag that would allow it; `--allow-read DIR` of
//! such a directory, the operator's own choice, grants its children
//! instead, the secrets left out, down to the level that holds them. A
//! grant is taken at its real path (links resolved), so a link named
//! like a toolchain cannot stand for a secret.
//!
//! It must never grant a path that is, holds, or lies inside one of
//! [`SECRETS`] of the home, whatever the environment or the flags say.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The files and directories of a home never readable by a command,
/// whatever is allowed: keys, tokens, registries' credentials.
pub const SECRETS: [&str; 23] = [
    ".ssh",
    ".aws",
    ".azure",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/git/credentials",
    ".docker/config.json",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".kube",
    ".gnupg",
    ".password-store",
    ".vault-token",
    ".local/share/keyrings",
];

/// The most grants one `--allow-read` may split into.
const MAX_GRANTS: usize = 4096;

/// One directory or file a command may read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The real path.
    pub path: PathBuf,
    /// Why: `PATH`, `rustup's home (RUSTUP_HOME)`, `--allow-read`…
    pub why: String,
}

/// A directory the environment points at that a command may not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    /// The path as the environment gives it.
    pub path: PathBuf,
    /// Why not, and the flag that would allow it.
    pub why: String,
}

/// What a command may read beyond the root, its temporary directory and
/// the system's directories; what was withheld; the toolchains found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// The grants, each once.
    pub grants: Vec<Grant>,
    /// What the environment points at and a command may not read.
    pub withheld: Vec<Withheld>,
    /// The real cargo home (`CARGO_HOME` or `~/.cargo`), if there is one:
    /// the command gets a private one linking to its `bin`, registry and
    /// `git`, so cargo's writes (locks, unpacked sources) stay private.
    pub cargo_home: Option<PathBuf>,
    /// Toolchain variables a command gets that the operator's
    /// environment left to their defaults under the real `HOME` (which a
    /// command does not see): `RUSTUP_HOME`, `PYENV_ROOT`, `NVM_DIR`…
    pub defaults: Vec<(OsString, OsString)>,
}

/// What the operator lets a command reach beyond the fixed policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// What it may read.
    pub reach: Reach,
    /// The `--allow-env` names.
    pub allow_env: Vec<String>,
}

/// Makes the command's private cargo home in `temp`: links to the real
/// one's `bin`, registry index and downloaded crates, and git database,
/// read-only through the confinement; cargo's locks, its cache tracker
/// and the unpacked sources are written here.
pub fn private_cargo_home(temp: &Path, real: &Path) -> std::io::Result<PathBuf> {
    let home = temp.join(".cargo");
    std::fs::create_dir_all(home.join("registry/src"))?;
    std::fs::create_dir_all(home.join("git"))?;
    for part in [
        "bin",
        "registry/index",
        "registry/cache",
        "git/db",
        "git/checkouts",
    ] {
        let target = real.join(part);
        let link = home.join(part);
        if target.exists() && std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(&target, &link)?;
        }
    }
    Ok(home)
}

/// Why an `--allow-read` cannot be granted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReachError {
    /// It does not exist.
    #[error("--allow-read {0}: no such file or directory")]
    Missing(String),
    /// It is, or lies inside, a secret.
    #[error(
        "--allow-read {0}: never readable by a command: it is or lies inside {1}, which holds \
         secrets"
    )]
    Secret(String, String),
    /// It holds too many entries to leave the secrets out of.
    #[error(
        "--allow-read {0}: too many entries to grant around the secrets it holds; name the \
         directories below it that the commands need"
    )]
    TooWide(String),
}

/// The reach of a command from the operator's environment (`env` looks a
/// variable up; `home` is `HOME`, `user_home` the account's home) and the
/// operator's `--allow-read` list (relative to `cwd`).
pub fn reach(
    env: &dyn Fn(&str) -> Option<OsString>,
    user_home: Option<PathBuf>,
    allow_read: &[PathBuf],
    cwd: &Path,
) -> Result<Reach, ReachError> {
    let home = env("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute());
    let secrets = secrets(home.iter().chain(user_home.iter()));
    let mut out = Reach::default();
    for asked in allow_read {
        let path = cwd.join(asked);
        let shown = asked.display().to_string();
        let real = path
            .canonicalize()
            .map_err(|_| ReachError::Missing(shown.clone()))?;
        if let Some(secret) = secrets.iter().find(|secret| real.starts_with(secret)) {
            return Err(ReachError::Secret(shown, secret.display().to_string()));
        }
        let mut split = Vec::new();
        if !around_secrets(&real, &secrets, &mut split, 0) {
            return Err(ReachError::TooWide(shown));
        }
        for path in split {
            out.grant(path, "--allow-read");
        }
    }
    let var = |name: &str| {
        env(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let in_home = |rest: &str| home.as_ref().map(|home| home.join(rest));
    for entry in env("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
    {
        out.offer(&entry, "PATH", &secrets);
    }
    let mut homes: Vec<(Option<PathBuf>, &str, &str)> = vec![
        (var("RUSTUP_HOME"), ".rustup", "RUSTUP_HOME"),
        (var("PYENV_ROOT"), ".pyenv", "PYENV_ROOT"),
        (var("NVM_DIR"), ".nvm", "NVM_DIR"),
    ];
    for (set, default, name) in homes.drain(..) {
        let (path, defaulted) = match set {
            Some(path) => (Some(path), false),
            None => (in_home(default), true),
        };
        if let Some(path) = path.filter(|path| path.exists()) {
            if defaulted {
                out.defaults.push((name.into(), path.clone().into()));
            }
            out.offer(&path, name, &secrets);
        }
    }
    let cargo = var("CARGO_HOME").or_else(|| in_home(".cargo"));
    if let Some(cargo) = cargo.filter(|path| path.is_dir()) {
        for part in ["bin", "registry", "git"] {
            let path = cargo.join(part);
            if path.exists() {
                out.offer(&path, &format!("cargo's {part} (CARGO_HOME)"), &secrets);
            }
        }
        out.cargo_home = Some(cargo);
    }
    let uv = var("UV_PYTHON_INSTALL_DIR").or_else(|| in_home(".local/share/uv/python"));
    let poetry = var("POETRY_VIRTUALENVS_PATH").or_else(|| in_home(".cache/pypoetry/virtualenvs"));
    let pipenv = var("WORKON_HOME").or_else(|| in_home(".local/share/virtualenvs"));
    let gomod = var("GOMODCACHE").or_else(|| {
        var("GOPATH")
            .or_else(|| in_home("go"))
            .map(|path| path.join("pkg/mod"))
    });
    if let Some(gomod) = gomod.as_ref().filter(|path| path.is_dir())
        && env("GOMODCACHE").is_none()
    {
        out.defaults
            .push(("GOMODCACHE".into(), gomod.clone().into()));
    }
    let more = [
        (uv, "uv's Pythons (UV_PYTHON_INSTALL_DIR)"),
        (poetry, "poetry's venvs"),
        (pipenv, "pipenv's venvs (WORKON_HOME)"),
        (var("VIRTUAL_ENV"), "VIRTUAL_ENV"),
        (var("GOROOT"), "GOROOT"),
        (gomod, "Go's module cache (GOMODCACHE)"),
        (var("JAVA_HOME"), "JAVA_HOME"),
        (in_home(".m2/repository"), "Maven's repository"),
        (in_home(".gradle/caches"), "Gradle's caches"),
        (in_home(".gradle/wrapper/dists"), "Gradle's wrappers"),
    ];
    for (path, why) in more {
        let Some(path) = path.filter(|path| path.exists()) else {
            continue;
        };
        out.offer(&path, why, &secrets);
        for base in venv_bases(&path) {
            out.offer(&base, &format!("the Python {why} was built from"), &secrets);
        }
    }
    Ok(out)
}

impl Reach {
    /// Grants `path` for `why`, unless its real path is granted already.
    fn grant(&mut self, path: PathBuf, why: &str) {
        let covered = self
            .grants
            .iter()
            .any(|grant| path.starts_with(&grant.path));
        if !covered {
            self.grants.retain(|grant| !grant.path.starts_with(&path));
            self.grants.push(Grant {
                path,
                why: why.to_owned(),
            });
        }
    }

    /// Grants what the environment points at, or withholds it when it is,
    /// holds or lies inside a secret; the system's directories and
    /// missing paths are left alone (readable already, or nothing).
    fn offer(&mut self, path: &Path, why: &str, secrets: &[PathBuf]) {
        let Ok(real) = path.canonicalize() else {
            return;
        };
        if under_system(&real) {
            return;
        }
        let secret = secrets
            .iter()
            .find(|secret| real.starts_with(secret) || secret.starts_with(&real));
        match secret {
            Some(secret) => {
                if !self.withheld.iter().any(|seen| seen.path == path) {
                    self.withheld.push(Withheld {
                        path: path.to_owned(),
                        why: format!(
                            "{why} {} is not readable by the shell: it holds or lies in {}, \
                             never readable; --allow-read DIR grants a directory (a parent of \
                             secrets: its other entries)",
                            path.display(),
                            secret.display()
                        ),
                    });
                }
            }
            None => self.grant(real, why),
        }
    }

    /// One line per grant, `PATH (why)`, for `leash config` and the
    /// start-up notice.
    pub fn describe(&self) -> Vec<String> {
        self.grants
            .iter()
            .map(|grant| format!("{} ({})", grant.path.display(), grant.why))
            .collect()
    }

    /// The grants' paths.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.grants.iter().map(|grant| grant.path.clone()).collect()
    }
}

/// Whether `path` is under a directory every command may read already.
fn under_system(path: &Path) -> bool {
    [
        "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt", "/nix",
    ]
    .iter()
    .any(|dir| path.starts_with(dir))
}

/// Every secret of `homes`, both as named and at its real path.
fn secrets<'a>(homes: impl Iterator<Item = &'a PathBuf>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for home in homes {
        let real = home.canonicalize().unwrap_or_else(|_| home.clone());
        for base in [home, &real] {
            for secret in SECRETS {
                let path = base.join(secret);
                if let Ok(target) = path.canonicalize() {
                    out.push(target);
                }
                out.push(path);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The grants for `dir` (a real path) that hold no secret: `dir` itself
/// when it holds none, else each entry of it in turn, secrets left out.
/// `false` when past [`MAX_GRANTS`].
fn around_secrets(dir: &Path, secrets: &[PathBuf], out: &mut Vec<PathBuf>, depth: usize) -> bool {
    if secrets.iter().any(|secret| dir.starts_with(secret)) {
        return true;
    }
    if !secrets.iter().any(|secret| secret.starts_with(dir)) {
        out.push(dir.to_owned());
        return out.len() <= MAX_GRANTS;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    if depth > 16 {
        return false;
    }
    for entry in entries.flatten() {
        // An entry that is a link is granted at its target, checked again.
        let Ok(real) = entry.path().canonicalize() else {
            continue;
        };
        if !around_secrets(&real, secrets, out, depth + 1) {
            return false;
        }
    }
    true
}

/// The prefixes of the Pythons the venvs at or directly under `dir` were
/// built from (`home` of each `pyvenv.cfg`, its parent).
fn venv_bases(dir: &Path) -> Vec<PathBuf> {
    let mut configs = vec![dir.join("pyvenv.cfg")];
    if let Ok(entries) = std::fs::read_dir(dir) {
        configs.extend(
            entries
                .flatten()
                .take(1000)
                .map(|entry| entry.path().join("pyvenv.cfg")),
        );
    }
    configs
        .iter()
        .filter_map(|config| std::fs::read_to_string(config).ok())
        .filter_map(|text| {
            text.lines().find_map(|line| {
                let (key, value) = line.split_once('=')?;
                (key.trim() == "home").then(|| PathBuf::from(value.trim()))
            })
        })
        .filter(|home| home.is_absolute())
        .map(|home| home.parent().map_or(home.clone(), Path::to_owned))
        .collect()
}

/// What a confined command's output says when the sandbox refused it,
/// as words for the file side and the network side.
const FILE_REFUSALS: [&str; 4] = [
    "Permission denied",
    "EACCES",
    "Operation not permitted",
    "PermissionError",
];
const NETWORK_REFUSALS: [&str; 10] = [
    "EAFNOSUPPORT",
    "ENETUNREACH",
    "Address family not supported",
    "Could not resolve host",
    "EAI_AGAIN",
    "Temporary failure in name resolution",
    "ENOTCACHED",
    "--offline was specified",
    "Network is unreachable",
    "Could not find a version that satisfies the requirement",
];

/// The note a confined command's result ends with when its output reads
/// like a refusal of the sandbox: what refused it, and that it is the
/// operator's to change — never a way around it (docs/src/tools.md
/// "Toolchains").
pub fn refusal_note(output: &str) -> Option<String> {
    let files = FILE_REFUSALS.iter().any(|word| output.contains(word));
    let network = NETWORK_REFUSALS.iter().any(|word| output.contains(word));
    let mut notes = Vec::new();
    if files {
        notes.push(
            "a denial of access above may be leash's sandbox: commands read only the root, \
             their TMPDIR, the system's directories and the toolchains leash was started with, \
             and write only the root and TMPDIR; reading more is the operator's to allow \
             (--allow-read DIR), not the code's to change",
        );
    }
    if network {
        notes.push(
            "commands have no network in leash's sandbox: a download fails; dependencies are \
             the operator's to fetch before leash starts, not the code's to change",
        );
    }
    (!notes.is_empty()).then(|| format!("[sandbox: {}]", notes.join("; ")))
}

/// The account's home directory from the user database.
pub fn user_home() -> Option<PathBuf> {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|user| user.dir)
}

/// Whether `name` names a variable that must never reach a command
/// (a key, a token, leash's settings), whatever `--allow-env` says.
pub fn never_passed(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_uppercase();
    upper.starts_with("LEASH_")
        || leash_protocol::secret::KEY_VARIABLES
            .iter()
            .any(|key| key.eq_ignore_ascii_case(&upper))
        || [
            "TOKEN",
            "SECRET",
            "PASSWORD",
            "PASSWD",
            "CREDENTIAL",
            "API_KEY",
            "AUTH",
            "_KEY",
        ]
        .iter()
        .any(|word| upper.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: Vec<(&'static str, OsString)>) -> impl Fn(&str) -> Option<OsString> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn a_home_on_path_is_withheld_and_allowed_around_its_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        for secret in [".ssh/id", ".config/gh/hosts.yml", ".cargo/credentials.toml"] {
            std::fs::create_dir_all(home.join(secret).parent().unwrap()).unwrap();
            std::fs::write(home.join(secret), "s").unwrap();
        }
        std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
        std::fs::create_dir_all(home.join(".config/nvim")).unwrap();
        std::fs::create_dir_all(home.join("bin")).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
        let path = std::env::join_paths([home.clone(), home.join("bin")]).unwrap();
        let env = env_of(vec![("HOME", home.clone().into()), ("PATH", path)]);
        let reach = reach(&env, None, &[], Path::new("/")).unwrap();
        assert_eq!(reach.withheld.len(), 1, "{reach:?}");
        assert!(reach.paths().contains(&home.join("bin")));
        assert!(reach.paths().contains(&home.join(".cargo/bin")));
        assert_eq!(
            reach.cargo_home.as_deref(),
            Some(home.as_path()).map(|h| h.join(".cargo")).as_deref()
        );
        let allowed =
            super::reach(&env, None, std::slice::from_ref(&home), Path::new("/")).unwrap();
        let paths = allowed.paths();
        assert!(paths.contains(&home.join(".config/nvim")), "{paths:?}");
        for path in &paths {
            assert!(
                !path.starts_with(home.join(".ssh"))
                    && !path.starts_with(home.join(".config/gh"))
                    && !path.starts_with(home.join(".cargo/credentials.toml"))
                    && path != &home
                    && path != &home.join(".config"),
                "{path:?}"
            );
        }
        assert_eq!(
            super::reach(&env, None, &[home.join(".ssh/id")], Path::new("/")),
            Err(ReachError::Secret(
                home.join(".ssh/id").display().to_string(),
                home.join(".ssh").display().to_string()
            ))
        );
        assert!(matches!(
            super::reach(&env, None, &[home.join("nope")], Path::new("/")),
            Err(ReachError::Missing(_))
        ));
    }

    #[test]
    fn a_refusal_is_named_once_per_side() {
        assert_eq!(refusal_note("all good"), None);
        let both = refusal_note("cat: x: Permission denied\nlisten EAFNOSUPPORT").unwrap();
        assert!(
            both.contains("--allow-read") && both.contains("fetch"),
            "{both}"
        );
        let files = refusal_note("bash: /x: Permission denied").unwrap();
        assert!(!files.contains("network"), "{files}");
    }

    #[test]
    fn keys_and_tokens_are_never_passed() {
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "LEASH_MODEL",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(never_passed(OsStr::new(name)), "{name}");
        }
        assert!(!never_passed(OsStr::new("RUSTFLAGS")));
    }
}
