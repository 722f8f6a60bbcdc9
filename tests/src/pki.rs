//! Certificate authorities made by a test (rcgen): a CA, a server certificate for `localhost` /
//! 127.0.0.1 and a client certificate, as PEM files in a temporary directory, with a second,
//! unrelated CA beside them for the clients that must be refused.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

/// A certificate authority and what it signed, as PEM files in a temporary directory: `ca.pem`,
/// `server.pem` + `server.key`, `client.pem` + `client.key`.
pub struct Pki {
    dir: tempfile::TempDir,
    /// A second, unrelated CA with its own server and client certificates.
    other: Option<Box<Pki>>,
}

impl Pki {
    /// The test's CA, and another one.
    pub fn new() -> Self {
        let mut pki = Self::issue("ontoloop test CA");
        pki.other = Some(Box::new(Self::issue("another CA")));
        pki
    }

    /// A CA named `name`, a server certificate for localhost and 127.0.0.1 and a client
    /// certificate, all written as PEM files.
    fn issue(name: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let write = |file: &str, pem: String| {
            std::fs::write(dir.path().join(file), pem).expect("write a PEM file");
        };
        let ca_key = KeyPair::generate().expect("a CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        ca.distinguished_name.push(DnType::CommonName, name);
        write("ca.pem", ca.self_signed(&ca_key).expect("a CA").pem());
        let issuer = Issuer::new(ca, ca_key);
        let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose, file: &str| {
            let key = KeyPair::generate().expect("a key");
            let mut params = CertificateParams::new(names).expect("leaf params");
            params.extended_key_usages = vec![usage];
            let cert = params
                .signed_by(&key, &issuer)
                .expect("a signed certificate");
            write(&format!("{file}.pem"), cert.pem());
            write(&format!("{file}.key"), key.serialize_pem());
        };
        leaf(
            vec!["localhost".into(), "127.0.0.1".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
            "server",
        );
        leaf(
            vec!["agent.acme.test".into()],
            ExtendedKeyUsagePurpose::ClientAuth,
            "client",
        );
        Self { dir, other: None }
    }

    /// The path of one of the PEM files.
    pub fn path(&self, file: &str) -> String {
        self.dir.path().join(file).display().to_string()
    }

    /// The text of one of the PEM files.
    pub fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(file)).expect("read a PEM file")
    }

    /// The other, unrelated CA.
    pub fn other(&self) -> &Pki {
        self.other.as_deref().expect("the other CA")
    }

    /// Settings for TLS gRPC servers (and, with `mtls`, requiring client certificates of this
    /// CA), whose own clients trust this CA and present its client certificate.
    pub fn settings(&self, mtls: bool) -> Vec<(&'static str, String)> {
        let mut all = vec![
            ("tls.cert_file", self.path("server.pem")),
            ("tls.key_file", self.path("server.key")),
            ("tls.ca_file", self.path("ca.pem")),
        ];
        if mtls {
            all.push(("tls.client_ca_file", self.path("ca.pem")));
            all.push(("tls.client_cert_file", self.path("client.pem")));
            all.push(("tls.client_key_file", self.path("client.key")));
        }
        all
    }

    /// A gRPC client TLS config trusting this CA, presenting its client certificate if
    /// `identity`.
    pub fn client(&self, identity: bool) -> ClientTlsConfig {
        let config = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(self.read("ca.pem")))
            .domain_name("localhost");
        if identity {
            config.identity(Identity::from_pem(
                self.read("client.pem"),
                self.read("client.key"),
            ))
        } else {
            config
        }
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}
