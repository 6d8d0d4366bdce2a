//! servebench-client: the I/O half of servebench.
//!
//! - [`transport`]: HTTP/1.1 client with its own connection pool (no silent POST retries,
//!   stale keep-alive connections replaced before anything is sent) and control-plane helpers;
//! - [`sse`]: incremental Server-Sent Events framing over raw body bytes;
//! - [`chunk`]: typed, borrowed parsing of OpenAI-style stream chunks;
//! - [`backend`]: API dialects (completions, chat): endpoints, bodies, headers;
//! - [`request`]: executing one measured request into a `RequestRecord`.

pub mod backend;
pub mod body_audio;
mod body_embed;
pub mod body_ext;
pub mod chunk;
mod chunk_scan;
pub mod dialect;
mod pooling_response;
pub mod request;
pub mod sse;
mod stream;
pub mod transport;

pub use backend::{BackendKind, BodyTemplate, TargetConfig};
pub use request::{execute, ExecOptions, RequestTarget};
pub use sse::{SseError, SseEvent, SseFramer};
pub use transport::{ClientOptions, HttpClient, PoolStats, RawResponse};
