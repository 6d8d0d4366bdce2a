//! Control-plane requests (model list, tokenize, profiling, metrics): whole-body, JSON helpers,
//! errors as `BenchError` with a context and a body snippet — never request headers.

use bytes::{Bytes, BytesMut};
use http::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use http::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use servebench_core::{BenchError, Result};

use super::coding::{BodyDecoder, CODING_TAG};
use super::h1::NOT_HTTP1_TAG;
use super::{Conn, HttpClient, Incoming, Interrupted, SendFailKind, REDIRECT_TAG};
use servebench_core::text::one_line;

/// Largest control-plane response body read.
const MAX_CONTROL_BODY: usize = 64 << 20;
/// Bytes of a body shown in error messages.
pub(crate) const SNIPPET_BYTES: usize = 512;

/// A whole response to a control-plane request.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The request path actually sent (base prefix included), for messages.
    pub path: String,
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

/// A body for a message: one line of at most [`SNIPPET_BYTES`] (the shared
/// `servebench_core::text::one_line`). A JSON error body (`{"error": {"message": ...}}`,
/// `{"message": ...}`, `{"detail": ...}`) shows its decoded message, so a multi-line pydantic
/// dump inside it becomes one line too.
pub fn snippet(body: &[u8]) -> String {
    const PARSE_LIMIT: usize = 64 << 10;
    if body.len() <= PARSE_LIMIT {
        if let Ok(text) = std::str::from_utf8(body) {
            if let Some(msg) = json_error_message(text) {
                return one_line(&msg, SNIPPET_BYTES);
            }
        }
    }
    servebench_core::text::one_line_bytes(body, SNIPPET_BYTES)
}

/// The message of a JSON error body, if the body is one.
fn json_error_message(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let o = v.as_object()?;
    let field = o.get("error").or_else(|| o.get("message")).or_else(|| o.get("detail"))?;
    Some(match field {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(inner) => match inner.get("message") {
            Some(serde_json::Value::String(s)) => s.clone(),
            _ => field.to_string(),
        },
        other => other.to_string(),
    })
}

/// Reads a body to its end (or `max` bytes), driving `conn`. `Ok((bytes, complete, at))`;
/// `complete` is false when the body was cut at `max`; `at` is when its last bytes were read.
pub(crate) async fn read_body(
    conn: &mut Conn,
    body: &mut Incoming,
    max: usize,
    deadline: Option<&mut std::pin::Pin<Box<tokio::time::Sleep>>>,
    mut coding: Option<&mut BodyDecoder>,
) -> std::result::Result<(Bytes, bool, Option<std::time::Instant>), String> {
    let mut deadline = deadline;
    let mut buf = BytesMut::new();
    let mut last = None;
    loop {
        match conn.frame(body, deadline.as_deref_mut()).await {
            Err(Interrupted::Deadline) => return Err("timed out reading the response body".into()),
            Ok(Ok(None)) => {
                if let Some(c) = coding.as_mut() {
                    let rest = c.finish().map_err(|e| e.0)?;
                    let room = max.saturating_sub(buf.len());
                    buf.extend_from_slice(&rest[..rest.len().min(room)]);
                    return Ok((buf.freeze(), rest.len() <= room, last));
                }
                return Ok((buf.freeze(), true, last));
            }
            Ok(Err(e)) => return Err(e),
            Ok(Ok(Some((d, at)))) => {
                last = Some(at);
                let d = match coding.as_mut() {
                    None => d,
                    Some(c) => c.push(d).map_err(|e| e.0)?,
                };
                let room = max.saturating_sub(buf.len());
                buf.extend_from_slice(&d[..d.len().min(room)]);
                if d.len() > room {
                    return Ok((buf.freeze(), false, last));
                }
            }
        }
    }
}

/// The error of a failed control call: a coded one when the message carries a code's tag
/// (content coding SB306, redirects SB307, not HTTP/1.1 SB308), else a transport error.
pub(crate) fn coded_error(context: String, detail: String) -> BenchError {
    let strip = |tag: &str| detail.strip_prefix(tag).map(|d| d.trim_start().to_owned());
    if let Some(detail) = strip(CODING_TAG) {
        BenchError::ContentCoding { context, detail }
    } else if let Some(detail) = strip(NOT_HTTP1_TAG) {
        BenchError::ServerProtocol { context, detail }
    } else if let Some(detail) = strip(REDIRECT_TAG) {
        BenchError::Redirect { context, detail }
    } else {
        BenchError::Transport { context, detail }
    }
}

impl HttpClient {
    /// Sends one control-plane request and reads the whole response. Only transport failures
    /// are errors; any status is returned. `endpoint` is joined to the base URL by
    /// [`HttpClient::control_path_for`] (server-root endpoints go to the server root).
    pub async fn request_raw(
        &self,
        method: Method,
        endpoint: &str,
        headers: &HeaderMap,
        body: Option<Bytes>,
    ) -> Result<RawResponse> {
        let path = self.control_path_for(endpoint)?;
        let context = format!("{method} {}", self.url_for_path(&path));
        let transport = |detail: String| coded_error(context.clone(), detail);
        let mut h = headers.clone();
        if body.is_some() && !h.contains_key(CONTENT_TYPE) {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let req = self.request(method, &path, h, body.unwrap_or_default()).map_err(transport)?;
        let mut deadline = Box::pin(tokio::time::sleep(self.inner.opts.control_timeout));
        let followed =
            self.send_following(req, false, Some(&mut deadline)).await.map_err(|f| match f.kind {
                // A certificate or proxy failure has its own code (SB310, SB312).
                SendFailKind::Connect | SendFailKind::Transport if self.connect_failure().is_some() => {
                    match self.connect_failure() {
                        Some(typed) => typed.to_error(&context),
                        None => transport(f.message),
                    }
                }
                // Nothing listens there (refused, DNS): SB315, whichever call comes first.
                SendFailKind::Connect if f.dispatched.is_none() => {
                    self.unreachable_error(&f.message).unwrap_or_else(|| transport(f.message))
                }
                SendFailKind::Connect | SendFailKind::Transport | SendFailKind::Timeout => {
                    transport(f.message)
                }
            })?;
        let owner = followed.other.as_ref().unwrap_or(self);
        let sent = followed.sent;
        let mut conn = sent.conn;
        let (parts, mut incoming) = sent.response.into_parts();
        let mut coding = BodyDecoder::for_headers(&parts.headers).map_err(|e| transport(e.0))?;
        let (bytes, complete, _) =
            read_body(&mut conn, &mut incoming, MAX_CONTROL_BODY, Some(&mut deadline), coding.as_mut())
                .await
                .map_err(transport)?;
        if complete {
            owner.release(conn);
        }
        Ok(RawResponse {
            path,
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
        self.json_result(Method::GET, r)
    }

    /// `POST endpoint` with a JSON body, expecting a 2xx JSON body.
    pub async fn post_json<T: DeserializeOwned, B: Serialize + ?Sized>(
        &self,
        endpoint: &str,
        body: &B,
        headers: &HeaderMap,
    ) -> Result<T> {
        let context = format!("POST {}", self.url_for_path(&self.control_path_for(endpoint)?));
        let bytes = serde_json::to_vec(body)
            .map_err(|e| BenchError::Protocol { context: context.clone(), detail: e.to_string() })?;
        let mut h = headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let r = self.request_raw(Method::POST, endpoint, &h, Some(Bytes::from(bytes))).await?;
        self.json_result(Method::POST, r)
    }

    fn json_result<T: DeserializeOwned>(&self, method: Method, r: RawResponse) -> Result<T> {
        let context = format!("{method} {}", self.url_for_path(&r.path));
        if !(200..300).contains(&r.status) {
            return Err(BenchError::HttpStatus { context, status: r.status, body: r.snippet() });
        }
        serde_json::from_slice(&r.body).map_err(|e| BenchError::Protocol {
            context,
            detail: format!("response is not the expected JSON ({e}): {}", r.snippet()),
        })
    }
}
