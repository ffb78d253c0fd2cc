//! The router's two outer layers, the request log and CORS, as tower services of their own
//! rather than `axum::middleware::from_fn`: that boxes the inner service and the future of
//! every request, so each request pays two indirect calls per poll of each layer, which on a
//! blocking echo were a measurable share of its mispredicted branches (docs/performance.md).
//! These pass the inner future on as it is and wrap it in a future of their own.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, Uri};
use axum::response::Response;

use crate::cors::Cors;

/// Logs each request's method, path and status: failures at `warn` (ours, 5xx) or `info`
/// (the caller's, 4xx), successes at `debug` (`RUST_LOG=a2a_http=debug`): a line per
/// successful request would cost a write to stderr each, a measurable share of a fast
/// request. Never headers, query strings or bodies: they may carry credentials.
#[derive(Clone, Copy, Default)]
pub(crate) struct LogRequestLayer;

impl<S> tower::Layer<S> for LogRequestLayer {
    type Service = LogRequest<S>;

    fn layer(&self, inner: S) -> LogRequest<S> {
        LogRequest { inner }
    }
}

/// The service of [`LogRequestLayer`].
#[derive(Clone)]
pub(crate) struct LogRequest<S> {
    inner: S,
}

impl<S> tower::Service<Request> for LogRequest<S>
where
    S: tower::Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Logged<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        Logged {
            method: request.method().clone(),
            // The URI shares the request's bytes: no copy of the path unless a line is written.
            uri: request.uri().clone(),
            started: Instant::now(),
            inner: self.inner.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's answer, logged when it is ready.
    pub(crate) struct Logged<F> {
        method: Method,
        uri: Uri,
        started: Instant,
        #[pin]
        inner: F,
    }
}

impl<F, E> Future for Logged<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answer = ready!(this.inner.poll(cx));
        if let Ok(response) = &answer {
            let status = response.status();
            let (method, path) = (&*this.method, this.uri.path());
            let elapsed_ms = || this.started.elapsed().as_millis() as u64;
            let code = status.as_u16();
            if status.is_server_error() {
                tracing::warn!(%method, %path, status = code, elapsed_ms = elapsed_ms(), "request failed");
            } else if status.is_client_error() {
                tracing::info!(%method, %path, status = code, elapsed_ms = elapsed_ms(), "request refused");
            } else {
                tracing::debug!(%method, %path, status = code, elapsed_ms = elapsed_ms(), "request");
            }
        }
        Poll::Ready(answer)
    }
}

/// CORS: answers allowed preflights, and adds the CORS headers to every other response.
/// Outside routing and auth, so that every route answers a preflight and every error carries
/// the headers a browser needs to read it.
#[derive(Clone)]
pub(crate) struct CorsLayer(pub(crate) Arc<Cors>);

impl<S> tower::Layer<S> for CorsLayer {
    type Service = CorsService<S>;

    fn layer(&self, inner: S) -> CorsService<S> {
        CorsService {
            cors: self.0.clone(),
            inner,
        }
    }
}

/// The service of [`CorsLayer`].
#[derive(Clone)]
pub(crate) struct CorsService<S> {
    cors: Arc<Cors>,
    inner: S,
}

impl<S> tower::Service<Request> for CorsService<S>
where
    S: tower::Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Decorated<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if let Some(answer) = self.cors.preflight(request.method(), request.headers()) {
            return Decorated::Preflight {
                answer: Some(answer),
            };
        }
        Decorated::Routed {
            cors: self.cors.clone(),
            origin: request.headers().get(header::ORIGIN).cloned(),
            inner: self.inner.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// A preflight's answer, or a routed request's answer with the CORS headers added.
    #[project = DecoratedProjection]
    pub(crate) enum Decorated<F> {
        Preflight { answer: Option<Response> },
        Routed {
            cors: Arc<Cors>,
            origin: Option<HeaderValue>,
            #[pin]
            inner: F,
        },
    }
}

impl<F, E> Future for Decorated<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            DecoratedProjection::Preflight { answer } => Poll::Ready(Ok(answer
                .take()
                .expect("a preflight's answer is polled once"))),
            DecoratedProjection::Routed {
                cors,
                origin,
                inner,
            } => {
                let mut answer = ready!(inner.poll(cx));
                if let Ok(response) = &mut answer {
                    cors.decorate(origin.as_ref(), response.headers_mut());
                }
                Poll::Ready(answer)
            }
        }
    }
}
