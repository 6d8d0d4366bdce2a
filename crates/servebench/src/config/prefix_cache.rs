//! The prefix-cache flags (`crate::cli::prefix_cache`) validated into `run.load.prefix_cache`:
//! one mode at most, on a workload where the cached share can be exact (SB210 otherwise).

use crate::cli::RunArgs;
use servebench_core::Result;
use servebench_data::prefix_cache::{coded, PrefixCacheConfig, PrefixCacheMode};
use servebench_runner::config::{DatasetSpec, RunConfig};

/// The mode the flags ask for (`None`: no controlled hit rate).
fn mode(args: &RunArgs) -> Result<Option<PrefixCacheMode>> {
    let p = &args.prefix_cache;
    let bimodal = p.random_cache_hit_fraction != 0.0 || p.random_cache_ratio != 0.0;
    let asked = [p.prefix_cache_hit_rate.is_some(), bimodal, p.prefix_cache_bust];
    if asked.iter().filter(|&&a| a).count() > 1 {
        return Err(coded(
            "--prefix-cache-hit-rate",
            "--prefix-cache-hit-rate, --random-cache-hit-fraction/--random-cache-ratio and --prefix-cache-bust are three ways to set the hit rate",
            "pass one of them",
        ));
    }
    if bimodal && (p.random_cache_hit_fraction <= 0.0 || p.random_cache_ratio <= 0.0) {
        return Err(coded(
            "--random-cache-hit-fraction",
            "the bimodal mode needs both --random-cache-hit-fraction and --random-cache-ratio above 0",
            "pass both, e.g. --random-cache-hit-fraction 0.8 --random-cache-ratio 0.9",
        ));
    }
    Ok(match (p.prefix_cache_hit_rate, bimodal, p.prefix_cache_bust) {
        (Some(r), _, _) => Some(PrefixCacheMode::HitRate(r)),
        (None, true, _) => Some(PrefixCacheMode::Bimodal {
            fraction: p.random_cache_hit_fraction,
            ratio: p.random_cache_ratio,
        }),
        (None, false, true) => Some(PrefixCacheMode::Bust),
        (None, false, false) => None,
    })
}

/// Why this run's workload cannot carry an exact hit rate, if it cannot.
fn unsupported(args: &RunArgs, run: &RunConfig) -> Option<(&'static str, String)> {
    let fix_dataset = "use --dataset-name random --prompt-token-ids with a completions backend";
    match &run.dataset {
        DatasetSpec::TimedTrace(_) => {
            return Some(("trace replay shares the trace's own hash-id blocks", fix_dataset.into()))
        }
        DatasetSpec::Dataset(d) => {
            let why = if d.kind.name() == "prefix_repetition" {
                "the prefix_repetition dataset shares prefixes of its own (its --prefix-repetition-* lengths set the hit rate)"
            } else {
                "only the random dataset is built on token ids"
            };
            return Some((why, fix_dataset.into()));
        }
        DatasetSpec::Random(r) if r.prefix_len > 0 => {
            return Some(("--random-prefix-len shares a prefix of its own", "drop --random-prefix-len".into()))
        }
        DatasetSpec::Random(r) if !r.prompt_token_ids => {
            return Some(("the shared prefix is laid over token ids", "add --prompt-token-ids".into()))
        }
        DatasetSpec::Random(_) => {}
    }
    if run.load.multi_turn.is_some() {
        return Some((
            "multi-turn histories are chat messages (no token ids) whose reuse grows with every turn",
            "drop --multi-turn; multi-turn's own prefix reuse is reported as cached_input_tokens".into(),
        ));
    }
    if !run.load.stages.is_empty() || run.load.duration.is_some() {
        return Some((
            "--stages and --duration reuse the prompts, and a prompt sent twice is cached whole",
            "drop --stages/--duration and size the run with --num-prompts".into(),
        ));
    }
    if run.num_warmups > 0 {
        return Some((
            "--num-warmups sends the first request's prompt, which would then be cached whole",
            "drop --num-warmups: the run primes the cache itself".into(),
        ));
    }
    if args.experiment.is_experiment() {
        return Some(("sweeps and searches do not prime the cache per point", "run single points".into()));
    }
    None
}

/// Sets `run.load.prefix_cache` from the flags (after the workload flags).
pub fn apply(args: &RunArgs, run: &mut RunConfig) -> Result<()> {
    let Some(mode) = mode(args)? else { return Ok(()) };
    if let Some((why, fix)) = unsupported(args, run) {
        return Err(coded(flag_of(mode), why, fix));
    }
    // Bust blocks differ from one run to the next, so a server that kept an earlier run's cache
    // cannot match them either.
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    run.load.prefix_cache = Some(PrefixCacheConfig {
        mode,
        block_size: args.prefix_cache.prefix_cache_block_size,
        seed: args.seed,
        nonce,
    });
    Ok(())
}

fn flag_of(mode: PrefixCacheMode) -> &'static str {
    match mode {
        PrefixCacheMode::HitRate(_) => "--prefix-cache-hit-rate",
        PrefixCacheMode::Bimodal { .. } => "--random-cache-hit-fraction",
        PrefixCacheMode::Bust => "--prefix-cache-bust",
    }
}
