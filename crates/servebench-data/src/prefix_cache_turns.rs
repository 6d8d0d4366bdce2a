//! A controlled prefix-cache hit rate on multi-turn conversations built on token ids
//! (`--backend openai --dataset-name random --prompt-token-ids --multi-turn` with
//! `--prefix-cache-hit-rate`, the bimodal pair or `--prefix-cache-bust`; docs/workloads.md,
//! "Multi-turn conversations on token ids").
//!
//! **Conversations** ([`grow`]). Conversation `s` has turns `t = 0..T_s`; turn `t` brings `n_t`
//! new ids and asks for a reply of `o_t` tokens. Its prompt is turn `t − 1`'s prompt, then a
//! stand-in for turn `t − 1`'s reply (`o_{t−1}` ids drawn from the workload's vocabulary,
//! seeded), then its new ids: `L_t = L_{t−1} + o_{t−1} + n_t`. The stand-in has the reply's
//! length, not its text, so every prompt is known before the run.
//!
//! **History reuse.** A server with `B`-token blocks that computed turn `t − 1` holds its
//! `floor(L_{t−1} / B)` full prompt blocks, so turn `t` finds `H_t = floor(L_{t−1} / B)·B` tokens
//! cached. No more: the block that straddles the end of that prompt holds, on the server, the
//! real reply, which the stand-in does not reproduce (on a real model it could only by chance,
//! about once in `vocabulary size` turns when one token of the reply shares the block; the
//! simulator caches prompt blocks only). `H_t < L_t`, so it is never the whole prompt.
//!
//! **Shared first-turn prefix.** Conversation `s`'s first turn starts with `P_s` tokens (whole
//! blocks, at most `cap_s = floor((L_0 − 1) / B)·B`) of one shared sequence, primed before the
//! run ([`PrefixCacheLayout::warmup`]); its later turns carry the same tokens (they start with
//! the first turn's prompt). So request `i` finds exactly `P_s` (first turn) or `H_t` (later
//! turn) tokens cached, and the run's built-in rate is `(Σ_s P_s + Σ H) / Σ L`:
//!
//! - hit rate `R`: reachable only in `[Σ H / Σ L, (Σ H + Σ cap_s) / Σ L]` (the history alone,
//!   every first turn shared up to its cap); outside, SB211 names the range. Inside,
//!   `k = round((R·Σ L − Σ H) / B)` blocks are spread over the first turns as evenly as their
//!   caps allow (conversation order breaks ties).
//! - bimodal `(F, r)`: conversation `s` starts warm when `floor((s+1)·F) > floor(s·F)` (exactly
//!   `floor(S·F)` warm conversations, spread evenly); a warm first turn has `P_s =
//!   min(floor(r·L_0 / B)·B, cap_s)`, a cold one `P_s = 0`; later turns keep their history
//!   either way. The target is the rule before block rounding: `(Σ_warm r·L_0 + Σ_{t≥1} L_{t−1})
//!   / Σ L`.
//! - bust: the first block of **every turn** is replaced by ids unique to the turn and the run
//!   (`nonce`): no turn can match anything, not another conversation and not its own history,
//!   so the hit rate is exactly 0. The history is still sent whole (same prompts and lengths as
//!   a cached run): it measures the conversation as served without a prefix cache.

use std::sync::Arc;

use servebench_core::{BenchError, Prompt, RequestSpec, Result, Workload};

use crate::prefix_cache::{
    check, coded, draw, is_warm, prefix_tokens, run_block, token_id_prompts, vocabulary, PrefixCacheConfig,
    PrefixCacheLayout, PrefixCacheMode, TurnReuse,
};

/// Seeds the reply stand-ins apart from the shared prefix and the bust blocks.
const STAND_IN_SEED: u64 = 0x5354_414e_445f_494e;

/// One turn before the conversation is grown: its new ids and the reply length it asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenTurn {
    pub ids: Vec<u32>,
    pub output_tokens: u32,
}

/// Conversations as a flat workload: turn `t` of conversation `c` is request `bounds[c].0 + t`,
/// whose prompt is the whole conversation so far.
#[derive(Debug, Clone)]
pub struct TokenConversations {
    pub workload: Workload,
    /// `(first request, number of turns)` of each conversation.
    pub bounds: Vec<(usize, usize)>,
}

/// Builds the prompts of `conversations` (each a list of turns): turn `t` = turn `t − 1`'s prompt
/// + a stand-in of its reply + the turn's new ids. The stand-ins are drawn with `seed`.
pub fn grow(conversations: Vec<Vec<TokenTurn>>, seed: u64) -> TokenConversations {
    let vocab = vocabulary(conversations.iter().flatten().map(|t| &t.ids[..]));
    let mut requests = Vec::new();
    let mut bounds = Vec::with_capacity(conversations.len());
    for turns in conversations {
        bounds.push((requests.len(), turns.len()));
        let mut prompt: Vec<u32> = Vec::new();
        let mut reply = 0u32;
        for turn in turns {
            let i = requests.len();
            if reply > 0 {
                prompt.extend(draw(&vocab, reply as usize, seed ^ STAND_IN_SEED, i as u64));
            }
            prompt.extend_from_slice(&turn.ids);
            let len = u32::try_from(prompt.len()).unwrap_or(u32::MAX);
            let ids: Arc<[u32]> = Arc::from(&prompt[..]);
            requests.push(RequestSpec::new(i as u64, Prompt::TokenIds(ids), len, turn.output_tokens));
            reply = turn.output_tokens;
        }
    }
    TokenConversations { workload: Workload::new(requests), bounds }
}

/// `H`: the tokens each request finds cached from its own conversation's previous turn
/// (`floor(L_{t−1} / B)·B`; 0 for first turns).
pub fn history_prefix(workload: &Workload, bounds: &[(usize, usize)], block: u32) -> Vec<u32> {
    let mut h = vec![0u32; workload.len()];
    if block == 0 {
        return h;
    }
    for &(start, turns) in bounds.iter().filter(|b| b.1 > 1) {
        let previous = &workload.requests[start..start + turns - 1];
        for (h, prev) in h[start + 1..start + turns].iter_mut().zip(previous) {
            *h = prev.prompt_tokens / block * block;
        }
    }
    h
}

/// The flag that set `mode`.
fn flag(mode: PrefixCacheMode) -> &'static str {
    match mode {
        PrefixCacheMode::HitRate(_) => "--prefix-cache-hit-rate",
        PrefixCacheMode::Bimodal { .. } => "--random-cache-hit-fraction",
        PrefixCacheMode::Bust => "--prefix-cache-bust",
        PrefixCacheMode::SharedPrefix { .. } => "--prompt-token-ids",
    }
}

/// `k` blocks spread over slots of `caps` blocks as evenly as the caps allow: every slot gets
/// `min(cap, m)` for the highest level `m` that fits, and the blocks left one more each, in
/// order, to slots whose cap is above `m`. `k` must be at most `Σ caps`.
fn spread(k: u64, caps: &[u32]) -> Vec<u32> {
    let fill = |m: u32| caps.iter().map(|&c| u64::from(c.min(m))).sum::<u64>();
    let (mut lo, mut hi) = (0u32, caps.iter().copied().max().unwrap_or(0));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fill(mid) <= k {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let mut left = k.saturating_sub(fill(lo));
    caps.iter()
        .map(|&c| {
            let mut b = c.min(lo);
            if left > 0 && c > lo {
                b += 1;
                left -= 1;
            }
            b
        })
        .collect()
}

/// Lays the shared first-turn prefixes (or the bust blocks) over conversations of token-id
/// prompts built by [`grow`]; `P_i` of the layout is each request's exact cached share
/// (`P_s` or `H_t`). SB211 when a hit-rate target is out of the conversations' reach.
pub fn apply(
    cfg: PrefixCacheConfig,
    workload: &mut Workload,
    bounds: &[(usize, usize)],
) -> Result<PrefixCacheLayout> {
    check(&cfg)?;
    let mut ids = token_id_prompts(workload).ok_or_else(|| {
        coded(
            flag(cfg.mode),
            "multi-turn chat conversations have no exact token layout",
            "use --backend openai --dataset-name random --prompt-token-ids --multi-turn",
        )
    })?;
    let block = cfg.block_size;
    let history = history_prefix(workload, bounds, block);
    let total: u64 = workload.requests.iter().map(|r| u64::from(r.prompt_tokens)).sum();
    let reused: u64 = history.iter().map(|&h| u64::from(h)).sum();
    let first_len = |s: usize| workload.requests[bounds[s].0].prompt_tokens;
    let caps: Vec<u32> =
        (0..bounds.len()).map(|s| prefix_tokens(first_len(s), 1.0, block) / block.max(1)).collect();
    let cap_tokens: u64 = caps.iter().map(|&c| u64::from(c) * u64::from(block)).sum();
    let share = |x: f64| if total > 0 { x / total as f64 } else { 0.0 };
    let (min, max) = (share(reused as f64), share((reused + cap_tokens) as f64));
    let (blocks, target): (Vec<u32>, f64) = match cfg.mode {
        PrefixCacheMode::HitRate(r) => {
            const EPS: f64 = 1e-9;
            if r < min - EPS || r > max + EPS {
                return Err(BenchError::PrefixCacheTargetUnreachable {
                    flag: flag(cfg.mode).into(),
                    target: r,
                    min,
                    max,
                    detail: format!(
                        "{} conversations, {total} prompt tokens, {reused} of them reused from each conversation's previous turn, at most {cap_tokens} shared by the first turns in {block}-token blocks",
                        bounds.len()
                    ),
                });
            }
            let want = ((r * total as f64 - reused as f64) / f64::from(block.max(1))).round().max(0.0) as u64;
            (spread(want.min(cap_tokens / u64::from(block.max(1))), &caps), r)
        }
        PrefixCacheMode::Bimodal { fraction, ratio } => {
            let mut asked = reused as f64;
            let blocks = (0..bounds.len())
                .map(|s| {
                    if is_warm(s as u64, fraction) {
                        asked += ratio * f64::from(first_len(s));
                        prefix_tokens(first_len(s), ratio, block) / block.max(1)
                    } else {
                        0
                    }
                })
                .collect();
            (blocks, share(asked))
        }
        PrefixCacheMode::Bust => (vec![0; bounds.len()], 0.0),
        PrefixCacheMode::SharedPrefix { .. } => {
            return Err(coded(
                "--prompt-token-ids",
                "prefix_repetition has no multi-turn form",
                "use --dataset-name random with --multi-turn",
            ))
        }
    };
    let vocab = vocabulary(ids.iter().map(|v| &v[..]));
    let longest = blocks.iter().copied().max().unwrap_or(0) as usize * block as usize;
    let shared = draw(&vocab, longest, cfg.seed, u64::MAX);
    let mut cached_prefix = history;
    for (s, &(start, turns)) in bounds.iter().enumerate() {
        let p = blocks[s] as usize * block as usize;
        cached_prefix[start] = p as u32;
        // The first turn's block after its shared prefix is unique to the run; every later turn
        // starts with the first turn's prompt, so it carries the same block.
        let mut first = ids[start].clone();
        first[..p].copy_from_slice(&shared[..p]);
        run_block(&mut first, p, &vocab, &cfg, start as u64);
        let first_len = first.len();
        for turn in &mut ids[start..start + turns] {
            turn[..first_len].copy_from_slice(&first);
        }
    }
    if cfg.mode == PrefixCacheMode::Bust {
        cached_prefix.iter_mut().for_each(|p| *p = 0);
        for (i, p) in ids.iter_mut().enumerate() {
            let n = (block as usize).min(p.len());
            p[..n].copy_from_slice(&draw(&vocab, n, cfg.nonce ^ cfg.seed, i as u64));
        }
    }
    for (req, p) in workload.requests.iter_mut().zip(ids) {
        req.prompt = Prompt::TokenIds(p.into());
    }
    let warmup = if shared.is_empty() { Vec::new() } else { vec![Arc::from(shared)] };
    let turns = TurnReuse { history_hit_rate: min, max_hit_rate: max, target };
    Ok(PrefixCacheLayout { config: cfg, warmup, cached_prefix, turns: Some(turns) })
}

#[cfg(test)]
#[path = "prefix_cache_turns_tests.rs"]
mod tests;
