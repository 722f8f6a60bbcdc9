//! Fetching the identity provider's JWKS from `auth.jwks_url`: one HTTP/1.1 `GET` over plain TCP
//! or rustls, its answer limited in size and time. What the keys are is `ontoloop-auth`'s.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use http_body_util::BodyExt as _;
use hyper::body::Bytes;
use ontoloop_auth::JwkSet;
use ontoloop_settings::TlsSettings;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::ServerName;

/// The largest JWKS answer read (a set of a few dozen keys is a few tens of KiB).
pub(crate) const MAX_JWKS_BYTES: usize = 1 << 20;

/// How long one fetch may take, connecting and reading included.
pub(crate) const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the JWKS is fetched from, and how.
pub(crate) struct JwksSource {
    url: String,
    uri: http::Uri,
    host: String,
    port: u16,
    /// For `https://`: the connector trusting `tls.ca_file` (or the bundled webpki roots), and
    /// the name its certificate must carry.
    tls: Option<(TlsConnector, ServerName<'static>)>,
}

impl std::fmt::Debug for JwksSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwksSource")
            .field("url", &self.url)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl JwksSource {
    /// The source of `url` (`http://` or `https://`); `https://` trusts only the CA of
    /// `tls.ca_file` when it is set, else the public roots bundled with `webpki-roots`.
    pub(crate) fn new(url: &str, tls: &TlsSettings) -> anyhow::Result<Self> {
        let uri: http::Uri = url.parse().context("not a URL")?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => anyhow::bail!("not an http:// or https:// URL"),
        };
        let host = uri
            .host()
            .context("the URL names no host")?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tls = if https {
            let name = ServerName::try_from(host.clone())
                .with_context(|| format!("{host:?} is not a DNS name or an IP address"))?;
            Some((connector(tls.ca_file.trim())?, name))
        } else {
            None
        };
        Ok(Self {
            url: url.to_owned(),
            uri,
            host,
            port,
            tls,
        })
    }

    /// The URL, for logs and errors.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Fetches and parses the set, within [`FETCH_TIMEOUT`].
    pub(crate) async fn fetch(&self) -> anyhow::Result<JwkSet> {
        let body = tokio::time::timeout(FETCH_TIMEOUT, self.get())
            .await
            .map_err(|_| anyhow::anyhow!("no answer within {} s", FETCH_TIMEOUT.as_secs()))??;
        Ok(ontoloop_auth::parse_jwks(&body, &self.url)?)
    }

    async fn get(&self) -> anyhow::Result<Bytes> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .with_context(|| format!("connect to {}:{}", self.host, self.port))?;
        match &self.tls {
            Some((connector, name)) => {
                let stream = connector
                    .connect(name.clone(), tcp)
                    .await
                    .context("TLS handshake")?;
                self.exchange(hyper_util::rt::TokioIo::new(stream)).await
            }
            None => self.exchange(hyper_util::rt::TokioIo::new(tcp)).await,
        }
    }

    /// One `GET` on an open connection; the body when the status is 200 and it fits
    /// [`MAX_JWKS_BYTES`].
    async fn exchange<I>(&self, io: I) -> anyhow::Result<Bytes>
    where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .context("HTTP handshake")?;
        // The connection is driven beside the exchange; it ends with it, or at the timeout.
        tokio::spawn(async move {
            if let Ok(Err(err)) = tokio::time::timeout(FETCH_TIMEOUT, connection).await {
                tracing::debug!(error = %err, "jwks connection ended with an error");
            }
        });
        let path = self
            .uri
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str);
        let authority = self
            .uri
            .authority()
            .map_or("", http::uri::Authority::as_str);
        let request = http::Request::get(path)
            .header(http::header::HOST, authority)
            .header(http::header::ACCEPT, "application/json")
            .body(http_body_util::Empty::<Bytes>::new())
            .context("build the request")?;
        let response = sender
            .send_request(request)
            .await
            .context("send the request")?;
        let status = response.status();
        anyhow::ensure!(status == http::StatusCode::OK, "answered {status}");
        let body = http_body_util::Limited::new(response.into_body(), MAX_JWKS_BYTES)
            .collect()
            .await
            .map_err(|err| {
                anyhow::anyhow!("read the answer (at most {MAX_JWKS_BYTES} bytes): {err}")
            })?;
        Ok(body.to_bytes())
    }
}

/// A rustls client trusting only the CA certificates of the PEM file at `ca_file`, or with an
/// empty `ca_file` the public roots bundled with `webpki-roots` (Mozilla's).
fn connector(ca_file: &str) -> anyhow::Result<TlsConnector> {
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    if ca_file.is_empty() {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        return client(roots);
    }
    let pem = std::fs::read(ca_file).with_context(|| format!("read tls.ca_file {ca_file:?}"))?;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.with_context(|| format!("tls.ca_file {ca_file:?}: bad PEM"))?;
        roots
            .add(cert)
            .with_context(|| format!("tls.ca_file {ca_file:?}: unusable certificate"))?;
    }
    anyhow::ensure!(
        !roots.is_empty(),
        "tls.ca_file {ca_file:?} holds no PEM CERTIFICATE block"
    );
    client(roots)
}

fn client(roots: rustls::RootCertStore) -> anyhow::Result<TlsConnector> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls(ca_file: &str) -> TlsSettings {
        let mut loader = ontoloop_settings::Loader::new().env_vars([]);
        if !ca_file.is_empty() {
            loader = loader.set("tls.ca_file", ca_file);
        }
        loader.load().expect("valid settings").tls
    }

    #[test]
    fn urls_default_their_port_and_https_trusts_the_ca_file_or_public_roots() {
        let source = JwksSource::new("http://idp.test/keys.json", &tls("")).expect("http");
        assert_eq!((source.host.as_str(), source.port), ("idp.test", 80));
        assert!(source.tls.is_none());
        let source = JwksSource::new("http://[::1]:8080/k", &tls("")).expect("ipv6");
        assert_eq!((source.host.as_str(), source.port), ("::1", 8080));
        let source = JwksSource::new("https://idp.test/keys.json", &tls("")).expect("public roots");
        assert_eq!(source.port, 443);
        assert!(source.tls.is_some());
        let err = JwksSource::new("https://idp.test/k", &tls("/nonexistent/ca.pem"))
            .expect_err("no such file");
        assert!(format!("{err:#}").contains("tls.ca_file"), "{err:#}");
        assert!(JwksSource::new("ftp://idp.test/k", &tls("")).is_err());
    }
}
