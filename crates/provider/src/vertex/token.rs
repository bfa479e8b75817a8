//! Vertex AI's access token: exchanged from the credentials file when the
//! first request needs one and cached, for the whole process (every item
//! of a batch shares it), until a minute before it expires. The exchanges
//! are the ones Google's auth libraries make: a service account's signed
//! JWT at its `token_uri` (grant type jwt-bearer); an `external_account`'s
//! subject token at the STS `token_url` (token exchange), then the
//! service account's `generateAccessToken` when impersonating; a user's
//! refresh token at its `token_uri`.
//!
//! The token, the key and the subject token never reach a message: the
//! errors quote the service's reason, redacted of every secret the file
//! holds and of what the exchange got.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::credentials::{Credentials, FILE_LIMIT, GOOGLE_TOKEN_URI, SubjectSource};
use super::jwt::{SCOPE, assertion};
use crate::http::{Tls, client};
use crate::token::TokenSource;
use leash_protocol::secret::{ApiKey, redact_keys};

/// How long before its expiry a cached token is replaced.
const EARLY: Duration = Duration::from_secs(60);
/// The most a token endpoint's answer may hold.
const ANSWER_LIMIT: usize = 64 * 1024;
/// How long one exchange may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// The access tokens of one credentials file.
#[derive(Debug, Clone)]
pub struct GoogleTokens {
    credentials: Arc<Credentials>,
    /// The file's SHA-256: the cache's key.
    identity: [u8; 32],
}

impl GoogleTokens {
    /// Tokens for `credentials`, read from a file whose bytes were `text`.
    pub fn new(credentials: Credentials, text: &str) -> Self {
        let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
        let mut identity = [0; 32];
        identity.copy_from_slice(digest.as_ref());
        GoogleTokens {
            credentials: Arc::new(credentials),
            identity,
        }
    }
}

/// A cached token: the file's identity, the token, when it is replaced.
type Cached = ([u8; 32], ApiKey, Instant);

/// The process's tokens, by credentials file.
fn cache() -> &'static Mutex<Vec<Cached>> {
    static CACHE: OnceLock<Mutex<Vec<Cached>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Vec::new()))
}

/// One exchange at a time, so the items of a batch starting together
/// make one.
fn exchanging() -> &'static tokio::sync::Mutex<()> {
    static LOCK: OnceLock<tokio::sync::Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| tokio::sync::Mutex::new(()))
}

fn cached(identity: &[u8; 32]) -> Option<ApiKey> {
    let now = Instant::now();
    let cache = cache()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    cache
        .iter()
        .find(|(id, _, until)| id == identity && *until > now)
        .map(|(_, token, _)| token.clone())
}

impl TokenSource for GoogleTokens {
    fn token(&self) -> BoxFuture<'static, Result<ApiKey, String>> {
        let this = self.clone();
        Box::pin(async move {
            if let Some(token) = cached(&this.identity) {
                return Ok(token);
            }
            let _one = exchanging().lock().await;
            if let Some(token) = cached(&this.identity) {
                return Ok(token);
            }
            let (token, lifetime) = exchange(&this.credentials).await?;
            let until = Instant::now() + lifetime.saturating_sub(EARLY);
            let mut cache = cache()
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            cache.retain(|(id, _, _)| *id != this.identity);
            cache.push((this.identity, token.clone(), until));
            Ok(token)
        })
    }
}

/// A fresh token and how long it lives; an error is redacted of every
/// secret the file holds and every token the exchange got on the way.
async fn exchange(credentials: &Credentials) -> Result<(ApiKey, Duration), String> {
    let mut secrets = credentials.secrets();
    let result = fetch(credentials, &mut secrets).await;
    result.map_err(|message| redact_keys(&message, &secrets))
}

/// The exchanges themselves; each secret met is added to `secrets`.
async fn fetch(
    credentials: &Credentials,
    secrets: &mut Vec<ApiKey>,
) -> Result<(ApiKey, Duration), String> {
    match credentials {
        Credentials::ServiceAccount {
            client_email,
            private_key,
            private_key_id,
            token_uri,
            ..
        } => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_secs());
            // The audience is Google's token endpoint whatever the file's
            // `token_uri`, as google-auth signs it.
            let jwt = assertion(
                private_key.expose(),
                private_key_id.as_deref(),
                client_email,
                GOOGLE_TOKEN_URI,
                now,
            )?;
            secrets.push(ApiKey::new(jwt.clone()));
            let form = [
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                ("assertion", jwt.as_str()),
            ];
            oauth(token_uri, &form, secrets).await
        }
        Credentials::AuthorizedUser {
            client_id,
            client_secret,
            refresh_token,
            token_uri,
        } => {
            let form = [
                ("grant_type", "refresh_token"),
                ("client_id", client_id.as_str()),
                ("client_secret", client_secret.expose()),
                ("refresh_token", refresh_token.expose()),
            ];
            oauth(token_uri, &form, secrets).await
        }
        Credentials::External {
            audience,
            subject_token_type,
            token_url,
            impersonation_url,
            source,
        } => {
            let subject = subject_token(source, secrets).await?;
            secrets.push(subject.clone());
            let form = [
                (
                    "grant_type",
                    "urn:ietf:params:oauth:grant-type:token-exchange",
                ),
                ("audience", audience.as_str()),
                ("scope", SCOPE),
                (
                    "requested_token_type",
                    "urn:ietf:params:oauth:token-type:access_token",
                ),
                ("subject_token", subject.expose()),
                ("subject_token_type", subject_token_type.as_str()),
            ];
            let federated = oauth(token_url, &form, secrets).await?;
            match impersonation_url {
                None => Ok(federated),
                Some(url) => {
                    secrets.push(federated.0.clone());
                    impersonate(url, &federated.0, secrets).await
                }
            }
        }
    }
}

/// A POST of `form` to an OAuth token endpoint; its `access_token` and
/// `expires_in`.
async fn oauth(
    url: &str,
    form: &[(&str, &str)],
    secrets: &[ApiKey],
) -> Result<(ApiKey, Duration), String> {
    let http = client(Tls::for_url(url))?;
    let request = http
        .post(url)
        .timeout(EXCHANGE_TIMEOUT)
        .header("accept", "application/json")
        .form(form);
    let answer = answer(url, request, secrets).await?;
    let token = answer["access_token"]
        .as_str()
        .filter(|token| !token.is_empty())
        .ok_or_else(|| format!("{}: the answer holds no access_token", shown(url)))?;
    let lifetime = answer["expires_in"]
        .as_u64()
        .or_else(|| answer["expires_in"].as_str()?.parse().ok())
        .unwrap_or(3600);
    Ok((ApiKey::new(token), Duration::from_secs(lifetime)))
}

/// IAM Credentials' `generateAccessToken` with the federated token.
async fn impersonate(
    url: &str,
    federated: &ApiKey,
    secrets: &[ApiKey],
) -> Result<(ApiKey, Duration), String> {
    let http = client(Tls::for_url(url))?;
    let request = http
        .post(url)
        .timeout(EXCHANGE_TIMEOUT)
        .bearer_auth(federated.expose())
        .header("content-type", "application/json")
        .body(serde_json::json!({"scope": [SCOPE], "lifetime": "3600s"}).to_string());
    let answer = answer(url, request, secrets).await?;
    let token = answer["accessToken"]
        .as_str()
        .filter(|token| !token.is_empty())
        .ok_or_else(|| format!("{}: the answer holds no accessToken", shown(url)))?;
    let lifetime = answer["expireTime"]
        .as_str()
        .and_then(|time| humantime::parse_rfc3339_weak(time).ok())
        .and_then(|at| at.duration_since(SystemTime::now()).ok())
        .unwrap_or(Duration::from_secs(300));
    Ok((ApiKey::new(token), lifetime))
}

/// The subject token of an `external_account`: a file's text or a URL's
/// answer, whole or one JSON field of it.
async fn subject_token(source: &SubjectSource, secrets: &[ApiKey]) -> Result<ApiKey, String> {
    let (text, field, from) = match source {
        SubjectSource::File { path, field } => {
            let text = read_file(path)
                .map_err(|err| format!("cannot read the subject token file {path}: {err}"))?;
            (text, field, path.clone())
        }
        SubjectSource::Url {
            url,
            headers,
            field,
        } => {
            let http = client(Tls::for_url(url))?;
            let mut request = http.get(url).timeout(EXCHANGE_TIMEOUT);
            for (name, value) in headers {
                request = request.header(name.as_str(), value.expose());
            }
            let (status, body) = send(url, request, secrets).await?;
            if !status.is_success() {
                return Err(format!(
                    "{}: the subject token source answered HTTP {status}",
                    shown(url)
                ));
            }
            (body, field, shown(url))
        }
    };
    let token = match field {
        None => text.trim().to_owned(),
        Some(field) => serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|value| value[field.as_str()].as_str().map(str::to_owned))
            .ok_or_else(|| format!("{from}: the subject token has no \"{field}\" field"))?,
    };
    match token.is_empty() {
        true => Err(format!("{from}: the subject token is empty")),
        false => Ok(ApiKey::new(token)),
    }
}

/// Sends `request` and reads its JSON answer; a refusal is an error that
/// quotes the service's reason.
async fn answer(
    url: &str,
    request: reqwest::RequestBuilder,
    secrets: &[ApiKey],
) -> Result<Value, String> {
    let (status, body) = send(url, request, secrets).await?;
    let value: Option<Value> = serde_json::from_str(&body).ok();
    if status.is_success() {
        return value.ok_or_else(|| format!("{}: the answer is not JSON", shown(url)));
    }
    let reason = value.as_ref().map(reason).unwrap_or_else(|| {
        let text: String = body.chars().take(200).collect();
        text.escape_debug().to_string()
    });
    Err(format!(
        "{} refused the credentials: HTTP {status}: {reason}",
        shown(url)
    ))
}

/// An OAuth error (`error`, `error_description`) or a Google API error
/// (`error.status`, `error.message`), in one line.
fn reason(value: &Value) -> String {
    let error = &value["error"];
    let parts: Vec<&str> = match error {
        Value::String(code) => [Some(code.as_str()), value["error_description"].as_str()]
            .into_iter()
            .flatten()
            .collect(),
        Value::Object(_) => [error["status"].as_str(), error["message"].as_str()]
            .into_iter()
            .flatten()
            .collect(),
        _ => Vec::new(),
    };
    let line = parts.join(": ");
    line.escape_debug().to_string()
}

/// A subject token file's text, at most [`FILE_LIMIT`] bytes.
fn read_file(path: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(FILE_LIMIT + 1)
        .read_to_string(&mut text)?;
    match text.len() as u64 > FILE_LIMIT {
        true => Err(std::io::Error::other(format!(
            "larger than {FILE_LIMIT} bytes"
        ))),
        false => Ok(text),
    }
}

/// Sends and reads at most [`ANSWER_LIMIT`] bytes of the answer.
async fn send(
    url: &str,
    request: reqwest::RequestBuilder,
    secrets: &[ApiKey],
) -> Result<(reqwest::StatusCode, String), String> {
    let response = request.send().await.map_err(|err| {
        let cause = crate::http::root_cause(&err);
        redact_keys(&format!("could not reach {}: {cause}", shown(url)), secrets)
    })?;
    let status = response.status();
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|_| format!("{}: the answer was cut off", shown(url)))?;
        if body.len() + chunk.len() > ANSWER_LIMIT {
            return Err(format!(
                "{}: the answer is larger than {ANSWER_LIMIT} bytes",
                shown(url)
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// A URL as an error names it: without its query (a signed URL's secret).
fn shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => "the token endpoint".to_owned(),
    }
}
