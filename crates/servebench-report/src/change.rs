//! Relative change between two values, as every report prints it: never `inf%` or `NaN%`.
//!
//! - `a → b` with `a ≠ 0`: `(b − a) / |a| · 100`;
//! - `0 → 0`: 0 % (nothing changed);
//! - `0 → b ≠ 0`, or a non-finite value on either side: undefined (`None`, printed "–").

/// The change from `a` to `b` in percent, `None` when undefined.
pub fn change_percent(a: f64, b: f64) -> Option<f64> {
    if !a.is_finite() || !b.is_finite() {
        return None;
    }
    if a == 0.0 {
        return (b == 0.0).then_some(0.0);
    }
    let c = (b - a) / a.abs() * 100.0;
    c.is_finite().then_some(c)
}

/// `+1.25%`, `0.00%` (no sign for no change) or `–` when undefined.
pub fn format_change(change: Option<f64>, decimals: usize) -> String {
    match change {
        // No "-0.00%": changes that round to zero print unsigned.
        Some(c) if format!("{:.decimals$}", c.abs()).bytes().all(|b| b == b'0' || b == b'.') => {
            format!("{:.decimals$}%", 0.0)
        }
        Some(c) => format!("{c:+.decimals$}%"),
        None => "–".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_to_zero_is_no_change_and_zero_to_x_is_undefined() {
        assert_eq!(change_percent(0.0, 0.0), Some(0.0));
        assert_eq!(change_percent(0.0, 3.0), None);
        assert_eq!(change_percent(2.0, 3.0), Some(50.0));
        assert_eq!(change_percent(-2.0, -3.0), Some(-50.0));
        assert_eq!(change_percent(f64::NAN, 1.0), None);
        assert_eq!(change_percent(1.0, f64::INFINITY), None);
        assert_eq!(change_percent(f64::MIN_POSITIVE, f64::MAX), None);
        assert_eq!(format_change(Some(0.0), 2), "0.00%");
        assert_eq!(format_change(Some(-0.001), 2), "0.00%");
        assert_eq!(format_change(Some(12.345), 2), "+12.35%");
        assert_eq!(format_change(Some(-5.0), 1), "-5.0%");
        assert_eq!(format_change(None, 2), "–");
    }
}
