//! The requests of a run: held in memory (a [`Workload`]) or built on demand from a
//! [`RequestSource`] — a pure function of the request's position (the random dataset, a trace),
//! so that a run's memory does not grow with `--num-prompts` (docs/workloads.md, "Lazy
//! generation"). Both forms answer the same questions (how many, the lengths of request `p`,
//! request `p` in full) and take the same edits (`--max-model-len` filtering, cycling through
//! the prompts, the first `n`, a shard's share), with the same result request for request.

use std::ops::Deref;
use std::sync::Arc;

use crate::workload::{RequestSpec, Workload};

/// Builds requests one at a time. `build(i)` must be a pure function of `i` (and of what the
/// source was made from): the same request every time, on every thread.
pub trait RequestSource: Send + Sync + std::fmt::Debug {
    /// Number of requests.
    fn len(&self) -> usize;
    /// No request at all.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `(prompt_tokens, expected_output_tokens)` of request `i`, without building its prompt.
    fn lengths(&self, i: usize) -> (u32, u32);
    /// Request `i` in full, its `index` equal to `i`.
    fn build(&self, i: usize) -> RequestSpec;
    /// Why a request built so far is not what preparation checked (a source reading a file
    /// that changed under it), for the run's warnings; `None` when every one is.
    fn failure(&self) -> Option<String> {
        None
    }
}

/// Position `p` of an edited lazy request list: the request's index and the source request
/// it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pick {
    index: u64,
    at: usize,
}

/// Requests built on demand: a source and, once edited, which source request each position
/// sends (`None`: position `p` is source request `p`, index `p`).
#[derive(Debug, Clone)]
pub struct LazyRequests {
    source: Arc<dyn RequestSource>,
    picks: Option<Arc<[Pick]>>,
}

/// What a record needs of a request before it is sent (or when it never is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecMeta {
    pub index: u64,
    pub prompt_tokens: u32,
    pub expected_output_tokens: u32,
}

/// The requests of a run, in send order.
#[derive(Debug, Clone)]
pub enum Requests {
    /// Every request built before the run.
    Held(Arc<Workload>),
    /// Requests built when needed (see [`RequestSource`]).
    Lazy(LazyRequests),
}

/// One request: borrowed from a held workload, or built.
#[derive(Debug, Clone)]
pub enum SpecRef {
    Held(Arc<Workload>, usize),
    Built(Arc<RequestSpec>),
}

impl Deref for SpecRef {
    type Target = RequestSpec;
    fn deref(&self) -> &RequestSpec {
        match self {
            // In range by construction (`Requests::spec` checks the position).
            #[allow(clippy::indexing_slicing)]
            SpecRef::Held(w, p) => &w.requests[*p],
            SpecRef::Built(s) => s,
        }
    }
}

impl From<Workload> for Requests {
    fn from(w: Workload) -> Self {
        Requests::Held(Arc::new(w))
    }
}

impl Default for Requests {
    fn default() -> Self {
        Requests::Held(Arc::default())
    }
}

impl LazyRequests {
    /// Every request of `source`, in its order.
    pub fn new(source: Arc<dyn RequestSource>) -> Self {
        LazyRequests { source, picks: None }
    }

    fn pick(&self, p: usize) -> Option<Pick> {
        match &self.picks {
            Some(picks) => picks.get(p).copied(),
            None => (p < self.source.len()).then_some(Pick { index: p as u64, at: p }),
        }
    }

    fn len(&self) -> usize {
        self.picks.as_ref().map_or(self.source.len(), |p| p.len())
    }

    fn all_picks(&self) -> Vec<Pick> {
        (0..self.len()).filter_map(|p| self.pick(p)).collect()
    }

    fn with_picks(&self, picks: Vec<Pick>) -> Self {
        LazyRequests { source: self.source.clone(), picks: Some(picks.into()) }
    }

    /// Request at position `p`, built.
    pub fn build(&self, p: usize) -> Option<RequestSpec> {
        let pick = self.pick(p)?;
        let mut spec = self.source.build(pick.at);
        spec.index = pick.index;
        Some(spec)
    }
}

impl Requests {
    /// Requests built on demand from `source`.
    pub fn lazy(source: Arc<dyn RequestSource>) -> Self {
        Requests::Lazy(LazyRequests::new(source))
    }

    pub fn len(&self) -> usize {
        match self {
            Requests::Held(w) => w.len(),
            Requests::Lazy(l) => l.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the requests are built on demand.
    pub fn is_lazy(&self) -> bool {
        matches!(self, Requests::Lazy(_))
    }

    /// Why a request built on demand was not what preparation checked ([`RequestSource::failure`]).
    pub fn source_failure(&self) -> Option<String> {
        match self {
            Requests::Held(_) => None,
            Requests::Lazy(l) => l.source.failure(),
        }
    }

    /// The held workload (`None` when lazy).
    pub fn held(&self) -> Option<&Arc<Workload>> {
        match self {
            Requests::Held(w) => Some(w),
            Requests::Lazy(_) => None,
        }
    }

    /// Index and lengths of the request at position `p`, without building it.
    pub fn meta(&self, p: usize) -> Option<SpecMeta> {
        match self {
            Requests::Held(w) => w.requests.get(p).map(|r| SpecMeta {
                index: r.index,
                prompt_tokens: r.prompt_tokens,
                expected_output_tokens: r.expected_output_tokens,
            }),
            Requests::Lazy(l) => {
                let pick = l.pick(p)?;
                let (prompt_tokens, expected_output_tokens) = l.source.lengths(pick.at);
                Some(SpecMeta { index: pick.index, prompt_tokens, expected_output_tokens })
            }
        }
    }

    /// Every request's index and lengths, in order.
    pub fn metas(&self) -> impl Iterator<Item = SpecMeta> + '_ {
        (0..self.len()).filter_map(|p| self.meta(p))
    }

    /// The request at position `p` (built when lazy).
    pub fn spec(&self, p: usize) -> Option<SpecRef> {
        match self {
            Requests::Held(w) => (p < w.len()).then(|| SpecRef::Held(w.clone(), p)),
            Requests::Lazy(l) => l.build(p).map(|s| SpecRef::Built(Arc::new(s))),
        }
    }

    /// Every request, in order (built one at a time when lazy).
    pub fn specs(&self) -> impl Iterator<Item = SpecRef> + '_ {
        (0..self.len()).filter_map(|p| self.spec(p))
    }

    /// Every request held in memory (lazy requests are built here, one after the other): for
    /// what needs the whole set (a prefix-cache layout, batching, rewriting prompts).
    pub fn into_workload(self) -> Workload {
        match self {
            Requests::Held(w) => Arc::unwrap_or_clone(w),
            Requests::Lazy(l) => Workload::new((0..l.len()).filter_map(|p| l.build(p)).collect()),
        }
    }

    /// The first `n` requests (all when `n` ≥ the length).
    pub fn first(&self, n: usize) -> Requests {
        if n >= self.len() {
            return self.clone();
        }
        match self {
            Requests::Held(w) => Workload::new(w.requests.get(..n).unwrap_or_default().to_vec()).into(),
            Requests::Lazy(l) => {
                let mut picks = l.all_picks();
                picks.truncate(n);
                Requests::Lazy(l.with_picks(picks))
            }
        }
    }

    /// Drops the requests whose prompt + expected output exceed `limit` and renumbers the rest
    /// `0..` in order; returns how many were dropped.
    pub fn retain_within(&mut self, limit: u32) -> usize {
        let fits = |m: &SpecMeta| {
            u64::from(m.prompt_tokens) + u64::from(m.expected_output_tokens) <= u64::from(limit)
        };
        let before = self.len();
        match self {
            Requests::Held(w) => {
                let w = Arc::make_mut(w);
                w.requests.retain(|r| {
                    u64::from(r.prompt_tokens) + u64::from(r.expected_output_tokens) <= u64::from(limit)
                });
                for (i, r) in w.requests.iter_mut().enumerate() {
                    r.index = i as u64;
                }
            }
            Requests::Lazy(l) => {
                let kept: Vec<Pick> = l
                    .all_picks()
                    .into_iter()
                    .filter(|p| {
                        let (prompt_tokens, expected_output_tokens) = l.source.lengths(p.at);
                        fits(&SpecMeta { index: p.index, prompt_tokens, expected_output_tokens })
                    })
                    .enumerate()
                    .map(|(i, p)| Pick { index: i as u64, at: p.at })
                    .collect();
                if kept.len() != before {
                    *l = l.with_picks(kept);
                }
            }
        }
        before - self.len()
    }

    /// `n` requests, request `i` sending the prompt of position `i mod len` with index `i`
    /// (prompts are shared or rebuilt, not copied). Empty stays empty.
    pub fn cycle(&self, n: usize) -> Requests {
        let w = self.len();
        if w == 0 {
            return Requests::default();
        }
        match self {
            Requests::Held(held) => Workload::new(
                (0..n)
                    .filter_map(|i| {
                        let mut spec = held.requests.get(i % w)?.clone();
                        spec.index = i as u64;
                        Some(spec)
                    })
                    .collect(),
            )
            .into(),
            Requests::Lazy(l) => {
                let base = l.all_picks();
                let picks = (0..n)
                    .filter_map(|i| base.get(i % w).map(|p| Pick { index: i as u64, at: p.at }))
                    .collect();
                Requests::Lazy(l.with_picks(picks))
            }
        }
    }

    /// The requests at the positions `keep` says yes to, in order, keeping their indexes.
    pub fn retain_positions(&self, keep: impl Fn(usize) -> bool) -> Requests {
        match self {
            Requests::Held(w) => {
                // The resampled requests are the workload's tail (crate::Workload::resampled).
                let tail = w.requests.len() - w.resampled.min(w.requests.len());
                let kept: Vec<usize> = (0..w.requests.len()).filter(|p| keep(*p)).collect();
                Workload {
                    requests: kept.iter().map(|&p| w.requests[p].clone()).collect(),
                    resampled: kept.iter().filter(|&&p| p >= tail).count(),
                }
                .into()
            }
            Requests::Lazy(l) => {
                let picks =
                    l.all_picks().into_iter().enumerate().filter(|(p, _)| keep(*p)).map(|(_, x)| x).collect();
                Requests::Lazy(l.with_picks(picks))
            }
        }
    }

    /// Total prompt tokens.
    pub fn total_prompt_tokens(&self) -> u64 {
        self.metas().map(|m| u64::from(m.prompt_tokens)).sum()
    }

    /// Total expected output tokens.
    pub fn total_expected_output_tokens(&self) -> u64 {
        self.metas().map(|m| u64::from(m.expected_output_tokens)).sum()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::workload::Prompt;

    /// Request `i`: prompt "p{i}", `i % 7 + 1` prompt tokens, `i % 3 + 1` output tokens.
    #[derive(Debug)]
    struct Numbers(usize);

    impl RequestSource for Numbers {
        fn len(&self) -> usize {
            self.0
        }
        fn lengths(&self, i: usize) -> (u32, u32) {
            ((i % 7 + 1) as u32, (i % 3 + 1) as u32)
        }
        fn build(&self, i: usize) -> RequestSpec {
            let (p, o) = self.lengths(i);
            RequestSpec::new(i as u64, Prompt::Text(Arc::from(format!("p{i}"))), p, o)
        }
    }

    fn both(n: usize) -> (Requests, Requests) {
        let lazy = Requests::lazy(Arc::new(Numbers(n)));
        let held = Requests::from(lazy.clone().into_workload());
        (held, lazy)
    }

    fn same(a: &Requests, b: &Requests) {
        assert_eq!(a.len(), b.len());
        let sa: Vec<RequestSpec> = a.specs().map(|s| RequestSpec::clone(&s)).collect();
        let sb: Vec<RequestSpec> = b.specs().map(|s| RequestSpec::clone(&s)).collect();
        assert_eq!(sa, sb);
        assert_eq!(a.metas().collect::<Vec<_>>(), b.metas().collect::<Vec<_>>());
        for (s, m) in sa.iter().zip(a.metas()) {
            assert_eq!(
                (s.index, s.prompt_tokens, s.expected_output_tokens),
                (m.index, m.prompt_tokens, m.expected_output_tokens)
            );
        }
    }

    #[test]
    fn lazy_and_held_requests_agree_after_every_edit() {
        let (mut held, mut lazy) = both(40);
        same(&held, &lazy);
        assert_eq!(held.retain_within(6), lazy.retain_within(6));
        same(&held, &lazy);
        assert!(held.len() < 40);
        same(&held.first(9), &lazy.first(9));
        same(&held.cycle(100), &lazy.cycle(100));
        same(
            &held.cycle(100).retain_positions(|p| p % 3 == 1),
            &lazy.cycle(100).retain_positions(|p| p % 3 == 1),
        );
        same(
            &held.retain_positions(|p| p % 4 == 0).first(3),
            &lazy.retain_positions(|p| p % 4 == 0).first(3),
        );
        assert_eq!(held.total_prompt_tokens(), lazy.total_prompt_tokens());
        assert_eq!(held.total_expected_output_tokens(), lazy.total_expected_output_tokens());
        assert!(lazy.is_lazy() && !held.is_lazy());
        assert!(held.spec(held.len()).is_none() && lazy.spec(lazy.len()).is_none());
        assert!(Requests::lazy(Arc::new(Numbers(0))).cycle(5).is_empty());
    }
}
