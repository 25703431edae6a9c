//! Serialisation of convoy messages for rustdds: plain CDR (XCDR1), checked strictly.
//!
//! rustdds's stock CDR adapter accepts a payload that is longer than the type it decodes into,
//! so a writer of a different (longer) type under a convoy topic name would be read as garbage
//! without complaint. This adapter decodes the same CDR but rejects payloads with bytes left
//! over beyond CDR's final alignment padding, so such a writer shows up as decode errors.

use std::marker::PhantomData;

use byteorder::{BigEndian, LittleEndian};
use rustdds::{Keyed, RepresentationIdentifier};
use serde::{Deserialize, Serialize};

use crate::messages::Message;

/// A convoy message as rustdds stores it: the message itself, keyed by its IDL key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Wire<M>(pub M);

impl<M: Message> Keyed for Wire<M> {
    type K = M::Key;
    fn key(&self) -> M::Key {
        self.0.key()
    }
}

/// Why a payload is not a valid `M`.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("not a valid {type_name}: {source}")]
    Cdr {
        type_name: &'static str,
        source: cdr_encoding::Error,
    },
    #[error("not a valid {type_name}: {extra} bytes left over after the message (a different type written under this topic?)")]
    TrailingBytes {
        type_name: &'static str,
        extra: usize,
    },
    #[error("unsupported representation {0:?}: convoy reads plain CDR (XCDR1) only")]
    Representation(RepresentationIdentifier),
}

/// CDR pads a message to a multiple of 4 at most, so more than 3 spare bytes is a mismatch.
const MAX_FINAL_PADDING: usize = 3;

/// Decodes one CDR payload into `T` (which may borrow byte arrays from `bytes`: a view, read in
/// place), refusing leftovers.
pub fn decode<'a, T: serde::Deserialize<'a>>(
    type_name: &'static str,
    bytes: &'a [u8],
    encoding: RepresentationIdentifier,
) -> Result<T, WireError> {
    let decoded = if encoding == RepresentationIdentifier::CDR_LE {
        cdr_encoding::from_bytes::<T, LittleEndian>(bytes)
    } else if encoding == RepresentationIdentifier::CDR_BE {
        cdr_encoding::from_bytes::<T, BigEndian>(bytes)
    } else {
        return Err(WireError::Representation(encoding));
    };
    let (value, consumed) = decoded.map_err(|source| WireError::Cdr { type_name, source })?;
    let extra = bytes.len().saturating_sub(consumed);
    if extra > MAX_FINAL_PADDING {
        return Err(WireError::TrailingBytes { type_name, extra });
    }
    Ok(value)
}

/// Encodes a value as little-endian CDR (what rustdds, Cyclone and Fast DDS all read).
///
/// Two passes: the first only counts bytes, so the buffer is allocated once at its final size.
/// Growing it by doubling instead cost a 1 MiB image ~2 MiB of fresh allocations and copies,
/// 3-4 ms per write under load (the first pass is cheap: byte arrays are one `write_all`).
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, cdr_encoding::Error> {
    let mut counter = ByteCounter(0);
    cdr_encoding::to_writer::<T, LittleEndian, _>(&mut counter, value)?;
    cdr_encoding::to_vec_with_size_hint::<T, LittleEndian>(value, counter.0)
}

/// Appends `value` as little-endian CDR to `out` (room reserved first, nothing zero-filled):
/// a recorder's sample behind its encapsulation header, with no copy in between.
pub fn encode_append<T: Serialize>(
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), cdr_encoding::Error> {
    out.reserve(encoded_len(value)?);
    cdr_encoding::to_writer::<T, LittleEndian, _>(out, value)
}

/// The length of `value` as little-endian CDR ([`encode`]'s first pass).
pub fn encoded_len<T: Serialize>(value: &T) -> Result<usize, cdr_encoding::Error> {
    let mut counter = ByteCounter(0);
    cdr_encoding::to_writer::<T, LittleEndian, _>(&mut counter, value)?;
    Ok(counter.0)
}

/// Encodes `value` as little-endian CDR straight into `out` (exactly [`encoded_len`] bytes),
/// as a shared-memory slot takes it without a buffer in between.
pub fn encode_into<T: Serialize>(value: &T, out: &mut [u8]) -> Result<(), cdr_encoding::Error> {
    let mut cursor = std::io::Cursor::new(out);
    cdr_encoding::to_writer::<T, LittleEndian, _>(&mut cursor, value)
}

/// An `io::Write` that keeps only the number of bytes written.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The rustdds (de)serializer adapter for `Wire<M>`.
pub struct WireAdapter<M>(PhantomData<M>);

const ENCODINGS: [RepresentationIdentifier; 2] = [
    RepresentationIdentifier::CDR_LE,
    RepresentationIdentifier::CDR_BE,
];

impl<M: Message> rustdds::no_key::SerializerAdapter<Wire<M>> for WireAdapter<M> {
    type Error = cdr_encoding::Error;
    fn output_encoding() -> RepresentationIdentifier {
        RepresentationIdentifier::CDR_LE
    }
    fn to_bytes(value: &Wire<M>) -> Result<rustdds::bytes::Bytes, Self::Error> {
        encode(&value.0).map(rustdds::bytes::Bytes::from)
    }
}

impl<M: Message> rustdds::with_key::SerializerAdapter<Wire<M>> for WireAdapter<M> {
    fn key_to_bytes(key: &M::Key) -> Result<rustdds::bytes::Bytes, Self::Error> {
        encode(key).map(rustdds::bytes::Bytes::from)
    }
}

impl<M: Message> rustdds::no_key::DeserializerAdapter<Wire<M>> for WireAdapter<M> {
    type Error = WireError;
    type Decoded = Wire<M>;
    fn supported_encodings() -> &'static [RepresentationIdentifier] {
        &ENCODINGS
    }
    fn transform_decoded(decoded: Wire<M>) -> Wire<M> {
        decoded
    }
}

impl<M: Message> rustdds::with_key::DeserializerAdapter<Wire<M>> for WireAdapter<M> {
    type DecodedKey = M::Key;
    fn transform_decoded_key(key: M::Key) -> M::Key {
        key
    }
}

impl<M: Message> rustdds::no_key::DefaultDecoder<Wire<M>> for WireAdapter<M> {
    type Decoder = StrictDecoder<M>;
    const DECODER: StrictDecoder<M> = StrictDecoder(PhantomData);
}

impl<M: Message> rustdds::with_key::DefaultDecoder<Wire<M>> for WireAdapter<M> {
    type Decoder = StrictDecoder<M>;
    const DECODER: StrictDecoder<M> = StrictDecoder(PhantomData);
}

/// The decoder object rustdds calls for every received payload.
pub struct StrictDecoder<M>(PhantomData<M>);

impl<M> Clone for StrictDecoder<M> {
    fn clone(&self) -> Self {
        StrictDecoder(PhantomData)
    }
}

impl<'de, M: Message> rustdds::no_key::Decode<'de, Wire<M>> for StrictDecoder<M> {
    type Error = WireError;
    fn decode_bytes(
        self,
        bytes: &'de [u8],
        encoding: RepresentationIdentifier,
    ) -> Result<Wire<M>, WireError> {
        decode(M::TYPE_NAME, bytes, encoding).map(Wire)
    }
}

impl<'de, M: Message> rustdds::with_key::Decode<'de, Wire<M>, M::Key> for StrictDecoder<M> {
    fn decode_key_bytes(
        self,
        bytes: &'de [u8],
        encoding: RepresentationIdentifier,
    ) -> Result<M::Key, WireError> {
        decode(M::TYPE_NAME, bytes, encoding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{FrameDone, Tick};

    #[test]
    fn round_trips_and_rejects_leftovers() {
        let done = FrameDone {
            node_id: "agent/ego".into(),
            frame: 7,
        };
        let bytes = encode(&done).expect("encode");
        let back: FrameDone = decode(
            FrameDone::TYPE_NAME,
            &bytes,
            RepresentationIdentifier::CDR_LE,
        )
        .expect("decode");
        assert_eq!(back, done);

        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0u8; 8]);
        let err = decode::<FrameDone>(
            FrameDone::TYPE_NAME,
            &longer,
            RepresentationIdentifier::CDR_LE,
        )
        .expect_err("leftovers accepted");
        assert!(err.to_string().contains("8 bytes left over"), "{err}");

        let err = decode::<Tick>(
            Tick::TYPE_NAME,
            &bytes[..5],
            RepresentationIdentifier::CDR_LE,
        )
        .expect_err("short payload accepted");
        assert!(err.to_string().contains("convoy::Tick"), "{err}");
    }
}
