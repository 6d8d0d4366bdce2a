//! The `random-rerank` dataset, for rerank backends (`/v1/rerank`): each request is a query and
//! `--random-batch-size` documents of random tokens. The query length is
//! `(L − specials) / 2 − 1` tokens (L = `--random-input-len`), the same for the whole run; each
//! document is drawn around `L − query − 1` tokens (spread by `--random-range-ratio`).
//! `prompt_tokens` counts `(query + 1) · documents + Σ documents`, the tokens the server scores.
//! With `--no-reranker` the query is the first of the batch's random texts and the other
//! `batch − 1` are the documents (needs a batch size above 1).

use super::prefix_repetition::blocks;
use crate::random::{generate_random, RandomDatasetConfig};
use servebench_core::{BenchError, Prompt, RequestSpec, RerankPayload, Result, TextTokenizer, Workload};
use std::sync::Arc;

/// Options of the random-rerank dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomRerankConfig {
    pub num_prompts: usize,
    /// `--random-input-len`.
    pub input_len: usize,
    /// `--random-range-ratio` (input part).
    pub range_ratio: f64,
    /// `--random-batch-size`: documents per request.
    pub batch_size: usize,
    /// `--no-reranker`.
    pub no_reranker: bool,
    pub seed: u64,
}

/// Builds the random-rerank workload. Requests carry a [`RerankPayload`]; their text prompt is
/// the query and their expected output length 0 (rerank generates nothing).
pub fn generate_random_rerank(cfg: &RandomRerankConfig, tok: &dyn TextTokenizer) -> Result<Workload> {
    if cfg.batch_size == 0 || (cfg.no_reranker && cfg.batch_size < 2) {
        return Err(BenchError::config(
            "--random-batch-size",
            format!("{} documents per request", cfg.batch_size),
            if cfg.no_reranker {
                "with --no-reranker pass --random-batch-size 2 or more (one text is the query)"
            } else {
                "pass --random-batch-size 1 or more"
            },
        ));
    }
    let specials = tok.num_special_tokens() as usize;
    let query_len = if cfg.no_reranker {
        0
    } else {
        (cfg.input_len.saturating_sub(specials) / 2).saturating_sub(1).max(1)
    };
    let doc_len = cfg.input_len.saturating_sub(query_len + 1).max(1);
    let per_request = cfg.batch_size;
    let texts = generate_random(
        &RandomDatasetConfig {
            num_prompts: cfg.num_prompts * per_request,
            input_len: doc_len + specials,
            output_len: 1,
            range_ratio_input: cfg.range_ratio,
            seed: cfg.seed,
            ..RandomDatasetConfig::default()
        },
        tok,
    )?;
    let docs: Vec<(Arc<str>, usize)> = texts
        .requests
        .into_iter()
        .map(|r| {
            let n = (r.prompt_tokens as usize).saturating_sub(specials);
            (Arc::from(r.prompt.text().unwrap_or("")), n)
        })
        .collect();
    let query = if cfg.no_reranker {
        None
    } else {
        blocks(1, query_len, cfg.seed.wrapping_add(0x5155_4552), tok)?.into_iter().next()
    };
    let requests = docs
        .chunks(per_request)
        .enumerate()
        .map(|(i, chunk)| {
            let (q, documents, q_len) = match &query {
                Some(q) => (q.clone(), chunk, query_len),
                None => (chunk[0].0.clone(), &chunk[1..], chunk[0].1),
            };
            let doc_tokens: usize = documents.iter().map(|d| d.1).sum();
            let prompt_tokens = (q_len + 1) * documents.len() + doc_tokens;
            let mut spec = RequestSpec::new(
                i as u64,
                Prompt::Text(q.clone()),
                u32::try_from(prompt_tokens).unwrap_or(u32::MAX),
                0,
            );
            spec.rerank = Some(Arc::new(RerankPayload {
                query: q,
                documents: documents.iter().map(|d| d.0.clone()).collect(),
            }));
            spec
        })
        .collect();
    Ok(Workload::new(requests))
}
