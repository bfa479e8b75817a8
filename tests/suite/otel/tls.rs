//! The exporter's TLS variables: a collector behind HTTPS with a
//! certificate made in the test is refused until
//! `OTEL_EXPORTER_OTLP_CERTIFICATE` names its CA, and a client key without
//! its certificate is one line.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;

use super::*;

/// A loopback HTTPS collector that answers every export 200; its port,
/// the requests it read and its certificate (PEM).
async fn https_collector() -> (u16, Arc<AtomicUsize>, String, tokio::task::JoinHandle<()>) {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let pem = certified.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![certified.cert.der().clone()], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    let task = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (acceptor, counted) = (acceptor.clone(), Arc::clone(&counted));
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                let mut read = Vec::new();
                let mut buffer = [0u8; 8192];
                // One request: its headers, then Content-Length bytes.
                loop {
                    let Ok(n) = tls.read(&mut buffer).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    read.extend_from_slice(&buffer[..n]);
                    let text = String::from_utf8_lossy(&read).to_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length: usize = text[..end]
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .and_then(|value| value.trim().parse().ok())
                            .unwrap_or(0);
                        if read.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                counted.fetch_add(1, Ordering::SeqCst);
                let _ = tls
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (port, requests, pem, task)
}

#[tokio::test]
async fn a_collectors_ca_is_trusted_only_through_the_certificate_variable() {
    let (port, requests, pem, task) = https_collector().await;
    let endpoint = format!("https://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &pem).unwrap();
    let untrusted = seed_task()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .output_async()
        .await;
    assert_eq!(untrusted.code(), Some(0), "{}", untrusted.stderr());
    assert_eq!(
        untrusted.stderr().matches("traces not exported").count(),
        1,
        "{}",
        untrusted.stderr()
    );
    assert_eq!(requests.load(Ordering::SeqCst), 0);
    let trusted = seed_task()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", &ca)
        .output_async()
        .await;
    assert_eq!(trusted.code(), Some(0), "{}", trusted.stderr());
    assert!(!trusted.stderr().contains("traces"), "{}", trusted.stderr());
    assert!(requests.load(Ordering::SeqCst) >= 1);
    // A key without its certificate: one line, the run goes on untraced.
    let half = seed_task()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca)
        .env("OTEL_EXPORTER_OTLP_CLIENT_KEY", &ca)
        .output_async()
        .await;
    assert_eq!(half.code(), Some(0), "{}", half.stderr());
    assert!(
        half.stderr()
            .contains("OTEL_EXPORTER_OTLP_CLIENT_KEY is set without its pair"),
        "{}",
        half.stderr()
    );
    // A file that is no certificate: its variable is named, not its bytes.
    std::fs::write(dir.path().join("junk.pem"), "sk-not-a-cert").unwrap();
    let junk = seed_task()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env(
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
            dir.path().join("junk.pem"),
        )
        .output_async()
        .await;
    assert!(
        junk.stderr()
            .contains("OTEL_EXPORTER_OTLP_CERTIFICATE: holds no PEM certificate"),
        "{}",
        junk.stderr()
    );
    assert!(!junk.stderr().contains("sk-not-a-cert"));
    task.abort();
}
