//! The HTTP side of the OTLP exports (traces and metrics): one reqwest
//! client per signal with the TLS files the variables name, answering
//! opentelemetry-http's `HttpClient`, and the endpoint as it may be shown.
//! *Never* prints a header value, a credential of the URL or what a
//! collector answered.

use std::sync::{Arc, Mutex, PoisonError};

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

use super::settings::{Exporting, Signal};

/// Where a client notes why its last request failed, in leash's words.
pub type Failure = Arc<Mutex<Option<String>>>;

/// The most of a collector's answer read (it is never shown).
const ANSWER_CAP: usize = 64 * 1024;

/// opentelemetry-http's client, answered by leash's own reqwest client;
/// it notes why a request failed in words leash chose (never the URL, a
/// header or the collector's answer). It sends the headers leash chose
/// (the settings', a key-holding one left out), never others: the
/// exporter would add `OTEL_EXPORTER_OTLP_HEADERS` as read again.
pub struct LeashHttp {
    client: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    failure: Failure,
}

// The header values may carry tokens.
impl std::fmt::Debug for LeashHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeashHttp").finish_non_exhaustive()
    }
}

/// The settings' headers as reqwest sends them; one that is not a valid
/// header is left out.
fn header_map(headers: &[(String, String)]) -> reqwest::header::HeaderMap {
    use reqwest::header::{HeaderName, HeaderValue};
    headers
        .iter()
        .filter_map(|(name, value)| {
            Some((
                HeaderName::from_bytes(name.as_bytes()).ok()?,
                HeaderValue::from_str(value).ok()?,
            ))
        })
        .collect()
}

impl LeashHttp {
    fn note(&self, why: String) {
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
    }
}

#[async_trait::async_trait]
impl HttpClient for LeashHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut headers = self.headers.clone();
        for name in [
            reqwest::header::CONTENT_TYPE,
            reqwest::header::CONTENT_ENCODING,
        ] {
            if let Some(value) = parts.headers.get(&name) {
                headers.insert(name, value.clone());
            }
        }
        let sent = self
            .client
            .request(parts.method, parts.uri.to_string())
            .headers(headers)
            .body(body)
            .send()
            .await;
        let mut response = match sent {
            Ok(response) => response,
            Err(error) => {
                let why = match (tls_refusal(&error), error.is_timeout(), error.is_connect()) {
                    (Some(why), _, _) => why,
                    (None, true, _) => "it did not answer in time",
                    (None, false, true) => "cannot connect",
                    (None, false, false) => "the request failed",
                };
                self.note(why.to_owned());
                return Err(why.into());
            }
        };
        let status = response.status();
        if !status.is_success() {
            self.note(format!("it answered HTTP {}", status.as_u16()));
        }
        let mut answer = Vec::new();
        while answer.len() < ANSWER_CAP {
            match response.chunk().await {
                Ok(Some(chunk)) => answer.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(_) => {
                    self.note("its answer broke off".to_owned());
                    return Err("its answer broke off".into());
                }
            }
        }
        let mut built = Response::builder().status(status.as_u16());
        if let Some(kind) = response.headers().get(reqwest::header::CONTENT_TYPE) {
            built = built.header(reqwest::header::CONTENT_TYPE, kind);
        }
        built
            .body(Bytes::from(answer))
            .map_err(|_| HttpError::from("the collector's answer is not HTTP"))
    }
}

/// Why TLS failed, in words that name the variable to set, when the
/// error's cause is rustls's: the collector's certificate not trusted, or
/// the collector refusing the handshake (as one that asks for a client
/// certificate does without one). Never the collector's own words.
fn tls_refusal(error: &reqwest::Error) -> Option<&'static str> {
    use rustls::AlertDescription as Alert;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        // An io::Error's source skips the error it wraps: look inside.
        if let Some(inner) = cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            source = Some(inner);
            continue;
        }
        match cause.downcast_ref::<rustls::Error>() {
            Some(rustls::Error::InvalidCertificate(_)) => {
                return Some(
                    "its certificate is not trusted (OTEL_EXPORTER_OTLP_CERTIFICATE names a CA)",
                );
            }
            Some(rustls::Error::AlertReceived(
                Alert::CertificateRequired | Alert::BadCertificate | Alert::UnknownCA,
            )) => {
                return Some(
                    "it refused the TLS handshake without a client certificate it trusts \
                     (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY)",
                );
            }
            Some(_) => return Some("the TLS handshake failed"),
            None => source = cause.source(),
        }
    }
    None
}

/// The most of a TLS file read (a PEM bundle is far smaller).
const TLS_FILE_CAP: u64 = 1024 * 1024;

/// A TLS file's bytes, or why not (its variable named, never its content).
fn tls_file((variable, path): &(String, String)) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(TLS_FILE_CAP + 1).read_to_end(&mut bytes))
        .map_err(|error| format!("{variable}: cannot read it ({})", error.kind()))?;
    if bytes.len() as u64 > TLS_FILE_CAP {
        return Err(format!("{variable}: it is larger than 1 MiB"));
    }
    Ok(bytes)
}

/// The client with the variables' CA certificates and client identity.
fn with_tls(
    mut builder: reqwest::ClientBuilder,
    tls: &super::settings::TlsFiles,
) -> Result<reqwest::ClientBuilder, String> {
    if let Some(file) = &tls.certificate {
        let certificates = reqwest::Certificate::from_pem_bundle(&tls_file(file)?)
            .ok()
            .filter(|certificates| !certificates.is_empty())
            .ok_or_else(|| format!("{}: holds no PEM certificate", file.0))?;
        for certificate in certificates {
            builder = builder.add_root_certificate(certificate);
        }
    }
    match (&tls.client_certificate, &tls.client_key) {
        (None, None) => {}
        (Some(certificate), Some(key)) => {
            let mut pem = tls_file(certificate)?;
            pem.push(b'\n');
            pem.extend(tls_file(key)?);
            let identity = reqwest::Identity::from_pem(&pem).map_err(|_| {
                format!(
                    "{} and {}: no PEM certificate and private key",
                    certificate.0, key.0
                )
            })?;
            builder = builder.identity(identity);
        }
        (Some((variable, _)), None) | (None, Some((variable, _))) => {
            return Err(format!(
                "{variable} is set without its pair (_CLIENT_CERTIFICATE and _CLIENT_KEY go together)"
            ));
        }
    }
    Ok(builder)
}

/// The endpoint as it may be shown: no user, password or query (they
/// may carry a token).
pub fn shown_endpoint(endpoint: &str) -> String {
    let (scheme, rest) = endpoint.split_once("://").unwrap_or(("", endpoint));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit('@').next().unwrap_or(authority);
    format!("{scheme}://{host}{path}")
}

/// The client `exporting` asks for (its TLS files, its headers) and the
/// slot where it notes why a request failed; or the line that says why
/// `signal` is not exported.
pub fn client(exporting: &Exporting, signal: Signal) -> Result<(LeashHttp, Failure), String> {
    let shown = shown_endpoint(&exporting.endpoint);
    let noun = signal.noun();
    let builder = reqwest::Client::builder().connect_timeout(exporting.timeout);
    let client = with_tls(builder, &exporting.tls)
        .map_err(|why| format!("{noun} not exported to {shown}: {why}"))?
        .build()
        .map_err(|_| format!("{noun} not exported to {shown}: cannot build the HTTP client"))?;
    let failure = Arc::new(Mutex::new(None));
    let http = LeashHttp {
        client,
        headers: header_map(&exporting.headers),
        failure: Arc::clone(&failure),
    };
    Ok((http, failure))
}
