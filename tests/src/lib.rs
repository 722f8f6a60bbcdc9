//! A sandbox that runs the whole system for tests: all four services, in one process, through
//! the same `serve_all` that `ontoloop up` uses (by way of `ontoloop::up::Local`), on whatever
//! store and queue the settings name: the embedded default ([`Sandbox::embedded`]) or the
//! machine's PostgreSQL and RabbitMQ ([`Sandbox::on_servers`]). Tests talk to it through
//! [`Clients`] with a wire [`caller`], and get a shutdown trigger and [`wait_until`] instead of
//! sleeps. With `[tls]` settings the servers serve TLS and the sandbox's channels dial `https://`
//! with the client half of those settings (`tls.ca_file`, `tls.client_cert_file`); [`pki`] makes
//! the CAs and certificates the TLS suites use.

pub mod browser;
pub mod http;
pub mod pki;
pub mod tokens;

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ontoloop::up::Local;
use ontoloop_core::ServiceKind;
use ontoloop_proto::v1;
use ontoloop_proto::v1::analyst_service_client::AnalystServiceClient;
use ontoloop_proto::v1::firewall_service_client::FirewallServiceClient;
use ontoloop_proto::v1::retrieval_service_client::RetrievalServiceClient;
use ontoloop_proto::v1::telemetry_service_client::TelemetryServiceClient;
use ontoloop_runtime::Context;
use ontoloop_settings::{Loader, Settings};
pub use ontoloop_testkit::servers::{PgDatabase, amqp_namespace, amqp_url};
use tonic::transport::{Channel, ClientTlsConfig};

/// Settings for a test: defaults, no process environment, these overrides.
pub fn settings(overrides: &[(&str, &str)]) -> Settings {
    let mut loader = Loader::new().env_vars([]);
    for (key, value) in overrides {
        loader = loader.set(key, *value);
    }
    loader.load().expect("test settings are valid")
}

/// Settings for the machine's servers: `database` as the store, RabbitMQ under a namespace of
/// its own for `test` as the queue, then `overrides`.
pub fn server_settings(database: &PgDatabase, test: &str, overrides: &[(&str, &str)]) -> Settings {
    let (amqp, namespace) = (amqp_url(), amqp_namespace(test));
    let mut all = vec![
        ("store.url", database.url.as_str()),
        ("queue.url", amqp.as_str()),
        ("queue.namespace", namespace.as_str()),
    ];
    all.extend_from_slice(overrides);
    settings(&all)
}

/// Project records the analyst discovers missing knowledge in, in a temporary directory.
pub struct Records {
    _dir: tempfile::TempDir,
    sources: String,
}

impl Records {
    /// Writes each `(file, text)` in `tenant`'s folder.
    pub fn new(tenant: &str, files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let folder = dir.path().join(tenant);
        std::fs::create_dir_all(&folder).expect("mkdir");
        for (file, text) in files {
            std::fs::write(folder.join(file), text).expect("write a project record");
        }
        let sources = dir.path().display().to_string();
        Self { _dir: dir, sources }
    }

    /// Settings overrides: the analyst reads these records (`analyst.sources_dir`), then
    /// `overrides`.
    pub fn and<'a>(&'a self, overrides: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut all = vec![("analyst.sources_dir", self.sources.as_str())];
        all.extend_from_slice(overrides);
        all
    }
}

/// A caller on the wire: `principal` of `tenant`.
pub fn caller(tenant: &str, principal: &str) -> Option<v1::Caller> {
    Some(v1::Caller {
        tenant: tenant.into(),
        principal: principal.into(),
    })
}

/// An ontology-set event carrying `json`.
pub fn ontology(json: &str) -> v1::event::Kind {
    v1::event::Kind::OntologySet(v1::OntologySet {
        ontology_json: json.into(),
    })
}

/// A page upsert: `id` (also its title) from `origin`, readable by `acl` (everyone when empty),
/// with an extraction `confidence` (0: none given).
pub fn doc(id: &str, origin: &str, body: &str, acl: &[&str], confidence: f64) -> v1::event::Kind {
    v1::event::Kind::DocUpsert(v1::DocUpsert {
        doc_id: id.into(),
        title: id.into(),
        origin: origin.into(),
        body: body.into(),
        acl: acl.iter().map(|s| s.to_string()).collect(),
        hold: false,
        confidence,
        effective_from: None,
    })
}

/// Clients of the four services of a [`Sandbox`], on channels that connect on first use.
/// Cloning is cheap: clones share the channels.
#[derive(Clone)]
pub struct Clients {
    /// Retrieval: Ask, Lookup, Plate, project contexts.
    pub retrieval: RetrievalServiceClient<Channel>,
    /// The semantic firewall.
    pub firewall: FirewallServiceClient<Channel>,
    /// The intake of events and signals.
    pub telemetry: TelemetryServiceClient<Channel>,
    /// The analyst: patterns, reviews, maintenance runs.
    pub analyst: AnalystServiceClient<Channel>,
}

impl Clients {
    /// Pushes one event through the intake as `principal` of `tenant`; its sequence, which a
    /// later request can wait for (`min_sequence`).
    pub async fn push(
        &self,
        tenant: &str,
        principal: &str,
        kind: v1::event::Kind,
    ) -> Result<u64, tonic::Status> {
        self.telemetry
            .clone()
            .push_event(v1::Event {
                caller: caller(tenant, principal),
                kind: Some(kind),
                ..Default::default()
            })
            .await
            .map(|ack| ack.into_inner().sequence)
    }

    /// Polls `request` until it is answered with `value` or `timeout` passes; true when it was.
    pub async fn wait_for_answer(
        &self,
        request: v1::LookupRequest,
        value: &str,
        timeout: Duration,
    ) -> bool {
        wait_until(timeout, || {
            let mut retrieval = self.retrieval.clone();
            let request = request.clone();
            async move {
                retrieval
                    .lookup(request)
                    .await
                    .is_ok_and(|a| a.into_inner().value == value)
            }
        })
        .await
    }

    /// Every pattern the analyst holds for `tenant`, as `principal` sees them.
    pub async fn patterns(&self, tenant: &str, principal: &str) -> Vec<v1::Pattern> {
        self.analyst
            .clone()
            .list_patterns(v1::ListPatternsRequest {
                caller: caller(tenant, principal),
                limit: 0,
            })
            .await
            .expect("patterns")
            .into_inner()
            .patterns
    }

    /// Pushes events in order (each must be accepted); the last one's sequence.
    pub async fn push_all(
        &self,
        tenant: &str,
        principal: &str,
        kinds: impl IntoIterator<Item = v1::event::Kind>,
    ) -> u64 {
        let mut last = 0;
        for kind in kinds {
            last = self.push(tenant, principal, kind).await.expect("push");
        }
        last
    }
}

/// The whole system, running: the same `Local` system `ontoloop bench` starts, with test helpers.
pub struct Sandbox {
    local: Local,
    /// The shared context (store and queue) the services run on.
    pub ctx: Context,
    /// How the sandbox's channels dial: TLS from the settings' `[tls]` client half, or none.
    tls: Option<ClientTlsConfig>,
    /// The embedded store's directory, removed after shutdown.
    _dir: Option<tempfile::TempDir>,
}

impl Sandbox {
    /// Binds every service on `127.0.0.1:0`, connects the store and queue the settings name and
    /// starts serving.
    pub async fn start(settings: Settings) -> anyhow::Result<Self> {
        let tls = ontoloop_runtime::tls::client_config(&settings.tls)?;
        let local = Local::start(settings).await?;
        let ctx = local.ctx.clone();
        Ok(Self {
            local,
            ctx,
            tls,
            _dir: None,
        })
    }

    /// The embedded default with `overrides`: a SQLite store in a temporary directory (kept until
    /// the sandbox is dropped) and the in-process queue.
    pub async fn embedded(overrides: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}/ontoloop.db?mode=rwc", dir.path().display());
        let mut all = vec![("store.url", url.as_str())];
        all.extend_from_slice(overrides);
        let mut sandbox = Self::start(settings(&all))
            .await
            .expect("the embedded system starts");
        sandbox._dir = Some(dir);
        sandbox
    }

    /// On the machine's servers ([`server_settings`]): a fresh PostgreSQL database, which the
    /// test drops, and RabbitMQ under a namespace of its own for `test`.
    pub async fn on_servers(test: &str, overrides: &[(&str, &str)]) -> (Self, PgDatabase) {
        let database = PgDatabase::create().await.expect("PostgreSQL answers");
        let sandbox = Self::start(server_settings(&database, test, overrides))
            .await
            .expect("the system starts on PostgreSQL and RabbitMQ");
        (sandbox, database)
    }

    /// Waits up to `timeout` until `tenant`'s review queue holds one update per entity of
    /// `entities` (and no more), then returns their update ids in that order.
    pub async fn review_ids(
        &self,
        tenant: &str,
        entities: &[&str],
        timeout: Duration,
    ) -> Vec<String> {
        let queued = wait_until(timeout, || {
            let store = self.ctx.store.clone();
            async move {
                store
                    .review_queue(tenant, 10)
                    .await
                    .is_ok_and(|q| q.len() == entities.len())
            }
        })
        .await;
        assert!(queued, "{} updates wait for review", entities.len());
        let queue = self
            .ctx
            .store
            .review_queue(tenant, 10)
            .await
            .expect("queue");
        entities
            .iter()
            .map(|entity| {
                queue
                    .iter()
                    .find(|u| u.entity == *entity)
                    .map(|u| u.id.clone())
                    .unwrap_or_else(|| panic!("an update for {entity}"))
            })
            .collect()
    }

    /// A channel to a service, connecting on first use (over TLS when the settings say so).
    pub fn channel(&self, kind: ServiceKind) -> Channel {
        ontoloop_runtime::tls::endpoint(&self.addr(kind).to_string(), self.tls.as_ref())
            .expect("a valid endpoint")
            .connect_lazy()
    }

    /// Clients of the four services.
    pub fn clients(&self) -> Clients {
        Clients {
            retrieval: RetrievalServiceClient::new(self.channel(ServiceKind::Retrieval)),
            firewall: FirewallServiceClient::new(self.channel(ServiceKind::Firewall)),
            telemetry: TelemetryServiceClient::new(self.channel(ServiceKind::Telemetry)),
            analyst: AnalystServiceClient::new(self.channel(ServiceKind::Analyst)),
        }
    }

    /// The address a service listens on.
    pub fn addr(&self, kind: ServiceKind) -> SocketAddr {
        self.local
            .addrs
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, addr)| *addr)
            .expect("every service is bound")
    }

    /// The HTTP address of a service (metrics; the analyst's dashboard).
    pub fn http_addr(&self, kind: ServiceKind) -> SocketAddr {
        self.local
            .http_addrs
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, addr)| *addr)
            .expect("every service is bound")
    }

    /// `http://ADDR` of a service, or `https://ADDR` when the sandbox dials TLS.
    pub fn endpoint(&self, kind: ServiceKind) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr(kind))
    }

    /// Triggers shutdown and waits for every service to drain.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.local.stop().await
    }
}

/// `GET path` over plain HTTP/1.0; the body of a 200 response.
pub async fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connect to {addr}"))?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("a response with headers")?;
    anyhow::ensure!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "GET {path}: {head}"
    );
    Ok(body.to_owned())
}

/// Polls `predicate` every 20 ms until it holds or `timeout` passes; true when it held.
pub async fn wait_until<F, Fut>(timeout: Duration, mut predicate: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if predicate().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
