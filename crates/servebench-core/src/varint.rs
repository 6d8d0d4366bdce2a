//! LEB128 varints and zigzag signs: the byte encodings of the compact records
//! (`compact_records`: their fields, and the length before each record spilled to disk).

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

    proptest! {
        #[test]
        fn zigzag_round_trips(v in any::<i64>()) {
            prop_assert_eq!(unzigzag(zigzag(v)), v);
        }
    }
}
