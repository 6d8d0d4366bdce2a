//! LEB128 varints and zigzag signs: the byte encodings shared by the compact records
//! (`compact_records`) and the compact trace rows of `servebench-data`.

/// Appends `v` as an unsigned LEB128 varint (1 byte below 128, at most 10).
pub fn push_uint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads the varint at `*at` and moves `*at` past it; `None` when the bytes end first or it
/// runs longer than a `u64`.
pub fn read_uint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// A signed value as an unsigned one that is small when `v` is near 0 (0, −1, 1, −2 → 0, 1, 2, 3).
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Appends `values` as the zigzag varints of their differences (the first from 0), in wrapping
/// arithmetic so that every `u64` sequence round-trips: ascending runs cost a byte a value.
pub fn push_deltas(out: &mut Vec<u8>, values: impl IntoIterator<Item = u64>) {
    let mut prev = 0u64;
    for v in values {
        push_uint(out, zigzag(v.wrapping_sub(prev) as i64));
        prev = v;
    }
}

/// The values [`push_deltas`] wrote into `bytes` (which holds them and nothing else).
pub fn deltas(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    let (mut at, mut prev) = (0usize, 0u64);
    std::iter::from_fn(move || {
        let d = read_uint(bytes, &mut at)?;
        prev = prev.wrapping_add(unzigzag(d) as u64);
        Some(prev)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varints_have_the_leb128_bytes() {
        let mut out = Vec::new();
        for v in [0u64, 127, 128, 300, u64::MAX] {
            push_uint(&mut out, v);
        }
        assert_eq!(&out[..5], &[0x00, 0x7f, 0x80, 0x01, 0xac]);
        assert_eq!(out.len(), 1 + 1 + 2 + 2 + 10);
        let mut at = 0;
        let read: Vec<u64> = std::iter::from_fn(|| read_uint(&out, &mut at)).collect();
        assert_eq!(read, vec![0, 127, 128, 300, u64::MAX]);
        // Cut short: no value, not a wrong one.
        assert_eq!(read_uint(&[0x80], &mut 0), None);
    }

    #[test]
    fn zigzag_maps_small_magnitudes_to_small_codes() {
        assert_eq!([0, -1, 1, -2, i64::MIN, i64::MAX].map(zigzag), [0, 1, 2, 3, u64::MAX, u64::MAX - 1]);
    }

    #[test]
    fn an_ascending_run_costs_a_byte_a_value() {
        let mut out = Vec::new();
        push_deltas(&mut out, 1000..1100);
        assert_eq!(out.len(), 2 + 99);
    }

    proptest! {
        #[test]
        fn every_u64_sequence_round_trips(values in proptest::collection::vec(any::<u64>(), 0..40)) {
            let mut out = Vec::new();
            push_deltas(&mut out, values.iter().copied());
            prop_assert_eq!(deltas(&out).collect::<Vec<_>>(), values);
        }

        #[test]
        fn zigzag_round_trips(v in any::<i64>()) {
            prop_assert_eq!(unzigzag(zigzag(v)), v);
        }
    }
}
