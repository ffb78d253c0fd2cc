//! Where credentials may go: to the origin (scheme, host and port) they were given for, and to
//! no other that a redirect or an agent card names, unless the caller says so.
//!
//! reqwest drops `Authorization` on a redirect to another host, but not an API key header;
//! and a card may name its interface on any host. So a client with credentials follows no
//! redirect to another origin ([`redirect_policy`]), and takes no interface on another origin
//! than the card's ([`crate::ClientBuilder::share_credentials`] allows both).

use std::fmt;

use reqwest::redirect::{Attempt, Policy};
use reqwest::Url;

/// The most redirects followed in a row (reqwest's default).
const MAX_REDIRECTS: usize = 10;

/// A redirect to another origin, refused because credentials would follow it.
#[derive(Debug)]
struct OtherOriginRedirect {
    from: Url,
    to: Url,
}

impl fmt::Display for OtherOriginRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the agent redirected {} to {}, another origin: not followed, because the \
             credentials given for {} would go there too",
            self.from,
            self.to,
            self.from.origin().ascii_serialization()
        )
    }
}

impl std::error::Error for OtherOriginRedirect {}

/// The redirect policy of a client: up to 10 redirects; with `guard` (credentials are set and
/// may not be shared), none to another origin.
pub(crate) fn redirect_policy(guard: bool) -> Policy {
    Policy::custom(move |attempt: Attempt<'_>| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        let from = attempt.previous().last().cloned();
        match from {
            Some(from) if guard && from.origin() != attempt.url().origin() => {
                let to = attempt.url().clone();
                attempt.error(OtherOriginRedirect { from, to })
            }
            _ => attempt.follow(),
        }
    })
}

/// The refusal of [`redirect_policy`] behind `e`, if that is what it is.
pub(crate) fn refused_redirect(e: &reqwest::Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<OtherOriginRedirect>() {
            return Some(refused.to_string());
        }
        source = cause.source();
    }
    None
}

/// The origin of a URL, `scheme://host:port`, if it has one (http and https URLs do).
pub(crate) fn origin_of(url: &str) -> Option<url::Origin> {
    let origin = Url::parse(url).ok()?.origin();
    origin.is_tuple().then_some(origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_differ_by_scheme_host_or_port() {
        let a = origin_of("https://agent.example/a2a").unwrap();
        assert_eq!(
            Some(a.clone()),
            origin_of("https://agent.example:443/other")
        );
        for other in [
            "http://agent.example/a2a",
            "https://agent.example:8443/a2a",
            "https://evil.example/a2a",
            "https://agent.example.evil.example/",
        ] {
            assert_ne!(Some(a.clone()), origin_of(other), "{other}");
        }
        assert_eq!(origin_of("not a url"), None);
    }
}
