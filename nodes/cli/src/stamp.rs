//! `YYYYMMDD-HHMMSS` (UTC) for the names of files and folders a command writes (recordings,
//! experiment results).

use std::time::{SystemTime, UNIX_EPOCH};

/// The stamp of now.
pub fn utc_stamp_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_stamp(secs)
}

/// `YYYYMMDD-HHMMSS` of a Unix time (UTC), from the days-to-civil-date algorithm (no calendar
/// crate for a file name).
pub fn utc_stamp(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_utc_calendar_times() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        // 2026-11-25 16:29:56 UTC
        assert_eq!(utc_stamp(1_795_624_196), "20261125-162956");
        // 2024-02-29 23:59:59 UTC (a leap day)
        assert_eq!(utc_stamp(1_709_251_199), "20240229-235959");
    }
}
