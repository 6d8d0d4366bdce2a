//! servebench-client: the I/O half of servebench.
//!
//! - [`transport`]: HTTP/1.1 client with its own connection pool (no silent POST retries,
//!   stale keep-alive connections replaced before anything is sent) and control-plane helpers;
//! - [`sse`]: incremental Server-Sent Events framing over raw body bytes;
//! - [`backend`]: what `--backend` names (API family and dialect) and the run's
//!   [`TargetConfig`];
//! - `api`: one module per API family — its request body fields and its response parser,
//!   which turns events into dialect-neutral ones;
//! - [`body`] and [`headers`]: request bodies and headers, resolved once per run;
//! - [`chunk`]: typed, borrowed parsing of OpenAI-style stream chunks;
//! - [`stream`]: reading a response into the request's record (the family's parser, then
//!   the neutral events applied the same way for every family);
//! - [`request`]: executing one measured request into a `RequestRecord`.

mod api;
pub mod backend;
pub mod body;
pub mod chunk;
pub mod headers;
pub mod request;
pub mod sse;
pub mod stream;
pub mod transport;

pub use api::ANTHROPIC_VERSION;
pub use backend::{BackendKind, Dialect, TargetConfig};
pub use body::BodyTemplate;
pub use headers::{api_key_from_env, build_headers};
pub use request::{execute, ExecOptions, RequestTarget};
pub use sse::{SseError, SseEvent, SseFramer};
pub use transport::{ClientOptions, HttpClient, PoolStats, RawResponse};
