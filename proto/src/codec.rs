//! The protobuf codec of every `duel.v1` service: prost's, except that a message
//! that does not decode is `INVALID_ARGUMENT` (the sender's fault) instead of
//! tonic's `INTERNAL` (which says the receiver failed).

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Metadata key that marks a status this side made because the peer's message
/// did not decode. A client that receives a malformed reply can tell that apart
/// from an `INVALID_ARGUMENT` the peer sent on purpose.
pub const MALFORMED_METADATA_KEY: &str = "duel-malformed-message";

/// The status for a message that does not decode as its protobuf type.
pub fn malformed_message(error: &prost::DecodeError) -> Status {
    let mut status = Status::new(
        Code::InvalidArgument,
        format!("malformed protobuf message: {error}"),
    );
    status
        .metadata_mut()
        .insert(MALFORMED_METADATA_KEY, MetadataValue::from_static("1"));
    status
}

/// True when `status` was made locally by [`malformed_message`].
pub fn is_malformed_message(status: &Status) -> bool {
    status.code() == Code::InvalidArgument && status.metadata().contains_key(MALFORMED_METADATA_KEY)
}

/// prost's codec with [`malformed_message`] for undecodable messages; the
/// generated clients and servers use it (`codec_path` in build.rs).
#[derive(Debug, Clone)]
pub struct DuelCodec<T, U> {
    marker: PhantomData<(T, U)>,
}

impl<T, U> Default for DuelCodec<T, U> {
    fn default() -> Self {
        Self {
            marker: PhantomData,
        }
    }
}

impl<T, U> Codec for DuelCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = DuelDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        DuelDecoder {
            inner: ProstCodec::<T, U>::raw_decoder(BufferSettings::default()),
        }
    }
}

/// Decodes with prost; see [`malformed_message`].
#[derive(Debug, Clone)]
pub struct DuelDecoder<U> {
    inner: ProstDecoder<U>,
}

impl<U: Message + Default> Decoder for DuelDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(buf)
            .map(Some)
            .map_err(|error| malformed_message(&error))
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}
