//! Where the services listen (`[services]`: ports and limits) and TLS of their servers and
//! clients (`[tls]`).

use serde::Deserialize;

use crate::{SettingsError, invalid};

/// Where the services listen.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServicesSettings {
    /// Host every service binds to and the command line dials.
    pub host: String,
    /// Retrieval gRPC port.
    pub retrieval_port: u16,
    /// Firewall gRPC port.
    pub firewall_port: u16,
    /// Telemetry gRPC port.
    pub telemetry_port: u16,
    /// Analyst gRPC port.
    pub analyst_port: u16,
    /// HTTP ports of retrieval, firewall, telemetry and analyst, in that order: each serves
    /// Prometheus `/metrics`; the analyst's also serves the review dashboard at `/`.
    pub http_ports: [u16; 4],
    /// Grace period for in-flight work after a shutdown signal.
    pub drain_timeout_ms: u64,
    /// Largest gRPC message a service accepts, in bytes (at most tonic's own 4 MiB).
    pub max_message_bytes: usize,
    /// A call not answered within this ends with DEADLINE_EXCEEDED.
    pub request_timeout_ms: u64,
    /// Calls one service handles at once; one more is refused with RESOURCE_EXHAUSTED.
    pub max_concurrent_requests: usize,
    /// Largest HTTP request body on the metrics and dashboard ports; a larger one gets 413.
    pub max_http_body_bytes: usize,
    /// Messages one client stream (`ReportSignals`) may carry; the next is refused.
    pub max_stream_messages: usize,
}

/// tonic's own ceiling on a decoded message: `services.max_message_bytes` may only lower it.
pub const MAX_MESSAGE_BYTES_CEILING: usize = 4 * 1024 * 1024;

impl ServicesSettings {
    /// The port of a service by its short name (`retrieval`, `firewall`, `telemetry`, `analyst`).
    pub fn port_of(&self, service: &str) -> Option<u16> {
        match service {
            "retrieval" => Some(self.retrieval_port),
            "firewall" => Some(self.firewall_port),
            "telemetry" => Some(self.telemetry_port),
            "analyst" => Some(self.analyst_port),
            _ => None,
        }
    }

    /// The HTTP (metrics, and the analyst's dashboard) port of a service, by name.
    pub fn http_port_of(&self, service: &str) -> Option<u16> {
        match service {
            "retrieval" => Some(self.http_ports[0]),
            "firewall" => Some(self.http_ports[1]),
            "telemetry" => Some(self.http_ports[2]),
            "analyst" => Some(self.http_ports[3]),
            _ => None,
        }
    }
}

/// TLS (rustls) of the gRPC servers and of their clients: PEM file paths, empty for unset.
/// Only paths are checked here; `ontoloop-runtime` reads the files at start-up and names the
/// setting of one it cannot read or parse.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSettings {
    /// The servers' certificate chain; with `key_file`, every gRPC server serves TLS only.
    pub cert_file: String,
    /// The servers' private key.
    pub key_file: String,
    /// mTLS: clients must present a certificate this CA signed.
    pub client_ca_file: String,
    /// Clients: the CA they trust; set, they dial `https://`.
    pub ca_file: String,
    /// Clients: the name verified in the server's certificate; empty, the host dialled.
    pub domain: String,
    /// Clients: the certificate they present (mTLS).
    pub client_cert_file: String,
    /// Clients: the key of `client_cert_file`.
    pub client_key_file: String,
}

impl TlsSettings {
    /// Whether the servers serve TLS.
    pub fn serves_tls(&self) -> bool {
        !self.cert_file.is_empty()
    }

    /// Whether clients dial with TLS: a CA to trust is configured, or the servers of these same
    /// settings serve TLS (then `ca_file` is required, and its absence is reported when dialling).
    pub fn dials_tls(&self) -> bool {
        !self.ca_file.is_empty() || self.serves_tls()
    }

    /// Pairs that only work together.
    pub(crate) fn validate(&self) -> Result<(), SettingsError> {
        let pairs = [
            (
                "tls.cert_file",
                &self.cert_file,
                "tls.key_file",
                &self.key_file,
            ),
            (
                "tls.client_cert_file",
                &self.client_cert_file,
                "tls.client_key_file",
                &self.client_key_file,
            ),
        ];
        for (cert_key, cert, key_key, key) in pairs {
            match (cert.is_empty(), key.is_empty()) {
                (false, true) => return Err(invalid(key_key, format!("required with {cert_key}"))),
                (true, false) => return Err(invalid(cert_key, format!("required with {key_key}"))),
                _ => {}
            }
        }
        if !self.client_ca_file.is_empty() && self.cert_file.is_empty() {
            return Err(invalid(
                "tls.client_ca_file",
                "mTLS needs TLS: set tls.cert_file and tls.key_file too",
            ));
        }
        if !self.domain.is_empty() && !self.dials_tls() {
            return Err(invalid("tls.domain", "only used with tls.ca_file"));
        }
        if !self.client_cert_file.is_empty() && !self.dials_tls() {
            return Err(invalid(
                "tls.client_cert_file",
                "a client certificate needs TLS: set tls.ca_file too",
            ));
        }
        Ok(())
    }
}
