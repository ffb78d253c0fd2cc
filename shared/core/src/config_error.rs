//! Why a deployment's configuration cannot be used, in terms an operator can act on.

/// A configuration the host cannot start with: which setting, and what is wrong with it.
/// Every message names the setting (an environment variable, a flag, a template parameter or
/// a document) and never quotes a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A setting holds a value it does not accept.
    #[error("{setting}: {reason}")]
    Invalid {
        /// The setting, as the operator sets it (e.g. `A2A_AUTH`).
        setting: String,
        /// What is wrong with its value, and what it accepts.
        reason: String,
    },
    /// A setting the others require is not set.
    #[error("{needed_by} needs {setting}")]
    Missing {
        /// The setting to set, and where.
        setting: String,
        /// What requires it.
        needed_by: String,
    },
    /// A document holding settings (a file, a secret) cannot be read, or is not of its form.
    #[error("{what}: {reason}")]
    Unreadable {
        /// The document, by name or path (never by content).
        what: String,
        /// Why it cannot be used.
        reason: String,
    },
}

impl ConfigError {
    /// `setting` holds a value it does not accept, for `reason`.
    pub fn invalid(setting: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            setting: setting.into(),
            reason: reason.into(),
        }
    }

    /// `needed_by` needs `setting`, which is not set.
    pub fn missing(setting: impl Into<String>, needed_by: impl Into<String>) -> Self {
        Self::Missing {
            setting: setting.into(),
            needed_by: needed_by.into(),
        }
    }

    /// The document `what` cannot be used, for `reason`.
    pub fn unreadable(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Unreadable {
            what: what.into(),
            reason: reason.into(),
        }
    }
}

/// The duration `setting` holds as a whole number of seconds (`value`, as read), or `default`
/// when it is not set.
pub fn seconds_setting(
    setting: &str,
    value: Option<&str>,
    default: std::time::Duration,
) -> Result<std::time::Duration, ConfigError> {
    match value {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .map(std::time::Duration::from_secs)
            .map_err(|_| {
                ConfigError::invalid(
                    setting,
                    format!("must be a whole number of seconds, not {v:?}"),
                )
            }),
    }
}

/// Hosts whose own errors are text (a `main` printing its reason) take a configuration error
/// as its message.
impl From<ConfigError> for String {
    fn from(err: ConfigError) -> Self {
        err.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_setting() {
        assert_eq!(
            ConfigError::invalid("A2A_AUTH", "unknown auth mode \"x\"").to_string(),
            "A2A_AUTH: unknown auth mode \"x\""
        );
        assert_eq!(
            ConfigError::missing("--jwt-issuer or A2A_JWT_ISSUER", "auth mode jwt").to_string(),
            "auth mode jwt needs --jwt-issuer or A2A_JWT_ISSUER"
        );
        let text: String = ConfigError::unreadable("keys.json", "not JSON").into();
        assert_eq!(text, "keys.json: not JSON");
    }
}
