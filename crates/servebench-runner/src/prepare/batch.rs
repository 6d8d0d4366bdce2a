//! `--random-batch-size B` (pooling backends): consecutive groups of B prompts become one
//! request whose body carries them as a list (`input: [..]`), as `vllm bench serve` does. The
//! request's prompt length is the sum of its prompts', its expected output is 0, and requests
//! are renumbered 0, 1, … (a last, shorter group is kept).

use std::sync::Arc;

use servebench_core::{Prompt, RequestSpec, Workload};

/// Groups the workload's prompts by `batch_size` (no-op for 0 or 1). Only text prompts are
/// batched (`config` rejects token-id prompts with a batch size above 1); a request carrying a
/// rerank payload, multimodal parts or pre-built messages is kept as it is.
pub fn batch_workload(workload: &mut Workload, batch_size: usize) {
    if batch_size <= 1 {
        return;
    }
    let requests = std::mem::take(&mut workload.requests);
    let mut out: Vec<RequestSpec> = Vec::with_capacity(requests.len().div_ceil(batch_size));
    let mut group: Vec<Arc<str>> = Vec::with_capacity(batch_size);
    let mut tokens = 0u32;
    let flush = |out: &mut Vec<RequestSpec>, group: &mut Vec<Arc<str>>, tokens: &mut u32| {
        if group.is_empty() {
            return;
        }
        let prompt = Prompt::Batch(std::mem::take(group).into());
        out.push(RequestSpec::new(out.len() as u64, prompt, *tokens, 0));
        *tokens = 0;
    };
    for r in requests {
        match (&r.prompt, r.rerank.is_none() && r.multimodal.is_none() && r.messages.is_none()) {
            (Prompt::Text(t), true) => {
                group.push(t.clone());
                tokens = tokens.saturating_add(r.prompt_tokens);
                if group.len() == batch_size {
                    flush(&mut out, &mut group, &mut tokens);
                }
            }
            _ => {
                flush(&mut out, &mut group, &mut tokens);
                let mut r = r;
                r.index = out.len() as u64;
                out.push(r);
            }
        }
    }
    flush(&mut out, &mut group, &mut tokens);
    workload.requests = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(n: usize) -> Workload {
        Workload {
            resampled: 0,
            requests: (0..n)
                .map(|i| {
                    RequestSpec::new(i as u64, Prompt::Text(Arc::from(format!("p{i}"))), i as u32 + 1, 8)
                })
                .collect(),
        }
    }

    #[test]
    fn groups_consecutive_prompts_and_sums_lengths() {
        let mut x = w(5);
        batch_workload(&mut x, 2);
        assert_eq!(x.len(), 3);
        let Prompt::Batch(b) = &x.requests[0].prompt else { panic!("batch") };
        assert_eq!(b.iter().map(|s| &**s).collect::<Vec<_>>(), ["p0", "p1"]);
        assert_eq!((x.requests[0].prompt_tokens, x.requests[0].expected_output_tokens), (3, 0));
        assert_eq!(x.requests[1].prompt_tokens, 3 + 4);
        let Prompt::Batch(last) = &x.requests[2].prompt else { panic!("batch") };
        assert_eq!((last.len(), x.requests[2].prompt_tokens, x.requests[2].index), (1, 5, 2));
        let mut y = w(3);
        batch_workload(&mut y, 1);
        assert_eq!(y, w(3));
    }
}
