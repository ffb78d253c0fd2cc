//! What a caller may do: the [`Permission`] each operation needs and the [`Permissions`] a
//! principal holds.

use std::fmt;

use a2a_protocol::Operation;
use serde::{Deserialize, Serialize};

/// What an operation needs the caller to be allowed to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// GetTask, ListTasks, SubscribeToTask, GetExtendedAgentCard.
    Read,
    /// SendMessage, SendStreamingMessage.
    Send,
    /// CancelTask.
    Cancel,
    /// The four push-config operations.
    Push,
}

impl Permission {
    /// Every permission.
    pub const ALL: [Permission; 4] = [Self::Read, Self::Send, Self::Cancel, Self::Push];

    /// The permission a caller needs for `operation` (checked once, before it runs).
    pub fn for_operation(operation: Operation) -> Self {
        use Operation as O;
        match operation {
            O::SendMessage | O::SendStreamingMessage => Self::Send,
            O::GetTask | O::ListTasks | O::SubscribeToTask | O::GetExtendedAgentCard => Self::Read,
            O::CancelTask => Self::Cancel,
            O::CreateTaskPushNotificationConfig
            | O::GetTaskPushNotificationConfig
            | O::ListTaskPushNotificationConfigs
            | O::DeleteTaskPushNotificationConfig => Self::Push,
        }
    }

    /// The name in key documents and on the command line: `read`, `send`, `cancel`, `push`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Send => "send",
            Self::Cancel => "cancel",
            Self::Push => "push",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Self::Read => 1,
            Self::Send => 2,
            Self::Cancel => 4,
            Self::Push => 8,
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Permission {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown permission {s:?}: use read, send, cancel or push"))
    }
}

/// A set of [`Permission`]s. Serialised as a list of names (`["read", "send"]`).
#[derive(Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Permissions(u8);

impl Permissions {
    /// No permission at all.
    pub const NONE: Permissions = Permissions(0);

    /// Every permission.
    pub fn all() -> Self {
        Permission::ALL.into_iter().collect()
    }

    /// Whether `permission` is in the set.
    pub fn contains(self, permission: Permission) -> bool {
        self.0 & permission.bit() != 0
    }

    /// The set with `permission` added.
    pub fn with(self, permission: Permission) -> Self {
        Self(self.0 | permission.bit())
    }

    /// The permissions in the set, in the order of [`Permission::ALL`].
    pub fn iter(self) -> impl Iterator<Item = Permission> {
        Permission::ALL
            .into_iter()
            .filter(move |p| self.contains(*p))
    }

    /// Parses a comma- or space-separated list of names; `all` means every permission.
    pub fn parse_list(text: &str) -> Result<Self, String> {
        let mut set = Self::NONE;
        for name in text.split([',', ' ']).filter(|n| !n.trim().is_empty()) {
            if name.trim().eq_ignore_ascii_case("all") {
                set = Self::all();
            } else {
                set = set.with(name.parse()?);
            }
        }
        Ok(set)
    }
}

impl FromIterator<Permission> for Permissions {
    fn from_iter<I: IntoIterator<Item = Permission>>(iter: I) -> Self {
        iter.into_iter().fold(Self::NONE, Self::with)
    }
}

impl fmt::Debug for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Permission::as_str).collect();
        f.write_str(&names.join(","))
    }
}

impl Serialize for Permissions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(Permission::as_str))
    }
}

impl<'de> Deserialize<'de> for Permissions {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        names
            .iter()
            .map(|n| n.parse::<Permission>())
            .collect::<Result<Permissions, _>>()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_parse_print_and_serialise() {
        let p = Permissions::parse_list("read, send").unwrap();
        assert!(p.contains(Permission::Read) && p.contains(Permission::Send));
        assert!(!p.contains(Permission::Cancel));
        assert_eq!(p.to_string(), "read,send");
        assert_eq!(Permissions::parse_list("all").unwrap(), Permissions::all());
        assert!(Permissions::parse_list("read,write").is_err());
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, r#"["read","send"]"#);
        assert_eq!(serde_json::from_str::<Permissions>(&json).unwrap(), p);
    }

    #[test]
    fn permissions_follow_what_an_operation_does() {
        use Operation as O;
        assert_eq!(Permission::for_operation(O::GetTask), Permission::Read);
        assert_eq!(
            Permission::for_operation(O::SendStreamingMessage),
            Permission::Send
        );
        assert_eq!(Permission::for_operation(O::CancelTask), Permission::Cancel);
        assert_eq!(
            Permission::for_operation(O::DeleteTaskPushNotificationConfig),
            Permission::Push
        );
    }
}
