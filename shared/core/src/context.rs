//! Who is calling: the [`CallContext`] a front door builds for each request.

use a2a_protocol::{A2AError, ProtocolVersion};

use crate::auth::{Permission, Permissions, Principal};
use crate::ports::Owner;

/// Who is calling, as the front door established it.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The owner every read and write is scoped to.
    pub owner: Owner,
    /// The tenant from the request (opaque routing key), or empty.
    pub tenant: String,
    /// Extension URIs the client activated (`A2A-Extensions`).
    pub extensions: Vec<String>,
    /// Whether the caller was authenticated (the extended card requires it).
    pub authenticated: bool,
    /// What the caller may do; each operation checks its [`Permission`].
    pub permissions: Permissions,
    /// The id a send asks its new task to have, chosen by the client (the early protocol's
    /// `tasks/send`). A task the owner already holds under it gets the message as a follow-up;
    /// an id held by another owner is refused without saying so.
    pub requested_task_id: Option<String>,
    /// The protocol version the request speaks, set by the front door where it chooses the
    /// binding or translation. Push configs it sets remember it, so that their pushes carry
    /// the body that version reads; only a 1.1 caller sees task generations.
    pub version: ProtocolVersion,
    /// The W3C `traceparent` the request came with (checked for its form), passed on to what
    /// the work calls: other agents, pushes, the worker.
    pub traceparent: Option<String>,
}

impl CallContext {
    /// An unauthenticated caller in `tenant` (auth mode `none`).
    pub fn anonymous(tenant: &str) -> Self {
        Self::new(&Principal::anonymous(), tenant)
    }

    /// `principal` calling in `tenant`: its tasks are those of the owner (tenant, principal).
    pub fn new(principal: &Principal, tenant: &str) -> Self {
        Self {
            owner: Owner::new(tenant, &principal.id),
            tenant: tenant.to_string(),
            extensions: Vec::new(),
            authenticated: principal.authenticated,
            permissions: principal.permissions,
            requested_task_id: None,
            version: ProtocolVersion::V1_0,
            traceparent: None,
        }
    }

    /// The context with the request's `traceparent` header, if it is a valid W3C trace
    /// context (a malformed one is ignored, as the W3C recommendation says: the work then
    /// starts no trace of its own here).
    pub fn traced(mut self, header: Option<&str>) -> Self {
        self.traceparent = header.and_then(checked_traceparent);
        self
    }

    /// `PermissionDenied` unless the caller holds `permission`. Checked first in every
    /// operation: it depends on nothing but the caller, so it reveals nothing about tasks.
    pub fn require(&self, permission: Permission) -> Result<(), A2AError> {
        if self.permissions.contains(permission) {
            Ok(())
        } else {
            Err(A2AError::PermissionDenied(format!(
                "Permission denied: this operation needs the {permission} permission"
            )))
        }
    }
}

/// A W3C `traceparent` value (Trace Context level 1) if it is well formed:
/// `version-traceid-parentid-flags`, lowercase hex, a trace id and parent id not all zeros,
/// version `ff` refused. A later version may append fields after a `-`; they are kept.
pub fn checked_traceparent(value: &str) -> Option<String> {
    let value = value.trim();
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
    let head = value.get(..55)?;
    let rest = &value[55..];
    let mut fields = head.split('-');
    let (version, trace_id, parent_id, flags) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let well_formed = hex(version, 2)
        && version != "ff"
        && hex(trace_id, 32)
        && nonzero(trace_id)
        && hex(parent_id, 16)
        && nonzero(parent_id)
        && hex(flags, 2)
        && fields.next().is_none();
    let tail_ok = if version == "00" {
        rest.is_empty()
    } else {
        rest.is_empty() || rest.starts_with('-')
    };
    (well_formed && tail_ok).then(|| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::checked_traceparent;

    #[test]
    fn traceparents_are_checked_for_their_form() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        assert_eq!(checked_traceparent(good).as_deref(), Some(good));
        assert_eq!(
            checked_traceparent(&format!(" {good} ")).as_deref(),
            Some(good)
        );
        // A later version may carry more fields.
        let later = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra";
        assert_eq!(checked_traceparent(later).as_deref(), Some(later));
        for bad in [
            "",
            "garbage",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c80319-cb7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
        ] {
            assert_eq!(checked_traceparent(bad), None, "{bad:?}");
        }
    }
}
