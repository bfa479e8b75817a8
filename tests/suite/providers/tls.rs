//! TLS against the real binary: a loopback HTTPS server whose certificate
//! is made in the test (self-signed, as a local server or a corporate
//! proxy's CA would be). Trusted through `SSL_CERT_FILE` the run succeeds;
//! without it the run ends at once with a certificate error, exit 1, and
//! no retry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::hostile;
use crate::support::run::{last_line, stderr, stdout};
use crate::support::sse::openai as openai_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::run::Run;
use hostile::{Workspace, assert_calm};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;

const KEY: &str = "sk-tls-test-SECRET-0451";

/// A loopback HTTPS server answering every request with one complete
/// OpenAI text reply.
struct TlsServer {
    port: u16,
    /// TCP connections accepted (each a TLS handshake attempt).
    connections: Arc<AtomicUsize>,
    /// Requests read after a completed handshake.
    requests: Arc<AtomicUsize>,
    /// The server's certificate, PEM.
    cert_pem: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn tls_server() -> TlsServer {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    let cert_pem = certified.cert.pem();
    let cert_der = certified.cert.der().clone();
    let key_der =
        rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert_der], key_der)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let reply = openai_support::text_reply(&["Hello ", "over TLS."]);
    let task = {
        let (connections, requests) = (connections.clone(), requests.clone());
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                connections.fetch_add(1, Ordering::SeqCst);
                let (acceptor, requests, reply) =
                    (acceptor.clone(), requests.clone(), reply.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(socket).await else {
                        return;
                    };
                    if read_request(&mut tls).await.is_none() {
                        return;
                    }
                    requests.fetch_add(1, Ordering::SeqCst);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        reply.len()
                    );
                    let _ = tls.write_all(head.as_bytes()).await;
                    let _ = tls.write_all(reply.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        })
    };
    TlsServer {
        port,
        connections,
        requests,
        cert_pem,
        task,
    }
}

/// Reads one request (headers, then `content-length` bytes of body).
async fn read_request<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> Option<()> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                return Some(());
            }
        }
    }
}

/// `leash` on the OpenAI provider at `https://localhost:PORT/v1` with no
/// certificate variable of the caller.
fn over_tls(server: &TlsServer) -> Run {
    let ws = Workspace::new();
    let base = format!("https://localhost:{}/v1", server.port);
    ws.http_run("openai", &base, KEY)
        .keep(ws)
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .args(["--retries", "2", "--timeout", "30s", "hello"])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_trusted_through_ssl_cert_file_is_accepted() {
    let server = tls_server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("local-ca.pem");
    std::fs::write(&file, &server.cert_pem).unwrap();
    let output = over_tls(&server)
        .envs([("SSL_CERT_FILE", file.display().to_string())])
        .output_async()
        .await;
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Hello over TLS.\n");
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_trusted_through_ssl_cert_dir_is_accepted() {
    let server = tls_server().await;
    let dir = tempfile::tempdir().unwrap();
    // OpenSSL's directory layout names files by subject hash; any file
    // holding PEM certificates is read too.
    std::fs::write(dir.path().join("local-ca.pem"), &server.cert_pem).unwrap();
    let output = over_tls(&server)
        .envs([("SSL_CERT_DIR", dir.path().display().to_string())])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Hello over TLS.\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_certificate_fails_at_once_with_exit_1_and_no_retry() {
    let server = tls_server().await;
    let output = over_tls(&server).output_async().await;
    let elapsed = output.elapsed;
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let last = last_line(&output);
    assert!(
        last.contains(&format!(
            "the TLS certificate of https://localhost:{}/v1/chat/completions is not trusted",
            server.port
        )),
        "{last}"
    );
    assert!(last.contains("SSL_CERT_FILE"), "{last}");
    assert_eq!(
        server.connections.load(Ordering::SeqCst),
        1,
        "a certificate failure is not retried: {}",
        stderr(&output)
    );
    assert_eq!(server.requests.load(Ordering::SeqCst), 0);
    assert!(!stderr(&output).contains("retry"), "{}", stderr(&output));
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert!(!stderr(&output).contains(KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ssl_cert_file_without_the_servers_ca_is_named() {
    let server = tls_server().await;
    let other = rcgen::generate_simple_self_signed(vec!["elsewhere".to_string()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("other.pem");
    std::fs::write(&file, other.cert.pem()).unwrap();
    let output = over_tls(&server)
        .envs([("SSL_CERT_FILE", file.display().to_string())])
        .output_async()
        .await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let last = last_line(&output);
    assert!(
        last.contains(&format!("SSL_CERT_FILE={} does not hold", file.display())),
        "{last}"
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_file_that_cannot_be_read_is_an_error_not_a_panic() {
    let server = tls_server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.pem");
    std::fs::write(
        &file,
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let output = over_tls(&server)
        .envs([("SSL_CERT_FILE", file.display().to_string())])
        .output_async()
        .await;
    assert_calm(&output);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let last = last_line(&output);
    assert!(
        last.starts_with(
            "leash: provider error: could not set up TLS (check SSL_CERT_FILE / SSL_CERT_DIR): "
        ),
        "{last}"
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 0);
}
