//! The engine's scheduler task and prefix cache (the model is described in `engine.rs`).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::engine::{EngineConfig, Submission};
use crate::hash::mix;
use crate::metrics::Metrics;

/// The client side of a running scheduler.
#[derive(Debug, Clone)]
pub(crate) struct Engine {
    tx: mpsc::UnboundedSender<Submission>,
    /// Prefix-cache reset requests (`/reset_prefix_cache`).
    reset: Arc<std::sync::atomic::AtomicBool>,
}

impl Engine {
    /// Spawns the scheduler on the current runtime (`None` outside a runtime). It stops when
    /// the last `Engine` clone is dropped.
    pub(crate) fn spawn(config: EngineConfig, seed: u64, metrics: Arc<Metrics>) -> Option<Self> {
        let rt = tokio::runtime::Handle::try_current().ok()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let reset = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sched = Scheduler::new(config, seed, metrics, reset.clone());
        rt.spawn(sched.run(rx));
        Some(Engine { tx, reset })
    }

    /// Queues a request. Returns false if the scheduler is gone.
    pub(crate) fn submit(&self, s: Submission) -> bool {
        self.tx.send(s).is_ok()
    }

    /// Empties the prefix cache before the next step.
    pub(crate) fn reset_prefix_cache(&self) {
        self.reset.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// LRU set of block hashes.
#[derive(Debug, Default)]
pub(crate) struct PrefixCache {
    capacity: u64,
    stamp: u64,
    by_hash: HashMap<u64, u64>,
    by_stamp: BTreeMap<u64, u64>,
}

impl PrefixCache {
    pub(crate) fn new(capacity: u64) -> Self {
        PrefixCache { capacity: capacity.max(1), ..Default::default() }
    }

    fn touch(&mut self, h: u64) {
        self.stamp += 1;
        if let Some(old) = self.by_hash.insert(h, self.stamp) {
            self.by_stamp.remove(&old);
        }
        self.by_stamp.insert(self.stamp, h);
    }

    /// Number of leading blocks of `chain` that are cached (refreshing them).
    pub(crate) fn lookup(&mut self, chain: &[u64]) -> usize {
        let hits = chain.iter().take_while(|h| self.by_hash.contains_key(h)).count();
        for &h in chain.iter().take(hits) {
            self.touch(h);
        }
        hits
    }

    /// Adds every block of `chain`, evicting the least recently used beyond capacity.
    pub(crate) fn insert(&mut self, chain: &[u64]) {
        for &h in chain {
            self.touch(h);
        }
        while self.by_hash.len() as u64 > self.capacity {
            let Some((_, h)) = self.by_stamp.pop_first() else { break };
            self.by_hash.remove(&h);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.by_hash.clear();
        self.by_stamp.clear();
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_hash.len()
    }
}

#[derive(Debug)]
struct Seq {
    sub: Submission,
    /// Prompt tokens still to prefill.
    prefill_left: u32,
    /// Tokens per choice generated.
    generated: u32,
    /// KV tokens reserved.
    reserved: u64,
}

struct Scheduler {
    cfg: EngineConfig,
    rng: u64,
    metrics: Arc<Metrics>,
    reset: Arc<std::sync::atomic::AtomicBool>,
    cache: PrefixCache,
    waiting: VecDeque<Submission>,
    running: Vec<Seq>,
    kv_used: u64,
    seqs_running: u32,
}

impl Scheduler {
    fn new(
        cfg: EngineConfig,
        seed: u64,
        metrics: Arc<Metrics>,
        reset: Arc<std::sync::atomic::AtomicBool>,
    ) -> Self {
        Scheduler {
            cache: PrefixCache::new(cfg.cache_blocks()),
            cfg,
            rng: mix(seed ^ 0xe491_7e00),
            metrics,
            reset,
            waiting: VecDeque::new(),
            running: Vec::new(),
            kv_used: 0,
            seqs_running: 0,
        }
    }

    /// A uniform number in [0, 1).
    fn uniform(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        (mix(self.rng) >> 11) as f64 / (1u64 << 53) as f64
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Submission>) {
        let mut clock = Instant::now();
        loop {
            if self.running.is_empty() && self.waiting.is_empty() {
                match rx.recv().await {
                    Some(s) => self.waiting.push_back(s),
                    None => return,
                }
                // Idle: the next step starts now, not at the end of the last one.
                clock = Instant::now();
            }
            while let Ok(s) = rx.try_recv() {
                self.waiting.push_back(s);
            }
            if self.reset.swap(false, std::sync::atomic::Ordering::Relaxed) {
                self.cache.clear();
            }
            self.drop_cancelled();
            self.admit();
            self.publish_gauges();
            let Some(step) = self.plan_step() else { continue };
            clock = clock.checked_add(step.duration).unwrap_or(clock);
            tokio::time::sleep_until(clock.into()).await;
            // A late wake-up (overloaded host) does not accumulate: steps never run ahead of now.
            let now = Instant::now();
            if now > clock + Duration::from_millis(50) {
                clock = now;
            }
            self.finish_step(&step);
            self.publish_gauges();
        }
    }

    fn drop_cancelled(&mut self) {
        let before = self.running.len();
        let mut freed = 0u64;
        let mut freed_seqs = 0u32;
        self.running.retain(|s| {
            let keep = !s.sub.progress.is_cancelled();
            if !keep {
                freed += s.reserved;
                freed_seqs += s.sub.seqs;
            }
            keep
        });
        if self.running.len() != before {
            self.kv_used = self.kv_used.saturating_sub(freed);
            self.seqs_running = self.seqs_running.saturating_sub(freed_seqs);
        }
        self.waiting.retain(|s| !s.progress.is_cancelled());
    }

    /// FCFS admission: the head of the queue waits until it fits; nothing overtakes it.
    fn admit(&mut self) {
        while let Some(head) = self.waiting.front() {
            let need = u64::from(head.prompt_tokens) + head.total_output_tokens;
            let seqs = head.seqs.max(1);
            let empty = self.running.is_empty();
            let fits_seqs = self.seqs_running + seqs <= self.cfg.max_num_seqs;
            let fits_kv = self.kv_used + need <= self.cfg.kv_capacity_tokens;
            if !(empty || (fits_seqs && fits_kv)) {
                break;
            }
            let Some(sub) = self.waiting.pop_front() else { break };
            let cached = self.lookup_prefix(&sub);
            sub.progress.set_cached(cached);
            self.kv_used += need;
            self.seqs_running += seqs;
            let prefill_left = sub.prompt_tokens.saturating_sub(cached);
            self.running.push(Seq { sub, prefill_left, generated: 0, reserved: need });
        }
    }

    /// Cached prompt tokens of a newly admitted request (at least one token of each prompt is
    /// always computed, as vLLM does).
    fn lookup_prefix(&mut self, sub: &Submission) -> u32 {
        if !self.cfg.prefix_caching {
            return 0;
        }
        let bs = u64::from(self.cfg.block_size);
        let mut cached = 0u64;
        for chain in &sub.blocks {
            cached += self.cache.lookup(chain) as u64 * bs;
        }
        let cached = cached.min(u64::from(sub.prompt_tokens.saturating_sub(1))) as u32;
        self.metrics.prefix_queries.add(u64::from(sub.prompt_tokens));
        self.metrics.prefix_hits.add(u64::from(cached));
        cached
    }

    fn publish_gauges(&self) {
        self.metrics.running_set(self.running.len() as i64);
        self.metrics.waiting.set(self.waiting.len() as i64);
        let ppm = self.kv_used.saturating_mul(1_000_000) / self.cfg.kv_capacity_tokens.max(1);
        self.metrics.kv_usage_ppm.set(ppm.min(1_000_000) as i64);
    }

    /// Which sequences decode and how many prompt tokens each prefills this step.
    fn plan_step(&mut self) -> Option<Step> {
        let mut budget = u64::from(self.cfg.max_num_batched_tokens);
        let mut decode = Vec::new();
        let mut decode_seqs = 0u64;
        for (i, s) in self.running.iter().enumerate() {
            if s.prefill_left == 0 {
                let cost = u64::from(s.sub.seqs.max(1));
                if budget < cost && !decode.is_empty() {
                    break;
                }
                budget = budget.saturating_sub(cost);
                decode.push(i);
                decode_seqs += cost;
            }
        }
        let mut prefill = Vec::new();
        let mut prefill_tokens = 0u64;
        for (i, s) in self.running.iter().enumerate() {
            if budget == 0 {
                break;
            }
            if s.prefill_left > 0 {
                let chunk = u64::from(s.prefill_left).min(budget);
                budget -= chunk;
                prefill_tokens += chunk;
                prefill.push((i, chunk as u32));
            }
        }
        if decode.is_empty() && prefill.is_empty() {
            return None;
        }
        let mut secs = prefill_tokens as f64 / self.cfg.prefill_tokens_per_s;
        if !decode.is_empty() {
            secs += self.cfg.decode_step_base.as_secs_f64()
                + self.cfg.decode_per_seq.as_secs_f64() * decode_seqs as f64;
        }
        let factor = 1.0 + self.cfg.jitter * (2.0 * self.uniform() - 1.0);
        let duration =
            Duration::try_from_secs_f64((secs * factor).max(0.0)).unwrap_or(Duration::from_secs(60));
        Some(Step { decode, prefill, duration })
    }

    /// Tokens accepted by speculative decoding for one sequence this step (0 when off).
    fn spec_accepted(&mut self) -> u32 {
        let k = self.cfg.spec_k;
        if k == 0 {
            return 0;
        }
        let mut accepted = 0;
        while accepted < k && self.uniform() < self.cfg.spec_acceptance {
            accepted += 1;
        }
        self.metrics.spec_drafts.inc();
        self.metrics.spec_draft_tokens.add(u64::from(k));
        self.metrics.spec_accepted.add(u64::from(accepted));
        for c in self.metrics.spec_accepted_per_pos.iter().take(accepted as usize) {
            c.inc();
        }
        accepted
    }

    fn finish_step(&mut self, step: &Step) {
        // Indices refer to `running` as planned; nothing was removed in between.
        let mut emit: Vec<(usize, u32)> = Vec::with_capacity(step.decode.len() + step.prefill.len());
        for &i in &step.decode {
            let accepted = self.spec_accepted();
            emit.push((i, 1 + accepted));
        }
        for &(i, chunk) in &step.prefill {
            let Some(s) = self.running.get_mut(i) else { continue };
            s.prefill_left = s.prefill_left.saturating_sub(chunk);
            if s.prefill_left == 0 {
                // The step that completes a prefill samples the first token; its blocks are now
                // computed and shareable.
                if self.cfg.prefix_caching {
                    for chain in &s.sub.blocks {
                        self.cache.insert(chain);
                    }
                }
                emit.push((i, 1));
            }
        }
        for (i, n) in emit {
            let Some(s) = self.running.get_mut(i) else { continue };
            let n = n.min(s.sub.output_tokens.saturating_sub(s.generated));
            s.generated += n;
            s.sub.progress.add(n);
        }
        let mut freed = 0u64;
        let mut freed_seqs = 0u32;
        self.running.retain(|s| {
            let done = s.generated >= s.sub.output_tokens;
            if done {
                freed += s.reserved;
                freed_seqs += s.sub.seqs.max(1);
            }
            !done
        });
        self.kv_used = self.kv_used.saturating_sub(freed);
        self.seqs_running = self.seqs_running.saturating_sub(freed_seqs);
    }
}

#[derive(Debug)]
struct Step {
    decode: Vec<usize>,
    prefill: Vec<(usize, u32)>,
    duration: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Progress;

    #[test]
    fn prefix_cache_is_lru_and_prefix_ordered() {
        let mut c = PrefixCache::new(3);
        assert_eq!(c.lookup(&[1, 2]), 0);
        c.insert(&[1, 2]);
        assert_eq!(c.lookup(&[1, 2, 3]), 2);
        assert_eq!(c.lookup(&[2]), 1);
        assert_eq!(c.lookup(&[9, 1]), 0, "a hit must start at the first block");
        c.insert(&[7, 8]);
        assert_eq!(c.len(), 3);
        // 1 was least recently used (2 was touched after it).
        assert_eq!(c.lookup(&[1]), 0);
        assert_eq!(c.lookup(&[2]), 1);
        c.clear();
        assert_eq!(c.len(), 0);
    }

    fn sub(prompt: u32, out: u32) -> (Submission, Arc<Progress>) {
        let p = Arc::new(Progress::default());
        let s = Submission {
            prompt_tokens: prompt,
            output_tokens: out,
            total_output_tokens: u64::from(out),
            seqs: 1,
            blocks: vec![],
            progress: p.clone(),
        };
        (s, p)
    }

    #[test]
    fn admission_respects_kv_and_fcfs() {
        let mut cfg = EngineConfig::cpu_tiny();
        cfg.kv_capacity_tokens = 100;
        let mut s = Scheduler::new(cfg, 1, Arc::new(Metrics::new("m", 0)), Default::default());
        let (a, _) = sub(40, 20);
        let (b, _) = sub(40, 20);
        let (c, _) = sub(1, 1);
        s.waiting.extend([a, b, c]);
        s.admit();
        assert_eq!(s.running.len(), 1);
        assert_eq!(s.waiting.len(), 2, "the small request does not overtake the head");
        let (big, _) = sub(500, 10);
        let mut s2 = Scheduler::new(cfg, 1, Arc::new(Metrics::new("m", 0)), Default::default());
        s2.waiting.push_back(big);
        s2.admit();
        assert_eq!(s2.running.len(), 1, "an oversized request runs alone");
    }

    #[test]
    fn steps_prefill_in_chunks_then_decode() {
        let mut cfg = EngineConfig::cpu_tiny();
        cfg.max_num_batched_tokens = 100;
        cfg.jitter = 0.0;
        let mut s = Scheduler::new(cfg, 1, Arc::new(Metrics::new("m", 0)), Default::default());
        let (a, pa) = sub(250, 3);
        s.waiting.push_back(a);
        s.admit();
        let mut steps = 0;
        while !s.running.is_empty() {
            let st = s.plan_step().unwrap();
            s.finish_step(&st);
            steps += 1;
        }
        // 3 prefill chunks (the last also samples token 1) + 2 decode steps.
        assert_eq!(steps, 5);
        assert_eq!(pa.lock().produced, 3);
        assert_eq!(s.kv_used, 0);
    }
}
