//! Which MCP servers a run starts, from `--mcp-config FILE` (the
//! `{"mcpServers": {NAME: {...}}}` format other runners read) and from
//! `--mcp NAME=COMMAND [ARGS]`. Everything here is checked before the run:
//! a bad file or entry is a usage error (exit 2) that names the file and
//! the server; only starting a server can end a run with exit 8.
//!
//! Values may name variables as `${VAR}` or `${VAR:-default}` (in
//! `command`, `args`, `env`, `url` and `headers`), so a config file can
//! hand a server a token without holding it: that is the one way a
//! variable of leash's environment that leash strips (its keys) reaches a
//! server.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

/// One server to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// The name in its tools' names (`mcp__NAME__TOOL`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Where it was named: `--mcp` or the config file's path.
    pub origin: String,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        /// The program (looked up in `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the child's (stripped) environment.
        env: BTreeMap<String, String>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The endpoint, `http://` or `https://`.
        url: String,
        /// Headers sent with every request (`Authorization`, ...).
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// One line for `leash config` and errors: the command line or the URL
    /// (never the values of `env` or `headers`, which may hold tokens).
    pub fn summary(&self) -> String {
        match self {
            Transport::Stdio { command, args, env } => {
                let mut line = format!("stdio: {}", shell_line(command, args));
                if !env.is_empty() {
                    let names: Vec<&str> = env.keys().map(String::as_str).collect();
                    line.push_str(&format!(" (env: {})", names.join(", ")));
                }
                line
            }
            Transport::Http { url, headers } => {
                let mut line = format!("http: {url}");
                if !headers.is_empty() {
                    let names: Vec<&str> = headers.keys().map(String::as_str).collect();
                    line.push_str(&format!(" (headers: {})", names.join(", ")));
                }
                line
            }
        }
    }
}

fn shell_line(command: &str, args: &[String]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(|word| {
            shlex::try_quote(word)
                .map_or_else(|_| format!("{word:?}"), |quoted| quoted.into_owned())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A server list that cannot be used: a usage error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    /// The file is not the expected JSON.
    #[error("--mcp-config {path}: {problem}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// One entry of the file is wrong.
    #[error("--mcp-config {path}: server '{name}': {problem}")]
    Entry {
        /// The file.
        path: String,
        /// The server's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// A `--mcp` value is wrong.
    #[error("--mcp '{value}': {problem}")]
    Flag {
        /// The value as given.
        value: String,
        /// What is wrong.
        problem: String,
    },
    /// Two servers with one name.
    #[error(
        "MCP server '{name}' is named twice ({first} and {second}); give each a name of its own"
    )]
    Twice {
        /// The name.
        name: String,
        /// Where it was named first.
        first: String,
        /// Where again.
        second: String,
    },
}

/// The longest server name: with `mcp__` and `__`, a tool name still has
/// room within the providers' 64 characters.
pub const MAX_NAME_CHARS: usize = 32;

/// Checks a server name: ASCII letters, digits, `-` and `_`, without `__`
/// (the separator in `mcp__NAME__TOOL`), at most [`MAX_NAME_CHARS`].
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the server name is empty".to_owned());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(format!(
            "the server name '{}' holds {bad:?}; use letters, digits, - and _",
            name.escape_debug()
        ));
    }
    if name.contains("__") {
        return Err(format!(
            "the server name '{name}' holds \"__\", the separator of mcp__NAME__TOOL"
        ));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "the server name '{name}' is longer than {MAX_NAME_CHARS} characters"
        ));
    }
    Ok(())
}

/// Parses one `--mcp NAME=COMMAND [ARGS]` value; `${VAR}` is expanded in
/// the words as in the config file.
pub fn parse_flag(
    value: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerSpec, McpConfigError> {
    let error = |problem: String| McpConfigError::Flag {
        value: value.to_owned(),
        problem,
    };
    let (name, line) = value
        .split_once('=')
        .ok_or_else(|| error("expected NAME=COMMAND [ARGS]".to_owned()))?;
    let name = name.trim();
    check_name(name).map_err(error)?;
    let words = shlex::split(line).ok_or_else(|| {
        error("the command line has an unclosed quote or a trailing \\".to_owned())
    })?;
    let mut words = words
        .into_iter()
        .map(|word| expand(&word, lookup))
        .collect::<Result<Vec<_>, _>>()
        .map_err(error)?
        .into_iter();
    let command = words
        .next()
        .filter(|command| !command.is_empty())
        .ok_or_else(|| error("no command after NAME=".to_owned()))?;
    Ok(ServerSpec {
        name: name.to_owned(),
        transport: Transport::Stdio {
            command,
            args: words.collect(),
            env: BTreeMap::new(),
        },
        origin: "--mcp".to_owned(),
    })
}

/// Parses the text of an `--mcp-config` file read from `path`.
pub fn parse_file(
    path: &Path,
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerSpec>, McpConfigError> {
    let shown = path.display().to_string();
    let file_error = |problem: String| McpConfigError::File {
        path: shown.clone(),
        problem,
    };
    let value: Value =
        serde_json::from_str(text).map_err(|error| file_error(format!("not JSON: {error}")))?;
    let Value::Object(top) = value else {
        return Err(file_error(
            "expected a JSON object with \"mcpServers\"".to_owned(),
        ));
    };
    let servers = match top.get("mcpServers") {
        Some(Value::Object(servers)) => servers,
        Some(_) => {
            return Err(file_error(
                "\"mcpServers\" must be an object of servers by name".to_owned(),
            ));
        }
        None => return Err(file_error("no \"mcpServers\" object".to_owned())),
    };
    let mut specs = Vec::new();
    for (name, entry) in servers {
        let entry_error = |problem: String| McpConfigError::Entry {
            path: shown.clone(),
            name: name.clone(),
            problem,
        };
        check_name(name).map_err(entry_error)?;
        let transport = parse_entry(entry, lookup).map_err(entry_error)?;
        specs.push(ServerSpec {
            name: name.clone(),
            transport,
            origin: shown.clone(),
        });
    }
    Ok(specs)
}

/// Puts the file's servers and the flags' together; a name used twice is
/// refused.
pub fn merge(
    from_file: Vec<ServerSpec>,
    from_flags: Vec<ServerSpec>,
) -> Result<Vec<ServerSpec>, McpConfigError> {
    let mut all: Vec<ServerSpec> = Vec::new();
    for spec in from_file.into_iter().chain(from_flags) {
        if let Some(first) = all.iter().find(|known| known.name == spec.name) {
            return Err(McpConfigError::Twice {
                name: spec.name.clone(),
                first: first.origin.clone(),
                second: spec.origin.clone(),
            });
        }
        all.push(spec);
    }
    Ok(all)
}

const STDIO_KEYS: [&str; 4] = ["command", "args", "env", "type"];
const HTTP_KEYS: [&str; 3] = ["url", "headers", "type"];

fn parse_entry(
    entry: &Value,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Transport, String> {
    let Value::Object(entry) = entry else {
        return Err("expected an object with \"command\" or \"url\"".to_owned());
    };
    match entry.get("type").map(|kind| kind.as_str()) {
        None | Some(Some("stdio" | "http" | "streamable-http" | "streamableHttp")) => {}
        Some(Some("sse")) => {
            return Err(
                "the legacy SSE transport is not supported; use a streamable-HTTP URL".to_owned(),
            );
        }
        Some(other) => {
            return Err(format!(
                "unknown \"type\" {}; use stdio or http",
                other.map_or_else(|| "(not a string)".to_owned(), |kind| format!("'{kind}'"))
            ));
        }
    }
    let expand_all = |text: &str| expand(text, lookup);
    match (entry.get("command"), entry.get("url")) {
        (Some(_), Some(_)) => Err("give \"command\" or \"url\", not both".to_owned()),
        (None, None) => {
            Err("needs \"command\" (a stdio server) or \"url\" (streamable HTTP)".to_owned())
        }
        (Some(command), None) => {
            check_keys(entry, &STDIO_KEYS)?;
            let command = command
                .as_str()
                .filter(|command| !command.is_empty())
                .ok_or("\"command\" must be a non-empty string")?;
            let args = match entry.get("args") {
                None => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| {
                        item.as_str()
                            .ok_or("\"args\" must be a list of strings".to_owned())
                            .and_then(expand_all)
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("\"args\" must be a list of strings".to_owned()),
            };
            Ok(Transport::Stdio {
                command: expand_all(command)?,
                args,
                env: string_map(entry.get("env"), "env", lookup)?,
            })
        }
        (None, Some(url)) => {
            check_keys(entry, &HTTP_KEYS)?;
            let url = expand_all(url.as_str().ok_or("\"url\" must be a string")?)?;
            let parsed = reqwest::Url::parse(&url)
                .map_err(|error| format!("invalid \"url\" '{url}': {error}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!(
                    "invalid \"url\" '{url}': it must be http:// or https://"
                ));
            }
            let headers = string_map(entry.get("headers"), "headers", lookup)?;
            for (name, value) in &headers {
                reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("header name '{}' is not valid", name.escape_debug()))?;
                reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                    format!("the value of header '{name}' holds a character a header cannot carry")
                })?;
            }
            Ok(Transport::Http { url, headers })
        }
    }
}

fn check_keys(entry: &Map<String, Value>, known: &[&str]) -> Result<(), String> {
    match entry.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(format!(
            "unknown key \"{}\" (this kind of server takes {})",
            key.escape_debug(),
            known.join(", ")
        )),
        None => Ok(()),
    }
}

fn string_map(
    value: Option<&Value>,
    what: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, String> {
    let not_strings = || format!("\"{what}\" must be an object of strings");
    match value {
        None => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(key, value)| {
                let value = value.as_str().ok_or_else(not_strings)?;
                Ok((key.clone(), expand(value, lookup)?))
            })
            .collect(),
        Some(_) => Err(not_strings()),
    }
}

/// Expands `${VAR}` and `${VAR:-default}`; a variable that is unset
/// without a default is an error naming it. `$` alone stays as it is.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("'${{' without a closing '}}' in '{text}'"))?;
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("'${{{inner}}}' is not a variable name"));
        }
        match (lookup(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("${{{name}}} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
