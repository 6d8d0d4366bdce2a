//! Priming the server's prefix cache before a run with a controlled hit rate: the longest shared
//! prefix is sent once, alone, and its record is kept apart from the measured phase's (in no
//! metric; counted in the result's `prefix_cache` block).

use std::sync::Arc;

use servebench_client::request::execute;
use servebench_core::{Outcome, Prompt, RequestRecord, RequestSpec, RunClock};
use servebench_data::prefix_cache::PrefixCacheLayout;

use super::PreparedRun;
use crate::observe::observer::RunObserver;

/// A run's controlled prefix cache: its layout and how priming went.
#[derive(Debug, Clone)]
pub struct PrefixCacheRun {
    pub layout: Arc<PrefixCacheLayout>,
    /// The priming requests' records (warm-up: in no metric of the run).
    pub priming: Vec<RequestRecord>,
}

impl PrefixCacheRun {
    /// Priming requests that completed.
    pub fn primed(&self) -> u64 {
        self.priming.iter().filter(|r| r.outcome == Outcome::Completed).count() as u64
    }
}

/// Sends the priming prompt (nothing when no request shares a prefix) and waits for it.
pub async fn prime(prepared: &PreparedRun, observer: &dyn RunObserver) -> Option<PrefixCacheRun> {
    let layout = prepared.load.prefix_cache.clone()?;
    let mut priming = Vec::new();
    if !layout.warmup.is_empty() {
        observer.message(&format!("Priming the prefix cache with a {}-token shared prefix", layout.warmup.len()));
        let spec = RequestSpec {
            index: 0,
            prompt: Prompt::TokenIds(layout.warmup.clone()),
            prompt_tokens: layout.warmup.len() as u32,
            expected_output_tokens: 1,
            multimodal: None,
            rerank: None,
            messages: None,
            audio: None,
            overrides: None,
        };
        let clock = RunClock::start();
        let rec = RequestRecord::scheduled(0, "servebench-prefix-prime-0".to_owned(), 0, spec.prompt_tokens, 1);
        priming.push(execute(&prepared.client, &prepared.target, &spec, rec, &clock, &prepared.exec_opts).await);
    }
    Some(PrefixCacheRun { layout, priming })
}
