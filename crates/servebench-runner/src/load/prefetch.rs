//! Lazy prompts built ahead of the dispatcher. A thread of its own (`sb-client-prompts`, so its
//! CPU counts as the client's) builds the requests in release order into a ring of `window`
//! slots and waits while the ring is full: at most `window` prompts are held beyond those in
//! flight, whatever `--num-prompts` is. The dispatcher takes release `k` from its slot; one that
//! is not there yet (the builder is behind, or releases came out of order) is built on the spot,
//! so a slow builder can make sending later, never wrong. Held workloads are handed out as they
//! are (no thread).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use servebench_core::{Requests, SpecRef};

/// Bytes of prompts the window holds at most (about: 8 bytes per prompt token).
const WINDOW_BYTES: usize = 32 << 20;
/// Slots at least and at most.
const WINDOW_MIN: usize = 16;
const WINDOW_MAX: usize = 1024;

/// Slots of a window for prompts of `mean_prompt_tokens` tokens.
pub fn window_for(mean_prompt_tokens: f64) -> usize {
    let per = (mean_prompt_tokens.max(1.0) * 8.0) as usize;
    (WINDOW_BYTES / per.max(1)).clamp(WINDOW_MIN, WINDOW_MAX)
}

/// Where the executor takes the prompt of a release from.
#[derive(Clone, Debug)]
pub enum Prompts {
    /// Held (or lazy without a builder thread): `spec(k mod len)`.
    Direct(Requests),
    /// Lazy, built ahead by a thread.
    Ahead(Arc<Handle>),
}

impl Prompts {
    /// Prompts for releases `0..releases` (`None`: unbounded, a closed loop), release `k`
    /// sending position `k mod len`. Lazy requests get a builder thread `window` releases
    /// ahead; if the thread cannot be started, prompts are built on the spot.
    pub fn new(requests: &Requests, releases: Option<usize>, window: usize) -> Prompts {
        if !requests.is_lazy() || requests.is_empty() {
            return Prompts::Direct(requests.clone());
        }
        let ring = Arc::new(Ring {
            requests: requests.clone(),
            slots: (0..window.max(1)).map(|_| Mutex::new(None)).collect(),
            state: Mutex::new(State { taken: 0, stop: false }),
            cond: Condvar::new(),
        });
        let builder = ring.clone();
        let end = releases.unwrap_or(usize::MAX);
        match std::thread::Builder::new().name("sb-client-prompts".into()).spawn(move || builder.fill(end)) {
            Ok(_) => Prompts::Ahead(Arc::new(Handle(ring))),
            Err(_) => Prompts::Direct(requests.clone()),
        }
    }

    /// The prompt of release `k`.
    pub fn take(&self, k: usize) -> Option<SpecRef> {
        match self {
            Prompts::Direct(r) => r.spec(k % r.len().max(1)),
            Prompts::Ahead(h) => h.0.take(k),
        }
    }
}

/// Stops the builder thread when the last executor is gone.
pub struct Handle(Arc<Ring>);

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Prompts ahead ({} slots)", self.0.slots.len())
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.lock_state().stop = true;
        self.0.cond.notify_all();
    }
}

struct State {
    /// Releases below this were taken (the highest taken + 1).
    taken: usize,
    stop: bool,
}

struct Ring {
    requests: Requests,
    /// Release `k` in slot `k mod window`, with `k`.
    slots: Vec<Mutex<Option<(usize, SpecRef)>>>,
    state: Mutex<State>,
    cond: Condvar,
}

impl Ring {
    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn slot(&self, k: usize) -> Option<MutexGuard<'_, Option<(usize, SpecRef)>>> {
        let s = self.slots.get(k % self.slots.len())?;
        Some(s.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    fn position(&self, k: usize) -> usize {
        k % self.requests.len().max(1)
    }

    /// The builder: releases `0..end` in order, at most a window ahead of the last taken.
    fn fill(&self, end: usize) {
        let window = self.slots.len();
        for k in 0..end {
            {
                let mut st = self.lock_state();
                while !st.stop && k >= st.taken + window {
                    st = self.cond.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                if st.stop {
                    return;
                }
                if k < st.taken {
                    continue; // already taken (built on the spot)
                }
            }
            let Some(spec) = self.requests.spec(self.position(k)) else { return };
            if let Some(mut slot) = self.slot(k) {
                *slot = Some((k, spec));
            }
        }
    }

    fn take(&self, k: usize) -> Option<SpecRef> {
        let ready = self.slot(k).and_then(|mut slot| match slot.take() {
            Some((at, spec)) if at == k => Some(spec),
            other => {
                *slot = other;
                None
            }
        });
        {
            let mut st = self.lock_state();
            st.taken = st.taken.max(k + 1);
        }
        self.cond.notify_all();
        ready.or_else(|| self.requests.spec(self.position(k)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use servebench_core::{Prompt, RequestSource, RequestSpec};

    #[derive(Debug)]
    struct Numbers(usize);

    impl RequestSource for Numbers {
        fn len(&self) -> usize {
            self.0
        }
        fn lengths(&self, i: usize) -> (u32, u32) {
            (i as u32 + 1, 1)
        }
        fn build(&self, i: usize) -> RequestSpec {
            RequestSpec::new(i as u64, Prompt::Text(Arc::from(format!("p{i}"))), i as u32 + 1, 1)
        }
    }

    fn text(s: &SpecRef) -> String {
        s.prompt.text().unwrap().to_string()
    }

    #[test]
    fn prompts_built_ahead_are_the_requests_in_order_and_out_of_order() {
        let lazy = Requests::lazy(Arc::new(Numbers(50)));
        let p = Prompts::new(&lazy, Some(50), 4);
        assert!(matches!(p, Prompts::Ahead(_)));
        // In order, with the builder given time to run ahead now and then.
        for k in 0..20 {
            if k % 5 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            assert_eq!(text(&p.take(k).unwrap()), format!("p{k}"));
        }
        // Skipping ahead and coming back: built on the spot, still right.
        assert_eq!(text(&p.take(40).unwrap()), "p40");
        assert_eq!(text(&p.take(21).unwrap()), "p21");
        assert_eq!(p.take(49).unwrap().index, 49);
        drop(p);
    }

    #[test]
    fn a_closed_loop_cycles_through_the_prompts() {
        let lazy = Requests::lazy(Arc::new(Numbers(3)));
        let p = Prompts::new(&lazy, None, 2);
        let got: Vec<String> = (0..7).map(|k| text(&p.take(k).unwrap())).collect();
        assert_eq!(got, ["p0", "p1", "p2", "p0", "p1", "p2", "p0"]);
        let held = Prompts::new(&Requests::from(lazy.into_workload()), None, 2);
        assert!(matches!(held, Prompts::Direct(_)));
        assert_eq!(text(&held.take(4).unwrap()), "p1");
    }

    #[test]
    fn window_is_bounded_by_bytes_and_clamped() {
        assert_eq!(window_for(8192.0), (32 << 20) / (8192 * 8));
        assert_eq!(window_for(1.0), WINDOW_MAX);
        assert_eq!(window_for(1e9), WINDOW_MIN);
    }
}
