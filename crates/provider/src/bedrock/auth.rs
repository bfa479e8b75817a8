//! How a Bedrock request is authenticated: AWS's SigV4 (service
//! `bedrock`) over the request as it will be sent — method, URL, headers
//! and body — by AWS's own `aws-sigv4`, or a Bedrock API key as a bearer
//! token (`AWS_BEARER_TOKEN_BEDROCK`), sent by the driver like any key.
//!
//! The secret key never leaves this file but as the signature it makes;
//! the session token goes only in `x-amz-security-token`.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use reqwest::header::{HeaderName, HeaderValue};

use leash_protocol::secret::ApiKey;

/// The SigV4 service name of the Bedrock runtime.
pub const SERVICE: &str = "bedrock";

/// What a Bedrock run authenticates with, besides a bearer key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsAuth {
    /// The region requests are signed for (and sent to by default).
    pub region: String,
    /// The access keys to sign with; `None` when the run's key is a
    /// Bedrock API key sent as a bearer token.
    pub keys: Option<AwsKeys>,
}

/// An access key pair, with the session token of temporary credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsKeys {
    /// `AWS_ACCESS_KEY_ID` (not a secret: it is sent in every signature).
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: ApiKey,
    /// `AWS_SESSION_TOKEN`, for temporary credentials (OIDC, a role).
    pub session_token: Option<ApiKey>,
}

/// Signs `request` in place (`authorization`, `x-amz-date`, and
/// `x-amz-security-token` with a session token) as of `now`.
pub fn sign_request(
    request: &mut reqwest::Request,
    region: &str,
    keys: &AwsKeys,
    now: SystemTime,
) -> Result<(), String> {
    let identity: Identity = Credentials::new(
        keys.access_key_id.clone(),
        keys.secret_access_key.expose(),
        keys.session_token.as_ref().map(|t| t.expose().to_owned()),
        None,
        "leash",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SERVICE)
        .time(now)
        .settings(SigningSettings::default())
        .build()
        .map_err(|err| format!("could not sign the request: {err}"))?
        .into();
    let url = request.url().to_string();
    let body = request
        .body()
        .and_then(reqwest::Body::as_bytes)
        .unwrap_or_default()
        .to_vec();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    let signable = SignableRequest::new(
        request.method().as_str(),
        url,
        headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        SignableBody::Bytes(&body),
    )
    .map_err(|err| format!("could not sign the request: {err}"))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|err| format!("could not sign the request: {err}"))?
        .into_parts();
    let (headers, _) = instructions.into_parts();
    for header in headers {
        let name = HeaderName::from_bytes(header.name().as_bytes())
            .map_err(|_| "the signature made a header HTTP cannot carry".to_owned())?;
        let mut value = HeaderValue::from_str(header.value()).map_err(|_| {
            "the credentials hold characters an HTTP header cannot carry".to_owned()
        })?;
        value.set_sensitive(true);
        request.headers_mut().insert(name, value);
    }
    Ok(())
}
