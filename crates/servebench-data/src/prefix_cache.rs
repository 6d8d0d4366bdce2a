//! A controlled prefix-cache hit rate (`--prefix-cache-hit-rate`, vllm-rs's bimodal
//! `--random-cache-hit-fraction`/`--random-cache-ratio`, `--prefix-cache-bust`), laid over a
//! workload of token-id prompts (docs/workloads.md, "Controlled prefix-cache hit rate").
//!
//! Every request `i` of `L_i` prompt tokens gets a shared prefix of `P_i` tokens: the first
//! `P_i` ids of one shared sequence, where `P_i` is a whole number of KV blocks of `B` tokens
//! and leaves at least one block boundary before the prompt's end (a server always computes at
//! least one prompt token, so a prompt can never be cached whole):
//!
//! - hit rate `R`: `P_i = min(floor(R·L_i / B)·B, floor((L_i − 1) / B)·B)`;
//! - bimodal `(f, r)`: request `i` is warm when `floor((i+1)·f) > floor(i·f)` (exactly
//!   `floor(N·f)` warm requests, spread evenly), and a warm one has the rule above with `r`;
//!   a cold one has `P_i = 0`;
//! - shared prefix (`prefix_repetition` on token ids) of `Q` tokens: `P_i = min(floor(Q / B)·B,
//!   floor((L_i − 1) / B)·B)`;
//! - bust: `P_i = 0`, and the first block of every prompt is replaced by ids unique to the
//!   request and the run (`nonce`), so nothing a server cached before can match.
//!
//! With `K` groups (`prefix_repetition`'s `--prefix-repetition-num-prefixes`; 1 otherwise) there
//! are `K` shared sequences and request `i` uses sequence `i mod K`. The rest of each prompt stays
//! the dataset's random ids, unique to the request, and its first block after the shared prefix is
//! drawn from a per-run `nonce` (`run_block`), so a server that kept an earlier run's cache
//! matches nothing beyond the shared prefix. Once the shared sequences are cached (the
//! warm-up prompts [`PrefixCacheLayout::warmup`], one per group, are the longest prefixes
//! needed), a server with `B`-token blocks finds exactly `P_i` cached tokens.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use servebench_core::{BenchError, Prompt, Result, Workload};

/// What the prompts' shared prefixes aim at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PrefixCacheMode {
    /// `--prefix-cache-hit-rate R`: every prompt cached to the share `R` (block-rounded).
    HitRate(f64),
    /// vllm-rs's `--random-cache-hit-fraction F --random-cache-ratio R`: a share `F` of the
    /// prompts is warm with a cached share `R`, the others are cold.
    Bimodal {
        /// Share of warm prompts.
        fraction: f64,
        /// Cached share of a warm prompt.
        ratio: f64,
    },
    /// `--prefix-cache-bust`: no prompt can hit the cache.
    Bust,
    /// `--dataset-name prefix_repetition --prompt-token-ids`: every prompt starts with its
    /// group's shared prefix of `prefix_len` tokens; `target` is `prefix_len / prompt length`.
    SharedPrefix {
        /// `--prefix-repetition-prefix-len`.
        prefix_len: u32,
        /// The nominal hit rate, prefix / (prefix + suffix).
        target: f64,
    },
}

impl PrefixCacheMode {
    /// The name written in the result (`hit_rate`, `bimodal`, `bust`).
    pub fn name(&self) -> &'static str {
        match self {
            PrefixCacheMode::HitRate(_) => "hit_rate",
            PrefixCacheMode::Bimodal { .. } => "bimodal",
            PrefixCacheMode::Bust => "bust",
            PrefixCacheMode::SharedPrefix { .. } => "shared_prefix",
        }
    }

    /// The nominal target hit rate: `R`, `F·R`, or 0.
    pub fn target(&self) -> f64 {
        match *self {
            PrefixCacheMode::HitRate(r) => r,
            PrefixCacheMode::Bimodal { fraction, ratio } => fraction * ratio,
            PrefixCacheMode::Bust => 0.0,
            PrefixCacheMode::SharedPrefix { target, .. } => target,
        }
    }
}

/// The validated options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrefixCacheConfig {
    pub mode: PrefixCacheMode,
    /// Tokens per KV block of the server (`--prefix-cache-block-size`, 16 as vLLM).
    pub block_size: u32,
    /// Seeds the shared sequence (`--seed`).
    pub seed: u64,
    /// Makes the block after each shared prefix (bust: each first block) unique to the run.
    pub nonce: u64,
    /// Distinct shared prefixes (at least 1): request `i` uses group `i mod groups`.
    pub groups: u32,
}

/// What multi-turn reuse makes of a target (`crate::prefix_cache_turns`): the range a target can have, and the target on
/// these conversations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnReuse {
    /// `Σ H / Σ L`: the history alone (no shared first-turn prefix), the lowest reachable rate.
    pub history_hit_rate: f64,
    /// `(Σ H + Σ cap_s) / Σ L`: every first turn shared up to its cap, the highest.
    pub max_hit_rate: f64,
    /// What the mode asks for on these conversations (`R`; bimodal: the rule before block
    /// rounding; bust: 0).
    pub target: f64,
}

/// The shared prefix laid over a workload.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixCacheLayout {
    pub config: PrefixCacheConfig,
    /// The prompts that prime the cache, one per group that some request shares (the group's
    /// longest shared prefix used); empty when no request shares one.
    pub warmup: Vec<Arc<[u32]>>,
    /// `P_i`: the shared-prefix tokens of request `i` (by workload position); on multi-turn
    /// conversations, the tokens it finds cached, history included.
    pub cached_prefix: Vec<u32>,
    /// Multi-turn conversations on token ids (`crate::prefix_cache_turns`): the reachable range
    /// and the target on them. `None` for single prompts.
    pub turns: Option<TurnReuse>,
}

impl PrefixCacheLayout {
    /// The target hit rate reported: the mode's, or on multi-turn conversations the one the
    /// mode asks for on them (history reuse included).
    pub fn target(&self) -> f64 {
        self.turns.map_or_else(|| self.config.mode.target(), |t| t.target)
    }

    /// `Σ P_i / Σ L_i` over the whole workload: the hit rate built in (`None` without tokens).
    pub fn constructed_hit_rate(&self, workload: &Workload) -> Option<f64> {
        let prompt: u64 = workload.requests.iter().map(|r| u64::from(r.prompt_tokens)).sum();
        let cached: u64 = self.cached_prefix.iter().map(|&p| u64::from(p)).sum();
        (prompt > 0).then(|| cached as f64 / prompt as f64)
    }
}

/// `P` for a prompt of `len` tokens aiming at `share`: whole blocks, below the last token.
pub fn prefix_tokens(len: u32, share: f64, block: u32) -> u32 {
    if len == 0 || block == 0 {
        return 0;
    }
    let wanted = ((share * f64::from(len)) / f64::from(block)).floor() as u32 * block;
    let most = (len - 1) / block * block;
    wanted.min(most)
}

/// Whether request `i` is warm in a bimodal workload with warm share `f`.
pub fn is_warm(i: u64, fraction: f64) -> bool {
    ((i + 1) as f64 * fraction).floor() > (i as f64 * fraction).floor()
}

pub(crate) fn check(cfg: &PrefixCacheConfig) -> Result<()> {
    let share = |flag: &str, v: f64| -> Result<()> {
        if v.is_finite() && (0.0..=1.0).contains(&v) {
            Ok(())
        } else {
            Err(coded(flag, format!("must be in [0, 1] (got {v})"), "pass a share such as 0.7"))
        }
    };
    match cfg.mode {
        PrefixCacheMode::HitRate(r) => share("--prefix-cache-hit-rate", r)?,
        PrefixCacheMode::Bimodal { fraction, ratio } => {
            share("--random-cache-hit-fraction", fraction)?;
            share("--random-cache-ratio", ratio)?;
        }
        PrefixCacheMode::Bust | PrefixCacheMode::SharedPrefix { .. } => {}
    }
    if cfg.block_size == 0 {
        return Err(coded("--prefix-cache-block-size", "must be at least 1", "pass 16 (vLLM's)"));
    }
    if cfg.groups == 0 {
        return Err(coded("--prefix-repetition-num-prefixes", "must be at least 1", "pass 1 or more"));
    }
    Ok(())
}

/// SB210 for `flag`.
pub fn coded(flag: &str, problem: impl Into<String>, fix: impl Into<String>) -> BenchError {
    BenchError::PrefixCacheWorkload { flag: flag.into(), problem: problem.into(), fix: fix.into() }
}

/// Every prompt's token ids, in order; `None` when a prompt is not token ids (a controlled hit
/// rate is built on exact token layouts).
pub(crate) fn token_id_prompts(workload: &Workload) -> Option<Vec<Vec<u32>>> {
    workload
        .requests
        .iter()
        .map(|r| match &r.prompt {
            Prompt::TokenIds(t) => Some(t.to_vec()),
            _ => None,
        })
        .collect()
}

/// Lays the shared prefixes over `workload`, whose prompts must all be token ids
/// (`--prompt-token-ids`).
pub fn apply(cfg: PrefixCacheConfig, workload: &mut Workload) -> Result<PrefixCacheLayout> {
    check(&cfg)?;
    let mut ids = token_id_prompts(workload).ok_or_else(|| {
        coded(
            "--prefix-cache-hit-rate",
            "a controlled prefix-cache hit rate is built on token-id prompts",
            "add --prompt-token-ids (completions backends)",
        )
    })?;
    let vocab = vocabulary(ids.iter().map(|v| &v[..]));
    let cached_prefix: Vec<u32> = ids
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let len = p.len() as u32;
            match cfg.mode {
                PrefixCacheMode::HitRate(r) => prefix_tokens(len, r, cfg.block_size),
                PrefixCacheMode::Bimodal { fraction, ratio } if is_warm(i as u64, fraction) => {
                    prefix_tokens(len, ratio, cfg.block_size)
                }
                PrefixCacheMode::SharedPrefix { prefix_len, .. } => {
                    shared_prefix_tokens(len, prefix_len, cfg.block_size)
                }
                _ => 0,
            }
        })
        .collect();
    let groups = cfg.groups.max(1) as usize;
    let mut longest = vec![0usize; groups];
    for (i, &p) in cached_prefix.iter().enumerate() {
        longest[i % groups] = longest[i % groups].max(p as usize);
    }
    // Group g's sequence is ChaCha8 stream u64::MAX − g (the bust blocks use streams 0..N).
    let shared: Vec<Vec<u32>> =
        longest.iter().enumerate().map(|(g, &n)| draw(&vocab, n, cfg.seed, u64::MAX - g as u64)).collect();
    for (i, (req, p)) in workload.requests.iter_mut().zip(ids.iter_mut()).enumerate() {
        let n = cached_prefix[i] as usize;
        p[..n].copy_from_slice(&shared[i % groups][..n]);
        run_block(p, n, &vocab, &cfg, i as u64);
        req.prompt = Prompt::TokenIds(std::mem::take(p).into());
    }
    let warmup = shared.into_iter().filter(|s| !s.is_empty()).map(Arc::from).collect();
    Ok(PrefixCacheLayout { config: cfg, warmup, cached_prefix, turns: None })
}

/// Replaces the block right after a prompt's shared prefix of `shared` tokens (the first block,
/// when there is none; cut at the prompt's end) by ids unique to request `stream` and to the run
/// (`nonce`). A server's prefix cache matches blocks in order, so a prompt finds exactly its
/// shared prefix cached even on a server that kept an earlier run's cache: without it, a rerun
/// with the same `--seed` would find whole prompts of the first run cached.
pub(crate) fn run_block(
    prompt: &mut [u32],
    shared: usize,
    vocab: &[u32],
    cfg: &PrefixCacheConfig,
    stream: u64,
) {
    let end = (shared + cfg.block_size.max(1) as usize).min(prompt.len());
    if shared < end {
        prompt[shared..end].copy_from_slice(&draw(vocab, end - shared, cfg.nonce ^ cfg.seed, stream));
    }
}

/// `P` for a prompt of `len` tokens whose first `prefix` tokens are shared: whole blocks, below
/// the last token.
pub fn shared_prefix_tokens(len: u32, prefix: u32, block: u32) -> u32 {
    if len == 0 || block == 0 {
        return 0;
    }
    (prefix.min(len - 1) / block) * block
}

/// The distinct ids the workload uses (all allowed by the tokenizer), sorted.
pub(crate) fn vocabulary<'a>(ids: impl Iterator<Item = &'a [u32]>) -> Vec<u32> {
    let mut v: Vec<u32> = ids.flatten().copied().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// `n` ids drawn from `vocab` on the ChaCha8 stream `(seed, stream)`.
pub(crate) fn draw(vocab: &[u32], n: usize, seed: u64, stream: u64) -> Vec<u32> {
    if vocab.is_empty() {
        return vec![0; n];
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    (0..n).map(|_| vocab[rng.random_range(0..vocab.len())]).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use servebench_core::RequestSpec;

    fn workload(lens: &[u32]) -> Workload {
        let requests = lens
            .iter()
            .enumerate()
            .map(|(i, &l)| {
                let ids: Vec<u32> = (0..l).map(|k| 1000 + (i as u32) * 10_000 + k).collect();
                RequestSpec::new(i as u64, Prompt::TokenIds(ids.into()), l, 1)
            })
            .collect();
        Workload::new(requests)
    }

    /// A configuration of `mode` with 16-token blocks, seed 7, nonce 99, one group (also the
    /// multi-turn tests').
    pub(crate) fn cfg(mode: PrefixCacheMode) -> PrefixCacheConfig {
        PrefixCacheConfig { mode, block_size: 16, seed: 7, nonce: 99, groups: 1 }
    }

    /// Request `i`'s token ids (every test workload is token ids).
    pub(crate) fn ids(w: &Workload, i: usize) -> Vec<u32> {
        match &w.requests[i].prompt {
            Prompt::TokenIds(t) => t.to_vec(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn prefix_is_whole_blocks_below_the_last_token() {
        // 0.7 × 1000 = 700 → 43 blocks = 688.
        assert_eq!(prefix_tokens(1000, 0.7, 16), 688);
        // R = 1 on 1024 tokens: at most floor(1023/16)·16 = 1008.
        assert_eq!(prefix_tokens(1024, 1.0, 16), 1008);
        assert_eq!(prefix_tokens(15, 0.9, 16), 0);
        assert_eq!(prefix_tokens(0, 0.5, 16), 0);
    }

    #[test]
    fn hit_rate_layout_shares_exact_prefixes() {
        let mut w = workload(&[1000, 1000, 640]);
        let l = apply(cfg(PrefixCacheMode::HitRate(0.7)), &mut w).unwrap();
        // 640 × 0.7 = 448 = 28 blocks exactly.
        assert_eq!(l.cached_prefix, vec![688, 688, 448]);
        assert_eq!(&ids(&w, 0)[..688], &ids(&w, 1)[..688]);
        assert_eq!(&ids(&w, 2)[..448], &l.warmup[0][..448]);
        assert_eq!((l.warmup.len(), l.warmup[0].len()), (1, 688));
        // One block unique to the run, then the dataset's own ids.
        assert_ne!(&ids(&w, 1)[688..704], &(11_688..11_704).collect::<Vec<_>>()[..]);
        assert_eq!(&ids(&w, 1)[704..], &(11_704..12_000).collect::<Vec<_>>()[..]);
        assert_eq!(ids(&w, 0).len(), 1000);
        let want = (688.0 + 688.0 + 448.0) / 2640.0;
        assert!((l.constructed_hit_rate(&w).unwrap() - want).abs() < 1e-12);
    }

    #[test]
    fn bimodal_warm_requests_are_exactly_floor_n_f() {
        let warm = (0..10).filter(|&i| is_warm(i, 0.8)).count();
        assert_eq!(warm, 8);
        let mut w = workload(&[160; 10]);
        let l = apply(cfg(PrefixCacheMode::Bimodal { fraction: 0.8, ratio: 0.5 }), &mut w).unwrap();
        assert_eq!(l.cached_prefix.iter().filter(|&&p| p == 80).count(), 8);
        assert_eq!(l.cached_prefix.iter().filter(|&&p| p == 0).count(), 2);
        assert!((l.constructed_hit_rate(&w).unwrap() - 0.4).abs() < 1e-12);
    }

    #[test]
    fn shared_prefix_groups_share_within_and_differ_between() {
        // prefix_repetition on token ids: 3 groups, a 100-token prefix of 164-token prompts.
        let mut w = workload(&[164; 6]);
        let mode = PrefixCacheMode::SharedPrefix { prefix_len: 100, target: 100.0 / 164.0 };
        let l = apply(PrefixCacheConfig { groups: 3, ..cfg(mode) }, &mut w).unwrap();
        // floor(100 / 16) · 16 = 96 per prompt.
        assert_eq!(l.cached_prefix, vec![96; 6]);
        assert_eq!(l.warmup.len(), 3);
        for i in 0..3 {
            assert_eq!(&ids(&w, i)[..96], &ids(&w, i + 3)[..96], "request {i} and {} share group {i}", i + 3);
            assert_eq!(&ids(&w, i)[..96], &l.warmup[i][..]);
        }
        assert_ne!(&ids(&w, 0)[..16], &ids(&w, 1)[..16], "groups differ from the first block");
        assert!((l.constructed_hit_rate(&w).unwrap() - 96.0 / 164.0).abs() < 1e-12);
        assert_eq!(shared_prefix_tokens(64, 100, 16), 48, "never the whole prompt");
        assert_eq!(shared_prefix_tokens(164, 100, 1), 100);
        assert!(apply(PrefixCacheConfig { groups: 0, ..cfg(mode) }, &mut workload(&[32])).is_err());
    }

    #[test]
    fn bust_makes_every_first_block_unique() {
        let mut w = workload(&[64, 64, 64]);
        let l = apply(cfg(PrefixCacheMode::Bust), &mut w).unwrap();
        assert!(l.warmup.is_empty());
        assert_eq!(l.constructed_hit_rate(&w), Some(0.0));
        assert_ne!(&ids(&w, 0)[..16], &ids(&w, 1)[..16]);
        let mut again = workload(&[64, 64, 64]);
        let other = PrefixCacheConfig { nonce: 100, ..cfg(PrefixCacheMode::Bust) };
        apply(other, &mut again).unwrap();
        assert_ne!(&ids(&w, 0)[..16], &ids(&again, 0)[..16], "another run, another first block");
    }

    /// The same seed in another run (another nonce): the shared prefix is the same, the block
    /// after it differs, the rest is the same dataset. A server that kept the first run's cache
    /// (block hashes chain, so a block matches only after every block before it) finds exactly
    /// the shared prefix, in every mode.
    #[test]
    fn a_rerun_with_the_same_seed_matches_only_the_shared_prefix() {
        let modes = [
            PrefixCacheMode::HitRate(0.7),
            PrefixCacheMode::Bimodal { fraction: 0.5, ratio: 0.5 },
            PrefixCacheMode::SharedPrefix { prefix_len: 100, target: 100.0 / 164.0 },
            PrefixCacheMode::Bust,
        ];
        for mode in modes {
            let lens = [164, 164, 100, 40, 17];
            let (mut first, mut again) = (workload(&lens), workload(&lens));
            let l = apply(cfg(mode), &mut first).unwrap();
            apply(PrefixCacheConfig { nonce: 100, ..cfg(mode) }, &mut again).unwrap();
            for i in 0..lens.len() {
                let (a, b) = (ids(&first, i), ids(&again, i));
                let p = l.cached_prefix[i] as usize;
                let end = (p + 16).min(a.len());
                let equal_blocks = a.chunks(16).zip(b.chunks(16)).take_while(|(x, y)| x == y).count();
                assert_eq!(equal_blocks * 16, p, "{mode:?} request {i}");
                assert_ne!(a[p..end], b[p..end], "{mode:?} request {i}");
                assert_eq!(a[end..], b[end..], "{mode:?} request {i}: the dataset's own ids");
            }
        }
    }

    #[test]
    fn text_prompts_and_bad_shares_are_config_errors() {
        let mut w = workload(&[32]);
        w.requests[0].prompt = Prompt::Text("hi".into());
        assert!(apply(cfg(PrefixCacheMode::HitRate(0.5)), &mut w).is_err());
        let mut w = workload(&[32]);
        assert!(apply(cfg(PrefixCacheMode::HitRate(1.5)), &mut w).is_err());
        assert!(apply(PrefixCacheConfig { block_size: 0, ..cfg(PrefixCacheMode::Bust) }, &mut w).is_err());
    }
}
