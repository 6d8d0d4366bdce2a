//! `--tokenizer server`: no local tokenizer; the random workload is built with the server's
//! own `/tokenize` and `/detokenize`, and every prompt's length is made exact on the server.
//!
//! Method: tokenize a built-in seed text once to learn token ids the server's tokenizer
//! produces for ordinary text; draw each prompt's ids from those (seeded, per request);
//! detokenize them to text; then check and fix every prompt's length with the same
//! tokenize → adjust → detokenize loop the verification uses. Costs about three calls per
//! prompt (64 in flight), so it suits thousands of prompts, not millions.

use crate::prepare::{fix_all_prompts, ServerTokenize};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use servebench_core::{BenchError, Prompt, RequestSpec, Result, Workload};
use servebench_data::random::{length_bounds, RandomDatasetConfig};
use std::sync::Arc;

/// Public-domain seed text (the opening of the US Declaration of Independence): ordinary
/// words whose token ids every text tokenizer has.
const SEED_TEXT: &str = "When in the Course of human events, it becomes necessary for one people to \
dissolve the political bands which have connected them with another, and to assume among the powers \
of the earth, the separate and equal station to which the Laws of Nature and of Nature's God entitle \
them, a decent respect to the opinions of mankind requires that they should declare the causes which \
impel them to the separation. We hold these truths to be self-evident, that all men are created \
equal, that they are endowed by their Creator with certain unalienable Rights, that among these are \
Life, Liberty and the pursuit of Happiness.";

/// Builds the random workload through the server's tokenizer.
pub async fn build_server_workload(server: &ServerTokenize, cfg: &RandomDatasetConfig) -> Result<Workload> {
    let unavailable = |detail: String| {
        BenchError::tokenizer_load(
            "server",
            format!("--tokenizer server needs the server's /tokenize and /detokenize, and {detail}"),
        )
    };
    let mut pool = server.tokenize(SEED_TEXT).await?.or_unavailable(unavailable)?;
    // Special tokens the server adds to any text (BOS); servers that refuse an empty text
    // (TGI) add none we can see.
    let specials = server.tokenize("").await?.ok().map_or(0, |v| v.len());
    // Keep only the text's own ids (not the BOS the server adds), each once.
    pool.drain(..specials.min(pool.len()));
    pool.sort_unstable();
    pool.dedup();
    if pool.len() < 16 {
        return Err(unavailable(format!("only {} distinct ids for the seed text", pool.len())));
    }
    let (in_lo, in_hi) = length_bounds(cfg.input_len, cfg.range_ratio_input, 1);
    let (out_lo, out_hi) = length_bounds(cfg.output_len, cfg.range_ratio_output, 1);
    let draw = |rng: &mut ChaCha8Rng, n: usize| -> Vec<u32> {
        (0..n).map(|_| pool[rng.random_range(0..pool.len())]).collect()
    };
    let mut prefix_rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x9e37_79b9_7f4a_7c15);
    let prefix = draw(&mut prefix_rng, cfg.prefix_len);
    let mut requests = Vec::with_capacity(cfg.num_prompts);
    for i in 0..cfg.num_prompts {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        rng.set_stream(i as u64);
        let input = rng.random_range(in_lo..=in_hi);
        let output = rng.random_range(out_lo..=out_hi);
        let mut ids = prefix.clone();
        // Text prompts: the server adds its special tokens (BOS) to the text, so the total on
        // the server is prefix + sampled input length. Token-id prompts get no BOS.
        let body = if cfg.prompt_token_ids { input } else { input.saturating_sub(specials) };
        ids.extend(draw(&mut rng, body));
        let total = if cfg.prompt_token_ids { ids.len() as u32 } else { (cfg.prefix_len + input) as u32 };
        let prompt = if cfg.prompt_token_ids {
            Prompt::TokenIds(Arc::from(ids))
        } else {
            let text = server.detokenize(&ids).await?.or_unavailable(unavailable)?;
            Prompt::Text(Arc::from(text.as_str()))
        };
        requests.push(RequestSpec {
            index: i as u64,
            prompt,
            prompt_tokens: total,
            expected_output_tokens: output as u32,
            multimodal: None,
            rerank: None,
            messages: None,
            audio: None,
            overrides: None,
        });
    }
    let mut workload = Workload::new(requests);
    if !cfg.prompt_token_ids {
        // Detokenized text does not always re-tokenize to the same length: make it exact.
        fix_all_prompts(server, &mut workload).await?;
    }
    Ok(workload)
}
