//! Recording queue messages durably before they are acknowledged.

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
    for message in messages {
        match parse_body(&message.body) {
            Ok(body) => {
                valid.push((message.id.clone(), body));
                outcomes.push(Handled::Done);
            }
            Err(reason) => outcomes.push(Handled::Reject(reason.to_string())),
        }
    }
    match store
        .record_inbox_batch(queue, &valid, chrono::Utc::now())
        .await
    {
        Ok(fresh) => {
            let fresh: std::collections::HashSet<String> = fresh.into_iter().collect();
            let mut new = Vec::new();
            for message in messages {
                // A message id repeated inside one batch runs once.
                if fresh.contains(&message.id) && !new.iter().any(|m: &Message| m.id == message.id)
                {
                    new.push(message.clone());
                }
            }
            (outcomes, new)
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

fn parse_body(body: &[u8]) -> Result<String, BodyError> {
    let text = std::str::from_utf8(body)?;
    // Checked without building the value: only its shape matters here.
    serde_json::from_str::<serde::de::IgnoredAny>(text)?;
    if !text.trim_start().starts_with('{') {
        return Err(BodyError::NotObject);
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_objects_are_accepted() {
        assert!(parse_body(br#"{"type":"doc.upsert"}"#).is_ok());
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
