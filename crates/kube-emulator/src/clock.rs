//! Wall-clock timestamps in the RFC 3339 form Kubernetes uses, and random-looking UIDs.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Now as `2026-01-02T03:04:05Z`.
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_rfc3339(secs)
}

/// Seconds since the epoch as an RFC 3339 UTC timestamp.
pub fn format_rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil conversion.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Seconds since the epoch of an RFC 3339 UTC timestamp (`2026-01-02T03:04:05Z`; fractions of a
/// second are ignored, offsets other than `Z` are not understood).
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    let (date, time) = text.split_once('T')?;
    let mut ymd = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    let clock = time.strip_suffix('Z')?.get(..8)?;
    let mut hms = clock.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (h, min, s) = (hms.next()??, hms.next()??, hms.next()??);
    let secs = days_from_civil(y, m, d) * 86_400 + h * 3600 + min * 60 + s;
    u64::try_from(secs).ok()
}

/// Howard Hinnant's civil-to-days conversion.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// kubectl-style age of a timestamp (`42s`, `5m`, `3h`, `2d`), `<unknown>` if unparseable.
pub fn age(timestamp: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    match parse_rfc3339(timestamp) {
        Some(then) => human_duration(now.saturating_sub(then)),
        None => "<unknown>".into(),
    }
}

fn human_duration(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs}s"),
        120..7200 => format!("{}m", secs / 60),
        7200..172_800 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// 64 unpredictable bits (a randomly keyed hash of a counter and the time).
pub fn random_u64() -> u64 {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    std::collections::hash_map::RandomState::new().hash_one((n, nanos))
}

/// A version-4-shaped UUID string.
pub fn new_uid() -> String {
    let (a, b) = (random_u64(), random_u64());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0x0fff,
        ((b >> 48) & 0x3fff) | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

/// Five lowercase alphanumerics, as `generateName` appends.
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut n = random_u64();
    (0..5)
        .map(|_| {
            let c = ALPHABET[(n % ALPHABET.len() as u64) as usize] as char;
            n /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_seconds_format_as_utc_dates() {
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(1_709_251_199), "2024-02-29T23:59:59Z");
    }

    #[test]
    fn timestamps_parse_back_and_ages_read_like_kubectl() {
        assert_eq!(parse_rfc3339("2024-02-29T23:59:59Z"), Some(1_709_251_199));
        assert_eq!(
            parse_rfc3339("2024-02-29T23:59:59.123Z"),
            Some(1_709_251_199)
        );
        assert_eq!(parse_rfc3339("garbage"), None);
        assert_eq!(human_duration(59), "59s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 86_400), "3d");
        assert_eq!(age(&now_rfc3339()), "0s");
    }

    #[test]
    fn uids_are_distinct_and_uuid_shaped() {
        let (a, b) = (new_uid(), new_uid());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
    }
}
