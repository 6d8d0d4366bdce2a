//! Work that must not run on the runtime's threads — loading a tokenizer, building a workload —
//! moved to tokio's blocking pool in one place, with a panic there turned into an error (SB209:
//! a bug, not a problem of the input).

use servebench_core::{BenchError, Result};

use crate::observe::health::building_workload;

/// Builds (part of) a workload on the blocking pool, between the allocator hooks of
/// [`building_workload`]. A panic in `build` becomes [`BenchError::PrepareTaskFailed`] (SB209)
/// naming `what`, the `JoinError` kept as its source.
pub async fn build_off_runtime<T, F>(what: &str, build: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    match tokio::task::spawn_blocking(move || building_workload(build)).await {
        Ok(built) => built,
        Err(e) => Err(BenchError::PrepareTaskFailed {
            what: what.to_owned(),
            detail: e.to_string(),
            source: Some(Box::new(e)),
        }),
    }
}

/// Runs `work` on the blocking pool; a panic in it becomes the error `on_panic` makes of it.
pub async fn off_runtime<T, F>(
    work: F,
    on_panic: impl FnOnce(tokio::task::JoinError) -> BenchError,
) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done,
        Err(e) => Err(on_panic(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_in_the_build_is_an_error_naming_it() {
        let err = build_off_runtime::<u32, _>("trace loading", || panic!("bad row")).await.unwrap_err();
        assert!(err.to_string().starts_with("trace loading failed: "), "{err}");
        assert_eq!(err.code(), servebench_core::ErrorCode::PrepareTaskFailed, "a bug, not SB203: {err}");
        let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<tokio::task::JoinError>());
        assert!(source.is_some_and(tokio::task::JoinError::is_panic), "{err:?}");
        assert_eq!(build_off_runtime("x", || Ok(7)).await.unwrap(), 7);
        let err =
            off_runtime::<u32, _>(|| panic!("boom"), |e| BenchError::tokenizer_load("t", e.to_string()))
                .await
                .unwrap_err();
        assert!(matches!(err, BenchError::TokenizerLoad { .. }), "{err}");
    }
}
