//! The A2A operations, declared once.
//!
//! [`OPERATIONS`] is the one table of what each operation is on the wire: its name (the JSON-RPC
//! method), whether it answers with a stream, and its REST routes (method, path as in
//! `a2a.proto`'s `google.api.http` annotations, where its fields come from). It is a fact about the
//! protocol's bindings, so servers and clients share it: the server's JSON-RPC dispatch, REST
//! router, Lambda function surfaces and front door route table (`shared/hosts/lambda/routes.json`,
//! `template.yaml`) and the client's requests are derived from it or checked against it by a test.
//! What a caller needs to be allowed an operation is the server's business (a2a-core's
//! `Permission::for_operation`).

use std::fmt;

/// One A2A 1.0 operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// `SendMessage`.
    SendMessage,
    /// `SendStreamingMessage`.
    SendStreamingMessage,
    /// `GetTask`.
    GetTask,
    /// `ListTasks`.
    ListTasks,
    /// `CancelTask`.
    CancelTask,
    /// `SubscribeToTask`.
    SubscribeToTask,
    /// `CreateTaskPushNotificationConfig`.
    CreateTaskPushNotificationConfig,
    /// `GetTaskPushNotificationConfig`.
    GetTaskPushNotificationConfig,
    /// `ListTaskPushNotificationConfigs`.
    ListTaskPushNotificationConfigs,
    /// `DeleteTaskPushNotificationConfig`.
    DeleteTaskPushNotificationConfig,
    /// `GetExtendedAgentCard`.
    GetExtendedAgentCard,
}

/// The HTTP method of a REST route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpVerb {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// `DELETE`.
    Delete,
}

impl HttpVerb {
    /// The method as HTTP spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Delete => "DELETE",
        }
    }
}

impl fmt::Display for HttpVerb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The type of a REST query parameter: the REST binding turns its text into this JSON type, and
/// names the parameter when the text does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// A string, as sent.
    Text,
    /// A 32-bit integer.
    Int,
    /// `true`/`false` (or `1`/`0`).
    Bool,
    /// A task state (`TASK_STATE_WORKING`, …).
    State,
    /// An RFC 3339 timestamp.
    Time,
}

/// One REST route of an operation. Path parameters (`{id}`, `{taskId}`) become request fields
/// of the same name; `{id}:cancel`-style paths carry the action after the last `:` of the
/// segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestRoute {
    /// The HTTP method.
    pub verb: HttpVerb,
    /// The path, without the optional `/{tenant}` prefix every route also has.
    pub path: &'static str,
    /// Whether the JSON body carries request fields (otherwise a body is not read).
    pub body: bool,
    /// The query parameters the route reads, lowerCamelCase (snake_case is accepted too).
    pub query: &'static [(&'static str, QueryKind)],
}

/// What an operation is: the row of [`OPERATIONS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationSpec {
    /// The operation.
    pub operation: Operation,
    /// Its name on the wire (the JSON-RPC method).
    pub name: &'static str,
    /// Whether it answers with a stream of events (SSE).
    pub streaming: bool,
    /// Its REST routes.
    pub rest: &'static [RestRoute],
}

const fn route(verb: HttpVerb, path: &'static str, body: bool) -> RestRoute {
    RestRoute {
        verb,
        path,
        body,
        query: &[],
    }
}

use HttpVerb::{Delete, Get, Post};
use Operation as Op;

/// The table: every A2A 1.0 operation, in the order of the spec.
pub const OPERATIONS: [OperationSpec; 11] = [
    OperationSpec {
        operation: Op::SendMessage,
        name: "SendMessage",
        streaming: false,
        rest: &[route(Post, "/message:send", true)],
    },
    OperationSpec {
        operation: Op::SendStreamingMessage,
        name: "SendStreamingMessage",
        streaming: true,
        rest: &[route(Post, "/message:stream", true)],
    },
    OperationSpec {
        operation: Op::GetTask,
        name: "GetTask",
        streaming: false,
        rest: &[RestRoute {
            verb: Get,
            path: "/tasks/{id}",
            body: false,
            query: &[
                ("historyLength", QueryKind::Int),
                ("currentGeneration", QueryKind::Text),
                ("timelineLength", QueryKind::Int),
            ],
        }],
    },
    OperationSpec {
        operation: Op::ListTasks,
        name: "ListTasks",
        streaming: false,
        rest: &[RestRoute {
            verb: Get,
            path: "/tasks",
            body: false,
            query: &[
                ("contextId", QueryKind::Text),
                ("status", QueryKind::State),
                ("pageSize", QueryKind::Int),
                ("pageToken", QueryKind::Text),
                ("historyLength", QueryKind::Int),
                ("statusTimestampAfter", QueryKind::Time),
                ("includeArtifacts", QueryKind::Bool),
                ("timelineLength", QueryKind::Int),
            ],
        }],
    },
    OperationSpec {
        operation: Op::CancelTask,
        name: "CancelTask",
        streaming: false,
        // The optional body carries `metadata`.
        rest: &[route(Post, "/tasks/{id}:cancel", true)],
    },
    OperationSpec {
        operation: Op::SubscribeToTask,
        name: "SubscribeToTask",
        streaming: true,
        // The proto says GET, the spec's text and the Python client POST: both are served.
        rest: &[
            route(Get, "/tasks/{id}:subscribe", false),
            route(Post, "/tasks/{id}:subscribe", false),
        ],
    },
    OperationSpec {
        operation: Op::CreateTaskPushNotificationConfig,
        name: "CreateTaskPushNotificationConfig",
        streaming: false,
        rest: &[route(Post, "/tasks/{taskId}/pushNotificationConfigs", true)],
    },
    OperationSpec {
        operation: Op::GetTaskPushNotificationConfig,
        name: "GetTaskPushNotificationConfig",
        streaming: false,
        rest: &[route(
            Get,
            "/tasks/{taskId}/pushNotificationConfigs/{id}",
            false,
        )],
    },
    OperationSpec {
        operation: Op::ListTaskPushNotificationConfigs,
        name: "ListTaskPushNotificationConfigs",
        streaming: false,
        rest: &[RestRoute {
            verb: Get,
            path: "/tasks/{taskId}/pushNotificationConfigs",
            body: false,
            query: &[("pageSize", QueryKind::Int), ("pageToken", QueryKind::Text)],
        }],
    },
    OperationSpec {
        operation: Op::DeleteTaskPushNotificationConfig,
        name: "DeleteTaskPushNotificationConfig",
        streaming: false,
        rest: &[route(
            Delete,
            "/tasks/{taskId}/pushNotificationConfigs/{id}",
            false,
        )],
    },
    OperationSpec {
        operation: Op::GetExtendedAgentCard,
        name: "GetExtendedAgentCard",
        streaming: false,
        rest: &[route(Get, "/extendedAgentCard", false)],
    },
];

impl Operation {
    /// Every operation, in the order of the spec.
    pub const ALL: [Operation; 11] = {
        let mut all = [Op::SendMessage; 11];
        let mut i = 0;
        while i < OPERATIONS.len() {
            all[i] = OPERATIONS[i].operation;
            i += 1;
        }
        all
    };

    /// The operation's row of [`OPERATIONS`].
    pub fn spec(self) -> &'static OperationSpec {
        // The table is in the enum's order (a test checks it).
        &OPERATIONS[self as usize]
    }

    /// The name on the wire (the JSON-RPC method).
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Looks an operation up by its wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        OPERATIONS
            .iter()
            .find(|spec| spec.name == name)
            .map(|spec| spec.operation)
    }

    /// Whether the operation answers with an SSE stream.
    pub fn is_streaming(self) -> bool {
        self.spec().streaming
    }

    /// The operation's REST routes.
    pub fn rest_routes(self) -> &'static [RestRoute] {
        self.spec().rest
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a JSON-RPC method name is of an older protocol version (`message/send`,
/// `tasks/get`, …): those names contain a `/`.
pub fn is_legacy_method_name(name: &str) -> bool {
    name.contains('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_enums_order_and_names_are_unique() {
        for (i, spec) in OPERATIONS.iter().enumerate() {
            assert_eq!(spec.operation as usize, i, "{} is out of order", spec.name);
            assert_eq!(Operation::from_name(spec.name), Some(spec.operation));
            assert_eq!(format!("{:?}", spec.operation), spec.name);
        }
        assert_eq!(Operation::ALL.len(), OPERATIONS.len());
        assert_eq!(Operation::from_name("message/send"), None);
        assert!(is_legacy_method_name("message/send"));
    }

    #[test]
    fn rest_routes_are_unique_per_method_and_path() {
        let mut seen = std::collections::HashSet::new();
        for op in Operation::ALL {
            assert!(!op.rest_routes().is_empty(), "{op} has no REST route");
            for r in op.rest_routes() {
                assert!(seen.insert((r.verb, r.path)), "{} {} twice", r.verb, r.path);
            }
        }
    }

    #[test]
    fn two_operations_stream() {
        use Operation as O;
        let streaming: Vec<_> = O::ALL.into_iter().filter(|o| o.is_streaming()).collect();
        assert_eq!(streaming, [O::SendStreamingMessage, O::SubscribeToTask]);
    }
}
