//! The check a loopback Bedrock makes of a request's SigV4 signature, as
//! the service does: the credential scope (access key, date, region,
//! service) read from `authorization`, the signature computed again from
//! the request as received — method, path, query, the headers it names as
//! signed, the body — with the secret key the service knows, and compared.
//! boto3 passing it is the proof that it checks what AWS checks.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

/// What the service knows of a caller.
#[derive(Clone)]
pub struct Known {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    pub region: String,
}

impl wiremock::Match for Known {
    fn matches(&self, request: &wiremock::Request) -> bool {
        verify(self, request).is_ok()
    }
}

fn header<'a>(request: &'a wiremock::Request, name: &str) -> Option<&'a str> {
    request
        .headers
        .get(name)
        .and_then(|value| value.to_str().ok())
}

/// `Ok` when `request` is signed by `known`, else why not.
pub fn verify(known: &Known, request: &wiremock::Request) -> Result<(), String> {
    let auth = header(request, "authorization").ok_or("no authorization")?;
    let rest = auth
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("not AWS4-HMAC-SHA256")?;
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for part in rest.split(',') {
        let (name, value) = part
            .trim()
            .split_once('=')
            .ok_or("a malformed authorization")?;
        match name {
            "Credential" => credential = Some(value),
            "SignedHeaders" => signed = Some(value),
            "Signature" => signature = Some(value),
            _ => return Err(format!("unknown part {name}")),
        }
    }
    let (credential, signed, signature) = (
        credential.ok_or("no Credential")?,
        signed.ok_or("no SignedHeaders")?,
        signature.ok_or("no Signature")?,
    );
    let scope: Vec<&str> = credential.split('/').collect();
    let date = header(request, "x-amz-date").ok_or("no x-amz-date")?;
    if scope.len() != 5
        || scope[0] != known.access_key_id
        || scope[1] != &date[..8.min(date.len())]
        || scope[2] != known.region
        || scope[3] != "bedrock"
        || scope[4] != "aws4_request"
    {
        return Err(format!(
            "the credential scope {credential} is not the caller's"
        ));
    }
    if header(request, "x-amz-security-token") != known.session_token.as_deref() {
        return Err("the session token is not the caller's".into());
    }
    let time = amz_date(date).ok_or("a malformed x-amz-date")?;
    let names: Vec<&str> = signed.split(';').collect();
    let headers: Vec<(String, String)> = names
        .iter()
        .filter(|name| !matches!(**name, "x-amz-date" | "x-amz-security-token"))
        .map(|name| {
            Ok((
                name.to_string(),
                header(request, name)
                    .ok_or("a signed header is missing")?
                    .to_owned(),
            ))
        })
        .collect::<Result<_, String>>()?;
    let identity: Identity = Credentials::new(
        &known.access_key_id,
        &known.secret_access_key,
        known.session_token.clone(),
        None,
        "mock",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&known.region)
        .name("bedrock")
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|err| err.to_string())?
        .into();
    let signable = SignableRequest::new(
        request.method.as_str(),
        request.url.as_str(),
        headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        SignableBody::Bytes(&request.body),
    )
    .map_err(|err| err.to_string())?;
    let output = sign(signable, &params).map_err(|err| err.to_string())?;
    match output.signature() == signature {
        true => Ok(()),
        false => Err("the signature does not match".into()),
    }
}

/// `20260102T030405Z` as a time.
fn amz_date(text: &str) -> Option<SystemTime> {
    let digits = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    if text.len() != 16 || text.as_bytes()[8] != b'T' || !text.ends_with('Z') {
        return None;
    }
    let (y, m, d) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
    let (hh, mm, ss) = (digits(9..11)?, digits(11..13)?, digits(13..15)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}
