//! Small, stable, dependency-free hashing used for seeding: FNV-1a over request content and
//! SplitMix64 to derive independent streams. Stable across versions and platforms, so a seed
//! reproduces the same output forever.

/// FNV-1a 64-bit state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new(seed: u64) -> Self {
        Fnv(0xcbf2_9ce4_8422_2325 ^ mix(seed))
    }

    pub(crate) fn bytes(mut self, data: &[u8]) -> Self {
        for b in data {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    pub(crate) fn u64(self, v: u64) -> Self {
        self.bytes(&v.to_le_bytes())
    }

    pub(crate) fn finish(self) -> u64 {
        mix(self.0)
    }
}

/// SplitMix64 finalizer: a bijective mix of `x`.
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform-ish integer in `[lo, hi]` from `h` (modulo bias is negligible for our ranges).
pub(crate) fn in_range(h: u64, lo: u32, hi: u32) -> u32 {
    if hi <= lo {
        return lo;
    }
    let span = u64::from(hi - lo) + 1;
    lo + (h % span) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashing_is_stable_and_sensitive() {
        let a = Fnv::new(1).bytes(b"hello").finish();
        assert_eq!(a, Fnv::new(1).bytes(b"hello").finish());
        assert_ne!(a, Fnv::new(2).bytes(b"hello").finish());
        assert_ne!(a, Fnv::new(1).bytes(b"hellp").finish());
    }

    #[test]
    fn in_range_stays_in_bounds() {
        for i in 0..1000u64 {
            let v = in_range(mix(i), 3, 7);
            assert!((3..=7).contains(&v));
        }
        assert_eq!(in_range(123, 5, 5), 5);
        assert_eq!(in_range(123, 6, 5), 6);
    }
}
