//! Outbound HTTP adapters of the A2A core:
//!
//! - [`WebhookClient`]: the core's [`WebhookSender`](a2a_core::WebhookSender), which POSTs
//!   push notifications through the SSRF guard (a resolver that refuses non-public addresses,
//!   no redirects, no proxies);
//! - [`guarded_client`]: the same guard for any other outbound request to a configured URL
//!   (the chat channels of `a2a-channels`);
//! - [`RemoteAgentsClient`]: the core's [`RemoteAgents`](a2a_core::RemoteAgents), which calls
//!   other A2A agents (card, send, poll, cancel, push signatures) through the same guard, with
//!   the credentials configured for each ([`AgentCredentials`]);
//! - [`OpenIdJwks`]: the core's [`JwksSource`](a2a_core::JwksSource), which finds a token
//!   issuer's keys through OpenID Connect Discovery (or a configured JWKS URL) and fetches them.
//!
//! Hosts (the local server, the Lambda functions, tests) build them and hand them to the core.

mod openid;
mod remote;
mod webhook;

pub use openid::{OpenIdJwks, ISSUER_TIMEOUT};
pub use remote::{AgentCredentials, CredentialSource, RemoteAgentSettings, RemoteAgentsClient};
pub use webhook::{describe_error, guarded_client, WebhookClient};
