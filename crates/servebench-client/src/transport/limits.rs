//! Size limits of the HTTP/1.1 codec: a leaf module, read by the codec (`h1.rs`), the
//! connection (`conn.rs`) and the codec's error messages (`error.rs`).

/// Largest response head accepted.
pub(crate) const MAX_HEAD_BYTES: usize = 64 << 10;
/// Largest chunk-size or trailer line accepted.
pub(crate) const MAX_LINE_BYTES: usize = 8 << 10;
/// Most response headers accepted.
pub(crate) const MAX_HEADERS: usize = 128;
