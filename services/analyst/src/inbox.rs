//! Recording queue messages durably before they are acknowledged.

use ontoloop_queue::Message;
use ontoloop_runtime::Handled;
use ontoloop_store::Store;

/// Records one message from `queue`. A body that is not a UTF-8 JSON object can never be
/// processed and is rejected with the reason; a store failure is passing and the message is
/// retried. A message already recorded (a redelivery) is acknowledged without a second effect.
pub async fn handle_message(store: &Store, queue: &str, message: &Message) -> Handled {
    let body = match parse_body(&message.body) {
        Ok(body) => body,
        Err(reason) => return Handled::Reject(reason),
    };
    match store
        .record_inbox(queue, &message.id, &body, chrono::Utc::now())
        .await
    {
        Ok(_) => Handled::Done,
        Err(err) => Handled::Retry(format!("record message: {err}")),
    }
}

fn parse_body(body: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(body).map_err(|err| format!("body is not UTF-8: {err}"))?;
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Ok(text.to_owned()),
        Ok(_) => Err("body is JSON but not an object".to_owned()),
        Err(err) => Err(format!("body is not JSON: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_objects_are_accepted() {
        assert!(parse_body(br#"{"type":"doc.upsert"}"#).is_ok());
        let reason = parse_body(b"[1,2]").expect_err("array");
        assert!(reason.contains("not an object"));
        let reason = parse_body(b"{oops").expect_err("broken json");
        assert!(reason.contains("not JSON"));
        let reason = parse_body(&[0xff, 0xfe]).expect_err("not utf-8");
        assert!(reason.contains("UTF-8"));
    }
}
