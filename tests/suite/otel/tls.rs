//! The exporter's TLS variables: a collector behind HTTPS with a
//! certificate made in the test is refused until
//! `OTEL_EXPORTER_OTLP_CERTIFICATE` names its CA, and a client key without
//! its certificate is one line; a collector that asks for a client
//! certificate (mutual TLS) gets the traces and metrics only with
//! `_CLIENT_CERTIFICATE` and `_CLIENT_KEY`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;

use super::*;

/// A collector's task: its port, the requests it read, and the task.
type Serving = (u16, Arc<AtomicUsize>, tokio::task::JoinHandle<()>);

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
    let (port, requests, task) = serve(config).await;
    (port, requests, pem, task)
}

/// PEM files made for a mutual TLS test: the CA, and a client's
/// certificate and key signed by it.
struct Pems {
    ca: String,
    client_certificate: String,
    client_key: String,
}

/// A loopback HTTPS collector that requires a client certificate signed
/// by its own CA; the PEM files a client needs.
async fn mutual_tls_collector() -> (Serving, Pems) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let signed = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let certificate = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (certificate, key)
    };
    let (server, server_key) = signed(vec!["127.0.0.1".to_owned()]);
    let (client, client_key) = signed(vec!["leash-client".to_owned()]);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![server.der().clone(), ca.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into()),
        )
        .unwrap();
    let pems = Pems {
        ca: ca.pem(),
        client_certificate: client.pem(),
        client_key: client_key.serialize_pem(),
    };
    (serve(config).await, pems)
}

/// Serves `config` on a loopback port: each connection's one request is
/// read and answered 200.
async fn serve(config: rustls::ServerConfig) -> Serving {
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
    (port, requests, task)
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
    assert!(
        untrusted.stderr().contains(
            "traces not exported to {endpoint}/v1/traces: its certificate is not trusted"
                .replace("{endpoint}", &endpoint)
                .as_str()
        ),
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

#[tokio::test]
async fn a_collector_asking_for_a_client_certificate_gets_one_only_from_the_pair() {
    let ((port, requests, task), pems) = mutual_tls_collector().await;
    let endpoint = format!("https://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let ca = file("ca.pem", &pems.ca);
    let certificate = file("client.pem", &pems.client_certificate);
    let key = file("client-key.pem", &pems.client_key);
    // Without the pair the collector refuses the handshake: one line per
    // signal, and the run is the same run.
    let refused = seed_task()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca)
        .output_async()
        .await;
    assert_eq!(refused.code(), Some(0), "{}", refused.stderr());
    for signal in ["traces", "metrics"] {
        let line = format!(
            "leash: {signal} not exported to {endpoint}/v1/{signal}: it refused the TLS \
             handshake without a client certificate it trusts"
        );
        assert_eq!(
            refused.stderr().matches(&line).count(),
            1,
            "{}",
            refused.stderr()
        );
    }
    assert_eq!(requests.load(Ordering::SeqCst), 0);
    // With it, both are received.
    let accepted = seed_task()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca)
        .env("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", &certificate)
        .env("OTEL_EXPORTER_OTLP_CLIENT_KEY", &key)
        .output_async()
        .await;
    assert_eq!(accepted.code(), Some(0), "{}", accepted.stderr());
    assert!(
        !accepted.stderr().contains("not exported"),
        "{}",
        accepted.stderr()
    );
    assert_eq!(
        requests.load(Ordering::SeqCst),
        2,
        "one trace, one metrics export"
    );
    // The signal's own variables win: the metrics' pair alone sends only them.
    let metrics_only = seed_task()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca)
        .env(
            "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
            &certificate,
        )
        .env("OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", &key)
        .output_async()
        .await;
    assert_eq!(metrics_only.code(), Some(0), "{}", metrics_only.stderr());
    assert!(metrics_only.stderr().contains("traces not exported"));
    assert!(!metrics_only.stderr().contains("metrics not exported"));
    assert_eq!(requests.load(Ordering::SeqCst), 3);
    task.abort();
}
