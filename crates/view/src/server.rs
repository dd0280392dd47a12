//! HTTP/1.1 on 127.0.0.1 (hyper on a tokio runtime of one thread): each request's page is drawn
//! on the runtime's blocking pool, since drawing one reads Parquet. A client that hangs up, or a
//! browser that closes mid-page, ends its connection and nothing else.

use std::convert::Infallible;
use std::net::TcpListener;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response};

use crate::{Reply, ViewError, Viewer};

/// The largest request body read (a label is a few dozen bytes).
const MAX_BODY: usize = 64 << 10;

/// A viewer listening on 127.0.0.1, not yet serving.
pub struct Server {
    listener: TcpListener,
    viewer: Arc<Viewer>,
    url: String,
}

impl Server {
    /// Listens on 127.0.0.1:`port` (0: a free port the system picks).
    pub fn bind(viewer: Viewer, port: u16) -> Result<Server, ViewError> {
        let listener = TcpListener::bind(("127.0.0.1", port)).map_err(|source| ViewError::Listen { port, source })?;
        let address = listener.local_addr().map_err(ViewError::Start)?;
        listener.set_nonblocking(true).map_err(ViewError::Start)?;
        Ok(Server { listener, viewer: Arc::new(viewer), url: format!("http://{address}/") })
    }

    /// The URL it serves, `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves until the process ends (Ctrl-C).
    pub fn serve(self) -> Result<(), ViewError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .max_blocking_threads(4)
            .build()
            .map_err(ViewError::Start)?;
        let origin = self.url.trim_end_matches('/').to_string();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(self.listener).map_err(ViewError::Start)?;
            let origin = Arc::new(origin);
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let viewer = Arc::clone(&self.viewer);
                let origin = Arc::clone(&origin);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let viewer = Arc::clone(&viewer);
                        let origin = Arc::clone(&origin);
                        async move { Ok::<_, Infallible>(handle(viewer, &origin, request).await) }
                    });
                    // A client that hangs up mid-request or mid-answer is its own business.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        })
    }
}

async fn handle(viewer: Arc<Viewer>, origin: &str, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let method = request.method().clone();
    let target = request.uri().path_and_query().map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
    let body = if method == Method::POST {
        // A page of another site must not label through the browser of the person labelling.
        let foreign =
            request.headers().get(hyper::header::ORIGIN).and_then(|o| o.to_str().ok()).is_some_and(|o| o != origin);
        if foreign {
            return respond(Reply::json(403, "{\"error\":\"a request from another origin\"}".into()));
        }
        match Limited::new(request.into_body(), MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => return respond(Reply::json(413, "{\"error\":\"the request is too large\"}".into())),
        }
    } else {
        Bytes::new()
    };
    let reply = tokio::task::spawn_blocking(move || viewer.respond(method.as_str(), &target, &body))
        .await
        .unwrap_or_else(|_| Reply::html(500, "<p>drawing the page failed</p>".into()));
    respond(reply)
}

fn respond(reply: Reply) -> Response<Full<Bytes>> {
    Response::builder()
        .status(reply.status)
        .header(hyper::header::CONTENT_TYPE, reply.content_type)
        .header(hyper::header::CACHE_CONTROL, "no-store")
        .body(Full::new(Bytes::from(reply.body)))
        .expect("a response of a status and two headers builds")
}
