//! Per-service bounds on gRPC calls, as one tower layer in front of every server: the largest
//! message a call may carry (`services.max_message_bytes`, RESOURCE_EXHAUSTED), how long a call
//! may take (`services.request_timeout_ms`, DEADLINE_EXCEEDED) and how many calls a service
//! handles at once (`services.max_concurrent_requests`, RESOURCE_EXHAUSTED at once rather than a
//! queue). Each refusal names its setting. Health and reflection are exempt from the time and
//! concurrency bounds, so a busy service still answers its probes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::Buf;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::Semaphore;
use tonic::Status;

/// The bounds one service's calls are held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Largest message (one gRPC frame's payload) in bytes.
    pub max_message_bytes: usize,
    /// Longest a call may take until its response starts.
    pub timeout: Duration,
    /// Calls handled at once.
    pub max_concurrent: usize,
}

impl CallLimits {
    /// The `[services]` bounds.
    pub fn from_settings(services: &ontoloop_settings::ServicesSettings) -> Self {
        Self {
            max_message_bytes: services.max_message_bytes,
            timeout: Duration::from_millis(services.request_timeout_ms),
            max_concurrent: services.max_concurrent_requests,
        }
    }
}

/// The layer of [`Limited`]: one permit pool per server it is applied to.
#[derive(Clone)]
pub(crate) struct LimitLayer {
    limits: CallLimits,
    permits: Arc<Semaphore>,
}

impl LimitLayer {
    pub(crate) fn new(limits: CallLimits) -> Self {
        Self {
            limits,
            permits: Arc::new(Semaphore::new(limits.max_concurrent)),
        }
    }
}

impl<S> tower_layer::Layer<S> for LimitLayer {
    type Service = Limited<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Limited {
            inner,
            limits: self.limits,
            permits: Arc::clone(&self.permits),
        }
    }
}

/// A gRPC server held to [`CallLimits`].
#[derive(Clone)]
pub(crate) struct Limited<S> {
    inner: S,
    limits: CallLimits,
    permits: Arc<Semaphore>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> tower_service::Service<http::Request<tonic::body::Body>> for Limited<S>
where
    S: tower_service::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let limits = self.limits;
        let request = request
            .map(|body| tonic::body::Body::new(MessageCap::new(body, limits.max_message_bytes)));
        if request.uri().path().starts_with("/grpc.") {
            return Box::pin(self.inner.call(request));
        }
        let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() else {
            tracing::debug!(
                path = request.uri().path(),
                "call refused: too many at once"
            );
            let status = Status::resource_exhausted(format!(
                "this service is handling {} calls, its limit (services.max_concurrent_requests); \
                 retry later",
                limits.max_concurrent
            ));
            return Box::pin(async move { Ok(status.into_http()) });
        };
        let call = self.inner.call(request);
        Box::pin(async move {
            let answered = tokio::time::timeout(limits.timeout, call).await;
            drop(permit);
            match answered {
                Ok(response) => response,
                Err(_) => Ok(Status::deadline_exceeded(format!(
                    "the call took longer than {} ms (services.request_timeout_ms)",
                    limits.timeout.as_millis()
                ))
                .into_http()),
            }
        })
    }
}

/// A request body that fails with RESOURCE_EXHAUSTED as soon as a gRPC message's length prefix
/// announces more than `max` bytes, before the message is buffered. Each message of a stream is
/// held to the bound on its own; the stream's length is not.
struct MessageCap<B> {
    inner: B,
    max: usize,
    /// The length prefix being read (compression flag, then a big-endian u32), and how much of
    /// it has arrived.
    prefix: [u8; 5],
    have: usize,
    /// Payload bytes of the current message still to pass.
    payload_left: u64,
}

impl<B> MessageCap<B> {
    fn new(inner: B, max: usize) -> Self {
        Self {
            inner,
            max,
            prefix: [0; 5],
            have: 0,
            payload_left: 0,
        }
    }

    /// Follows the message boundaries through one chunk; the refusal when a message is too long.
    fn scan(&mut self, mut chunk: &[u8]) -> Result<(), Status> {
        while !chunk.is_empty() {
            if self.payload_left > 0 {
                let step = chunk
                    .len()
                    .min(usize::try_from(self.payload_left).unwrap_or(usize::MAX));
                self.payload_left -= step as u64;
                chunk = &chunk[step..];
                continue;
            }
            self.prefix[self.have] = chunk[0];
            self.have += 1;
            chunk = &chunk[1..];
            if self.have == self.prefix.len() {
                self.have = 0;
                let [_, a, b, c, d] = self.prefix;
                let len = u32::from_be_bytes([a, b, c, d]);
                if u64::from(len) > self.max as u64 {
                    return Err(Status::resource_exhausted(format!(
                        "a message of {len} bytes; at most {} are accepted \
                         (services.max_message_bytes)",
                        self.max
                    )));
                }
                self.payload_left = u64::from(len);
            }
        }
        Ok(())
    }
}

impl<B> Body for MessageCap<B>
where
    B: Body<Data = bytes::Bytes, Error = Status> + Unpin,
{
    type Data = bytes::Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<bytes::Bytes>, Status>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
            && let Err(status) = self.scan(data.chunk())
        {
            return Poll::Ready(Some(Err(status)));
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(len: u32) -> Vec<u8> {
        let mut bytes = vec![0];
        bytes.extend(len.to_be_bytes());
        bytes.extend(std::iter::repeat_n(7u8, len as usize));
        bytes
    }

    #[test]
    fn messages_are_measured_by_their_prefix_across_chunks() {
        let mut cap = MessageCap::new((), 10);
        let mut stream = framed(10);
        stream.extend(framed(3));
        // Byte by byte: prefixes split across chunks are still read whole.
        for byte in &stream {
            cap.scan(std::slice::from_ref(byte))
                .expect("within the limit");
        }
        let mut cap = MessageCap::new((), 10);
        let mut stream = framed(2);
        stream.extend(framed(11));
        let err = cap.scan(&stream).expect_err("over the limit");
        assert_eq!(err.code(), tonic::Code::ResourceExhausted);
        assert!(err.message().contains("services.max_message_bytes"));
        assert!(err.message().contains("11 bytes"));
        // A prefix announcing 4 GiB is refused before anything is buffered.
        let mut cap = MessageCap::new((), 10);
        assert!(cap.scan(&[0, 0xff, 0xff, 0xff, 0xff]).is_err());
    }
}
