//! The in-process server harness: an A2A service served by the real router (`a2a_http`) on
//! 127.0.0.1, for the suites that test the HTTP front door and what a webhook receiver sees of
//! an agent (its JWKS). The out-of-process harness, which runs the `a2a-local` binary, is
//! `a2a-e2e`'s `Server`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use a2a_core::{A2aService, Agent, ServiceConfig};
use a2a_embedded::SqliteStore;
use a2a_protocol::AgentInterface;
use axum::extract::Request;
use axum::Router;
use tokio::task::JoinHandle;
use tower::ServiceExt as _;

/// A router served on `127.0.0.1:PORT` by this process, until dropped.
///
/// One listener for the server's whole life forwards to whichever router is current, so that
/// [`Self::replace`] (a redeploy, e.g. with rotated keys) keeps the URL.
pub struct InProcessServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    router: Arc<RwLock<Router>>,
    /// Requests served so far, by path.
    hits: Arc<Mutex<HashMap<String, usize>>>,
    task: JoinHandle<()>,
}

impl InProcessServer {
    /// Binds a free port on 127.0.0.1 and serves the router `app` builds for the server's base
    /// URL (a service's card and signer need it before the router exists).
    pub async fn start(app: impl FnOnce(&str) -> Router) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the server's listener");
        let base = format!("http://{}", listener.local_addr().expect("server address"));
        let router = Arc::new(RwLock::new(app(&base)));
        let hits = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
        let front = {
            let router = router.clone();
            let hits = hits.clone();
            Router::new().fallback(move |request: Request| {
                *hits
                    .lock()
                    .expect("hits lock")
                    .entry(request.uri().path().to_string())
                    .or_default() += 1;
                let current = router.read().expect("router lock").clone();
                async move { current.oneshot(request).await }
            })
        };
        let task = tokio::spawn(async move {
            axum::serve(listener, front).await.expect("serve");
        });
        Self {
            base,
            router,
            hits,
            task,
        }
    }

    /// `base` followed by `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Serves `router` from now on, at the same URL.
    pub fn replace(&self, router: Router) {
        *self.router.write().expect("router lock") = router;
    }

    /// How many requests for `path` the server has received.
    pub fn hits(&self, path: &str) -> usize {
        self.hits
            .lock()
            .expect("hits lock")
            .get(path)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for InProcessServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The embedded SQLite store in a fresh temporary directory, removed when this is dropped.
pub struct EmbeddedStore {
    /// The store: tasks, the work queue and the push queue.
    pub store: Arc<SqliteStore>,
    _dir: tempfile::TempDir,
}

impl EmbeddedStore {
    /// Opens a store in a new temporary directory.
    pub fn open() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = Arc::new(SqliteStore::open(dir.path()).expect("open the store"));
        Self { store, _dir: dir }
    }

    /// The directory the store's file is in (another process may open it too).
    pub fn dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// A service for `agent` under `config`, with this store as its task store and queues.
    pub fn service(&self, config: ServiceConfig, agent: Arc<dyn Agent>) -> A2aService {
        let store = &self.store;
        A2aService::new(config, agent, store.clone(), store.clone(), store.clone())
    }
}

/// An A2A 1.0 interface at `url` for `binding` (`JSONRPC`, `HTTP+JSON`), as a card lists it.
pub fn interface(url: impl Into<String>, binding: &str) -> AgentInterface {
    AgentInterface {
        url: url.into(),
        protocol_binding: binding.into(),
        protocol_version: "1.0".into(),
        tenant: String::new(),
    }
}
