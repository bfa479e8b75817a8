use super::*;

fn read(text: &str) -> Result<DotEnvValues, DotEnvError> {
    read_dotenv("/x/.env", text)
}

#[test]
fn keys_and_model_selection_are_taken_and_other_names_ignored() {
    let text = "OPENAI_API_KEY=sk-1\nLEASH_MODEL=gpt-x\nHTTPS_PROXY=http://127.0.0.1:9\n\
                PYTHONPATH=/evil\nLEASH_API=responses\nLEASH_MODEL=gpt-y\nPATH=/evil\n\
                ANTHROPIC_BASE_URL=\n";
    let read = read(text).unwrap();
    let values: Vec<(&str, &str)> = read
        .values
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    assert_eq!(
        values,
        [
            ("LEASH_API", "responses"),
            ("LEASH_MODEL", "gpt-y"),
            ("OPENAI_API_KEY", "sk-1")
        ]
    );
    assert_eq!(read.ignored, ["HTTPS_PROXY", "PATH", "PYTHONPATH"]);
}

#[test]
fn the_allowed_variables_are_the_keys_and_the_model_selection() {
    let names: Vec<&str> = allowed_variables().collect();
    assert_eq!(
        names,
        [
            "LEASH_API_KEY",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AZURE_OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "AWS_BEARER_TOKEN_BEDROCK",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "GOOGLE_OAUTH_ACCESS_TOKEN",
            "OPENAI_BASE_URL",
            "ANTHROPIC_BASE_URL",
            "AZURE_OPENAI_ENDPOINT",
            "GOOGLE_GEMINI_BASE_URL",
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
            "GOOGLE_VERTEX_BASE_URL",
            "OPENAI_API_VERSION",
            "AWS_ACCESS_KEY_ID",
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
            "AWS_ENDPOINT_URL",
            "GOOGLE_CLOUD_LOCATION",
            "CLOUD_ML_REGION",
            "LEASH_PROVIDER",
            "LEASH_MODEL",
            "LEASH_API",
            "LEASH_BASE_URL"
        ]
    );
    // Each selection variable is the variable of the flag it stands for.
    let command = run_command();
    for (name, id) in SELECTION {
        let arg = command
            .get_arguments()
            .find(|arg| arg.get_id() == id)
            .unwrap();
        assert_eq!(arg.get_env().and_then(|env| env.to_str()), Some(name));
        assert_eq!(selection_flag(name), Some(id));
    }
    assert_eq!(selection_flag("OPENAI_API_KEY"), None);
}

#[test]
fn any_other_leash_variable_is_refused_with_where_it_belongs() {
    let error = read("OPENAI_API_KEY=sk\nLEASH_ALLOW_WRITE=1\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        ".env /x/.env sets LEASH_ALLOW_WRITE, which a .env may not set (a checkout is not the \
         operator): pass --allow-write, export LEASH_ALLOW_WRITE, or set allow-write in the \
         config file"
    );
    for (name, tail) in [
        (
            "LEASH_ROOT",
            "pass --root, export LEASH_ROOT, or set root in the config file",
        ),
        (
            "LEASH_HOOK",
            "pass --hook, export LEASH_HOOK, or set hook in the config file",
        ),
        (
            "LEASH_DENY_TOOL",
            "pass --deny-tool, export LEASH_DENY_TOOL, or set deny-tool in",
        ),
        (
            "LEASH_TRUST_BASE_URL",
            "pass --trust-base-url, export LEASH_TRUST_BASE_URL, or set",
        ),
        ("LEASH_ENV_FILE", "pass --env-file or export LEASH_ENV_FILE"),
        (
            "LEASH_NOPE",
            "leash reads no variable LEASH_NOPE (leash --help lists them)",
        ),
    ] {
        let message = read(&format!("{name}=x\n")).unwrap_err().to_string();
        assert!(
            message.contains(&format!("sets {name}, which")),
            "{message}"
        );
        assert!(message.contains(tail), "{message}");
        assert!(!message.contains('\n'), "{message}");
    }
}

#[test]
fn a_provider_or_api_that_does_not_exist_is_named() {
    let error = read("LEASH_API=chatty\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        ".env /x/.env: LEASH_API: invalid value 'chatty' (one of chat, responses)"
    );
    let error = read("LEASH_PROVIDER=mistral\n").unwrap_err().to_string();
    assert!(
        error.contains("(one of openai, anthropic, azure, gemini, bedrock, vertex, faux)"),
        "{error}"
    );
    assert!(read("LEASH_PROVIDER=anthropic\nLEASH_API=\n").is_ok());
}

#[test]
fn a_syntax_error_names_the_file_and_line() {
    let error = read("A=1\nB='open\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "env file /x/.env: line 2: a single quote is never closed (pass --no-env-file to skip it)"
    );
}

#[test]
fn the_status_says_what_was_used_and_what_ignored() {
    let status = DotEnvStatus::Read {
        path: PathBuf::from("/x/.env"),
        taken: vec!["OPENAI_API_KEY".into()],
        ignored: vec!["HTTPS_PROXY".into()],
    };
    assert_eq!(
        status.to_string(),
        "/x/.env (read as data; uses OPENAI_API_KEY; ignores HTTPS_PROXY, as a .env supplies \
         only keys and model selection)"
    );
}
