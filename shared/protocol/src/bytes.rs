//! `bytes` in ProtoJSON.

use base64::Engine as _;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// `bytes` in ProtoJSON: standard base64 with padding on output; standard or URL-safe, padded
/// or not, on input.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Bytes(pub Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({} bytes)", self.0.len())
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
        let text = String::deserialize(d)?;
        let trimmed = text.trim_end_matches('=');
        STANDARD_NO_PAD
            .decode(trimmed)
            .or_else(|_| URL_SAFE_NO_PAD.decode(trimmed))
            .map(Bytes)
            .map_err(|e| de::Error::custom(format!("invalid base64 in bytes field: {e}")))
    }
}
