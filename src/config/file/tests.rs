//! The config file: its keys, kinds and errors.

use super::*;

fn parse(text: &str) -> Result<ConfigFile, ConfigFileError> {
    ConfigFile::parse(Path::new("/c/leash/config.toml"), text)
}

#[test]
fn the_location_prefers_an_absolute_xdg_config_home() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        }
    };
    assert_eq!(
        ConfigFile::location(&env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])),
        Some(PathBuf::from("/x/leash/config.toml"))
    );
    assert_eq!(
        ConfigFile::location(&env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")])),
        Some(PathBuf::from("/h/.config/leash/config.toml"))
    );
    assert_eq!(ConfigFile::location(&env(&[])), None);
}

#[test]
fn values_become_flag_text() {
    let file = parse(
        "model = \"gpt-4.1\"\nmax-turns = 8\ntemperature = 0.5\nstream = true\n\
         tools = [\"read_file\", \"list_dir\"]\napi-key = \"sk-1\"\n",
    )
    .unwrap();
    let values: Vec<(&str, &str)> = file.values().collect();
    assert_eq!(
        values,
        [
            ("api-key", "sk-1"),
            ("max-turns", "8"),
            ("model", "gpt-4.1"),
            ("stream", "true"),
            ("temperature", "0.5"),
            ("tools", "read_file,list_dir"),
        ]
    );
}

#[test]
fn unknown_keys_and_wrong_kinds_are_refused() {
    let error = parse("max_turns = 3").unwrap_err().to_string();
    assert!(
        error.starts_with(
            "config file /c/leash/config.toml: unknown key 'max_turns' (did you mean 'max-turns'?)"
        ),
        "{error}"
    );
    assert!(parse("prompt = \"hi\"").is_err());
    assert_eq!(
        parse("stream = \"yes\"").unwrap_err().to_string(),
        "config file /c/leash/config.toml: stream: must be true or false"
    );
    assert!(parse("api-key = 5").is_err());
    assert!(parse("[model]\nname = \"x\"").is_err());
}

#[test]
fn prices_are_a_table_of_checked_prices_by_model() {
    let file = parse(
        "price = \"1,2\"\nmax-cost = 0.5\n[prices]\n\"gpt-4.1\" = \"2,8,0.5\"\nclaude-x = \"3,15,0.3,3.75\"\n",
    )
    .unwrap();
    assert_eq!(file.price_for("gpt-4.1"), Some("2,8,0.5"));
    assert_eq!(file.price_for("claude-x"), Some("3,15,0.3,3.75"));
    assert_eq!(file.price_for("other"), None);
    assert_eq!(file.get("price"), Some("1,2"));
    assert_eq!(file.get("max-cost"), Some("0.5"));
    assert_eq!(
        parse("[prices]\nm = \"2\"\n").unwrap_err().to_string(),
        "config file /c/leash/config.toml: prices.\"m\": invalid price '2': 1 value where 2 to 4 \
         are expected (USD per million tokens: INPUT,OUTPUT[,CACHED_READ,CACHED_WRITE], e.g. 2,8 \
         or 3,15,0.3,3.75)"
    );
    assert!(parse("[prices]\nm = 2\n").is_err());
    assert!(parse("prices = \"2,8\"\n").is_err());
    assert!(parse("max-cost = \"0.5\"\n").is_err());
}

#[test]
fn repeatable_keys_keep_every_value_and_hooks_are_a_table() {
    let file = parse(
        "deny-tool = [\"read_file(path=**/*.{pem,key})\", \"grep\"]\n\
         allow-tool = \"read_*\"\nhook-timeout = \"2s\"\n\
         [hook]\nbefore-tool-call = [\"./a.sh\", \"sh -c 'exit 0'\"]\nfinish-turn = \"./gate\"\n",
    )
    .unwrap();
    assert_eq!(
        file.repeated("deny-tool"),
        ["read_file(path=**/*.{pem,key})", "grep"]
    );
    assert_eq!(file.repeated("allow-tool"), ["read_*"]);
    assert_eq!(
        file.repeated("hook"),
        [
            "before-tool-call=./a.sh",
            "before-tool-call=sh -c 'exit 0'",
            "finish-turn=./gate"
        ]
    );
    assert_eq!(file.get("hook-timeout"), Some("2s"));
    let list = parse("hook = [\"finish-turn=./x\"]").unwrap();
    assert_eq!(list.repeated("hook"), ["finish-turn=./x"]);
    let error = parse("[hook]\nfinish-turn = 5").unwrap_err().to_string();
    assert!(
        error.starts_with("config file /c/leash/config.toml: hook: must be a table"),
        "{error}"
    );
    assert!(parse("deny-tool = 5").is_err());
}

#[test]
fn a_syntax_error_names_its_line() {
    let error = parse("model = \"x\"\nmax-turns = = 3\n")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("config file /c/leash/config.toml: line 2: "),
        "{error}"
    );
    assert!(!error.contains('\n'), "{error}");
}

#[test]
fn every_flag_with_a_variable_is_a_key() {
    let keys = flag_keys();
    let expected = Cli::command()
        .get_arguments()
        .filter(|arg| arg.get_env().is_some())
        .count()
        - NOT_KEYS.len();
    assert_eq!(keys.len(), expected);
    assert!(keys.contains(&("stream".to_owned(), true)));
    assert!(keys.contains(&("max-turns".to_owned(), false)));
    assert!(!keys.iter().any(|(key, _)| key == "env-file"));
}

#[test]
fn a_value_of_the_wrong_type_is_refused_with_file_and_key() {
    assert_eq!(
        parse("max-turns = \"8\"").unwrap_err().to_string(),
        "config file /c/leash/config.toml: max-turns: must be a whole number, without quotes"
    );
    assert!(parse("temperature = \"0.2\"").is_err());
    assert!(parse("model = 5").is_err());
    assert!(parse("retries = 1.5").is_err());
    let file = parse("temperature = 1\ntimeout = 90\nmax-tokens-total = 5000\n").unwrap();
    assert_eq!(file.get("temperature"), Some("1"));
    assert_eq!(file.get("timeout"), Some("90"));
}

#[test]
fn a_duplicate_key_is_reported_at_its_own_line() {
    let error = parse("model = \"a\"\nretries = 1\n\nmodel = \"b\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("config file /c/leash/config.toml: line 4: "),
        "{error}"
    );
    assert!(
        error.ends_with("duplicate key 'model' (set once per file)"),
        "{error}"
    );
}

#[test]
fn a_device_or_too_large_config_file_is_refused_not_read_to_the_end() {
    let error = ConfigFile::load(Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "cannot read the config file /dev/zero: it is a device, not a regular file \
         (of the devices only /dev/null is read, as empty)"
    );
    let dir = tempfile::tempdir().unwrap();
    let large = dir.path().join("config.toml");
    std::fs::File::create(&large)
        .unwrap()
        .set_len(FILE_LIMIT + 1)
        .unwrap();
    let error = ConfigFile::load(&large).unwrap_err().to_string();
    assert!(
        error.ends_with(&format!(
            "config.toml: it is larger than {FILE_LIMIT} bytes"
        )),
        "{error}"
    );
    // `/dev/null` is how people say "none": an empty file.
    assert!(ConfigFile::load(Path::new("/dev/null")).unwrap().is_some());
}

#[test]
fn a_missing_file_is_no_file() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        ConfigFile::load(&dir.path().join("none.toml")).unwrap(),
        None
    );
    assert!(matches!(
        ConfigFile::load(dir.path()),
        Err(ConfigFileError::Read { .. })
    ));
}
