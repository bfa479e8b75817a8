use super::resolve::limits::parse_timeout;
use super::resolve::tools::parse_tools;
use super::*;
use crate::config::file::ConfigFile;
use crate::config::input::FILE_LIMIT;
use crate::config::layers::Environment;
use crate::config::layers::parse_run;
use crate::render::format::{EventsFormat, Terminal};
use leash_protocol::secret::ApiKey;
use leash_provider::{HttpSettings, catalog};
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

fn resolve_with(args: &[&str], vars: &[(&str, &str)]) -> Result<RunPlan, ConfigError> {
    resolve_layered(args, vars, None, false)
}

/// Resolves `args` over `vars`, of which `dotenv` came from `.env`.
fn resolve_dotenv(
    args: &[&str],
    vars: &[(&str, &str)],
    dotenv: &[&str],
    file: Option<&str>,
) -> Result<RunPlan, ConfigError> {
    let env = Environment::from_pairs(vars, dotenv);
    resolve_in(args, &env, file, false)
}

/// Resolves `args` over the variables `vars` and a config file `file`.
fn resolve_layered(
    args: &[&str],
    vars: &[(&str, &str)],
    file: Option<&str>,
    stderr_is_terminal: bool,
) -> Result<RunPlan, ConfigError> {
    resolve_in(
        args,
        &Environment::from_pairs(vars, &[]),
        file,
        stderr_is_terminal,
    )
}

fn resolve_in(
    args: &[&str],
    env: &Environment,
    file: Option<&str>,
    stderr_is_terminal: bool,
) -> Result<RunPlan, ConfigError> {
    let (run, file) = layered(args, env, file);
    resolve(
        run.cli,
        &Inputs {
            origins: &run.origins,
            env,
            file: file.as_ref(),
            stderr_is_terminal,
        },
    )
}

/// `args` parsed over `env` and a config file `file`, before resolving.
fn layered(
    args: &[&str],
    env: &Environment,
    file: Option<&str>,
) -> (crate::config::layers::ParsedRun, Option<ConfigFile>) {
    let file = file.map(|text| ConfigFile::parse(Path::new("/c/config.toml"), text).unwrap());
    let argv: Vec<OsString> = std::iter::once("leash")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    let run = parse_run(
        &crate::cli::RunArgs::parse(argv).unwrap(),
        env,
        file.as_ref(),
    )
    .unwrap();
    (run, file)
}

fn settings(config: &RunPlan) -> &HttpSettings {
    config.provider.http().expect("faux has no settings")
}

#[test]
fn keys_come_from_the_environment_before_the_config_file() {
    let file = "api-key = \"sk-file\"\nopenai-api-key = \"sk-file-openai\"\n";
    let key = |vars: &[(&str, &str)], file: Option<&str>| {
        let config = resolve_layered(&["hi"], vars, file, false).unwrap();
        settings(&config)
            .api_key
            .as_ref()
            .map(|k| k.expose().to_owned())
    };
    let both = [
        ("LEASH_API_KEY", "sk-leash"),
        ("OPENAI_API_KEY", "sk-openai"),
    ];
    assert_eq!(key(&both, Some(file)).as_deref(), Some("sk-leash"));
    assert_eq!(key(&both[1..], Some(file)).as_deref(), Some("sk-openai"));
    assert_eq!(key(&[], Some(file)).as_deref(), Some("sk-file"));
    assert_eq!(
        key(&[], Some("openai-api-key = \"sk-file-openai\"")).as_deref(),
        Some("sk-file-openai")
    );
}

#[test]
fn base_urls_go_flag_then_variable_then_file_then_default() {
    // The file's base URL gets the environment's key only with its consent.
    let file = "base-url = \"http://file.example\"\nopenai-base-url = \"http://file-openai.example\"\ntrust-base-url = true\n";
    let vars = [("OPENAI_API_KEY", "k")];
    let url = |args: &[&str], vars: &[(&str, &str)], file: Option<&str>| {
        settings(&resolve_layered(args, vars, file, false).unwrap())
            .base_url
            .clone()
    };
    let with_var = [vars[0], ("OPENAI_BASE_URL", "http://var.example")];
    assert_eq!(
        url(
            &["--base-url", "http://flag.example", "hi"],
            &with_var,
            Some(file)
        ),
        "http://flag.example"
    );
    assert_eq!(url(&["hi"], &with_var, Some(file)), "http://var.example");
    assert_eq!(url(&["hi"], &vars, Some(file)), "http://file.example");
    assert_eq!(
        url(
            &["hi"],
            &vars,
            Some("openai-base-url = \"http://file-openai.example\"\ntrust-base-url = true")
        ),
        "http://file-openai.example"
    );
    assert_eq!(url(&["hi"], &vars, None), catalog::OPENAI.default_base_url);
}

#[test]
fn the_config_file_sets_what_flags_leave_at_the_default() {
    let file =
        "model = \"claude-haiku-4-5\"\nmax-turns = 7\ntimeout = \"2m\"\nevents = \"jsonl\"\n";
    let vars = [("ANTHROPIC_API_KEY", "k")];
    let config = resolve_layered(&["--max-turns", "3", "hi"], &vars, Some(file), false).unwrap();
    assert_eq!(config.model, "claude-haiku-4-5");
    assert!(matches!(config.provider, ProviderConfig::Anthropic(_)));
    assert_eq!(config.limits.max_turns, 3);
    assert_eq!(config.timeout, Some(Duration::from_secs(120)));
    assert_eq!(config.events, EventsFormat::Jsonl);
    // -q still means no events.
    let config = resolve_layered(&["-q", "hi"], &vars, Some(file), false).unwrap();
    assert_eq!(config.events, EventsFormat::None);
}

#[test]
fn a_system_file_flag_beats_a_system_text_from_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("system.md");
    std::fs::write(&path, "from the file").unwrap();
    let args = [
        "--system-file",
        path.to_str().unwrap(),
        "--base-url",
        "http://localhost:1",
        "hi",
    ];
    let config = resolve_layered(&args, &[], Some("system = \"from config\""), false).unwrap();
    assert_eq!(config.system, "from the file");
}

#[test]
fn the_indicator_and_the_stream_need_a_terminal() {
    let local = ["--base-url", "http://localhost:1", "--stream", "hi"];
    let on_tty = resolve_layered(&local, &[], None, true).unwrap().terminal;
    assert_eq!(
        on_tty,
        Terminal {
            color: true,
            indicator: true,
            stream: true
        }
    );
    let piped = resolve_layered(&local, &[], None, false).unwrap().terminal;
    assert_eq!(piped, Terminal::default());
    let no_color = resolve_layered(&local, &[("NO_COLOR", "1")], None, true).unwrap();
    assert!(!no_color.terminal.color && no_color.terminal.indicator);
    let jsonl = [
        "--events",
        "jsonl",
        "--base-url",
        "http://localhost:1",
        "--stream",
        "hi",
    ];
    assert_eq!(
        resolve_layered(&jsonl, &[], None, true).unwrap().terminal,
        Terminal::default()
    );
    let quiet = ["-q", "--base-url", "http://localhost:1", "--stream", "hi"];
    let quiet = resolve_layered(&quiet, &[], None, true).unwrap().terminal;
    assert!(quiet.stream && !quiet.indicator && !quiet.color);
}

#[test]
fn timeouts_parse_in_words_numbers_and_zero() {
    assert_eq!(parse_timeout("30s").unwrap(), Some(Duration::from_secs(30)));
    assert_eq!(
        parse_timeout("500ms").unwrap(),
        Some(Duration::from_millis(500))
    );
    assert_eq!(parse_timeout("2m").unwrap(), Some(Duration::from_secs(120)));
    assert_eq!(parse_timeout("7").unwrap(), Some(Duration::from_secs(7)));
    assert_eq!(parse_timeout("0").unwrap(), None);
    assert!(parse_timeout("soon").is_err());
}

#[test]
fn tools_parse_with_none_and_reject_unknown_names() {
    assert_eq!(parse_tools("none").unwrap(), vec![]);
    assert_eq!(
        parse_tools("list_dir, read_file,list_dir").unwrap(),
        vec![ToolName::ListDir, ToolName::ReadFile]
    );
    assert_eq!(
        parse_tools("read_file,list_dir,grep,find").unwrap(),
        vec![
            ToolName::ReadFile,
            ToolName::ListDir,
            ToolName::Grep,
            ToolName::Find
        ]
    );
    let error = parse_tools("read_file,shell").unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown tool 'shell' in --tools (known: read_file, list_dir, grep, find, git, write_file, edit_file, bash with --allow-exec, or none)"
    );
    // `bash` is a name; only `--allow-exec` offers it (resolve checks).
    assert_eq!(parse_tools("bash").unwrap(), [ToolName::Bash]);
}

#[test]
fn write_tools_come_only_from_allow_write_or_their_names() {
    // A root outside any git work tree, so `git` does not join the default.
    let root = tempfile::tempdir().unwrap();
    let root = root.path().to_str().unwrap().to_owned();
    let names = |args: &[&str], vars: &[(&str, &str)]| {
        let mut all = vec!["--root", root.as_str()];
        all.extend_from_slice(args);
        all.push("hi");
        let mut vars = vars.to_vec();
        vars.push(("OPENAI_API_KEY", "sk-write-tools"));
        resolve_with(&all, &vars)
            .unwrap()
            .tools
            .map(|tools| tools.names)
            .unwrap_or_default()
    };
    let readers = vec![
        ToolName::ReadFile,
        ToolName::ListDir,
        ToolName::Grep,
        ToolName::Find,
    ];
    assert_eq!(names(&[], &[]), readers);
    let mut writers = readers.clone();
    writers.extend([ToolName::WriteFile, ToolName::EditFile]);
    assert_eq!(names(&["--allow-write"], &[]), writers);
    assert_eq!(
        names(&["--tools", "edit_file,read_file", "--allow-write"], &[]),
        [ToolName::EditFile, ToolName::ReadFile, ToolName::WriteFile]
    );
    assert_eq!(
        names(&["--tools", "none", "--allow-write"], &[]),
        [ToolName::WriteFile, ToolName::EditFile]
    );
    assert_eq!(names(&["--tools", "none"], &[]), []);
}

#[test]
fn a_missing_openai_key_is_a_usage_error_naming_the_variable() {
    let error = resolve_with(&["hi"], &[]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "OPENAI_API_KEY is not set (needed by --provider openai); set it in the environment or in .env, \
         or try leash offline without a key: leash --provider faux \"hi\""
    );
}

#[test]
fn a_missing_key_in_github_actions_names_the_steps_env_and_the_input() {
    let error = resolve_with(
        &["--provider", "anthropic", "hi"],
        &[("GITHUB_ACTIONS", "true")],
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains(
            "in GitHub Actions set it in the step's env: \
             (ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}) \
             or in the leash Action's anthropic-api-key input"
        ),
        "{error}"
    );
    assert!(!error.contains(".env"), "{error}");
    // Only the runner's own variable counts, never a `.env`'s.
    let error = resolve_dotenv(
        &["hi"],
        &[("GITHUB_ACTIONS", "true")],
        &["GITHUB_ACTIONS"],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("in the environment or in .env"), "{error}");
}

#[test]
fn a_loopback_server_may_go_without_a_key() {
    let config = resolve_with(&["--base-url", "http://127.0.0.1:11434/v1", "hi"], &[]).unwrap();
    let ProviderConfig::OpenAi(settings) = config.provider else {
        panic!("not openai");
    };
    assert!(settings.api_key.is_none());
}

#[test]
fn a_claude_model_picks_anthropic_and_its_key() {
    let config = resolve_with(
        &["-m", "claude-haiku-4-5", "hi"],
        &[("ANTHROPIC_API_KEY", "sk-ant-secret")],
    )
    .unwrap();
    let ProviderConfig::Anthropic(settings) = &config.provider else {
        panic!("not anthropic");
    };
    assert_eq!(settings.base_url, catalog::ANTHROPIC.default_base_url);
    assert_eq!(
        settings.api_key.as_ref().map(ApiKey::expose),
        Some("sk-ant-secret")
    );
    // The key never shows in the config's debug output.
    assert!(!format!("{config:?}").contains("sk-ant-secret"));
}

#[test]
fn base_urls_come_from_the_flag_then_leash_then_the_provider_variable() {
    let vars = [
        ("OPENAI_API_KEY", "k"),
        ("OPENAI_BASE_URL", "http://provider.example/v1"),
    ];
    let config = resolve_with(&["hi"], &vars).unwrap();
    let ProviderConfig::OpenAi(settings) = config.provider else {
        panic!()
    };
    assert_eq!(settings.base_url, "http://provider.example/v1");
    let config = resolve_with(&["--base-url", "http://flag.example", "hi"], &vars).unwrap();
    let ProviderConfig::OpenAi(settings) = config.provider else {
        panic!()
    };
    assert_eq!(settings.base_url, "http://flag.example");
}

#[test]
fn faux_without_a_script_plays_the_builtin_reply() {
    let config = resolve_with(&["--provider", "faux", "hi"], &[]).unwrap();
    let ProviderConfig::Faux(script) = config.provider else {
        panic!("not faux");
    };
    assert_eq!(script, leash_faux::Script::builtin());
}

#[test]
fn quiet_means_no_events() {
    let config = resolve_with(&["-q", "--base-url", "http://localhost:1", "hi"], &[]).unwrap();
    assert_eq!(config.events, EventsFormat::None);
}

fn key_of(config: &RunPlan) -> Option<String> {
    settings(config)
        .api_key
        .as_ref()
        .map(|k| k.expose().to_owned())
}

#[test]
fn a_dotenv_key_never_beats_an_exported_key_of_another_name() {
    let vars = [("LEASH_API_KEY", "sk-dotenv"), ("OPENAI_API_KEY", "sk-env")];
    let config = resolve_dotenv(&["hi"], &vars, &["LEASH_API_KEY"], None).unwrap();
    assert_eq!(key_of(&config).as_deref(), Some("sk-env"));
    // Within one layer, LEASH_API_KEY still comes first.
    let config = resolve_dotenv(&["hi"], &vars, &[], None).unwrap();
    assert_eq!(key_of(&config).as_deref(), Some("sk-dotenv"));
}

#[test]
fn a_dotenv_base_url_never_beats_an_exported_one_of_another_name() {
    let vars = [
        ("OPENAI_API_KEY", "sk-env"),
        ("OPENAI_BASE_URL", "http://env.example/v1"),
    ];
    // The environment's URL is above a config-file URL, even one set
    // by the flag's own name there.
    let config = resolve_dotenv(
        &["hi"],
        &vars,
        &[],
        Some("base-url = \"http://file.example\""),
    )
    .unwrap();
    assert_eq!(settings(&config).base_url, "http://env.example/v1");
}

#[test]
fn a_key_never_goes_to_a_base_url_from_a_lower_layer() {
    let evil = [
        ("OPENAI_API_KEY", "sk-env"),
        ("OPENAI_BASE_URL", "http://evil.example"),
    ];
    // `.env` supplies the URL, the environment the key: refused.
    let error = resolve_dotenv(&["hi"], &evil, &["OPENAI_BASE_URL"], None).unwrap_err();
    assert_eq!(
        error.to_string(),
        "refusing to send the key from env OPENAI_API_KEY to the base URL http://evil.example \
         from .env OPENAI_BASE_URL: a lower layer than the key's may not redirect it; pass \
         --base-url on the command line, or --trust-base-url to allow it"
    );
    assert!(!error.to_string().contains("sk-env"));
    // The user says so on the command line.
    let config = resolve_dotenv(
        &["--trust-base-url", "hi"],
        &evil,
        &["OPENAI_BASE_URL"],
        None,
    )
    .unwrap();
    assert_eq!(settings(&config).base_url, "http://evil.example");
    // A .env that supplies both sends its own key where it likes.
    let both = ["OPENAI_API_KEY", "OPENAI_BASE_URL"];
    assert!(resolve_dotenv(&["hi"], &evil, &both, None).is_ok());
    // A .env never redirects the config file's key either, even
    // though .env is the higher layer.
    let file_key = [("OPENAI_BASE_URL", "http://evil.example")];
    let error = resolve_dotenv(
        &["hi"],
        &file_key,
        &["OPENAI_BASE_URL"],
        Some("api-key = \"sk-file\""),
    )
    .unwrap_err();
    assert!(matches!(error, ConfigError::KeyRedirect(_)), "{error}");
    // The config file's consent covers the config file's URL only.
    let trusting = "trust-base-url = true\napi-key = \"sk-file\"";
    assert!(resolve_dotenv(&["hi"], &file_key, &["OPENAI_BASE_URL"], Some(trusting)).is_err());
    let file_url = "base-url = \"http://mine.example\"\ntrust-base-url = true";
    assert!(resolve_dotenv(&["hi"], &[("OPENAI_API_KEY", "k")], &[], Some(file_url)).is_ok());
    // The provider's default is never a redirect.
    assert!(resolve_dotenv(&["hi"], &[("OPENAI_API_KEY", "k")], &[], None).is_ok());
}

#[test]
fn a_control_character_in_the_key_is_named_as_such() {
    let error = resolve_with(&["hi"], &[("OPENAI_API_KEY", "sk-a\u{1b}b")]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the key from env OPENAI_API_KEY holds a control character (U+001B); \
         check for a stray newline or escape in it"
    );
}

#[test]
fn a_bare_number_timeout_is_seconds_even_with_a_fraction() {
    assert_eq!(
        parse_timeout("0.5").unwrap(),
        Some(Duration::from_millis(500))
    );
    assert_eq!(
        parse_timeout("1.25").unwrap(),
        Some(Duration::from_millis(1250))
    );
    assert!(parse_timeout("-1").is_err());
    assert!(parse_timeout("NaN").is_err());
    assert!(parse_timeout("1e400").is_err());
}

#[test]
fn a_bad_config_file_value_names_the_file_and_the_key() {
    let local = ["--base-url", "http://localhost:1", "hi"];
    let error = resolve_layered(&local, &[], Some("timeout = \"forever\""), false)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("config file /c/config.toml: timeout: invalid --timeout 'forever'"),
        "{error}"
    );
    let error = resolve_layered(&local, &[], Some("tools = [\"shell\"]"), false)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("config file /c/config.toml: tools: unknown tool 'shell'"),
        "{error}"
    );
    let error = resolve_layered(&local, &[], Some("tools = [\"bash\"]"), false)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(
            "config file /c/config.toml: tools: --tools names bash, which leash offers only with --allow-exec"
        ),
        "{error}"
    );
}

#[test]
fn every_file_input_is_bounded_and_no_device() {
    let local = ["--base-url", "http://localhost:1"];
    let dir = tempfile::tempdir().unwrap();
    let large = dir.path().join("large");
    std::fs::File::create(&large)
        .unwrap()
        .set_len(FILE_LIMIT + 1)
        .unwrap();
    let large = large.to_str().unwrap();
    for flag in ["--system-file", "--output-schema"] {
        let args = [local[0], local[1], flag, large, "hi"];
        let error = resolve_with(&args, &[]).unwrap_err().to_string();
        assert_eq!(
            error,
            format!("cannot read {flag} {large}: it is larger than {FILE_LIMIT} bytes")
        );
        let args = [local[0], local[1], flag, "/dev/zero", "hi"];
        let error = resolve_with(&args, &[]).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "cannot read {flag} /dev/zero: it is a device, not a regular file"
            )),
            "{error}"
        );
    }
    let error = resolve_with(&["--faux-script", large, "hi"], &[])
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!("cannot read --faux-script {large}: it is larger than {FILE_LIMIT} bytes")
    );
}

#[test]
fn the_root_and_output_paths_are_checked_before_the_run() {
    let local = ["--base-url", "http://localhost:1"];
    let error = resolve_with(&[local[0], local[1], "--root", "/nonexistent", "hi"], &[])
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("invalid --root /nonexistent: "),
        "{error}"
    );
    // Without tools the root is not used.
    let args = [
        local[0],
        local[1],
        "--tools",
        "none",
        "--root",
        "/nonexistent",
        "hi",
    ];
    assert!(resolve_with(&args, &[]).is_ok());
    for flag in ["--transcript", "--output-last-message"] {
        let args = [local[0], local[1], flag, "/nonexistent/t.jsonl", "hi"];
        let error = resolve_with(&args, &[]).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "cannot write {flag} /nonexistent/t.jsonl: its directory /nonexistent: "
            )),
            "{error}"
        );
        let args = [local[0], local[1], flag, "/tmp", "hi"];
        let error = resolve_with(&args, &[]).unwrap_err().to_string();
        assert_eq!(
            error,
            format!("cannot write {flag} /tmp: it is a directory")
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept.txt");
    std::fs::write(&kept, "old").unwrap();
    let args = [
        local[0],
        local[1],
        "--transcript",
        kept.to_str().unwrap(),
        "hi",
    ];
    assert!(resolve_with(&args, &[]).is_ok());
    // Checking created and truncated nothing.
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "old");
    let args = [local[0], local[1], "--transcript", "/dev/null", "hi"];
    assert!(resolve_with(&args, &[]).is_ok());
}

#[test]
fn system_and_system_file_on_one_command_line_are_refused() {
    let args = [
        "--base-url",
        "http://localhost:1",
        "-s",
        "x",
        "--system-file",
        "y",
        "hi",
    ];
    let error = resolve_with(&args, &[]).unwrap_err();
    assert!(matches!(error, ConfigError::SystemTwice));
}

#[test]
fn the_plan_is_complete_when_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, r#"{"type":"object"}"#).unwrap();
    let schema = schema.display().to_string();
    let plan = resolve_with(
        &["--timeout", "30s", "--output-schema", &schema, "hi"],
        &[("OPENAI_API_KEY", "k")],
    )
    .unwrap();
    // The request options hold the deadline and the schema at once: no
    // placeholder is left for the runner to fill in.
    let http = settings(&plan);
    assert!(plan.deadline.is_some());
    assert_eq!(http.deadline, plan.deadline);
    assert_eq!(
        http.output_schema,
        Some(serde_json::json!({"type": "object"}))
    );
    assert!(plan.limits.output_schema.is_some());
    // The file tools come with their root, opened once.
    let tools = plan.tools.as_ref().unwrap();
    assert!(!tools.names.is_empty());
    let plan = resolve_with(
        &["--tools", "none", "--timeout", "0", "hi"],
        &[("OPENAI_API_KEY", "k")],
    )
    .unwrap();
    assert!(plan.tools.is_none() && plan.deadline.is_none());
}

#[test]
fn caching_is_on_unless_no_cache_and_the_cache_key_is_passed_on() {
    let key = [("OPENAI_API_KEY", "sk-x")];
    let plan = resolve_with(&["hi"], &key).unwrap();
    assert!(settings(&plan).cache);
    assert_eq!(settings(&plan).prompt_cache_key, None);
    let plan = resolve_with(&["--no-cache", "--prompt-cache-key", "k1", "hi"], &key).unwrap();
    assert!(!settings(&plan).cache);
    assert_eq!(settings(&plan).prompt_cache_key.as_deref(), Some("k1"));
    let file = "no-cache = true\nprompt-cache-key = \"k3\"\n";
    let plan = resolve_layered(&["hi"], &key, Some(file), false).unwrap();
    assert!(!settings(&plan).cache);
    assert_eq!(settings(&plan).prompt_cache_key.as_deref(), Some("k3"));
}

#[test]
fn the_price_goes_flag_then_the_models_file_entry_then_the_files_price() {
    let key = [("OPENAI_API_KEY", "sk-x")];
    let file = "price = \"1,2\"\nmax-cost = 0.25\n[prices]\n\"gpt-x\" = \"2,8,0.5\"\n";
    let price = |args: &[&str], vars: &[(&str, &str)]| {
        let plan = resolve_layered(args, vars, Some(file), false).unwrap();
        (
            plan.limits.price.map(|p| p.to_string()),
            plan.limits.max_cost,
        )
    };
    let (for_model, budget) = price(&["-m", "gpt-x", "hi"], &key);
    assert_eq!(
        for_model.as_deref(),
        Some("2.000000,8.000000,0.500000,2.000000")
    );
    assert_eq!(
        budget,
        Some(crate::policy::cost::Cost::parse_usd("0.25").unwrap())
    );
    let (general, _) = price(&["-m", "gpt-y", "hi"], &key);
    assert_eq!(
        general.as_deref(),
        Some("1.000000,2.000000,1.000000,1.000000")
    );
    let (flag, _) = price(&["-m", "gpt-x", "--price", "9,9", "hi"], &key);
    assert_eq!(flag.as_deref(), Some("9.000000,9.000000,9.000000,9.000000"));
}

#[test]
fn max_cost_without_a_price_and_bad_prices_are_usage_errors() {
    let key = [("OPENAI_API_KEY", "sk-x")];
    let error = resolve_with(&["--max-cost", "1", "hi"], &key).unwrap_err();
    assert!(matches!(error, ConfigError::MaxCostWithoutPrice), "{error}");
    assert!(error.to_string().starts_with("--max-cost needs a price"));
    let error = resolve_with(&["--price", "1", "hi"], &key).unwrap_err();
    assert!(
        error.to_string().starts_with("invalid price '1'"),
        "{error}"
    );
    let error = resolve_with(&["--price", "1,2", "--max-cost", "1e3", "hi"], &key).unwrap_err();
    assert!(
        error.to_string().starts_with("invalid --max-cost '1e3'"),
        "{error}"
    );
    let error = resolve_layered(&["hi"], &key, Some("price = \"1\"\n"), false)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("config file /c/config.toml: price: invalid price '1'"),
        "{error}"
    );
}

#[test]
fn api_responses_picks_the_responses_api_from_the_flag_or_the_file() {
    let key = [("OPENAI_API_KEY", "sk-x")];
    let default = resolve_with(&["hi"], &key).unwrap();
    assert!(matches!(default.provider, ProviderConfig::OpenAi(_)));
    let flag = resolve_with(&["--api", "responses", "hi"], &key).unwrap();
    assert!(matches!(flag.provider, ProviderConfig::OpenAiResponses(_)));
    assert_eq!(flag.provider.name(), "openai");
    let file = resolve_layered(&["hi"], &key, Some("api = \"responses\"\n"), false).unwrap();
    assert!(matches!(file.provider, ProviderConfig::OpenAiResponses(_)));
}

#[test]
fn api_with_another_provider_is_a_usage_error_naming_its_source() {
    let anthropic = [("ANTHROPIC_API_KEY", "sk-ant")];
    let error =
        resolve_with(&["--api", "responses", "-m", "claude-x", "hi"], &anthropic).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("--provider anthropic has one API"),
        "{error}"
    );
    let error = resolve_with(
        &["--api", "chat", "--provider", "anthropic", "hi"],
        &anthropic,
    )
    .unwrap_err();
    assert!(error.to_string().starts_with("--api chooses"), "{error}");
    let error = resolve_layered(
        &["--provider", "anthropic", "hi"],
        &anthropic,
        Some("api = \"responses\"\n"),
        false,
    )
    .unwrap_err();
    assert!(error.to_string().contains("config file"), "{error}");
}

#[test]
fn mcp_servers_come_from_the_file_the_flags_and_their_layers() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp.json");
    std::fs::write(
        &file,
        r#"{"mcpServers": {"fs": {"command": "srv", "env": {"T": "${TOKEN}"}}}}"#,
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let local = ["--base-url", "http://127.0.0.1:9/v1"];
    let run = |args: &[&str], vars: &[(&str, &str)], config: Option<&str>| {
        resolve_layered(&[&local[..], args, &["hi"]].concat(), vars, config, false)
    };
    let config = format!("mcp-config = \"{file}\"\nmcp-timeout = 3\n");
    let plan = run(
        &["--mcp", "x=run 'me now'"],
        &[("TOKEN", "t0k")],
        Some(&config),
    )
    .unwrap();
    let names: Vec<&str> = plan.mcp.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fs", "x"]);
    assert_eq!(plan.mcp.timeout, Duration::from_secs(3));
    assert_eq!(
        plan.mcp.servers[1].transport.summary(),
        "stdio: run 'me now'"
    );
    let default = run(&[], &[], None).unwrap();
    assert!(default.mcp.servers.is_empty());
    assert_eq!(default.mcp.timeout, Duration::from_secs(10));

    let error = |args: &[&str], vars: &[(&str, &str)], config: Option<&str>| {
        run(args, vars, config).unwrap_err().to_string()
    };
    let soon = error(&["--mcp-timeout", "soon"], &[], None);
    assert!(soon.starts_with("invalid --mcp-timeout 'soon'"), "{soon}");
    assert_eq!(
        error(&[], &[], Some("mcp-config = \"/dev/zero\"\n")),
        "config file /c/config.toml: mcp-config: cannot read --mcp-config /dev/zero: \
         it is a device, not a regular file (of the devices only /dev/null is read, as empty)"
    );
    let twice = error(
        &["--mcp-config", file, "--mcp", "fs=other"],
        &[("TOKEN", "t")],
        None,
    );
    assert!(twice.contains("'fs' is named twice"), "{twice}");
    let unset = error(&["--mcp-config", file], &[], None);
    assert!(
        unset.contains("server 'fs': ${TOKEN} is not set"),
        "{unset}"
    );
}

#[test]
#[should_panic(expected = "`max_turn` is no flag id of the run's parser")]
fn a_flag_id_the_parser_does_not_have_is_caught_not_read_as_unset() {
    let argv = vec![OsString::from("leash"), OsString::from("hi")];
    let env = Environment::from_pairs(&[], &[]);
    let run = parse_run(&crate::cli::RunArgs::parse(argv).unwrap(), &env, None).unwrap();
    assert!(run.origins.knows("max_turns"));
    let inputs = Inputs {
        origins: &run.origins,
        env: &env,
        file: None,
        stderr_is_terminal: false,
    };
    // A typo of `max_turns`: before the check it named no source at all.
    let _ = super::error::named_by_source(&inputs, "max_turn");
}

#[test]
fn the_wire_known_before_the_key_is_the_wire_the_run_sends_on() {
    use crate::config::precedence::choose_wire;
    let keys = [
        ("OPENAI_API_KEY", "sk-x"),
        ("ANTHROPIC_API_KEY", "sk-ant-x"),
    ];
    for (args, file) in [
        (&["hi"][..], None),
        (&["--api", "responses", "hi"][..], None),
        (&["-m", "gpt-5-mini", "hi"][..], None),
        (&["-m", "gpt-5-mini", "--api", "chat", "hi"][..], None),
        (&["hi"][..], Some("api = \"responses\"\n")),
        (&["--provider", "anthropic", "hi"][..], None),
        (
            &["--provider", "faux", "--faux-script", "/dev/null", "hi"][..],
            None,
        ),
    ] {
        let (run, _) = layered(args, &Environment::from_pairs(&keys, &[]), file);
        let provider = crate::config::precedence::choose_provider(&run.cli, &run.origins).0;
        let predicted = choose_wire(&run.cli, &run.origins, provider);
        let Ok(plan) = resolve_layered(args, &keys, file, false) else {
            // The faux script of /dev/null is empty: only its wire is checked.
            assert_eq!(predicted, crate::render::resume::Wire::Faux, "{args:?}");
            continue;
        };
        assert_eq!(predicted, plan.provider.wire(), "{args:?} {file:?}");
    }
}
