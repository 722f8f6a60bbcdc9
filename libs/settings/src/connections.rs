//! The store's and the queue's sections: their URLs (checked at load), the queue's TLS files,
//! and a `Debug` that never shows a URL's password.

use serde::Deserialize;

use crate::{SettingsError, invalid};

/// The relational store. `Debug` shows `url` without its password.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSettings {
    /// `sqlite://...` or `postgres://...`.
    pub url: String,
    /// Pool size.
    pub max_connections: u32,
    /// Per-attempt connect timeout.
    pub connect_timeout_ms: u64,
    /// Attempts before an unreachable database is reported as an error.
    pub connect_attempts: u32,
    /// First wait between attempts; doubles up to `backoff_max_ms`.
    pub backoff_initial_ms: u64,
    /// Longest wait between attempts.
    pub backoff_max_ms: u64,
}

/// The message queue. `Debug` shows `url` without its password.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSettings {
    /// `memory` or `amqp://...`.
    pub url: String,
    /// Prefix of every queue name on the broker, so separate systems can share one RabbitMQ.
    pub namespace: String,
    /// Unacknowledged messages a consumer may hold.
    pub prefetch: u16,
    /// Attempts before an unreachable broker is reported as an error.
    pub connect_attempts: u32,
    /// How long one broker handshake may take: opening a connection, a channel or a consumer,
    /// or one publish's confirm. A broker (or a path to it) that accepts the socket and then
    /// stays silent counts as a failed attempt instead of holding the connection forever.
    pub connect_timeout_ms: u64,
    /// First wait between attempts; doubles up to `backoff_max_ms`.
    pub backoff_initial_ms: u64,
    /// Longest wait between attempts.
    pub backoff_max_ms: u64,
    /// `amqps://`: the CA (PEM) the broker's certificate must chain to; the only one trusted.
    pub tls_ca_file: String,
    /// `amqps://`: the client certificate (PEM) presented to a broker that asks for one.
    pub tls_client_cert_file: String,
    /// `amqps://`: the key of `tls_client_cert_file`.
    pub tls_client_key_file: String,
    /// How long a request waits for the broker's confirm of what it has just recorded before
    /// leaving the publish to the outbox relay (the acknowledgement stands either way).
    pub publish_timeout_ms: u64,
    /// Deliveries of one message a consumer tries before dead-lettering it with the last reason.
    pub max_attempts: u32,
    /// Wait before a message that failed for a passing reason is tried again.
    pub retry_delay_ms: u64,
    /// The largest message body a consumer reads; a larger one is dead-lettered at once with a
    /// reason naming this, and the intake refuses an event whose body would be larger.
    pub max_body_bytes: usize,
}

/// `Debug` for a section holding a `url`: every field, the URL without its password (which never
/// reaches a log or an error). The fields are destructured, so one added to the section and not
/// listed here does not compile.
macro_rules! debug_with_url_redacted {
    ($section:ident { $($field:ident),* $(,)? }) => {
        impl std::fmt::Debug for $section {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let Self { url, $($field),* } = self;
                f.debug_struct(stringify!($section))
                    .field("url", &ontoloop_core::redact_url(url))
                    $(.field(stringify!($field), $field))*
                    .finish()
            }
        }
    };
}

debug_with_url_redacted!(StoreSettings {
    max_connections,
    connect_timeout_ms,
    connect_attempts,
    backoff_initial_ms,
    backoff_max_ms,
});

debug_with_url_redacted!(QueueSettings {
    namespace,
    prefetch,
    connect_attempts,
    connect_timeout_ms,
    backoff_initial_ms,
    backoff_max_ms,
    tls_ca_file,
    tls_client_cert_file,
    tls_client_key_file,
    publish_timeout_ms,
    max_attempts,
    retry_delay_ms,
    max_body_bytes,
});

/// Which queue implementation the settings select.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueBackend {
    /// The in-process queue.
    Memory,
    /// RabbitMQ at this URL.
    Amqp(String),
}

impl QueueSettings {
    /// The `tls_*` files go with an `amqps://` URL, which needs the CA (it is the only one
    /// trusted), and the client certificate and key go together.
    pub(crate) fn validate_tls(&self) -> Result<(), SettingsError> {
        let tls = self.url.starts_with("amqps://");
        let files = [
            ("queue.tls_ca_file", &self.tls_ca_file),
            ("queue.tls_client_cert_file", &self.tls_client_cert_file),
            ("queue.tls_client_key_file", &self.tls_client_key_file),
        ];
        if !tls {
            if let Some((key, _)) = files.iter().find(|(_, path)| !path.is_empty()) {
                return Err(invalid(key, "only used with an amqps:// queue.url"));
            }
            return Ok(());
        }
        if self.tls_ca_file.is_empty() {
            return Err(invalid(
                "queue.tls_ca_file",
                "required with an amqps:// queue.url (the CA the broker's certificate chains to)",
            ));
        }
        match (
            self.tls_client_cert_file.is_empty(),
            self.tls_client_key_file.is_empty(),
        ) {
            (false, true) => Err(invalid(
                "queue.tls_client_key_file",
                "required with queue.tls_client_cert_file",
            )),
            (true, false) => Err(invalid(
                "queue.tls_client_cert_file",
                "required with queue.tls_client_key_file",
            )),
            _ => Ok(()),
        }
    }

    /// The backend the URL selects (validated at load time).
    pub fn backend(&self) -> QueueBackend {
        if self.url == "memory" {
            QueueBackend::Memory
        } else {
            QueueBackend::Amqp(self.url.clone())
        }
    }
}

pub(crate) fn validate_store_url(raw: &str) -> Result<(), SettingsError> {
    const KEY: &str = "store.url";
    // Errors quote the URL without its password.
    let shown = ontoloop_core::redact_url(raw);
    let url = url::Url::parse(raw)
        .map_err(|err| invalid(KEY, format!("{shown:?} is not a URL: {err}")))?;
    match url.scheme() {
        "sqlite" => Ok(()),
        "postgres" | "postgresql" => {
            if url.host_str().is_none_or(str::is_empty) {
                return Err(invalid(KEY, format!("{shown:?} names no host")));
            }
            Ok(())
        }
        other => Err(invalid(
            KEY,
            format!("scheme {other:?} is not supported (use sqlite:// or postgres://)"),
        )),
    }
}

pub(crate) fn validate_queue_url(raw: &str) -> Result<(), SettingsError> {
    const KEY: &str = "queue.url";
    if raw == "memory" {
        return Ok(());
    }
    let shown = ontoloop_core::redact_url(raw);
    let url = url::Url::parse(raw)
        .map_err(|err| invalid(KEY, format!("{shown:?} is not a URL: {err}")))?;
    match url.scheme() {
        "amqp" | "amqps" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        "amqp" | "amqps" => Err(invalid(KEY, format!("{shown:?} names no host"))),
        other => Err(invalid(
            KEY,
            format!("scheme {other:?} is not supported (use memory or amqp://)"),
        )),
    }
}
