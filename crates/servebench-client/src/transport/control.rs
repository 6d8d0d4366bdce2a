//! Control-plane requests (model list, tokenize, profiling, metrics): whole-body, JSON helpers,
//! errors as `BenchError` with a context and a body snippet — never request headers.

use bytes::{Bytes, BytesMut};
use http::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use http::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use servebench_core::{BenchError, Result};

use super::coding::{BodyDecoder, CodingError};
use super::error::ReadBodyError;
use super::{Conn, HttpClient, Incoming, SendFailKind, SendFailure};
use servebench_core::text::one_line;
use servebench_core::FailureCause;

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

/// Why a whole body could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyReadError {
    #[error("timed out reading the response body")]
    Timeout,
    #[error(transparent)]
    Read(ReadBodyError),
    /// An undecodable or corrupt content coding (SB306).
    #[error(transparent)]
    Coding(#[from] CodingError),
}

/// Reads a body to its end (or `max` bytes), driving `conn`. `Ok((bytes, complete, at))`;
/// `complete` is false when the body was cut at `max`; `at` is when its last bytes were read.
pub(crate) async fn read_body(
    conn: &mut Conn,
    body: &mut Incoming,
    max: usize,
    deadline: Option<&mut std::pin::Pin<Box<tokio::time::Sleep>>>,
    mut coding: Option<&mut BodyDecoder>,
) -> std::result::Result<(Bytes, bool, Option<std::time::Instant>), BodyReadError> {
    let mut deadline = deadline;
    let mut buf = BytesMut::new();
    let mut last = None;
    loop {
        match conn.frame(body, deadline.as_deref_mut()).await {
            Err(ReadBodyError::Deadline) => return Err(BodyReadError::Timeout),
            Ok(None) => {
                if let Some(c) = coding.as_mut() {
                    let rest = c.finish()?;
                    let room = max.saturating_sub(buf.len());
                    buf.extend_from_slice(&rest[..rest.len().min(room)]);
                    return Ok((buf.freeze(), rest.len() <= room, last));
                }
                return Ok((buf.freeze(), true, last));
            }
            Err(e) => return Err(BodyReadError::Read(e)),
            Ok(Some((d, at))) => {
                last = Some(at);
                let d = match coding.as_mut() {
                    None => d,
                    Some(c) => c.push(d)?,
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

impl BodyReadError {
    /// The error of a control call whose body could not be read: SB306 for a content coding,
    /// else a transport error (SB304).
    fn into_error(self, context: String) -> BenchError {
        match self {
            BodyReadError::Coding(e) => e.into_error(context),
            other => BenchError::transport_from(context, other),
        }
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
        let context = format!("{method} {}", self.shown_url(&path));
        let mut h = headers.clone();
        if body.is_some() && !h.contains_key(CONTENT_TYPE) {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let req = self
            .request(method, &path, h, body.unwrap_or_default())
            .map_err(|e| BenchError::transport_from(context.clone(), e))?;
        let mut deadline = Box::pin(tokio::time::sleep(self.inner.opts.control_timeout));
        let followed = self
            .send_following(req, false, Some(&mut deadline), None)
            .await
            .map_err(|f| self.send_error(context.clone(), f))?;
        let owner = followed.other.as_ref().unwrap_or(self);
        let sent = followed.sent;
        let mut conn = sent.conn;
        let (parts, mut incoming) = sent.response.into_parts();
        let mut coding =
            BodyDecoder::for_headers(&parts.headers).map_err(|e| e.into_error(context.clone()))?;
        let (bytes, complete, _) =
            read_body(&mut conn, &mut incoming, MAX_CONTROL_BODY, Some(&mut deadline), coding.as_mut())
                .await
                .map_err(|e| e.into_error(context.clone()))?;
        if complete {
            owner.release(conn);
        }
        // An mTLS gateway's "no client certificate" page, a proxy's 407 (SB310, SB312).
        if let Some(f) = self.gateway_failure(parts.status.as_u16(), &bytes) {
            return Err(f.to_error(&context));
        }
        // Server text: whatever it echoes of the request's credentials is redacted here,
        // before any error, note or parser sees it.
        let bytes = match self.redactor().redact_bytes(&bytes) {
            std::borrow::Cow::Borrowed(_) => bytes,
            std::borrow::Cow::Owned(r) => Bytes::from(r),
        };
        Ok(RawResponse {
            path,
            status: parts.status.as_u16(),
            content_type: parts.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned),
            body: bytes,
        })
    }

    /// The coded error of a failed control call's send, from the failure's typed cause.
    fn send_error(&self, context: String, mut f: SendFailure) -> BenchError {
        // The message may quote the server's first bytes (not HTTP/1.1, a redirect target).
        self.redactor().redact_in_place(&mut f.message);
        // A certificate or proxy failure has its own code (SB310, SB312).
        if matches!(f.kind, SendFailKind::Connect | SendFailKind::Transport) {
            if let Some(typed) = self.connect_failure() {
                return typed.to_error(&context);
            }
        }
        match f.cause {
            // Nothing listens there (refused, DNS): SB315, whichever call comes first.
            Some(FailureCause::Unreachable(reason)) if f.dispatched.is_none() => {
                self.unreachable_error(reason)
            }
            Some(FailureCause::NotHttp1) => BenchError::ServerProtocol { context, detail: f.message },
            Some(FailureCause::Redirect) => BenchError::Redirect { context, detail: f.message },
            _ => BenchError::transport(context, f.message),
        }
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
        let context = format!("POST {}", self.shown_url(&self.control_path_for(endpoint)?));
        let bytes = serde_json::to_vec(body).map_err(|e| BenchError::protocol(context.clone(), e))?;
        let mut h = headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let r = self.request_raw(Method::POST, endpoint, &h, Some(Bytes::from(bytes))).await?;
        self.json_result(Method::POST, r)
    }

    fn json_result<T: DeserializeOwned>(&self, method: Method, r: RawResponse) -> Result<T> {
        let context = format!("{method} {}", self.shown_url(&r.path));
        if !(200..300).contains(&r.status) {
            return Err(BenchError::HttpStatus { context, status: r.status, body: r.snippet() });
        }
        serde_json::from_slice(&r.body).map_err(|e| BenchError::Protocol {
            context,
            detail: format!("response is not the expected JSON ({e}): {}", r.snippet()),
            source: Some(Box::new(e)),
        })
    }
}
