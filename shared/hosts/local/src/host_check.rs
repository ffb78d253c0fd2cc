//! Protection against DNS rebinding and cross-site requests for a server on the user's machine.
//!
//! A web page the user visits can make the browser send requests to `127.0.0.1`: through a
//! name of its own that it re-points at `127.0.0.1` (DNS rebinding; the browser then treats the
//! server as the page's own origin, so CORS does not stop it), or directly from its origin. With
//! authentication off (the default) such a request would act as the user. Browsers always send
//! `Host`, and `Origin` on every cross-origin request, which is what is checked here, as Jupyter
//! and Vite do:
//!
//! - `Host` must name the server by an IP address, `localhost` (or a `*.localhost` name), or a
//!   name given with `--allowed-hosts`: a rebound name is none of these.
//! - `Origin`, when present, must be the server's own (same host and port as `Host`) or one
//!   `--cors-origins` allows.
//!
//! `--allowed-hosts '*'` turns both checks off, for a server behind a proxy that checks them.

use std::net::IpAddr;
use std::str::FromStr;
use std::sync::Arc;

use a2a_http::CorsOrigins;
use a2a_protocol::A2AError;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// The host names a request may name the server by, beside IP addresses and `localhost`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AllowedHosts {
    /// IP addresses and `localhost` only (the default).
    #[default]
    Local,
    /// Those, and these names (lowercase).
    Names(Vec<String>),
    /// Any host and any origin: no check (`*`), for a proxy in front that checks them.
    Any,
}

impl FromStr for AllowedHosts {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let names: Vec<String> = text
            .split(',')
            .map(|n| n.trim().to_ascii_lowercase())
            .filter(|n| !n.is_empty())
            .collect();
        if names.iter().any(|n| n == "*") {
            return if names.len() == 1 {
                Ok(Self::Any)
            } else {
                Err("allowed hosts: `*` allows every host and cannot be combined with names".into())
            };
        }
        if let Some(bad) = names
            .iter()
            .find(|n| n.contains(['/', ':', '@']) || n.contains(char::is_whitespace))
        {
            return Err(format!(
                "allowed hosts: {bad:?} is not a host name (give names without scheme or port)"
            ));
        }
        Ok(if names.is_empty() {
            Self::Local
        } else {
            Self::Names(names)
        })
    }
}

/// What the check lets through.
#[derive(Debug, Clone)]
pub(crate) struct HostPolicy {
    pub(crate) hosts: AllowedHosts,
    pub(crate) cors: CorsOrigins,
}

/// The host of a `Host` value (`name`, `name:port`, `[v6]`, `[v6]:port`), as it is written;
/// `None` if the value is no such thing (user info, a port that is not a number, brackets
/// around anything but an IPv6 address). Read without parsing the value into a URI
/// authority and without a copy: every request passes here.
fn host_of(value: &str) -> Option<&str> {
    let (host, port) = match value.strip_prefix('[') {
        Some(bracketed) => {
            let (host, rest) = bracketed.split_once(']')?;
            host.parse::<std::net::Ipv6Addr>().ok()?;
            match rest {
                "" => (host, None),
                rest => (host, Some(rest.strip_prefix(':')?)),
            }
        }
        None => match value.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (value, None),
        },
    };
    let port_ok =
        port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok =
        !host.is_empty() && (value.starts_with('[') || !host.contains(['@', ':', '/', '[', ']']));
    (port_ok && host_ok).then_some(host)
}

impl HostPolicy {
    /// Why the request is refused, if it is.
    fn refusal(&self, headers: &HeaderMap) -> Option<String> {
        if self.hosts == AllowedHosts::Any {
            return None;
        }
        // Browsers always send Host; a request without one is no browser's.
        let host_value = headers
            .get(header::HOST)
            .map(|v| v.to_str().unwrap_or("\u{fffd}"));
        if let Some(value) = host_value {
            if !self.host_allowed(value) {
                return Some(format!(
                    "Host {value:?} is not served: this server answers requests that name it by \
                     an IP address, localhost or a name given with --allowed-hosts \
                     (A2A_ALLOWED_HOSTS), so that no web page can reach it through a name of \
                     its own (DNS rebinding)"
                ));
            }
        }
        let origin = headers.get(header::ORIGIN)?;
        let origin = origin.to_str().unwrap_or("\u{fffd}");
        if self.cors.allows(origin) || host_value.is_some_and(|h| same_origin(origin, h)) {
            return None;
        }
        Some(format!(
            "requests from web pages of the origin {origin:?} are refused: allow it with \
             --cors-origins (A2A_CORS_ORIGINS)"
        ))
    }

    fn host_allowed(&self, value: &str) -> bool {
        let Some(host) = host_of(value) else {
            return false;
        };
        const LOCALHOST: &str = ".localhost";
        let named_localhost = host.len() > LOCALHOST.len()
            && host.is_char_boundary(host.len() - LOCALHOST.len())
            && host[host.len() - LOCALHOST.len()..].eq_ignore_ascii_case(LOCALHOST);
        host.parse::<IpAddr>().is_ok()
            || host.eq_ignore_ascii_case("localhost")
            || named_localhost
            || matches!(&self.hosts, AllowedHosts::Names(names)
                if names.iter().any(|n| n.eq_ignore_ascii_case(host)))
    }
}

/// Whether the browser origin `origin` is the server addressed as `host` (same host and port).
fn same_origin(origin: &str, host: &str) -> bool {
    let Ok(uri) = origin.parse::<Uri>() else {
        return false;
    };
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return false;
    };
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let Ok(addressed) = host.parse::<axum::http::uri::Authority>() else {
        return false;
    };
    authority.host().eq_ignore_ascii_case(addressed.host())
        && authority.port_u16().unwrap_or(default_port)
            == addressed.port_u16().unwrap_or(default_port)
}

/// The check as a layer of the router: refuses what the policy refuses with 403 and a
/// `google.rpc.Status` body. A service of its own rather than `axum::middleware::from_fn`,
/// which boxes the inner service and the future of every request it passes on: this one
/// passes the inner future on as it is.
#[derive(Clone)]
pub(crate) struct HostCheckLayer(pub(crate) Arc<HostPolicy>);

impl<S> tower::Layer<S> for HostCheckLayer {
    type Service = HostCheck<S>;

    fn layer(&self, inner: S) -> HostCheck<S> {
        HostCheck {
            policy: self.0.clone(),
            inner,
        }
    }
}

/// The service of [`HostCheckLayer`].
#[derive(Clone)]
pub(crate) struct HostCheck<S> {
    policy: Arc<HostPolicy>,
    inner: S,
}

/// What a checked request's answer becomes: with `Vary: Origin` when the `Origin` decided.
type Answered<F> = futures::future::MapOk<F, fn(Response) -> Response>;

impl<S> tower::Service<Request> for HostCheck<S>
where
    S: tower::Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = futures::future::Either<
        std::future::Ready<Result<Response, S::Error>>,
        Answered<S::Future>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        use futures::TryFutureExt as _;
        let Some(why) = self.policy.refusal(request.headers()) else {
            // Checked, the `Origin` decides between this answer and a 403: every response
            // says so, or a shared cache could serve the refusal to everyone (or the answer
            // to a refused page).
            let answer: fn(Response) -> Response = if self.policy.hosts == AllowedHosts::Any {
                std::convert::identity
            } else {
                vary_origin
            };
            return futures::future::Either::Right(self.inner.call(request).map_ok(answer));
        };
        futures::future::Either::Left(std::future::ready(Ok(refused(&request, why))))
    }
}

/// `response` with `Vary: Origin`.
fn vary_origin(mut response: Response) -> Response {
    a2a_http::vary_origin(response.headers_mut());
    response
}

/// The 403 that refuses `request`, saying `why`.
fn refused(request: &Request, why: String) -> Response {
    tracing::info!(path = %request.uri().path(), "refused a request: {why}");
    let mut body = A2AError::PermissionDenied(why).to_status_body();
    body["error"]["code"] = serde_json::Value::from(403);
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let mut response = (
        StatusCode::FORBIDDEN,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        bytes,
    )
        .into_response();
    a2a_http::vary_origin(response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(hosts: &str, cors: &str) -> HostPolicy {
        HostPolicy {
            hosts: hosts.parse().expect("hosts"),
            cors: cors.parse().expect("cors"),
        }
    }

    fn request(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in [(header::HOST, host), (header::ORIGIN, origin)] {
            if let Some(value) = value {
                headers.insert(name, HeaderValue::from_str(value).expect("a header value"));
            }
        }
        headers
    }

    #[test]
    fn hosts_are_ip_addresses_localhost_or_named() {
        let local = policy("", "");
        let named = policy("agent.example, Other.Example", "");
        let any = policy("*", "");
        for (host, by_default, when_named) in [
            ("127.0.0.1:9000", true, true),
            ("[::1]:9000", true, true),
            ("10.1.2.3", true, true),
            ("localhost:9000", true, true),
            ("LOCALHOST", true, true),
            ("app.localhost:9000", true, true),
            ("agent.example:9000", false, true),
            ("other.example", false, true),
            ("attacker.example:9000", false, false),
            ("127.0.0.1.attacker.example", false, false),
            ("localhost.attacker.example", false, false),
            ("user@127.0.0.1", false, false),
            ("user@localhost:9000", false, false),
            ("[::1]", true, true),
            ("[LOCALHOST]:9000", false, false),
            ("[::1]9000", false, false),
            ("localhost:http", false, false),
            ("localhost:", false, false),
            ("127.0.0.1:900000", false, false),
            ("App.LocalHost", true, true),
            (".localhost", false, false),
            ("", false, false),
        ] {
            let headers = request(Some(host), None);
            assert_eq!(local.refusal(&headers).is_none(), by_default, "{host:?}");
            assert_eq!(named.refusal(&headers).is_none(), when_named, "{host:?}");
            assert!(any.refusal(&headers).is_none(), "{host:?}");
        }
        assert!(
            local.refusal(&request(None, None)).is_none(),
            "no Host: no browser"
        );
    }

    #[test]
    fn origins_are_the_server_itself_or_allowed_by_cors() {
        let local = policy("", "");
        let cors = policy("", "https://inspector.example");
        let host = Some("127.0.0.1:9000");
        for (origin, by_default, with_cors) in [
            ("http://127.0.0.1:9000", true, true),
            ("http://127.0.0.1:9001", false, false),
            ("https://127.0.0.1:9000", true, true),
            ("https://inspector.example", false, true),
            ("https://evil.example", false, false),
            ("null", false, false),
        ] {
            let headers = request(host, Some(origin));
            assert_eq!(local.refusal(&headers).is_none(), by_default, "{origin}");
            assert_eq!(cors.refusal(&headers).is_none(), with_cors, "{origin}");
        }
        let refused = local.refusal(&request(host, Some("https://evil.example")));
        assert!(refused.is_some_and(|why| why.contains("--cors-origins")));
        assert!(policy("*", "")
            .refusal(&request(host, Some("null")))
            .is_none());
    }

    #[test]
    fn the_list_is_names_or_a_star() {
        assert_eq!("".parse(), Ok(AllowedHosts::Local));
        assert_eq!("*".parse(), Ok(AllowedHosts::Any));
        assert_eq!(
            " A.example ,b.example".parse(),
            Ok(AllowedHosts::Names(vec![
                "a.example".into(),
                "b.example".into()
            ]))
        );
        assert!("*,a.example".parse::<AllowedHosts>().is_err());
        assert!("https://a.example".parse::<AllowedHosts>().is_err());
        assert!("a.example:443".parse::<AllowedHosts>().is_err());
    }
}
