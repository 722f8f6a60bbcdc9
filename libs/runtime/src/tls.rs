//! TLS (rustls, `ring`) of the gRPC servers, of the HTTP servers (metrics, the dashboard) and of
//! the clients that dial the gRPC ones, from `[tls]`: reading the PEM files once at start-up,
//! where a missing, unreadable or malformed file is an error naming its setting.

use std::sync::Arc;

use anyhow::Context as _;
use ontoloop_settings::TlsSettings;
use tokio_rustls::rustls;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig};

/// The servers' TLS: `None` unless `tls.cert_file` is set; with `tls.client_ca_file`, mTLS (a
/// client without a certificate that CA signed is refused during the handshake).
pub fn server_config(tls: &TlsSettings) -> anyhow::Result<Option<ServerTlsConfig>> {
    if !tls.serves_tls() {
        return Ok(None);
    }
    let cert = read_pem("tls.cert_file", &tls.cert_file, "CERTIFICATE")?;
    let key = read_pem("tls.key_file", &tls.key_file, "PRIVATE KEY")?;
    let mut config = ServerTlsConfig::new().identity(Identity::from_pem(cert, key));
    if !tls.client_ca_file.is_empty() {
        let ca = read_pem("tls.client_ca_file", &tls.client_ca_file, "CERTIFICATE")?;
        config = config.client_ca_root(Certificate::from_pem(ca));
    }
    // Building the acceptor parses the certificate and key: a bad pair fails here, at start-up,
    // rather than at the first handshake.
    tonic::transport::Server::builder()
        .tls_config(config.clone())
        .context("load tls.cert_file and tls.key_file (a certificate and its private key)")?;
    Ok(Some(config))
}

/// The HTTP servers' TLS (HTTPS on the metrics and dashboard ports): `None` unless
/// `tls.cert_file` is set. No client certificate is asked for, whatever `tls.client_ca_file`
/// says: browsers reach these ports. HTTP/1.1 only, as the servers speak.
pub fn http_server_config(tls: &TlsSettings) -> anyhow::Result<Option<Arc<rustls::ServerConfig>>> {
    use tokio_rustls::rustls::pki_types::pem::PemObject as _;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    if !tls.serves_tls() {
        return Ok(None);
    }
    let cert = read_pem("tls.cert_file", &tls.cert_file, "CERTIFICATE")?;
    let key = read_pem("tls.key_file", &tls.key_file, "PRIVATE KEY")?;
    let chain = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<Vec<_>, _>>()
        .context("setting `tls.cert_file`: bad PEM")?;
    let key = PrivateKeyDer::from_pem_slice(&key).context("setting `tls.key_file`: bad PEM")?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("load tls.cert_file and tls.key_file (a certificate and its private key)")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(Arc::new(config)))
}

/// The clients' TLS: `None` (plaintext) unless `tls.ca_file` or `tls.cert_file` is set; then the
/// CA of `tls.ca_file` is the only one trusted, `tls.domain` (when set) is the name verified, and
/// `tls.client_cert_file` is presented for mTLS.
pub fn client_config(tls: &TlsSettings) -> anyhow::Result<Option<ClientTlsConfig>> {
    if !tls.dials_tls() {
        return Ok(None);
    }
    anyhow::ensure!(
        !tls.ca_file.is_empty(),
        "setting `tls.ca_file` is required to dial services that serve TLS (tls.cert_file is set)"
    );
    let ca = read_pem("tls.ca_file", &tls.ca_file, "CERTIFICATE")?;
    let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
    if !tls.domain.is_empty() {
        config = config.domain_name(tls.domain.clone());
    }
    if !tls.client_cert_file.is_empty() {
        let cert = read_pem("tls.client_cert_file", &tls.client_cert_file, "CERTIFICATE")?;
        let key = read_pem("tls.client_key_file", &tls.client_key_file, "PRIVATE KEY")?;
        config = config.identity(Identity::from_pem(cert, key));
    }
    // Parses the CA and the client identity now, so a bad file is named before any dial.
    Endpoint::from_static("https://localhost")
        .tls_config(config.clone())
        .context("load tls.ca_file and tls.client_cert_file / tls.client_key_file")?;
    Ok(Some(config))
}

/// An endpoint for `addr` (`host:port`): `https://` with `tls` when given, `http://` otherwise.
pub fn endpoint(addr: &str, tls: Option<&ClientTlsConfig>) -> anyhow::Result<Endpoint> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let endpoint = Endpoint::from_shared(format!("{scheme}://{addr}"))
        .with_context(|| format!("bad address {addr}"))?;
    match tls {
        Some(tls) => endpoint
            .tls_config(tls.clone())
            .with_context(|| format!("configure TLS to {addr}")),
        None => Ok(endpoint),
    }
}

/// The contents of the PEM file a setting names, which must hold a block whose label ends with
/// `label` (`CERTIFICATE`; `PRIVATE KEY` also matches `RSA PRIVATE KEY` and `EC PRIVATE KEY`).
fn read_pem(setting: &str, path: &str, label: &str) -> anyhow::Result<Vec<u8>> {
    let pem = std::fs::read(path).with_context(|| format!("read {setting} {path:?}"))?;
    let text = String::from_utf8_lossy(&pem);
    let has_block = text.lines().any(|line| {
        line.strip_prefix("-----BEGIN ")
            .and_then(|rest| rest.strip_suffix("-----"))
            .is_some_and(|found| found.ends_with(label))
    });
    anyhow::ensure!(
        has_block,
        "setting `{setting}`: {path:?} holds no PEM {label} block"
    );
    Ok(pem)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `[tls]` section of the defaults with `keys` (short names) set.
    fn settings(keys: &[(&str, &str)]) -> TlsSettings {
        let mut loader = ontoloop_settings::Loader::new().env_vars([]);
        for (key, value) in keys {
            loader = loader.set(&format!("tls.{key}"), *value);
        }
        loader.load().expect("valid settings").tls
    }

    fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write a file");
        path.display().to_string()
    }

    #[test]
    fn off_by_default_for_servers_and_clients() {
        let tls = settings(&[]);
        assert!(server_config(&tls).expect("no TLS").is_none());
        assert!(http_server_config(&tls).expect("no TLS").is_none());
        assert!(client_config(&tls).expect("no TLS").is_none());
        assert_eq!(
            endpoint("127.0.0.1:1", None)
                .expect("plaintext")
                .uri()
                .scheme_str(),
            Some("http")
        );
    }

    #[test]
    fn a_missing_or_malformed_file_is_named_by_its_setting() {
        let dir = tempfile::tempdir().expect("temp dir");
        let not_pem = write(dir.path(), "not.pem", "hello\n");
        let absent = dir.path().join("absent.pem").display().to_string();
        let tls = settings(&[("cert_file", &absent), ("key_file", &not_pem)]);
        let err = server_config(&tls).expect_err("no such file");
        assert!(format!("{err:#}").contains("tls.cert_file"), "{err:#}");
        let err = http_server_config(&tls).expect_err("no such file");
        assert!(format!("{err:#}").contains("tls.cert_file"), "{err:#}");
        let tls = settings(&[("ca_file", &not_pem)]);
        let err = client_config(&tls).expect_err("not PEM");
        assert!(format!("{err:#}").contains("tls.ca_file"), "{err:#}");
    }

    #[test]
    fn servers_serving_tls_need_a_ca_to_be_dialled() {
        let tls = settings(&[("cert_file", "server.pem"), ("key_file", "server.key")]);
        let err = client_config(&tls).expect_err("no CA");
        assert!(format!("{err:#}").contains("tls.ca_file"), "{err:#}");
    }
}
