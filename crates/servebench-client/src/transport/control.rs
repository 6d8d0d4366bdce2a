//! Control-plane requests (model list, tokenize, profiling, metrics): whole-body, JSON helpers,
//! errors as `BenchError` with a context and a body snippet — never request headers.

use bytes::{Bytes, BytesMut};
use http::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use http::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use servebench_core::{BenchError, Result};

use super::{Conn, HttpClient, Incoming, Interrupted, SendFailKind};
use crate::chunk::truncate;

/// Largest control-plane response body read.
const MAX_CONTROL_BODY: usize = 64 << 20;
/// Bytes of a body shown in error messages.
pub(crate) const SNIPPET_BYTES: usize = 512;

/// A whole response to a control-plane request.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Bytes,
}

impl RawResponse {
    /// The body as (lossy) text, at most 512 bytes, for messages.
    pub fn snippet(&self) -> String {
        snippet(&self.body)
    }
}

/// At most [`SNIPPET_BYTES`] of `body` as text.
pub(crate) fn snippet(body: &[u8]) -> String {
    let end = body.len().min(SNIPPET_BYTES + 4);
    truncate(String::from_utf8_lossy(&body[..end]).trim().to_owned(), SNIPPET_BYTES)
}

/// Reads a body to its end (or `max` bytes), driving `conn`. `Ok((bytes, complete, at))`;
/// `complete` is false when the body was cut at `max`; `at` is when its last bytes were read.
pub(crate) async fn read_body(
    conn: &mut Conn,
    body: &mut Incoming,
    max: usize,
    deadline: Option<&mut std::pin::Pin<Box<tokio::time::Sleep>>>,
) -> std::result::Result<(Bytes, bool, Option<std::time::Instant>), String> {
    let mut deadline = deadline;
    let mut buf = BytesMut::new();
    let mut last = None;
    loop {
        match conn.frame(body, deadline.as_deref_mut()).await {
            Err(Interrupted::Deadline) => return Err("timed out reading the response body".into()),
            Ok(Ok(None)) => return Ok((buf.freeze(), true, last)),
            Ok(Err(e)) => return Err(e),
            Ok(Ok(Some((d, at)))) => {
                last = Some(at);
                let room = max.saturating_sub(buf.len());
                buf.extend_from_slice(&d[..d.len().min(room)]);
                if d.len() > room {
                    return Ok((buf.freeze(), false, last));
                }
            }
        }
    }
}

impl HttpClient {
    /// Sends one control-plane request and reads the whole response. Only transport failures
    /// are errors; any status is returned.
    pub async fn request_raw(
        &self,
        method: Method,
        endpoint: &str,
        headers: &HeaderMap,
        body: Option<Bytes>,
    ) -> Result<RawResponse> {
        let path = self.path_for(endpoint)?;
        let context = format!("{method} {}{path}", self.origin());
        let transport = |detail: String| BenchError::Transport { context: context.clone(), detail };
        let mut h = headers.clone();
        if body.is_some() && !h.contains_key(CONTENT_TYPE) {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let req = self.request(method, &path, h, body.unwrap_or_default()).map_err(transport)?;
        let mut deadline = Box::pin(tokio::time::sleep(self.inner.opts.control_timeout));
        let sent = self.send(req, Some(&mut deadline)).await.map_err(|f| match f.kind {
            // A certificate or proxy failure has its own code (SB310, SB312).
            SendFailKind::Connect | SendFailKind::Transport => match self.connect_failure() {
                Some(typed) => typed.to_error(&context),
                None => transport(f.message),
            },
            SendFailKind::Timeout => transport(f.message),
        })?;
        let mut conn = sent.conn;
        let (parts, mut incoming) = sent.response.into_parts();
        let (bytes, complete, _) = read_body(&mut conn, &mut incoming, MAX_CONTROL_BODY, Some(&mut deadline))
            .await
            .map_err(transport)?;
        if complete {
            self.release(conn);
        }
        Ok(RawResponse {
            status: parts.status.as_u16(),
            content_type: parts.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned),
            body: bytes,
        })
    }

    /// `GET endpoint`, expecting a 2xx JSON body.
    pub async fn get_json<T: DeserializeOwned>(&self, endpoint: &str, headers: &HeaderMap) -> Result<T> {
        let mut h = headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let r = self.request_raw(Method::GET, endpoint, &h, None).await?;
        self.json_result(Method::GET, endpoint, r)
    }

    /// `POST endpoint` with a JSON body, expecting a 2xx JSON body.
    pub async fn post_json<T: DeserializeOwned, B: Serialize + ?Sized>(
        &self,
        endpoint: &str,
        body: &B,
        headers: &HeaderMap,
    ) -> Result<T> {
        let context = format!("POST {}{endpoint}", self.origin());
        let bytes = serde_json::to_vec(body)
            .map_err(|e| BenchError::Protocol { context: context.clone(), detail: e.to_string() })?;
        let mut h = headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let r = self.request_raw(Method::POST, endpoint, &h, Some(Bytes::from(bytes))).await?;
        self.json_result(Method::POST, endpoint, r)
    }

    fn json_result<T: DeserializeOwned>(&self, method: Method, endpoint: &str, r: RawResponse) -> Result<T> {
        let context = format!("{method} {}{endpoint}", self.origin());
        if !(200..300).contains(&r.status) {
            return Err(BenchError::HttpStatus { context, status: r.status, body: r.snippet() });
        }
        serde_json::from_slice(&r.body).map_err(|e| BenchError::Protocol {
            context,
            detail: format!("response is not the expected JSON ({e}): {}", r.snippet()),
        })
    }
}
