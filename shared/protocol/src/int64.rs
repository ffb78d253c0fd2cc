//! An `int64` in ProtoJSON: written as a decimal string, read from a string or a number (a
//! `null` or an absent member is 0). Use with `#[serde(with = "crate::int64")]`.

use serde::{de, Deserialize, Deserializer, Serializer};

/// Writes `n` as a decimal string.
pub fn serialize<S: Serializer>(n: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(n)
}

/// Reads a string or a number.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    Ok(optional::deserialize(d)?.unwrap_or_default())
}

/// An `optional int64`: `None` when absent or `null`.
pub mod optional {
    use super::*;

    /// Writes the value as a decimal string (`None` is skipped by the field's attributes).
    pub fn serialize<S: Serializer>(n: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match n {
            Some(n) => s.collect_str(n),
            None => s.serialize_none(),
        }
    }

    /// Reads a string, a number or `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Int64 {
            Number(i64),
            Text(String),
        }
        match Option::<Int64>::deserialize(d)? {
            None => Ok(None),
            Some(Int64::Number(n)) => Ok(Some(n)),
            Some(Int64::Text(text)) => text.trim().parse().map(Some).map_err(|_| {
                de::Error::custom(format!("{text:?} is not an int64 (a whole number)"))
            }),
        }
    }
}
