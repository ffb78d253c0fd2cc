//! Who is calling: the [`CallContext`] a front door builds for each request.

use a2a_protocol::A2AError;

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
    /// The older protocol generation the request speaks (`None`: 1.0). Push configs it sets
    /// remember it, so that their pushes carry the body that generation reads.
    pub generation: Option<a2a_protocol::compat::Generation>,
    /// Whether the request speaks the A2A 1.1 draft (`A2A-Version: 1.1`): task generations
    /// in answers, long-polling GetTask, `ifGenerationMatch`. A 1.0 request sees none of it.
    pub v1_1: bool,
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
            generation: None,
            v1_1: false,
            traceparent: None,
        }
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
