//! The A2A-Lite channels of the channel function (and of the front function), whose rooms every
//! function that runs the agent may call: their settings, from a Secrets Manager secret (or,
//! for local runs, the environment) read when first needed and again every so often, their
//! routes, and the calls to their rooms.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_channels::lite::RoomAddress;
use a2a_channels::{LiteChannels, LiteSettings, EVENTS_PATH, MATRIX_PREFIX, WEBHOOK_PATH};
use a2a_core::{
    A2aService, CallKey, ConfigError, PushPolicy, ReadClock, RemoteAgents, RemoteError, RemoteSent,
    RemoteTaskRef,
};
use a2a_protocol::{Message, Task, TaskPushNotificationConfig};
use async_trait::async_trait;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::Router;

use crate::secret::read_secret;

/// ARN of the Secrets Manager secret holding the channels (JSON: `{"webhook": {"token",
/// "replyUrl"}, "matrix": {"homeserverUrl", "asToken", "hsToken", "senderLocalpart"}}`;
/// template parameter `LiteChannelSecretArn`, or the stack's own `LiteChannelSecret`).
/// Without it, the channels come from the environment as `a2a-local` reads them
/// (`A2A_LITE_WEBHOOK_TOKEN`, …): local runs only.
pub const ENV_LITE_SECRET_ARN: &str = "A2A_LITE_SECRET_ARN";

/// The channels the environment `lookup` describes, read now: the secret named by
/// [`ENV_LITE_SECRET_ARN`] (read through `sdk`) over the `A2A_LITE_*` variables. An unreadable
/// or invalid secret is an error naming the secret, never what it holds. Functions read them
/// through a [`LiteSource`] instead, when first needed.
pub async fn lite_settings_from(
    lookup: impl Fn(&str) -> Option<String>,
    sdk: Option<&aws_config::SdkConfig>,
) -> Result<LiteSettings, ConfigError> {
    let source = LiteSource::new(lookup, sdk, Duration::MAX)?;
    source
        .current()
        .await
        .map(|(lite, _)| (*lite).clone())
        .map_err(|why| ConfigError::unreadable("the A2A-Lite channel secret", why))
}

/// The A2A-Lite channels of a deployment, read at the first request that needs them (a
/// channel's route, a call to a room), not at init, and again every `refresh`: a token
/// rotated in the secret is used without a redeploy, and a secret that does not read fails the
/// channels (their routes answer 503 saying why, calls to rooms fail saying why) and nothing
/// else the function serves. A later failure keeps the channels read before.
pub struct LiteSource {
    from_env: Arc<LiteSettings>,
    secret: Option<(aws_sdk_secretsmanager::Client, String)>,
    refresh: Duration,
    cache: tokio::sync::Mutex<LiteCache>,
}

/// The channels in force, their version (bumped when a read finds them changed), and when
/// they were read (or failed to be).
#[derive(Default)]
struct LiteCache {
    current: Option<Arc<LiteSettings>>,
    version: u64,
    clock: ReadClock,
}

impl LiteSource {
    /// The channels of the environment `lookup` describes: the `A2A_LITE_*` variables (read
    /// now: an error there is the local configuration's, and stops the function), and the
    /// secret [`ENV_LITE_SECRET_ARN`] names, read through `sdk` when first needed.
    pub fn new(
        lookup: impl Fn(&str) -> Option<String>,
        sdk: Option<&aws_config::SdkConfig>,
        refresh: Duration,
    ) -> Result<Self, ConfigError> {
        let arn = lookup(ENV_LITE_SECRET_ARN).filter(|v| !v.trim().is_empty());
        let from_env =
            LiteSettings::from_lookup(lookup, a2a_channels::settings::read_registration)?;
        let secret = match (arn, sdk) {
            (Some(arn), Some(sdk)) => Some((
                aws_sdk_secretsmanager::Client::new(sdk),
                arn.trim().to_owned(),
            )),
            _ => None,
        };
        Ok(Self {
            from_env: Arc::new(from_env),
            secret,
            refresh,
            cache: tokio::sync::Mutex::default(),
        })
    }

    /// Whether there may be channels: a secret to read, or channels in the environment.
    pub fn may_have_channels(&self) -> bool {
        self.secret.is_some() || !self.from_env.is_empty()
    }

    /// The channels in force and their version, read from the secret if they are due. Never
    /// read successfully: the reason, naming the secret, never quoting it.
    pub async fn current(&self) -> Result<(Arc<LiteSettings>, u64), String> {
        let Some((client, arn)) = &self.secret else {
            return Ok((self.from_env.clone(), 0));
        };
        let mut cache = self.cache.lock().await;
        if cache.clock.due(self.refresh) {
            let read = match read_secret(client, arn, "A2A-Lite channel").await {
                Ok(text) => (*self.from_env)
                    .clone()
                    .with_secret(&text)
                    .map_err(|e| e.to_string()),
                Err(err) => Err(err.to_string()),
            };
            match read {
                Ok(lite) => {
                    if cache.current.as_deref() != Some(&lite) {
                        if lite.is_empty() {
                            tracing::warn!(
                                "the A2A-Lite channel secret configures no channel yet: the \
                                 channel routes answer 404 until it does (docs/a2a-lite.md)"
                            );
                        }
                        cache.current = Some(Arc::new(lite));
                        cache.version += 1;
                    }
                    cache.clock.read();
                }
                Err(why) => {
                    tracing::error!(error = %why, "cannot read the A2A-Lite channels; they fail until it reads (channels read before stay in force)");
                    cache.clock.failed(why);
                }
            }
        }
        match (&cache.current, cache.clock.failure()) {
            (Some(current), _) => Ok((current.clone(), cache.version)),
            (None, Some(why)) => Err(why.to_owned()),
            (None, None) => Ok((Arc::new(LiteSettings::default()), 0)),
        }
    }
}

/// `router` with the routes of the channels of `lite` (if it may have any), bridged to
/// `service`, whose pushes come back under `base`. Without a base URL it is `router` as it is.
/// The channels are set up at their first request, and again when a read of their secret finds
/// them changed; while they cannot be read or set up, their routes answer 503 saying why.
pub(crate) fn with_channels(
    router: Router,
    lite: Option<&Arc<LiteSource>>,
    service: A2aService,
    base: Option<&str>,
) -> Router {
    let Some(lite) = lite.filter(|lite| lite.may_have_channels()) else {
        return router;
    };
    let Some(base) = base else {
        tracing::error!(
            "the A2A-Lite channels need the deployment's public base URL (A2A_PUBLIC_BASE_URL, \
             or a request through the front door)"
        );
        return router;
    };
    let routes = ChannelRoutes {
        source: lite.clone(),
        service,
        base: base.to_owned(),
        built: Arc::default(),
    };
    let handler = move |request: Request| {
        let routes = routes.clone();
        async move { routes.serve(request).await }
    };
    router
        .route(EVENTS_PATH, axum::routing::any(handler.clone()))
        .route(WEBHOOK_PATH, axum::routing::any(handler.clone()))
        .route(
            &format!("{MATRIX_PREFIX}/{{*rest}}"),
            axum::routing::any(handler),
        )
}

/// The channels' routes as last set up, and the version of the channels they were set up from
/// (`Err`: why they could not be).
type Built = Option<(u64, Result<Option<Router>, String>)>;

#[derive(Clone)]
struct ChannelRoutes {
    source: Arc<LiteSource>,
    service: A2aService,
    base: String,
    built: Arc<Mutex<Built>>,
}

impl ChannelRoutes {
    async fn serve(self, request: Request) -> Response {
        let unavailable = |why: String| {
            (
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(serde_json::json!({
                    "error": format!("the A2A-Lite channels are not available: {why}")
                })),
            )
                .into_response()
        };
        let (lite, version) = match self.source.current().await {
            Ok(current) => current,
            Err(why) => return unavailable(why),
        };
        let routes = {
            let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
            match &*built {
                Some((at, routes)) if *at == version => routes.clone(),
                _ => {
                    let routes = LiteChannels::new(&lite, self.service.clone(), &self.base)
                        .map(|channels| channels.map(|c| c.router()))
                        .inspect_err(|err| {
                            tracing::error!(error = %err, "the A2A-Lite channels cannot be set up");
                        });
                    *built = Some((version, routes.clone()));
                    routes
                }
            }
        };
        match routes {
            Ok(Some(router)) => {
                use tower::ServiceExt as _;
                match router.oneshot(request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                }
            }
            Ok(None) => axum::http::StatusCode::NOT_FOUND.into_response(),
            Err(why) => unavailable(why),
        }
    }
}

/// The remote agents of a function whose deployment may have channels: rooms
/// (`lite:<channel>:<room>`) through the channels of `source` as they are at the call, every
/// other agent through `agents`, whatever the channels' secret holds.
pub(crate) struct RoomsAndAgents {
    source: Arc<LiteSource>,
    policy: PushPolicy,
    agents: Arc<dyn RemoteAgents>,
    built: tokio::sync::Mutex<Option<(u64, Arc<dyn RemoteAgents>)>>,
}

impl std::fmt::Debug for RoomsAndAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoomsAndAgents")
            .field("agents", &self.agents)
            .finish_non_exhaustive()
    }
}

impl RoomsAndAgents {
    /// Rooms through the channels of `source` (posting through `policy`), the rest through
    /// `agents`.
    pub(crate) fn new(
        source: Arc<LiteSource>,
        policy: PushPolicy,
        agents: Arc<dyn RemoteAgents>,
    ) -> Self {
        Self {
            source,
            policy,
            agents,
            built: tokio::sync::Mutex::default(),
        }
    }

    /// Whom a call to `address` goes to: for a room, the channels as they are now.
    async fn to(&self, address: &str) -> Result<Arc<dyn RemoteAgents>, RemoteError> {
        if !RoomAddress::is_room(address) {
            return Ok(self.agents.clone());
        }
        let (lite, version) = self.source.current().await.map_err(|why| {
            RemoteError::Unavailable(format!(
                "the A2A-Lite channels cannot be read, so nothing was posted to {address}: {why}"
            ))
        })?;
        let mut built = self.built.lock().await;
        if let Some((at, agents)) = &*built {
            if *at == version {
                return Ok(agents.clone());
            }
        }
        let agents: Arc<dyn RemoteAgents> = Arc::new(
            a2a_channels::remote_agents(&lite, &self.policy, self.agents.clone()).map_err(
                |why| {
                    RemoteError::Refused(format!("the A2A-Lite channels cannot be set up: {why}"))
                },
            )?,
        );
        *built = Some((version, agents.clone()));
        Ok(agents)
    }
}

#[async_trait]
impl RemoteAgents for RoomsAndAgents {
    async fn send(
        &self,
        agent: &str,
        key: &CallKey,
        message: Message,
        push: Option<TaskPushNotificationConfig>,
        traceparent: Option<&str>,
    ) -> Result<RemoteSent, RemoteError> {
        self.to(agent)
            .await?
            .send(agent, key, message, push, traceparent)
            .await
    }

    /// A room's task is named after the call, whatever the channels are now.
    fn names_task(&self, agent: &str, key: &CallKey) -> Option<String> {
        a2a_channels::room_task_id(agent, key)
    }

    async fn get_task(
        &self,
        remote: &RemoteTaskRef,
        traceparent: Option<&str>,
    ) -> Result<Task, RemoteError> {
        self.to(&remote.agent)
            .await?
            .get_task(remote, traceparent)
            .await
    }

    async fn cancel_task(
        &self,
        remote: &RemoteTaskRef,
        traceparent: Option<&str>,
    ) -> Result<(), RemoteError> {
        self.to(&remote.agent)
            .await?
            .cancel_task(remote, traceparent)
            .await
    }

    async fn verify_push(
        &self,
        agent: &str,
        audiences: &[String],
        signature: &str,
        body: &[u8],
    ) -> Result<(), RemoteError> {
        self.to(agent)
            .await?
            .verify_push(agent, audiences, signature, body)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt as _;

    /// An agent never asked anything: these tests only reach the channels' routes.
    struct Idle;

    #[async_trait]
    impl a2a_core::Agent for Idle {
        fn describe(&self) -> a2a_core::AgentDescription {
            a2a_core::AgentDescription {
                name: "idle".into(),
                ..Default::default()
            }
        }

        async fn execute(
            &self,
            _request: a2a_core::AgentRequest,
            _emitter: a2a_core::Emitter,
        ) -> Result<(), a2a_core::AgentError> {
            Ok(())
        }
    }

    async fn post_webhook(router: &Router) -> (u16, String) {
        let response = router
            .clone()
            .oneshot(
                axum::http::Request::post(WEBHOOK_PATH)
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(axum::body::Body::from("token=wrong&text=hi"))
                    .expect("a request"),
            )
            .await
            .expect("an answer");
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .expect("the body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// A channel secret that does not read: the function is made and serves, the channel
    /// routes answer 503 saying why (never quoting the secret), calls to rooms fail saying why
    /// and calls to agents go on; once the secret is mended, the next read sets the channel up.
    #[tokio::test]
    async fn a_broken_channel_secret_fails_the_channels_only_until_it_is_mended() {
        let Some(sdk) = a2a_test_support::emulator("a2a-lambda-glue channels").await else {
            return;
        };
        let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
        let arn = secrets
            .create_secret()
            .name(format!("a2a-lite-{}", uuid::Uuid::new_v4().simple()))
            .secret_string(r#"{"webhook": {"token": "leak-me""#)
            .send()
            .await
            .expect("create the secret on moto")
            .arn
            .expect("an ARN");
        let lookup =
            |arn: String| move |name: &str| (name == ENV_LITE_SECRET_ARN).then(|| arn.clone());
        let source = Arc::new(
            LiteSource::new(lookup(arn.clone()), Some(&sdk), Duration::ZERO)
                .expect("nothing is read to make it"),
        );
        let config = a2a_core::ServiceConfig {
            push_policy: PushPolicy::local(),
            ..a2a_core::ServiceConfig::default()
        };
        let store = a2a_test_support::server::EmbeddedStore::open();
        let service = store.service(config, Arc::new(Idle));
        let router = with_channels(
            Router::new(),
            Some(&source),
            service,
            Some("http://127.0.0.1:9"),
        );
        let (status, body) = post_webhook(&router).await;
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("A2A-Lite channel secret"), "{body}");
        assert!(!body.contains("leak-me"), "{body}");

        let rooms = RoomsAndAgents::new(
            source.clone(),
            PushPolicy::local(),
            Arc::new(a2a_core::NoRemoteAgents),
        );
        let message = Message::user_text("m1", "hello");
        let key = CallKey {
            task_id: "t1".into(),
            call: "1-0".into(),
        };
        let room = rooms
            .send("lite:webhook:general", &key, message.clone(), None, None)
            .await
            .expect_err("no channels to post through");
        assert!(
            matches!(&room, RemoteError::Unavailable(why) if why.contains("A2A-Lite channels cannot be read")),
            "{room}"
        );
        let agent = rooms
            .send("https://agent.example", &key, message, None, None)
            .await
            .expect_err("NoRemoteAgents calls nobody");
        assert!(
            !agent.to_string().contains("A2A-Lite"),
            "a call to an agent does not depend on the channels: {agent}"
        );

        // Mended: the route is the webhook channel's, which refuses a wrong token itself.
        secrets
            .put_secret_value()
            .secret_id(&arn)
            .secret_string(
                r#"{"webhook": {"token": "chat-token", "replyUrl": "http://127.0.0.1:9/hook"}}"#,
            )
            .send()
            .await
            .expect("mend the secret");
        tokio::time::sleep(a2a_core::RETRY_FAILED_READ).await;
        let (status, body) = post_webhook(&router).await;
        assert_ne!(status, 503, "{body}");
        assert_ne!(status, 404, "{body}");
        let (_, version) = source.current().await.expect("read");
        assert_eq!(version, 1);
    }
}
