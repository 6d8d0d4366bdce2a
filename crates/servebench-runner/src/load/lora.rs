//! LoRA adapters (`--lora-modules`, `--lora-assignment`): which adapter name each request (or,
//! in multi-turn, each conversation) sends as its `model`. The base model stays for the
//! tokenizer, `/v1/models`, `/tokenize`, the readiness check and warmups.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::config::load_options::{LoraAssignment, LoraConfig};

impl LoraConfig {
    /// The adapter index of each of `n` units (requests, or conversations in multi-turn): a
    /// pure function of `(n, modules, assignment, seed)`.
    pub fn assign(&self, n: usize, seed: u64) -> Vec<u32> {
        let m = self.modules.len().max(1) as u64;
        match self.assignment {
            LoraAssignment::RoundRobin => (0..n as u64).map(|i| (i % m) as u32).collect(),
            LoraAssignment::Random => {
                // Own stream: the key is the seed with a domain tag, so it is independent of
                // the arrival schedule's stream for the same seed.
                let mut key = [0u8; 32];
                key[..8].copy_from_slice(&seed.to_le_bytes());
                key[8..12].copy_from_slice(b"lora");
                let mut rng = ChaCha20Rng::from_seed(key);
                (0..n).map(|_| (rng.next_u64() % m) as u32).collect()
            }
        }
    }

    /// The adapter name of each of `n` units.
    pub fn names(&self, n: usize, seed: u64) -> Vec<&str> {
        self.assign(n, seed).into_iter().map(|i| self.modules[i as usize].as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn cfg(a: LoraAssignment) -> LoraConfig {
        LoraConfig { modules: vec!["a".into(), "b".into(), "c".into()], assignment: a }
    }

    #[test]
    fn round_robin_cycles() {
        assert_eq!(cfg(LoraAssignment::RoundRobin).names(5, 9), vec!["a", "b", "c", "a", "b"]);
    }

    #[test]
    fn random_is_seeded_and_deterministic() {
        let c = cfg(LoraAssignment::Random);
        let a = c.assign(300, 1);
        assert_eq!(a, c.assign(300, 1));
        assert_ne!(a, c.assign(300, 2));
        // Every adapter is used, roughly uniformly.
        for k in 0..3u32 {
            let n = a.iter().filter(|&&x| x == k).count();
            assert!((60..140).contains(&n), "adapter {k} used {n} times of 300");
        }
        // Pinned: the stream is ChaCha20 keyed by the seed, the same everywhere.
        assert_eq!(c.assign(8, 0), vec![0, 1, 0, 2, 2, 1, 0, 2]);
    }

    #[test]
    fn parse_and_validate() {
        assert_eq!(LoraAssignment::parse("round-robin").unwrap(), LoraAssignment::RoundRobin);
        assert!(LoraAssignment::parse("zigzag").is_err());
        assert!(LoraConfig { modules: vec![], assignment: LoraAssignment::Random }.validate().is_err());
        assert!(LoraConfig { modules: vec![" ".into()], assignment: LoraAssignment::Random }
            .validate()
            .is_err());
    }
}
