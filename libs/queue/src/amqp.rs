//! RabbitMQ via lapin.
//!
//! Topology, declared on first use of a queue `Q`: a durable direct exchange `ontoloop` routes key
//! `Q` to the durable queue `Q`; `Q` dead-letters (broker-side rejections) to the durable direct
//! exchange `ontoloop.dlx`, which routes key `Q.dlq` to the durable queue `Q.dlq`. Messages are
//! persistent, every publish waits for the broker's confirm and is `mandatory` (an unroutable
//! message is an error, never a silent drop), consumers acknowledge manually. Dead-lettering with
//! a reason re-publishes the message to `Q.dlq` with the reason header, waits for the confirm,
//! then acknowledges the original. A lost connection is re-opened with backoff, and every
//! handshake (a connection, a channel, a consumer, a publish's confirm) is bounded by
//! `queue.connect_timeout_ms`, so a silent broker is a failed try, never a held connection.
//!
//! `amqps://` is TLS (rustls on ring) trusting only the CA in `queue.tls_ca_file`, presenting
//! `queue.tls_client_cert_file` when set; `amqp://` stays plaintext.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::tcp::{OwnedIdentity, OwnedTLSConfig};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ExchangeKind,
};
use ontoloop_core::{Backoff, redact_url as redact};
use ontoloop_settings::QueueSettings;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use crate::{
    Consumer, Delivery, Message, Queue, QueueError, REASON_HEADER, SOURCE_QUEUE_HEADER, Settle,
    dead_letter_queue,
};

const EXCHANGE: &str = "ontoloop";
const DEAD_LETTER_EXCHANGE: &str = "ontoloop.dlx";
const PERSISTENT: u8 = 2;

/// The RabbitMQ implementation. Clones share one connection.
#[derive(Clone)]
pub struct AmqpQueue {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AmqpQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmqpQueue")
            .field("url", &redact(&self.inner.url))
            .finish_non_exhaustive()
    }
}

struct Inner {
    url: String,
    /// The CA and client certificate of `amqps://`; empty (unused) for `amqp://`.
    tls: OwnedTLSConfig,
    namespace: String,
    prefetch: u16,
    backoff: Backoff,
    /// `queue.connect_timeout_ms`: the longest one handshake with the broker may take.
    handshake: Duration,
    connection: Mutex<Option<Connection>>,
    publisher: Mutex<Option<Channel>>,
    declared: Mutex<HashSet<String>>,
}

impl AmqpQueue {
    /// Connects to the broker at `url`, retrying with the backoff in `settings`. An `amqps://`
    /// URL is dialled with TLS trusting only the CA file of `settings` (and presenting its
    /// client certificate, if any); a file that cannot be read is an error naming its setting.
    pub async fn connect(url: &str, settings: &QueueSettings) -> Result<Self, QueueError> {
        let inner = Arc::new(Inner {
            url: url.to_owned(),
            tls: tls_config(settings).await?,
            namespace: settings.namespace.clone(),
            prefetch: settings.prefetch,
            backoff: Backoff::new(
                Duration::from_millis(settings.backoff_initial_ms),
                Duration::from_millis(settings.backoff_max_ms),
                settings.connect_attempts,
            ),
            handshake: Duration::from_millis(settings.connect_timeout_ms),
            connection: Mutex::new(None),
            publisher: Mutex::new(None),
            declared: Mutex::new(HashSet::new()),
        });
        inner.channel().await?;
        Ok(Self { inner })
    }
}

/// The TLS half of `amqps://` from the `queue.tls_*` files (PEM); nothing to read when unset.
async fn tls_config(settings: &QueueSettings) -> Result<OwnedTLSConfig, QueueError> {
    let mut config = OwnedTLSConfig::default();
    if !settings.tls_ca_file.is_empty() {
        let ca = read_pem("queue.tls_ca_file", &settings.tls_ca_file).await?;
        // The TLS layer skips what it cannot parse; a file with no certificate at all would
        // only show later as every broker being untrusted.
        match String::from_utf8(ca) {
            Ok(pem) if pem.contains("-----BEGIN CERTIFICATE-----") => {
                config.cert_chain = Some(pem);
            }
            _ => {
                return Err(QueueError::Tls {
                    key: "queue.tls_ca_file",
                    reason: format!("no PEM certificate in {}", settings.tls_ca_file),
                });
            }
        }
    }
    if !settings.tls_client_cert_file.is_empty() {
        config.identity = Some(OwnedIdentity::PKCS8 {
            pem: read_pem("queue.tls_client_cert_file", &settings.tls_client_cert_file).await?,
            key: read_pem("queue.tls_client_key_file", &settings.tls_client_key_file).await?,
        });
    }
    Ok(config)
}

async fn read_pem(key: &'static str, path: &str) -> Result<Vec<u8>, QueueError> {
    tokio::fs::read(path).await.map_err(|err| QueueError::Tls {
        key,
        reason: format!("read {path}: {err}"),
    })
}

/// Opens a connection; `amqps://` handshakes with `tls` (lapin picks TLS by the scheme).
async fn connect(url: &str, tls: &OwnedTLSConfig) -> lapin::Result<Connection> {
    Connection::connect_with_config(
        url,
        ConnectionProperties::default().with_connection_name("ontoloop".into()),
        tls.clone(),
        lapin::runtime::default_runtime()?,
    )
    .await
}

impl Inner {
    /// `op` within `queue.connect_timeout_ms`. Past it the try has failed like a refused one:
    /// a broker that accepts the socket and then stays silent must not hold the connection (and
    /// every caller waiting for it) forever.
    async fn bounded<T>(
        &self,
        what: &str,
        op: impl Future<Output = Result<T, QueueError>>,
    ) -> Result<T, QueueError> {
        tokio::time::timeout(self.handshake, op)
            .await
            .unwrap_or_else(|_| {
                Err(QueueError::Broker(format!(
                    "{what}: no answer within {} ms (queue.connect_timeout_ms)",
                    self.handshake.as_millis()
                )))
            })
    }

    /// A fresh channel on a live connection, reconnecting with backoff when needed.
    async fn channel(&self) -> Result<Channel, QueueError> {
        let mut attempt = 1;
        loop {
            let mut connection = self.connection.lock().await;
            let result = self
                .bounded("opening a connection and a channel", async {
                    let live = connection.as_ref().filter(|c| c.status().connected());
                    match live {
                        Some(conn) => conn.create_channel().await.map_err(broker),
                        None => {
                            let conn = connect(&self.url, &self.tls).await.map_err(broker)?;
                            let channel = conn.create_channel().await.map_err(broker);
                            *connection = Some(conn);
                            // Queues declared on the old connection still exist (they are
                            // durable), but re-declaring is cheap and covers a broker that lost
                            // its state.
                            self.declared.lock().await.clear();
                            channel
                        }
                    }
                })
                .await;
            drop(connection);
            match result {
                Ok(channel) => return Ok(channel),
                Err(err) => match self.backoff.delay_after(attempt) {
                    Some(wait) => {
                        tracing::warn!(
                            attempt,
                            wait_ms = wait.as_millis() as u64,
                            url = %redact(&self.url),
                            error = %err,
                            "broker unreachable, retrying"
                        );
                        *self.connection.lock().await = None;
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                    None => {
                        return Err(QueueError::Unreachable {
                            url: redact(&self.url),
                            attempts: attempt,
                            reason: err.to_string(),
                        });
                    }
                },
            }
        }
    }

    /// The shared publishing channel, in confirm mode.
    async fn publisher(&self) -> Result<Channel, QueueError> {
        let mut publisher = self.publisher.lock().await;
        if let Some(channel) = publisher.as_ref().filter(|c| c.status().connected()) {
            return Ok(channel.clone());
        }
        let channel = self.channel().await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(broker)?;
        *publisher = Some(channel.clone());
        Ok(channel)
    }

    async fn declare_on(&self, channel: &Channel, queue: &str) -> Result<(), QueueError> {
        if self.declared.lock().await.contains(queue) {
            return Ok(());
        }
        let durable = ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        };
        for exchange in [EXCHANGE, DEAD_LETTER_EXCHANGE] {
            channel
                .exchange_declare(
                    exchange.into(),
                    ExchangeKind::Direct,
                    durable,
                    FieldTable::default(),
                )
                .await
                .map_err(broker)?;
        }
        let dead = dead_letter_queue(queue);
        channel
            .queue_declare(
                short(&dead)?,
                QueueDeclareOptions::durable(),
                FieldTable::default(),
            )
            .await
            .map_err(broker)?;
        channel
            .queue_bind(
                short(&dead)?,
                DEAD_LETTER_EXCHANGE.into(),
                short(&dead)?,
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(broker)?;
        let mut args = FieldTable::default();
        args.insert(
            "x-dead-letter-exchange".into(),
            AMQPValue::LongString(DEAD_LETTER_EXCHANGE.into()),
        );
        args.insert(
            "x-dead-letter-routing-key".into(),
            AMQPValue::LongString(dead.as_str().into()),
        );
        channel
            .queue_declare(short(queue)?, QueueDeclareOptions::durable(), args)
            .await
            .map_err(broker)?;
        channel
            .queue_bind(
                short(queue)?,
                EXCHANGE.into(),
                short(queue)?,
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(broker)?;
        self.declared.lock().await.insert(queue.to_owned());
        Ok(())
    }

    /// Publishes to `exchange` with `routing_key` and waits for the confirm, re-opening the
    /// channel and retrying with backoff when the connection drops.
    async fn publish_to(
        &self,
        queue: &str,
        exchange: &str,
        routing_key: &str,
        message: &Message,
    ) -> Result<(), QueueError> {
        let mut attempt = 1;
        loop {
            let once = self.publish_once(queue, exchange, routing_key, message);
            match self.bounded("publishing", once).await {
                Ok(()) => return Ok(()),
                Err(err @ QueueError::NotConfirmed { .. }) => return Err(err),
                Err(err) => match self.backoff.delay_after(attempt) {
                    Some(wait) => {
                        tracing::warn!(attempt, queue, error = %err, "retrying publish");
                        *self.publisher.lock().await = None;
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                    None => return Err(err),
                },
            }
        }
    }

    async fn publish_once(
        &self,
        queue: &str,
        exchange: &str,
        routing_key: &str,
        message: &Message,
    ) -> Result<(), QueueError> {
        let channel = self.publisher().await?;
        self.declare_on(&channel, queue).await?;
        let properties = BasicProperties::default()
            .with_delivery_mode(PERSISTENT)
            .with_message_id(short(&message.id)?)
            .with_headers(to_field_table(&message.headers));
        let confirm = channel
            .basic_publish(
                short(exchange)?,
                short(routing_key)?,
                BasicPublishOptions {
                    mandatory: true,
                    ..Default::default()
                },
                &message.body,
                properties,
            )
            .await
            .map_err(broker)?
            .await
            .map_err(broker)?;
        match confirm {
            Confirmation::Ack(None) => Ok(()),
            Confirmation::Ack(Some(_)) | Confirmation::Nack(_) | Confirmation::NotRequested => {
                Err(QueueError::NotConfirmed {
                    queue: routing_key.to_owned(),
                })
            }
        }
    }

    async fn open_consumer(
        &self,
        queue: &str,
        declare_as: &str,
    ) -> Result<(Channel, lapin::Consumer), QueueError> {
        let channel = self.channel().await?;
        let consumer = self
            .bounded("opening a consumer", async {
                channel
                    .basic_qos(self.prefetch, BasicQosOptions::default())
                    .await
                    .map_err(broker)?;
                self.declare_on(&channel, declare_as).await?;
                channel
                    .basic_consume(
                        short(queue)?,
                        "".into(),
                        BasicConsumeOptions::default(),
                        FieldTable::default(),
                    )
                    .await
                    .map_err(broker)
            })
            .await?;
        Ok((channel, consumer))
    }
}

impl AmqpQueue {
    /// The broker's name of `queue`: the configured namespace, then the name.
    fn named(&self, queue: &str) -> String {
        format!("{}{queue}", self.inner.namespace)
    }
}

#[async_trait::async_trait]
impl Queue for AmqpQueue {
    async fn declare(&self, queue: &str) -> Result<(), QueueError> {
        let queue = &self.named(queue);
        let channel = self.inner.publisher().await?;
        self.inner.declare_on(&channel, queue).await
    }

    async fn publish(&self, queue: &str, message: Message) -> Result<(), QueueError> {
        let queue = &self.named(queue);
        let message = crate::traced(message);
        let message = crate::stamped(message);
        self.inner
            .publish_to(queue, EXCHANGE, queue, &message)
            .await
    }

    async fn consume(&self, queue: &str) -> Result<Box<dyn Consumer>, QueueError> {
        let queue = &self.named(queue);
        let (channel, stream) = self.inner.open_consumer(queue, queue).await?;
        Ok(Box::new(AmqpConsumer {
            inner: self.inner.clone(),
            queue: queue.to_owned(),
            declare_as: queue.to_owned(),
            channel: Some(channel),
            stream: Some(stream),
        }))
    }

    async fn consume_dead_letters(&self, queue: &str) -> Result<Box<dyn Consumer>, QueueError> {
        let queue = &self.named(queue);
        let dead = dead_letter_queue(queue);
        let (channel, stream) = self.inner.open_consumer(&dead, queue).await?;
        Ok(Box::new(AmqpConsumer {
            inner: self.inner.clone(),
            queue: dead,
            declare_as: queue.to_owned(),
            channel: Some(channel),
            stream: Some(stream),
        }))
    }

    async fn ready_count(&self, queue: &str) -> Result<u64, QueueError> {
        let queue = &self.named(queue);
        let channel = self.inner.channel().await?;
        let declared = channel
            .queue_declare(
                short(queue)?,
                QueueDeclareOptions {
                    passive: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .map_err(broker)?;
        let _ = channel.close(200, "OK".into()).await;
        Ok(u64::from(declared.message_count()))
    }

    async fn delete(&self, queue: &str) -> Result<(), QueueError> {
        let queue = &self.named(queue);
        let channel = self.inner.channel().await?;
        for name in [queue.to_owned(), dead_letter_queue(queue)] {
            channel
                .queue_delete(short(&name)?, QueueDeleteOptions::default())
                .await
                .map_err(broker)?;
        }
        let _ = channel.close(200, "OK".into()).await;
        self.inner.declared.lock().await.remove(queue);
        Ok(())
    }

    fn kind(&self) -> &'static str {
        "amqp"
    }
}

struct AmqpConsumer {
    inner: Arc<Inner>,
    queue: String,
    declare_as: String,
    channel: Option<Channel>,
    stream: Option<lapin::Consumer>,
}

#[async_trait::async_trait]
impl Consumer for AmqpConsumer {
    async fn next(&mut self) -> Option<Result<Delivery, QueueError>> {
        if self.stream.is_none() {
            // The previous stream ended with the connection; whatever it held unacknowledged the
            // broker has already put back, so a new stream loses nothing.
            match self
                .inner
                .open_consumer(&self.queue, &self.declare_as)
                .await
            {
                Ok((channel, stream)) => {
                    self.channel = Some(channel);
                    self.stream = Some(stream);
                }
                Err(err) => return Some(Err(err)),
            }
        }
        let stream = self.stream.as_mut()?;
        match stream.next().await {
            Some(Ok(delivery)) => Some(Ok(self.convert(delivery))),
            Some(Err(err)) => {
                self.stream = None;
                self.channel = None;
                Some(Err(broker(err)))
            }
            None => {
                self.stream = None;
                self.channel = None;
                Some(Err(QueueError::Broker(format!(
                    "consumer of {} was closed",
                    self.queue
                ))))
            }
        }
    }
}

impl AmqpConsumer {
    fn convert(&self, delivery: lapin::message::Delivery) -> Delivery {
        let headers = from_field_table(delivery.properties.headers().as_ref());
        let id = delivery
            .properties
            .message_id()
            .as_ref()
            .map(|id| id.as_str().to_owned())
            // A message published without an id (a hand-rolled integration) gets one derived
            // from its body, so a redelivery of it is still recognised.
            .unwrap_or_else(|| content_id(&delivery.data));
        Delivery {
            message: Message {
                id,
                body: delivery.data,
                headers,
            },
            redelivered: delivery.redelivered,
            settle: Box::new(AmqpSettle {
                inner: self.inner.clone(),
                queue: self.queue.clone(),
                channel: self.channel.as_ref().map(|c| u64::from(c.id())),
                acker: delivery.acker,
            }),
        }
    }
}

struct AmqpSettle {
    inner: Arc<Inner>,
    queue: String,
    /// The channel the delivery came on; acknowledgements are per channel.
    channel: Option<u64>,
    acker: lapin::Acker,
}

impl AmqpSettle {
    fn settled(&self, sent: lapin::Result<bool>) -> Result<(), QueueError> {
        match sent {
            Ok(true) => Ok(()),
            Ok(false) => Err(QueueError::Settle(format!(
                "the channel of this delivery from {} is closed; the broker will redeliver it",
                self.queue
            ))),
            Err(err) => Err(QueueError::Settle(err.to_string())),
        }
    }
}

#[async_trait::async_trait]
impl Settle for AmqpSettle {
    async fn ack(&self) -> Result<(), QueueError> {
        let sent = self.acker.ack(BasicAckOptions::default()).await;
        self.settled(sent)
    }

    fn channel(&self) -> Option<u64> {
        self.channel
    }

    async fn ack_through(&self) -> Result<(), QueueError> {
        let sent = self.acker.ack(BasicAckOptions { multiple: true }).await;
        self.settled(sent)
    }

    async fn dead_letter(&self, message: &Message, reason: &str) -> Result<(), QueueError> {
        let dead = message
            .clone()
            .header(REASON_HEADER, reason)
            .header(SOURCE_QUEUE_HEADER, self.queue.clone());
        let dead_queue = dead_letter_queue(&self.queue);
        self.inner
            .publish_to(&self.queue, DEAD_LETTER_EXCHANGE, &dead_queue, &dead)
            .await?;
        self.ack().await
    }

    async fn requeue(&self) -> Result<(), QueueError> {
        let sent = self
            .acker
            .nack(BasicNackOptions {
                requeue: true,
                multiple: false,
            })
            .await;
        self.settled(sent)
    }
}

fn broker(err: lapin::Error) -> QueueError {
    QueueError::Broker(err.to_string())
}

fn short(text: &str) -> Result<ShortString, QueueError> {
    ShortString::try_new(text.to_owned())
        .map_err(|_| QueueError::Broker(format!("name longer than 255 bytes: {text:.40}...")))
}

fn to_field_table(headers: &BTreeMap<String, String>) -> FieldTable {
    let mut table = FieldTable::default();
    for (key, value) in headers {
        if let Ok(key) = ShortString::try_new(key.clone()) {
            table.insert(key, AMQPValue::LongString(LongString::from(value.as_str())));
        }
    }
    table
}

fn from_field_table(table: Option<&FieldTable>) -> BTreeMap<String, String> {
    let mut headers = BTreeMap::new();
    if let Some(table) = table {
        for (key, value) in table.inner() {
            let text = match value {
                AMQPValue::LongString(text) => {
                    String::from_utf8_lossy(text.as_bytes()).into_owned()
                }
                AMQPValue::ShortString(text) => text.as_str().to_owned(),
                // Structured broker headers (x-death) are not part of the contract.
                _ => continue,
            };
            headers.insert(key.as_str().to_owned(), text);
        }
    }
    headers
}

fn content_id(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_through_a_field_table() {
        let mut headers = BTreeMap::new();
        headers.insert(REASON_HEADER.to_owned(), "body is not JSON".to_owned());
        headers.insert("k".to_owned(), "ü".to_owned());
        assert_eq!(from_field_table(Some(&to_field_table(&headers))), headers);
    }

    #[test]
    fn content_ids_are_stable() {
        assert_eq!(content_id(b"x"), content_id(b"x"));
        assert_ne!(content_id(b"x"), content_id(b"y"));
    }
}
