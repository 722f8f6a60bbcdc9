//! The HTTP/JSON face of a service's gRPC API, on the service's HTTP port: `POST
//! /<package>.<Service>/<Method>` (the gRPC method path) takes the request in the proto3 JSON
//! mapping and answers the reply in it; `GET /openapi.json` describes every unary method, made
//! from the compiled-in descriptor set ([`openapi`]). A call is forwarded to the service's own
//! gRPC port with the caller's `Authorization` header, so auth, limits, roles and errors are
//! the gRPC ones: a gRPC status becomes an HTTP status and a JSON body `{"code","message"}`.
//!
//! It owns the JSON mapping and the forwarding, nothing else: it never answers from anything
//! but the gRPC reply, never names a caller itself, and never holds a request beyond the body
//! limit (`services.max_message_bytes`, as gRPC).

mod openapi;

use std::net::SocketAddr;
use std::str::FromStr as _;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::{Buf as _, BufMut as _, Bytes};
use ontoloop_core::ServiceKind;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor, SerializeOptions};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Channel, ClientTlsConfig};

pub use openapi::document;

/// The descriptor pool of the ontoloop API (the messages every route reads and writes).
pub fn pool() -> anyhow::Result<DescriptorPool> {
    DescriptorPool::decode(ontoloop_proto::FILE_DESCRIPTOR_SET)
        .context("read the compiled-in descriptor set")
}

/// One route's state: the method and the channel to the service's gRPC port.
#[derive(Clone)]
struct Route {
    method: MethodDescriptor,
    channel: Channel,
    max_body: usize,
}

/// The API routes of `kind`, forwarding to its gRPC server at `grpc` (an unspecified address is
/// dialled on loopback) over TLS when `tls` is given. `max_body` bounds a request body.
pub(crate) fn router(
    kind: ServiceKind,
    grpc: SocketAddr,
    tls: Option<&ClientTlsConfig>,
    max_body: usize,
) -> anyhow::Result<Router> {
    let pool = pool()?;
    let service = pool
        .get_service_by_name(kind.grpc_name())
        .with_context(|| format!("the descriptor set has no service {}", kind.grpc_name()))?;
    let endpoint = crate::tls::endpoint(&loopback_of(grpc).to_string(), tls)?;
    let channel = endpoint.connect_lazy();
    let spec = Arc::new(document(std::slice::from_ref(&service)));
    let mut router = Router::new().route(
        "/openapi.json",
        get(move || {
            let spec = spec.clone();
            async move { axum::Json(spec.as_ref().clone()) }
        }),
    );
    for method in service.methods().filter(openapi::is_unary) {
        let route = Route {
            method: method.clone(),
            channel: channel.clone(),
            max_body,
        };
        router = router.route(
            &openapi::path_of(&method),
            post(call).with_state(route.clone()),
        );
    }
    Ok(router)
}

/// `addr`, with an unspecified IP replaced by the loopback address of its family.
fn loopback_of(addr: SocketAddr) -> SocketAddr {
    let mut addr = addr;
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    addr
}

/// One call: the JSON body into the request message, forwarded, the reply back as JSON.
async fn call(State(route): State<Route>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, route.max_body).await {
        Ok(body) => body,
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "RESOURCE_EXHAUSTED",
                &format!(
                    "the request body is larger than services.max_message_bytes ({} bytes) or was cut off",
                    route.max_body
                ),
            );
        }
    };
    let message = match from_json(&route.method, &body) {
        Ok(message) => message,
        Err(reason) => return error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", &reason),
    };
    match forward(&route, message, &parts.headers).await {
        Ok(reply) => to_json(&route.method, &reply),
        Err(status) => from_status(&status),
    }
}

/// The request message of `method` read from `body` in the proto3 JSON mapping (an empty body
/// is the empty message); unknown fields are refused, naming the field.
fn from_json(method: &MethodDescriptor, body: &[u8]) -> Result<DynamicMessage, String> {
    let input = method.input();
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(DynamicMessage::new(input));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let message = DynamicMessage::deserialize(input.clone(), &mut deserializer)
        .map_err(|err| format!("the body is not a {} in JSON: {err}", input.full_name()))?;
    deserializer
        .end()
        .map_err(|err| format!("the body has more after the JSON object: {err}"))?;
    Ok(message)
}

/// Sends `message` to the method over the route's channel, with the caller's authorization.
async fn forward(
    route: &Route,
    message: DynamicMessage,
    headers: &HeaderMap,
) -> Result<Bytes, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(route.channel.clone());
    grpc.ready().await.map_err(|err| {
        tonic::Status::unavailable(format!("the service's gRPC port does not answer: {err}"))
    })?;
    let mut request = tonic::Request::new(Bytes::from(message.encode_to_vec()));
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = tonic::metadata::MetadataValue::try_from(value.as_bytes()).map_err(|_| {
            tonic::Status::unauthenticated("the Authorization header is not valid text")
        })?;
        request.metadata_mut().insert("authorization", value);
    }
    let path = http::uri::PathAndQuery::from_str(&openapi::path_of(&route.method))
        .map_err(|err| tonic::Status::internal(format!("a method path does not parse: {err}")))?;
    grpc.unary(request, path, RawCodec)
        .await
        .map(tonic::Response::into_inner)
}

/// The reply bytes of `method` as a JSON response (field names as the proto's JSON mapping,
/// 64-bit integers as strings, enums by name, default values left out).
fn to_json(method: &MethodDescriptor, reply: &[u8]) -> Response {
    let message = match DynamicMessage::decode(method.output(), reply) {
        Ok(message) => message,
        Err(err) => {
            return error(
                StatusCode::BAD_GATEWAY,
                "INTERNAL",
                &format!("the service's reply does not decode: {err}"),
            );
        }
    };
    let mut body = Vec::new();
    let mut serializer = serde_json::Serializer::new(&mut body);
    match message.serialize_with_options(&mut serializer, &SerializeOptions::new()) {
        Ok(()) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(err) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            &format!("the reply does not serialise: {err}"),
        ),
    }
}

/// A gRPC status as an HTTP response, by the usual mapping of codes to HTTP statuses.
fn from_status(status: &tonic::Status) -> Response {
    error(
        http_status(status.code()),
        code_name(status.code()),
        status.message(),
    )
}

/// The HTTP status that stands for a gRPC code.
fn http_status(code: tonic::Code) -> StatusCode {
    use tonic::Code;
    match code {
        Code::Ok => StatusCode::OK,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
            StatusCode::BAD_REQUEST
        }
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Cancelled => StatusCode::REQUEST_TIMEOUT,
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::Unknown | Code::Internal | Code::DataLoss => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A gRPC code's name as in the protobuf `google.rpc.Code` enum.
fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code;
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// An error response: `{"code": <gRPC code name>, "message": <reason>}`.
fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(serde_json::json!({ "code": code, "message": message })),
    )
        .into_response()
}

/// Passes messages through as the bytes they are: the gateway encodes and decodes them itself.
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Self::Error> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Self::Error> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method(service: &str, name: &str) -> MethodDescriptor {
        pool()
            .expect("pool")
            .get_service_by_name(service)
            .expect("service")
            .methods()
            .find(|m| m.name() == name)
            .expect("method")
    }

    #[test]
    fn a_request_reads_from_the_proto_json_mapping() {
        let ask = method("ontoloop.v1.RetrievalService", "Ask");
        let message =
            from_json(&ask, br#"{"text": "Who owns Kite?", "minSequence": "7"}"#).expect("reads");
        assert_eq!(
            message.get_field_by_name("text").expect("field").as_str(),
            Some("Who owns Kite?")
        );
        assert_eq!(
            message
                .get_field_by_name("min_sequence")
                .expect("field")
                .as_u64(),
            Some(7)
        );
        assert!(
            from_json(&ask, b"  ").is_ok(),
            "an empty body is the empty request"
        );
        let err = from_json(&ask, br#"{"txet": "x"}"#).expect_err("unknown field");
        assert!(err.contains("txet"), "{err}");
        let err = from_json(&ask, br#"{"text": 3}"#).expect_err("wrong type");
        assert!(err.contains("AskRequest"), "{err}");
        assert!(from_json(&ask, br#"{} {}"#).is_err(), "trailing content");
    }

    #[test]
    fn a_reply_writes_the_json_mapping() {
        let ask = method("ontoloop.v1.RetrievalService", "Ask");
        let reply = ontoloop_proto::v1::Answer::default().encode_to_vec();
        let response = to_json(&ask, &reply);
        assert_eq!(response.status(), StatusCode::OK);
        let response = to_json(&ask, b"\xff\xff\xff");
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    }

    #[test]
    fn statuses_map_to_http() {
        let status = tonic::Status::permission_denied("role agent may not call Decide");
        let response = from_status(&status);
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            http_status(tonic::Code::Unauthenticated),
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            http_status(tonic::Code::ResourceExhausted),
            StatusCode::TOO_MANY_REQUESTS
        );
        assert_eq!(
            code_name(tonic::Code::FailedPrecondition),
            "FAILED_PRECONDITION"
        );
    }

    #[test]
    fn an_unspecified_address_is_dialled_on_loopback() {
        let any: SocketAddr = "0.0.0.0:50051".parse().expect("addr");
        assert_eq!(loopback_of(any).to_string(), "127.0.0.1:50051");
        let six: SocketAddr = "[::]:50051".parse().expect("addr");
        assert_eq!(loopback_of(six).to_string(), "[::1]:50051");
        let own: SocketAddr = "10.0.0.5:50051".parse().expect("addr");
        assert_eq!(loopback_of(own), own);
    }
}
