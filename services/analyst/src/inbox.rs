//! Recording queue messages durably before they are acknowledged.
//!
//! A message is recorded under its id scoped to the tenant its body names
//! ([`ontoloop_queue::scoped_id`]), so two tenants whose integrations publish the same message id
//! are two messages, never one tenant's taken for a redelivery of the other's. A body naming no
//! tenant (which no handler can act on for a tenant anyway) keeps its id as it is.

use ontoloop_core::topics;
use ontoloop_queue::Message;
use ontoloop_runtime::Handled;
use ontoloop_store::Store;

/// Records a batch of messages from `queue` in one transaction. A body that is not a UTF-8 JSON
/// object can never be processed and is rejected with the reason; a message already recorded (a
/// redelivery) is acknowledged without a second effect. Returns one outcome per message,
/// in order, and the messages recorded for the first time (whose effect is still to run).
/// Bodies that can never be processed are rejected with the reason; if the store fails, every
/// message of the batch is retried.
pub async fn record_batch(
    store: &Store,
    queue: &str,
    messages: &[Message],
) -> (Vec<Handled>, Vec<Message>) {
    let mut outcomes = Vec::with_capacity(messages.len());
    let mut valid = Vec::new();
    // The id each message is recorded under (none for a body that can never be processed).
    let mut ids = Vec::with_capacity(messages.len());
    for message in messages {
        match parse_body(&message.body) {
            Ok((body, tenant)) => {
                let id = match tenant {
                    Some(tenant) => ontoloop_queue::scoped_id("in", &tenant, &message.id),
                    None => message.id.clone(),
                };
                valid.push((id.clone(), body));
                ids.push(Some(id));
                outcomes.push(Handled::Done);
            }
            Err(reason) => {
                ids.push(None);
                outcomes.push(Handled::Reject(reason.to_string()));
            }
        }
    }
    match store
        .record_inbox_batch(queue, &valid, chrono::Utc::now())
        .await
    {
        Ok(fresh) => {
            let mut fresh: std::collections::HashSet<String> = fresh.into_iter().collect();
            let mut new = Vec::new();
            for (message, id) in messages.iter().zip(&ids) {
                // An id repeated inside one batch runs once: the first takes it out of `fresh`.
                if id.as_ref().is_some_and(|id| fresh.remove(id)) {
                    new.push(message.clone());
                }
            }
            (outcomes, new)
        }
        Err(err) if err.is_invalid_data() => {
            // One body the store refuses (a NUL byte in PostgreSQL text) must not hold the batch
            // back: recorded one by one, the refused ones are dead-lettered with the reason.
            one_by_one(store, queue, messages, &ids, outcomes).await
        }
        Err(err) => {
            let reason = format!("record messages: {err}");
            let outcomes = outcomes
                .into_iter()
                .map(|outcome| match outcome {
                    Handled::Done => Handled::Retry(reason.clone()),
                    rejected => rejected,
                })
                .collect();
            (outcomes, Vec::new())
        }
    }
}

/// [`record_batch`] one message at a time, after the batch's transaction was refused for its
/// data.
async fn one_by_one(
    store: &Store,
    queue: &str,
    messages: &[Message],
    ids: &[Option<String>],
    mut outcomes: Vec<Handled>,
) -> (Vec<Handled>, Vec<Message>) {
    let mut new = Vec::new();
    let now = chrono::Utc::now();
    for ((message, id), outcome) in messages.iter().zip(ids).zip(outcomes.iter_mut()) {
        let Some(id) = id else { continue };
        let body = String::from_utf8_lossy(&message.body);
        match store.record_inbox(queue, id, &body, now).await {
            Ok(true) => new.push(message.clone()),
            Ok(false) => {}
            Err(err) if err.is_invalid_data() => {
                *outcome = Handled::Reject(format!("the store refuses the body: {err}"));
            }
            Err(err) => *outcome = Handled::Retry(format!("record message: {err}")),
        }
    }
    (outcomes, new)
}

/// Stamps the intake rows of signals recorded here (by the tenant and idempotency key their
/// bodies name) as delivered, so a start-up on the in-process queue does not publish them again.
/// Best effort: a row left unstamped is published again and recognised as a redelivery.
pub async fn mark_signals_delivered(store: &Store, messages: &[Message], outcomes: &[Handled]) {
    #[derive(serde::Deserialize)]
    struct Keys {
        tenant: Option<String>,
        idempotency_key: Option<String>,
    }
    let mut by_tenant: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (message, outcome) in messages.iter().zip(outcomes) {
        if *outcome != Handled::Done {
            continue;
        }
        if let Ok(Keys {
            tenant: Some(tenant),
            idempotency_key: Some(key),
        }) = serde_json::from_slice::<Keys>(&message.body)
        {
            by_tenant.entry(tenant).or_default().push(key);
        }
    }
    let now = chrono::Utc::now();
    for (tenant, keys) in by_tenant {
        if let Err(err) = store.signals_delivered(&tenant, &keys, now).await {
            tracing::warn!(error = %err, "cannot stamp signals delivered");
        }
    }
}

/// Why a message body can never be processed.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    /// The bytes are not text.
    #[error("body is not UTF-8: {0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    /// The text does not parse.
    #[error("body is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// A JSON value, but not the object every message is.
    #[error("body is JSON but not an object")]
    NotObject,
}

/// The body as text, and the tenant it names if it names one.
fn parse_body(body: &[u8]) -> Result<(String, Option<String>), BodyError> {
    /// All that is read of a message here: its tenant. The rest is checked without being built.
    #[derive(serde::Deserialize)]
    struct Head {
        tenant: Option<serde_json::Value>,
    }
    let text = std::str::from_utf8(body)?;
    if !text.trim_start().starts_with('{') {
        serde_json::from_str::<serde::de::IgnoredAny>(text)?;
        return Err(BodyError::NotObject);
    }
    let head = serde_json::from_str::<Head>(text)?;
    let tenant = head
        .tenant
        .as_ref()
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    Ok((text.to_owned(), tenant))
}

/// An events-queue message of `tenant` as the commit that applies it records it (topic, id,
/// body), so a redelivery has no second effect. Shared by the knowledge and
/// org writers.
pub(crate) fn inbox_record(tenant: &str, message: &Message) -> (String, String, String) {
    (
        topics::EVENTS.to_owned(),
        inbox_id(tenant, message),
        String::from_utf8_lossy(&message.body).into_owned(),
    )
}

/// The id an events-queue message is recorded under in the inbox: its tenant and its id together
/// ([`ontoloop_queue::scoped_id`]), so two tenants' integrations that happen to choose the same
/// message id never make one of them look like a redelivery of the other.
pub(crate) fn inbox_id(tenant: &str, message: &Message) -> String {
    ontoloop_queue::scoped_id("evt", tenant, &message.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_same_message_id_of_two_tenants_is_two_messages() {
        let dir = tempfile::tempdir().expect("temp dir");
        let settings = ontoloop_settings::Loader::new()
            .env_vars([])
            .set(
                "store.url",
                format!("sqlite://{}/inbox.db?mode=rwc", dir.path().display()),
            )
            .load()
            .expect("settings");
        let store = Store::open(&settings.store).await.expect("store");
        let message = |tenant: &str| {
            Message::with_id(
                "m-1",
                format!(r#"{{"tenant":"{tenant}","type":"entity_missing"}}"#),
            )
        };
        let batch = [message("a"), message("a-b"), message("a")];
        let (outcomes, new) = record_batch(&store, "q", &batch).await;
        assert!(outcomes.iter().all(|o| matches!(o, Handled::Done)));
        let tenants: Vec<String> = new
            .iter()
            .map(|m| String::from_utf8_lossy(&m.body).into_owned())
            .collect();
        assert_eq!(
            tenants,
            vec![
                r#"{"tenant":"a","type":"entity_missing"}"#.to_owned(),
                r#"{"tenant":"a-b","type":"entity_missing"}"#.to_owned()
            ],
            "each tenant's message runs once, the repeat of the first not at all"
        );
        let (_, again) = record_batch(&store, "q", &[message("a-b")]).await;
        assert!(again.is_empty(), "a redelivery is recognised");
        assert_eq!(store.inbox_count("q").await.expect("count"), 2);
    }

    #[test]
    fn only_json_objects_are_accepted() {
        assert_eq!(
            parse_body(br#"{"type":"doc.upsert"}"#).expect("object").1,
            None
        );
        assert_eq!(
            parse_body(br#"{"tenant":"a-b","type":"entity_missing"}"#)
                .expect("object")
                .1
                .as_deref(),
            Some("a-b")
        );
        assert_eq!(
            parse_body(br#"{"tenant":7}"#).expect("object").1,
            None,
            "a tenant that is not text names none"
        );
        let reason = parse_body(b"[1,2]").expect_err("array");
        assert!(matches!(reason, BodyError::NotObject), "{reason}");
        assert_eq!(reason.to_string(), "body is JSON but not an object");
        let reason = parse_body(b"{oops").expect_err("broken json");
        assert!(matches!(reason, BodyError::NotJson(_)), "{reason}");
        assert!(reason.to_string().starts_with("body is not JSON: "));
        let reason = parse_body(&[0xff, 0xfe]).expect_err("not utf-8");
        assert!(matches!(reason, BodyError::NotUtf8(_)), "{reason}");
        assert!(reason.to_string().starts_with("body is not UTF-8: "));
    }
}
