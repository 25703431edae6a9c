//! convoy change 83: the fixed fields at the head of a DATA or DATA_FRAG
//! submessage are read straight from the received bytes.
//!
//! Upstream read each of them through speedy's `read_from_stream_unbuffered`
//! on an `io::Cursor`, which builds a stream reader with a heap buffer for
//! every field (and fills it with 0xFF where debug assertions are on, as in
//! convoy's dev profile): five to nine allocations per received sample, a
//! twentieth of a 64 B round trip's CPU on one core.

use speedy::{Endianness, Error, Readable};

/// Reads speedy-readable fields one after another from a byte slice.
pub(crate) struct FieldReader<'a> {
  bytes: &'a [u8],
  position: usize,
  endianness: Endianness,
}

impl<'a> FieldReader<'a> {
  pub fn new(bytes: &'a [u8], endianness: Endianness) -> Self {
    FieldReader {
      bytes,
      position: 0,
      endianness,
    }
  }

  /// The next field; an error (and no progress) where the bytes end first.
  pub fn read<T: Readable<'static, Endianness>>(&mut self) -> Result<T, Error> {
    let rest = self.bytes.get(self.position..).unwrap_or(&[]);
    let (value, length) =
      T::read_with_length_from_buffer_copying_data_with_ctx(self.endianness, rest);
    let value = value?;
    self.position += length;
    Ok(value)
  }

  /// Where the next field starts.
  pub fn position(&self) -> usize {
    self.position
  }

  /// Moves over `octets` bytes (which may pass the end: the caller checks).
  pub fn skip(&mut self, octets: usize) {
    self.position = self.position.saturating_add(octets);
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::structure::{
    guid::{EntityId, EntityKind},
    sequence_number::SequenceNumber,
  };

  #[test]
  fn fields_are_read_in_order_and_a_short_buffer_is_an_error() {
    let bytes = [
      0x01, 0x00, 0x10, 0x00, // u16 1, u16 16 (little endian)
      0x00, 0x00, 0x01, 0x02, // entity id
      0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, // sequence number 7
      0xAA,
    ];
    let mut reader = FieldReader::new(&bytes, Endianness::LittleEndian);
    assert_eq!(reader.read::<u16>().unwrap(), 1);
    assert_eq!(reader.read::<u16>().unwrap(), 16);
    assert_eq!(
      reader.read::<EntityId>().unwrap(),
      EntityId::create_custom_entity_id([0, 0, 1], EntityKind::WRITER_WITH_KEY_USER_DEFINED)
    );
    assert_eq!(
      reader.read::<SequenceNumber>().unwrap(),
      SequenceNumber::new(7)
    );
    assert_eq!(reader.position(), 16);
    assert!(reader.read::<u32>().is_err());
    assert_eq!(reader.position(), 16);
    reader.skip(10);
    assert!(reader.read::<u8>().is_err());
  }
}
