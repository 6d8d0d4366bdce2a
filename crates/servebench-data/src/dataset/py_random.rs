//! Python's `random` module as `vllm bench serve` uses it to order datasets: `random.seed(n)`
//! then `random.shuffle(entries)`, and `random.choice` to oversample. The same seed gives the
//! same order as vLLM, so both tools send the same prompts for the same flags.
//!
//! The generator is the 32-bit Mersenne Twister (MT19937) seeded as CPython seeds it from an
//! integer (`init_by_array` over the integer's 32-bit words, least significant first; 0 is one
//! zero word). CPython draws an index below `n` by taking `n.bit_length()` high bits of a word
//! and retrying while the draw is `>= n`, and shuffles from the last position down.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// CPython's `random.Random` state (only what dataset ordering needs).
#[derive(Clone)]
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
}

impl std::fmt::Debug for PyRandom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyRandom").field("index", &self.index).finish_non_exhaustive()
    }
}

impl PyRandom {
    /// `random.seed(seed)` for a non-negative integer seed.
    pub fn seed(seed: u64) -> Self {
        let (lo, hi) = (seed as u32, (seed >> 32) as u32);
        let key: &[u32] = if hi == 0 { &[lo] } else { &[lo, hi] };
        let mut r = PyRandom { mt: [0; N], index: N };
        r.init_by_array(key);
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..N {
            let prev = self.mt[i - 1];
            self.mt[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        self.index = N;
    }

    fn init_by_array(&mut self, key: &[u32]) {
        self.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = self.mt[i - 1];
            self.mt[i] =
                (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
        }
        self.mt[0] = 0x8000_0000;
    }

    fn generate(&mut self) {
        let mag = |y: u32| if y & 1 == 0 { 0 } else { MATRIX_A };
        for k in 0..N {
            let y = (self.mt[k] & UPPER_MASK) | (self.mt[(k + 1) % N] & LOWER_MASK);
            self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ mag(y);
        }
        self.index = 0;
    }

    /// The next 32-bit output (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.generate();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(k)` for `k` in 1..=64.
    fn bits(&mut self, k: u32) -> u64 {
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        // CPython fills words least significant first; the last word keeps its high bits.
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        low | (high << 32)
    }

    /// `_randbelow(n)`: a uniform index in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.bits(k);
            if r < n {
                return r as usize;
            }
        }
    }

    /// `random.shuffle(items)`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values printed by CPython 3 on this machine:
    // `random.seed(s); [random.getrandbits(32) for _ in range(3)]` and
    // `random.seed(s); x = list(range(n)); random.shuffle(x)`.

    #[test]
    fn outputs_match_cpythons_for_small_and_large_seeds() {
        for (seed, want) in REFERENCE_WORDS {
            let mut r = PyRandom::seed(*seed);
            let got: Vec<u32> = (0..3).map(|_| r.next_u32()).collect();
            assert_eq!(&got, want, "seed {seed}");
        }
    }

    #[test]
    fn shuffles_match_cpythons() {
        for (seed, n, want) in REFERENCE_SHUFFLES {
            let mut x: Vec<usize> = (0..*n).collect();
            PyRandom::seed(*seed).shuffle(&mut x);
            assert_eq!(&x, want, "seed {seed}, {n} items");
        }
    }

    #[test]
    fn choices_match_cpythons() {
        let mut r = PyRandom::seed(REFERENCE_CHOICES.0);
        let got: Vec<usize> = (0..REFERENCE_CHOICES.2.len()).map(|_| r.below(REFERENCE_CHOICES.1)).collect();
        assert_eq!(got, REFERENCE_CHOICES.2);
    }

    include!("py_random_reference.rs");
}
