//! Shared setup of the runner tests: a run configuration against a local server, a tokenizer
//! and a small workload.

#![allow(dead_code)]

use servebench_client::backend::{BackendKind, TargetConfig};
use servebench_core::schedule::RateConfig;
use servebench_core::tokenizer::TextTokenizer;
use servebench_core::{Prompt, RequestRecord, RequestSpec, Workload};
use servebench_data::random::RandomDatasetConfig;
use servebench_runner::CancellationToken;
use servebench_runner::{run_benchmark, DatasetSpec, RunConfig, RunObserver, RunResult};
use std::sync::Arc;
use std::time::Duration;

pub const TOKENIZER: &str = "cl100k_base";

/// The cl100k_base tokenizer (built in, no file needed).
pub fn cl100k() -> Arc<dyn TextTokenizer> {
    servebench_data::tokenizer::load_tokenizer(TOKENIZER).unwrap()
}

/// Three text prompts of different lengths, counted with `tok`.
pub fn three_prompts(tok: &dyn TextTokenizer) -> Workload {
    let texts = ["hello world, this is a prompt", "another prompt with more words in it", "short"];
    Workload {
        resampled: 0,
        requests: texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                RequestSpec::new(i as u64, Prompt::Text(Arc::from(*t)), tok.count(t).unwrap() as u32, 4)
            })
            .collect(),
    }
}

/// Ignores every message.
pub struct Quiet;

impl RunObserver for Quiet {
    fn message(&self, _text: &str) {}
}

/// A run of `num_prompts` random prompts against `base_url`, no verification or readiness check.
pub fn config(base_url: String, model: &str, backend: BackendKind, num_prompts: usize) -> RunConfig {
    RunConfig {
        base_url,
        target: TargetConfig { backend, ignore_eos: true, ..TargetConfig::default() },
        insecure: false,
        tls: Default::default(),
        proxy: Default::default(),
        kernel_timestamps: true,
        time_slice: Default::default(),
        model: Some(model.into()),
        served_model_name: None,
        tokenizer: Some(TOKENIZER.into()),
        dataset: DatasetSpec::Random(RandomDatasetConfig {
            num_prompts,
            input_len: 24,
            output_len: 6,
            ..RandomDatasetConfig::default()
        }),
        max_model_len: None,
        rate: RateConfig::default(),
        max_concurrency: None,
        seed: 1,
        num_warmups: 0,
        ready_check_timeout: Duration::ZERO,
        request_id_prefix: "t-".into(),
        dry_run: false,
        verify_prompts: 0,
        preconnect: 0,
        request_timeout: Some(Duration::from_secs(60)),
        stall_timeout: None,
        runaway_factor: servebench_client::request::DEFAULT_RUNAWAY_FACTOR,
        max_response_bytes: servebench_client::request::DEFAULT_MAX_BODY_BYTES,
        keep_text: false,
        retokenize_output: false,
        records_path: None,
        show_progress: false,
        on_interrupt: Default::default(),
        retries: 0,
        load: Default::default(),
        metrics_listen: None,
        max_records_in_memory: servebench_runner::DEFAULT_MAX_RECORDS_IN_MEMORY,
        shard: None,
        start_at_unix_us: None,
    }
}

/// Runs `cfg` to completion; returns the records (workload order).
pub async fn run(cfg: RunConfig) -> Vec<RequestRecord> {
    run_observed(cfg, Arc::new(Quiet)).await
}

/// Keeps every message a run prints.
#[derive(Default)]
pub struct Messages(pub std::sync::Mutex<Vec<String>>);

impl RunObserver for Messages {
    fn message(&self, text: &str) {
        self.0.lock().unwrap().push(text.to_owned());
    }
}

/// Runs `cfg` to completion with `observer`; returns the records (workload order).
pub async fn run_observed(cfg: RunConfig, observer: Arc<dyn RunObserver>) -> Vec<RequestRecord> {
    let stop = CancellationToken::new();
    let _h = stop.clone();
    match run_benchmark(cfg, observer, stop).await.expect("run") {
        RunResult::Completed(out) => out.records.to_vec(),
        RunResult::DryRun { .. } => panic!("not a dry run"),
    }
}

/// `verify_prompt_lengths` over a held workload (no verification cache), the rewritten prompts
/// put back into `w`.
pub async fn verify_held(
    server: &servebench_runner::prepare::ServerTokenize,
    w: &mut Workload,
    sample: usize,
) -> servebench_core::Result<servebench_runner::prepare::Verification> {
    let mut r = servebench_core::Requests::from(std::mem::take(w));
    let v = servebench_runner::prepare::verify_prompt_lengths(server, &mut r, sample, None).await;
    *w = r.into_workload();
    v
}
