//! Multi-turn conversations on token ids (`--backend openai --dataset-name random
//! --prompt-token-ids --multi-turn`): every turn's prompt is built before the run — the
//! conversation so far as token ids, the previous replies as stand-ins of their length
//! (`servebench_data::prefix_cache_turns`) — and sent to the completions API as it is, so the
//! share of each prompt a prefix cache can serve is known exactly. A controlled prefix-cache hit
//! rate (`--prefix-cache-hit-rate`, the bimodal pair, `--prefix-cache-bust`) is laid over them
//! here; the turns run on the conversation runner (`super::session`), which sends each turn's
//! prompt as it is instead of a chat history.

use std::sync::Arc;

use servebench_core::{BenchError, Prompt, RequestSpec, Result, TextTokenizer};
use servebench_data::prefix_cache::PrefixCacheLayout;
use servebench_data::prefix_cache_turns::{self, TokenTurn};
use servebench_data::random::{generate_random, RandomDatasetConfig};

use super::session::{Conversations, TurnLayout};
use crate::config::load_options::MultiTurnConfig;
use crate::config::RunConfig;

/// Token-id prompts of the random dataset's options (`prefix_len`: `--random-prefix-len`, for
/// first turns as in the text conversations).
fn token_prompts(
    random: &RandomDatasetConfig,
    n: usize,
    (len, prefix_len): (usize, usize),
    seed: u64,
    tok: &dyn TextTokenizer,
) -> Result<Vec<RequestSpec>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let c = RandomDatasetConfig {
        num_prompts: n,
        input_len: len,
        prefix_len,
        prompt_token_ids: true,
        seed,
        ..random.clone()
    };
    Ok(generate_random(&c, tok)?.requests)
}

/// Synthetic conversations on token ids: `--num-prompts` conversations with the synthetic
/// turns' counts and lengths (first turn `--random-input-len`, later ones
/// `--per-turn-input-len`, replies `--random-output-len`); turn `t`'s prompt is the whole
/// conversation so far.
pub fn token_conversations(
    cfg: &MultiTurnConfig,
    random: &RandomDatasetConfig,
    tok: &dyn TextTokenizer,
) -> Result<Conversations> {
    let n = random.num_prompts;
    let TurnLayout { counts, later, later_len } = TurnLayout::of(cfg, random);
    let mut first =
        token_prompts(random, n, (random.input_len, random.prefix_len), random.seed, tok)?.into_iter();
    let mut rest =
        token_prompts(random, later, (later_len, 0), random.seed.wrapping_add(1), tok)?.into_iter();
    let turn = |spec: Option<RequestSpec>| -> Result<TokenTurn> {
        let spec = spec.ok_or_else(|| BenchError::dataset("random dataset too short"))?;
        let ids = match &spec.prompt {
            Prompt::TokenIds(ids) => ids.to_vec(),
            _ => return Err(BenchError::dataset("the random dataset built text on --prompt-token-ids")),
        };
        Ok(TokenTurn { ids, output_tokens: spec.expected_output_tokens.max(1) })
    };
    let mut convs = Vec::with_capacity(n);
    for &c in &counts {
        let mut turns = vec![turn(first.next())?];
        for _ in 1..c {
            turns.push(turn(rest.next())?);
        }
        convs.push(turns);
    }
    let grown = prefix_cache_turns::grow(convs, random.seed);
    Ok(Conversations { workload: grown.workload, bounds: grown.bounds, history: false, token_ids: true })
}

/// The controlled prefix-cache hit rate of a multi-turn run on token ids, laid over its
/// conversations (after `--max-model-len` truncation). `None` without one.
pub fn lay_prefix_cache(cfg: &RunConfig, conv: &mut Conversations) -> Result<Option<Arc<PrefixCacheLayout>>> {
    let Some(pc) = cfg.load.prefix_cache else { return Ok(None) };
    if !conv.token_ids {
        return Err(servebench_data::prefix_cache::coded(
            "--prefix-cache-hit-rate",
            "multi-turn chat conversations have no exact token layout",
            "use --backend openai --dataset-name random --prompt-token-ids --multi-turn",
        ));
    }
    let mut workload = std::mem::take(&mut conv.workload);
    let layout = prefix_cache_turns::apply(pc, &mut workload, &conv.bounds);
    conv.workload = workload;
    Ok(Some(Arc::new(layout?)))
}
