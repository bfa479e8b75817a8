//! A Google credentials file as `GOOGLE_APPLICATION_CREDENTIALS` names it
//! (docs/src/vertex.md "Credentials"), read once when the run is
//! configured: a service account's key, a workload identity federation
//! (`external_account`) configuration as `google-github-actions/auth`
//! writes it, or a user's refresh token (`authorized_user`).
//!
//! Every address the file names is hostile input: it must be `https://`
//! (plain `http://` only to a loopback host) with no user or password in
//! it. Secrets are held as [`ApiKey`]s; a parse error never quotes a
//! value of the file.

use serde::Deserialize;

use leash_protocol::secret::ApiKey;

/// Google's OAuth 2.0 token endpoint, when a file names none.
pub const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// Google's Security Token Service, when an `external_account` file names none.
pub const GOOGLE_STS_URL: &str = "https://sts.googleapis.com/v1/token";
/// The most a credentials file or a subject token file may hold.
pub const FILE_LIMIT: u64 = 64 * 1024;

/// The credentials a Vertex AI run gets its access token with.
#[derive(Debug, Clone)]
pub enum Credentials {
    /// A service account's key: an RS256-signed JWT to `token_uri`.
    ServiceAccount {
        /// The account (`iss` of the JWT).
        client_email: String,
        /// Its private key, PKCS#8 PEM.
        private_key: ApiKey,
        /// The key's id (`kid`), when given.
        private_key_id: Option<String>,
        /// Where the JWT is exchanged.
        token_uri: String,
        /// The project the key belongs to.
        project_id: Option<String>,
    },
    /// Workload identity federation: a subject token exchanged at `token_url`.
    External {
        /// The workload identity pool provider.
        audience: String,
        /// What the subject token is (`urn:ietf:params:oauth:token-type:jwt`).
        subject_token_type: String,
        /// The Security Token Service.
        token_url: String,
        /// `generateAccessToken` of the service account to impersonate.
        impersonation_url: Option<String>,
        /// Where the subject token is read.
        source: SubjectSource,
    },
    /// A user's refresh token (`gcloud auth application-default login`).
    AuthorizedUser {
        /// The OAuth client.
        client_id: String,
        /// Its secret.
        client_secret: ApiKey,
        /// The refresh token.
        refresh_token: ApiKey,
        /// Where it is exchanged.
        token_uri: String,
    },
}

/// Where an `external_account`'s subject token comes from.
#[derive(Debug, Clone)]
pub enum SubjectSource {
    /// A file holding it.
    File {
        /// The file.
        path: String,
        /// The JSON field holding it (`format.type = "json"`), else the text.
        field: Option<String>,
    },
    /// A URL answering it (GitHub's OIDC token endpoint).
    Url {
        /// The URL.
        url: String,
        /// The headers to send (its bearer token a secret).
        headers: Vec<(String, ApiKey)>,
        /// The JSON field holding it, else the text.
        field: Option<String>,
    },
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "type")]
    kind: Option<String>,
    client_email: Option<String>,
    private_key: Option<String>,
    private_key_id: Option<String>,
    token_uri: Option<String>,
    project_id: Option<String>,
    audience: Option<String>,
    subject_token_type: Option<String>,
    token_url: Option<String>,
    service_account_impersonation_url: Option<String>,
    credential_source: Option<Source>,
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
}

#[derive(Deserialize)]
struct Source {
    file: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    format: Option<Format>,
}

#[derive(Deserialize)]
struct Format {
    #[serde(rename = "type")]
    kind: Option<String>,
    subject_token_field_name: Option<String>,
}

impl Credentials {
    /// The credentials in a file's text, or what is wrong with it (never
    /// quoting a value).
    pub fn parse(text: &str) -> Result<Credentials, String> {
        let file: File = serde_json::from_str(text).map_err(|err| {
            format!(
                "is not a Google credentials file (JSON at line {} column {}: {:?})",
                err.line(),
                err.column(),
                err.classify()
            )
        })?;
        let need = |value: Option<String>, field: &str| {
            value
                .filter(|value| !value.trim().is_empty())
                .ok_or_else(|| format!("has no \"{field}\""))
        };
        match file.kind.as_deref() {
            Some("service_account") => {
                let private_key = need(file.private_key, "private_key")?;
                super::jwt::key_pair(&private_key)?;
                Ok(Credentials::ServiceAccount {
                    client_email: need(file.client_email, "client_email")?,
                    private_key: ApiKey::new(private_key),
                    private_key_id: file.private_key_id,
                    token_uri: checked_url(file.token_uri, GOOGLE_TOKEN_URI, "token_uri")?,
                    project_id: file.project_id,
                })
            }
            Some("external_account") => {
                let source = file
                    .credential_source
                    .ok_or_else(|| "has no \"credential_source\"".to_owned())?;
                let field = match source.format {
                    Some(Format {
                        kind: Some(kind),
                        subject_token_field_name,
                    }) if kind == "json" => Some(need(
                        subject_token_field_name,
                        "credential_source.format.subject_token_field_name",
                    )?),
                    _ => None,
                };
                let source = match (source.file, source.url) {
                    (Some(path), None) => SubjectSource::File { path, field },
                    (None, Some(url)) => SubjectSource::Url {
                        url: checked_url(Some(url), "", "credential_source.url")?,
                        headers: source
                            .headers
                            .into_iter()
                            .map(|(name, value)| (name, ApiKey::new(value)))
                            .collect(),
                        field,
                    },
                    _ => {
                        return Err("has a \"credential_source\" leash cannot read: it takes \
                                    one \"file\" or one \"url\" (not an AWS or executable source)"
                            .to_owned());
                    }
                };
                let impersonation_url = match file.service_account_impersonation_url {
                    Some(url) => Some(checked_url(
                        Some(url),
                        "",
                        "service_account_impersonation_url",
                    )?),
                    None => None,
                };
                Ok(Credentials::External {
                    audience: need(file.audience, "audience")?,
                    subject_token_type: need(file.subject_token_type, "subject_token_type")?,
                    token_url: checked_url(file.token_url, GOOGLE_STS_URL, "token_url")?,
                    impersonation_url,
                    source,
                })
            }
            Some("authorized_user") => Ok(Credentials::AuthorizedUser {
                client_id: need(file.client_id, "client_id")?,
                client_secret: ApiKey::new(need(file.client_secret, "client_secret")?),
                refresh_token: ApiKey::new(need(file.refresh_token, "refresh_token")?),
                token_uri: checked_url(file.token_uri, GOOGLE_TOKEN_URI, "token_uri")?,
            }),
            Some(other) => Err(format!(
                "is of type \"{}\"; leash takes service_account, external_account or \
                 authorized_user",
                other.escape_debug()
            )),
            None => Err("has no \"type\"".to_owned()),
        }
    }

    /// The project a service account's file names.
    pub fn project(&self) -> Option<&str> {
        match self {
            Credentials::ServiceAccount { project_id, .. } => project_id.as_deref(),
            _ => None,
        }
    }

    /// The secrets the file holds, for redaction.
    pub fn secrets(&self) -> Vec<ApiKey> {
        match self {
            // The key whole, and each line of its PEM (a tool that read the
            // file shows it JSON-escaped, one line at a time).
            Credentials::ServiceAccount { private_key, .. } => std::iter::once(private_key.clone())
                .chain(
                    private_key
                        .expose()
                        .lines()
                        .map(str::trim)
                        .filter(|line| line.len() >= 16 && !line.starts_with("-----"))
                        .map(ApiKey::new),
                )
                .collect(),
            Credentials::External {
                source: SubjectSource::Url { headers, .. },
                ..
            } => headers.iter().map(|(_, value)| value.clone()).collect(),
            Credentials::External { .. } => Vec::new(),
            Credentials::AuthorizedUser {
                client_secret,
                refresh_token,
                ..
            } => vec![client_secret.clone(), refresh_token.clone()],
        }
    }
}

/// The rule for every address a credentials file names: `https://`, or
/// `http://` to a loopback host only (a local test server), and no user
/// or password in it. `default` when the file names none (empty: required).
pub fn checked_url(url: Option<String>, default: &str, field: &str) -> Result<String, String> {
    let url = match url.filter(|url| !url.trim().is_empty()) {
        Some(url) => url.trim().to_owned(),
        None if !default.is_empty() => return Ok(default.to_owned()),
        None => return Err(format!("has no \"{field}\"")),
    };
    let parsed =
        reqwest::Url::parse(&url).map_err(|_| format!("has a \"{field}\" that is not a URL"))?;
    let loopback = match parsed.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    };
    let allowed = match parsed.scheme() {
        "https" => parsed.host_str().is_some_and(|host| !host.is_empty()),
        "http" => loopback,
        _ => false,
    };
    if !allowed {
        return Err(format!(
            "has a \"{field}\" leash will not send a credential to: it must be https:// \
             (http:// only to a loopback address)"
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!("has a \"{field}\" with a user or password in it"));
    }
    Ok(url)
}
