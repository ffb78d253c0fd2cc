//! The protocol version a caller speaks: [`ProtocolVersion`], chosen once where a request's
//! binding or translation is chosen, and kept with what outlives the request (a push config).

use crate::compat::OlderVersion;
use crate::types::TaskPushNotificationConfig;

/// The protocol version a request speaks. What it reads depends on it: an older version's
/// answers are translated, and only a 1.1 caller sees task generations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProtocolVersion {
    /// A2A 1.0.
    #[default]
    V1_0,
    /// The A2A 1.1 draft (`A2A-Version: 1.1`): task generations and timelines in answers,
    /// long-polling GetTask, `ifGenerationMatch`.
    V1_1,
    /// A2A 0.3 (either binding).
    V0_3,
    /// The early protocol (before 0.2).
    Early,
}

impl ProtocolVersion {
    /// Whether the caller speaks the A2A 1.1 draft (and so reads task generations and
    /// timelines).
    pub fn is_1_1(self) -> bool {
        self == Self::V1_1
    }

    /// The older version this is, for a 0.3 or early caller.
    pub fn older(self) -> Option<OlderVersion> {
        match self {
            Self::V0_3 => Some(OlderVersion::V03),
            Self::Early => Some(OlderVersion::Early),
            Self::V1_0 | Self::V1_1 => None,
        }
    }
}

impl From<OlderVersion> for ProtocolVersion {
    fn from(version: OlderVersion) -> Self {
        match version {
            OlderVersion::V03 => Self::V0_3,
            OlderVersion::Early => Self::Early,
        }
    }
}

impl TaskPushNotificationConfig {
    /// Remembers the version of the client that sets this config: its pushes carry the body
    /// that version reads.
    pub fn set_protocol(&mut self, version: ProtocolVersion) {
        self.older_version = version.older();
        self.v1_1 = version.is_1_1();
    }

    /// The version of the client that set this config.
    pub fn protocol(&self) -> ProtocolVersion {
        match (self.older_version, self.v1_1) {
            (Some(older), _) => older.into(),
            (None, true) => ProtocolVersion::V1_1,
            (None, false) => ProtocolVersion::V1_0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_config_keeps_the_version_that_set_it() {
        for version in [
            ProtocolVersion::V1_0,
            ProtocolVersion::V1_1,
            ProtocolVersion::V0_3,
            ProtocolVersion::Early,
        ] {
            let mut config = TaskPushNotificationConfig::default();
            config.set_protocol(version);
            assert_eq!(config.protocol(), version);
        }
    }
}
