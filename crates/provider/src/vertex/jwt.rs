//! The service account's JWT assertion (RFC 7523), signed RS256 by ring
//! (`RsaKeyPair::from_pkcs8`, `RSA_PKCS1_SHA256`): the key's PKCS#8 PEM
//! read with base64, no crypto of leash's own.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};

/// The scope Vertex AI's access token is asked for.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// The key pair in a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), or why
/// there is none (never quoting the key).
pub fn key_pair(pem: &str) -> Result<RsaKeyPair, String> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|line| *line != "-----BEGIN PRIVATE KEY-----")
        .skip(1)
        .take_while(|line| *line != "-----END PRIVATE KEY-----")
        .collect();
    if body.is_empty() {
        return Err("has a \"private_key\" that is not a PKCS#8 PEM private key".to_owned());
    }
    let der = STANDARD
        .decode(body)
        .map_err(|_| "has a \"private_key\" whose PEM is not base64".to_owned())?;
    RsaKeyPair::from_pkcs8(&der).map_err(|err| {
        format!("has a \"private_key\" that is not an RSA key ring can sign with ({err})")
    })
}

/// The signed assertion `client_email` presents to `audience` (the token
/// endpoint) at `now` (seconds since the epoch), valid for an hour.
pub fn assertion(
    pem: &str,
    key_id: Option<&str>,
    client_email: &str,
    audience: &str,
    now: u64,
) -> Result<String, String> {
    let pair = key_pair(pem)?;
    let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
    if let Some(id) = key_id {
        header["kid"] = id.into();
    }
    let claims = serde_json::json!({
        "iss": client_email,
        "scope": SCOPE,
        "aud": audience,
        "iat": now,
        "exp": now + 3600,
    });
    let signed = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0; pair.public().modulus_len()];
    pair.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        signed.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "could not sign the service account's assertion".to_owned())?;
    Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
}
