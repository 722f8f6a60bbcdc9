//! Start-up, serving and shutdown glue shared by the ontoloop services.
//!
//! Owns what every service does the same way: connecting the store and the queue from settings,
//! the one service shape (`Service` builds `Parts`; `serve` runs gRPC with health and reflection
//! beside HTTP and the service's tasks until a shutdown future resolves), the one drain policy
//! (`TaskGroup`), turning SIGINT and SIGTERM into that future, and running queue consumers that
//! drain on cancellation; and the extraction setup every service reads text with, the `model`
//! stage's cache kept in the store (`model_cache`), and the trust boundary every gRPC server
//! sits behind (`auth`: bearer token, role by method, the identity in the request's extensions;
//! no serving on a non-loopback address with `auth.mode = "off"`; the keys, from a JWKS file or a
//! JWKS URL fetched again in the background, `jwks`), with TLS and mTLS from `[tls]` (`tls`: the
//! servers' rustls configs, gRPC and HTTPS, and the clients' endpoints). Every gRPC call runs in
//! a span that continues the caller's W3C trace context (`trace`), and consumers handle each
//! message in a span that continues its publisher's. The context also holds, made on a service's
//! first asking and then shared by every service of the process, what reading knowledge takes:
//! the extraction setup with the sentence encoder (`Context::extraction`) and the one cache of
//! knowledge read models with its follower of commits (`Context::read_models`); a process whose
//! services ask for neither (telemetry alone) loads no model and follows no read model. It names
//! the allocator of every process that links it (jemalloc). It holds no service behaviour of its
//! own.

/// Every ontoloop process allocates with jemalloc: under the scale benchmark's load glibc's
/// malloc left the process holding about twice the resident memory (`ontoloop bench scale`,
/// 30,000 pages: 853 MB against 431 MB), freed memory fragmented across its per-thread arenas.
/// The C code linked in (SQLite, each connection on a thread of its own) allocates with it too
/// (`unprefixed_malloc_on_supported_platforms`: jemalloc is the process's `malloc`): left on
/// glibc's, 100,000 pages at 50 events/s ended at 1.43 GB instead of 1.20 GB.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts (`MALLOC_CONF` in the environment still overrides
/// them): freed pages go back to the system within about a second (`dirty_decay_ms` 1,000 and
/// `muzzy_decay_ms` 0, instead of 10,000 each), purged by a thread of jemalloc's own
/// (`background_thread`) rather than when the thread that freed them next allocates. A read
/// model's first catch-up over a large load frees most of what it allocates (the changes read,
/// the index writers' buffers, segments merged away); with the defaults that memory stayed
/// resident for seconds, so at 100,000 pages at 50 events/s the peak was 1.71 GB instead of
/// 1.43 GB. A C string, as jemalloc reads it (symbol `malloc_conf`, where jemalloc is the
/// process's `malloc`: Linux).
#[cfg(target_os = "linux")]
#[unsafe(export_name = "malloc_conf")]
pub static MALLOC_CONF: &[u8; 60] =
    b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

pub mod auth;
mod consume;
pub mod gateway;
mod group;
mod http;
mod jwks;
pub mod limits;
mod model_cache;
pub mod outbox;
mod rpc_metrics;
mod serve;
mod service;
pub mod signals;
pub mod tls;
mod trace;
mod vectors;

use std::future::Future;
use std::sync::Arc;

use anyhow::Context as _;
use ontoloop_core::knowledge::ExtractionSetup;
use ontoloop_queue::{AmqpQueue, MemoryQueue, SharedQueue};
use ontoloop_settings::{QueueBackend, Settings};
use ontoloop_store::Store;

pub use consume::{
    ConsumerOptions, Handled, Health, consume_span, run_batch_consumer, run_consumer,
};
pub use group::TaskGroup;
pub use http::{Scrape, bind_http, serve_http};
pub use model_cache::persisted_model_client;
pub use service::{Parts, Service, main, run, serve};
pub use tokio_util::sync::CancellationToken;
pub use vectors::kept_vectors;

/// Signals the services may have buffered for the intake before new ones are dropped.
const SIGNAL_BUFFER: usize = 4096;

/// What a service needs from the outside world, built once from settings. `ontoloop up` builds
/// one and shares it, so the four services in one process share one store and one in-process
/// queue.
#[derive(Clone)]
pub struct Context {
    /// Validated settings.
    pub settings: Arc<Settings>,
    /// The store, migrated.
    pub store: Store,
    /// The queue.
    pub queue: SharedQueue,
    /// Checks bearer tokens (the gRPC servers' and the dashboard's sign-in); `None` with
    /// `auth.mode = "off"`. Its JWKS is read or fetched once per context.
    pub auth: Option<Arc<auth::Authenticator>>,
    /// Signals the services report about their own answers, buffered off the request path
    /// ([`signals::Background`]).
    pub signals: signals::Background,
    /// [`Context::extraction`], made on its first asking.
    extraction: Arc<tokio::sync::OnceCell<ExtractionSetup>>,
    /// [`Context::read_models`], made on its first asking.
    read_models: Arc<tokio::sync::OnceCell<Arc<ontoloop_readmodel::Snapshots>>>,
}

impl Context {
    /// Sets up authentication (reading or fetching the JWKS: a failure stops here), then
    /// connects the store (migrating it) and the queue the settings name, retrying each with
    /// backoff.
    pub async fn connect(settings: Settings) -> anyhow::Result<Self> {
        let auth = auth::authenticator(&settings.auth, &settings.tls)
            .await
            .context("set up authentication")?;
        let store = Store::open(&settings.store)
            .await
            .context("open the store")?;
        let queue: SharedQueue = match settings.queue.backend() {
            QueueBackend::Memory => Arc::new(MemoryQueue::new()),
            QueueBackend::Amqp(url) => Arc::new(
                AmqpQueue::connect(&url, &settings.queue)
                    .await
                    .context("connect to the message queue")?,
            ),
        };
        tracing::debug!(
            store = ?store.backend(),
            queue = queue.kind(),
            "connected store and queue"
        );
        let settings = Arc::new(settings);
        let signals = signals::Background::start(
            store.clone(),
            queue.clone(),
            settings.clone(),
            SIGNAL_BUFFER,
        );
        Ok(Self {
            settings,
            store,
            queue,
            auth,
            signals,
            extraction: Arc::default(),
            read_models: Arc::default(),
        })
    }

    /// How text becomes claims: the `[extract]` stages and the sentence encoder, compiled into
    /// every ontology the process's services parse. Loaded ([`load_extraction`]) when a service
    /// first asks for it, in its `build`, and once per process.
    pub async fn extraction(&self) -> ExtractionSetup {
        self.extraction
            .get_or_init(|| load_extraction(&self.settings, Some(&self.store)))
            .await
            .clone()
    }

    /// The tenants' read models of knowledge, one per tenant for the whole process under
    /// `[cache.read_models]`, brought forward by a follower of the store's commits
    /// (`Snapshots::follow`): retrieval and the firewall answer from the same ones when they run
    /// in one process. Made, and the follower started, when a service first asks for them.
    pub async fn read_models(&self) -> Arc<ontoloop_readmodel::Snapshots> {
        let made = self
            .read_models
            .get_or_init(|| async {
                let models = Arc::new(ontoloop_readmodel::Snapshots::new(
                    self.store.clone(),
                    self.extraction().await,
                    self.settings.cache.read_models,
                ));
                models.follow();
                models
            })
            .await;
        Arc::clone(made)
    }

    /// Whether a service of this process has asked for [`Context::extraction`] (the encoder
    /// loaded) or for [`Context::read_models`] (a follower started).
    pub fn reads_knowledge(&self) -> bool {
        self.extraction.initialized() || self.read_models.initialized()
    }
}

/// The extraction setup the settings ask for. A semantic stage whose model folder lacks the
/// model scores lexically: said once here, at start-up, and by `ontoloop status`. The `model`
/// stage gets its client (`ontoloop-llm`) when `[extract.model]` is enabled and `stages` names
/// it, with its cache kept in `store` when one is given ([`persisted_model_client`]; without one
/// the cache lives in memory only); a client that cannot be built leaves the stage off, said
/// here.
pub async fn load_extraction(settings: &Settings, store: Option<&Store>) -> ExtractionSetup {
    let extract = settings.extract.clone();
    // The encoder's vectors kept in the store, when the semantic stage may encode.
    let kept = store
        .filter(|_| extract.any_runs(ontoloop_core::knowledge::Stage::Semantic))
        .and_then(|store| {
            kept_vectors(
                &settings.store,
                store,
                ontoloop_embed::MODEL_ID,
                extract.vectors_kept,
            )
        });
    let loaded =
        tokio::task::spawn_blocking(move || ontoloop_embed::extraction_setup(extract, kept)).await;
    let setup = match loaded {
        Ok((setup, None)) => setup,
        Ok((setup, Some(err))) => {
            tracing::warn!(
                error = %err,
                "sentence-encoder model not loaded; the semantic stage scores lexically"
            );
            setup
        }
        Err(err) => {
            tracing::warn!(error = %err, "loading the sentence encoder failed; lexical scoring");
            ExtractionSetup::new(settings.extract.clone(), None)
        }
    };
    let setup = if settings.extract.model_wanted() {
        let client = match store {
            // The writer task is detached: it ends when the client does.
            Some(store) => persisted_model_client(&settings.extract.model, store)
                .await
                .map(|(client, _writer)| client),
            None => ontoloop_llm::ModelClient::new(settings.extract.model.clone()),
        };
        match client {
            Ok(client) => setup.with_model(Arc::new(client)),
            Err(err) => {
                tracing::warn!(error = %err, "the model stage's client failed to start; stage off");
                setup
            }
        }
    } else {
        setup
    };
    tracing::debug!(extraction = %setup.describe(), "text extraction ready");
    setup
}

/// Resolves on the first SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for sigterm");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("received sigint, shutting down"),
        () = terminate => tracing::info!("received sigterm, shutting down"),
    }
}

/// Loads settings (defaults, then the file named by `ONTOLOOP_CONFIG` if set, then
/// `ONTOLOOP__...` variables), installs tracing, and binds the service's configured addresses:
/// what [`main`] does before [`run`].
pub async fn start(kind: ontoloop_core::ServiceKind) -> anyhow::Result<(Settings, Listeners)> {
    let file = std::env::var_os("ONTOLOOP_CONFIG").map(std::path::PathBuf::from);
    let settings = Settings::load(file.as_deref()).context("load settings")?;
    ontoloop_observability::init_with_traces(
        &settings.log,
        &settings.telemetry.otlp,
        &format!("ontoloop-{}", kind.name()),
    )
    .context("set up logging")?;
    let listeners = bind(&settings, kind).await?;
    Ok((settings, listeners))
}

/// Where a service listens: gRPC, and HTTP for its metrics (and the analyst's dashboard).
#[derive(Debug)]
pub struct Listeners {
    /// The gRPC listener.
    pub grpc: tokio::net::TcpListener,
    /// The HTTP listener.
    pub http: tokio::net::TcpListener,
}

impl Listeners {
    /// Both on ephemeral loopback ports (tests and the in-process system).
    pub async fn loopback() -> anyhow::Result<Self> {
        Ok(Self {
            grpc: bind_http("127.0.0.1", 0).await?,
            http: bind_http("127.0.0.1", 0).await?,
        })
    }
}

/// Binds the addresses the settings give `kind`.
pub async fn bind(
    settings: &Settings,
    kind: ontoloop_core::ServiceKind,
) -> anyhow::Result<Listeners> {
    let host = settings.services.host.as_str();
    let name = kind.name();
    let port = settings
        .services
        .port_of(name)
        .with_context(|| format!("no port setting for service {name}"))?;
    let http_port = settings
        .services
        .http_port_of(name)
        .with_context(|| format!("no http port setting for service {name}"))?;
    let grpc = tokio::net::TcpListener::bind((host, port))
        .await
        .with_context(|| format!("bind {name} to {host}:{port}"))?;
    let http = bind_http(host, http_port)
        .await
        .with_context(|| format!("bind the http port of {name}"))?;
    Ok(Listeners { grpc, http })
}

/// Turns a shutdown future into a cancellation token that every task of a service can watch.
pub fn cancel_on(
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> tokio_util::sync::CancellationToken {
    let token = tokio_util::sync::CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        shutdown.await;
        trigger.cancel();
    });
    token
}

/// Why a read-your-writes wait ended without the event applied.
#[derive(Debug, thiserror::Error)]
pub enum SequenceError {
    /// The sequence number does not fit the store's.
    #[error("min_sequence: out of range")]
    OutOfRange,
    /// The analyst refused the event.
    #[error("event {seq} was refused: {reason}")]
    Refused {
        /// The event's sequence number.
        seq: u64,
        /// The analyst's reason.
        reason: String,
    },
    /// The event is still pending after the timeout; retrying may help.
    #[error("event {seq} not applied within {timeout:?}; retry")]
    Pending {
        /// The event's sequence number.
        seq: u64,
        /// How long was waited.
        timeout: std::time::Duration,
    },
    /// No event of the caller's tenant has this sequence number (another tenant's number
    /// included: the text is the same).
    #[error("no intake event with sequence number {0}")]
    Unknown(u64),
    /// The intake log could not be read.
    #[error("read the intake log: {0}")]
    Store(#[from] ontoloop_store::StoreError),
}

impl ontoloop_core::ServiceError for SequenceError {
    fn error_code(&self) -> ontoloop_core::ErrorCode {
        use ontoloop_core::ErrorCode;
        match self {
            SequenceError::OutOfRange => ErrorCode::InvalidArgument,
            SequenceError::Refused { .. } => ErrorCode::FailedPrecondition,
            SequenceError::Pending { .. } | SequenceError::Store(_) => ErrorCode::Unavailable,
            SequenceError::Unknown(_) => ErrorCode::NotFound,
        }
    }
}

/// Read-your-writes for any service: waits until the tenant's intake event `seq` is applied.
/// Zero means do not wait. A refused event is FAILED_PRECONDITION with the analyst's reason; one
/// still pending after `timeout` is UNAVAILABLE (retry). Sequence numbers are scoped to their
/// tenant: another tenant's number is NOT_FOUND with the very text of a number that never
/// existed, at once, so neither its state, its reason nor its existence shows.
pub async fn wait_for_sequence(
    store: &Store,
    tenant: &str,
    seq: u64,
    timeout: std::time::Duration,
) -> Result<(), SequenceError> {
    if seq == 0 {
        return Ok(());
    }
    let Ok(seq_i) = i64::try_from(seq) else {
        return Err(SequenceError::OutOfRange);
    };
    match store.wait_settled(tenant, seq_i, timeout).await? {
        ontoloop_store::Settled::Applied => Ok(()),
        ontoloop_store::Settled::Failed(reason) => Err(SequenceError::Refused { seq, reason }),
        ontoloop_store::Settled::Pending => Err(SequenceError::Pending { seq, timeout }),
        ontoloop_store::Settled::Unknown => Err(SequenceError::Unknown(seq)),
    }
}
