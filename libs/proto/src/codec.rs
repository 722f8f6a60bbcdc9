//! The codec of every generated service and client: prost's, except that a message that does not
//! decode is the sender's error — `INVALID_ARGUMENT` with prost's reason ("failed to decode
//! Protobuf message: invalid wire type value: 7") — rather than tonic's `INTERNAL`, which says
//! the service failed.

use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::{Code, Status};
use tonic_prost::ProstCodec;

/// [`ProstCodec`] with decode failures reported as `INVALID_ARGUMENT`.
#[derive(Debug, Clone)]
pub struct StrictCodec<T, U> {
    inner: ProstCodec<T, U>,
    _types: PhantomData<(T, U)>,
}

impl<T, U> Default for StrictCodec<T, U> {
    fn default() -> Self {
        Self {
            inner: ProstCodec::default(),
            _types: PhantomData,
        }
    }
}

impl<T, U> Codec for StrictCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = <ProstCodec<T, U> as Codec>::Encoder;
    type Decoder = StrictDecoder<<ProstCodec<T, U> as Codec>::Decoder>;

    fn encoder(&mut self) -> Self::Encoder {
        self.inner.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        StrictDecoder(self.inner.decoder())
    }
}

/// A decoder whose failures are the sender's (`INVALID_ARGUMENT`).
#[derive(Debug)]
pub struct StrictDecoder<D>(D);

impl<D: Decoder<Error = Status>> Decoder for StrictDecoder<D> {
    type Item = D::Item;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, Status> {
        self.0.decode(src).map_err(|status| match status.code() {
            Code::Internal => Status::invalid_argument(status.message().to_owned()),
            _ => status,
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}
