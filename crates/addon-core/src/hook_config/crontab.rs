//! Crontab expressions of `schedule` bindings in the dialect of robfig/cron v2: 5 or 6 fields, descriptors, `@every`.

use std::cmp::Ordering;
use std::fmt;

use croner::parser::{CronParser, Seconds, Year};
use croner::{CivilDate, CivilDateTime, CivilTime, Cron, CronDateTime, Resolution, Weekday};

use super::duration::{DurationError, parse_go_duration};

/// A crontab that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum CrontabError {
    #[error("a crontab is at most {MAX_CRONTAB_BYTES} bytes, this one has {len}: {prefix}")]
    TooLong { len: usize, prefix: String },
    #[error("time zone '{zone}' is not supported: schedules are evaluated in UTC")]
    TimeZone { zone: String },
    #[error(transparent)]
    Every(#[from] DurationError),
    #[error("unrecognized descriptor: {descriptor}")]
    Descriptor { descriptor: String },
    #[error("Expected 5 or 6 fields, found {count}: {spec}")]
    FieldCount { count: usize, spec: String },
    #[error(transparent)]
    Fields(#[from] croner::errors::CronError),
}

/// A validated crontab with its source text. Next fire times are computed by [`Crontab::next_after`].
#[derive(Clone)]
pub struct Crontab {
    source: String,
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Cron(Box<Cron>),
    /// `@every <duration>`: whole seconds, at least one; shorter delays (`0s` included) are
    /// rounded up to one second, as robfig/cron does for the Go operator.
    Every(u64),
}

impl fmt::Debug for Crontab {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Crontab").field(&self.source).finish()
    }
}

impl PartialEq for Crontab {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl serde::Serialize for Crontab {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.source)
    }
}

impl Crontab {
    /// Parses `@every 10s`, `@hourly` and friends, `TZ=UTC ` prefixes, 5 fields (minute first) and
    /// 6 fields (second first). `?` means `*`.
    pub fn parse(source: &str) -> Result<Self, CrontabError> {
        if source.len() > MAX_CRONTAB_BYTES {
            return Err(CrontabError::TooLong {
                len: source.len(),
                prefix: crate::quote::prefix(source),
            });
        }
        let mut spec = source.trim();
        if let Some(rest) = spec
            .strip_prefix("TZ=")
            .or_else(|| spec.strip_prefix("CRON_TZ="))
        {
            let (zone, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            if !matches!(zone, "UTC" | "Etc/UTC" | "Z" | "GMT" | "Etc/GMT") {
                return Err(CrontabError::TimeZone {
                    zone: zone.to_string(),
                });
            }
            spec = tail.trim();
        }
        let kind = if let Some(duration) = spec.strip_prefix("@every ") {
            let d = parse_go_duration(duration.trim())?;
            Kind::Every(d.as_secs().max(1))
        } else {
            let pattern = match descriptor(spec) {
                Some(pattern) => pattern.to_string(),
                None if spec.starts_with('@') => {
                    return Err(CrontabError::Descriptor {
                        descriptor: crate::quote::prefix(spec),
                    });
                }
                None => six_fields(spec)?,
            };
            let parser = CronParser::builder()
                .seconds(Seconds::Required)
                .year(Year::Disallowed)
                .build();
            let cron = parser.parse(&pattern)?;
            Kind::Cron(Box::new(cron))
        };
        Ok(Self {
            source: source.to_string(),
            kind,
        })
    }

    /// The crontab as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The first fire time strictly after `after`, in the time zone of `T`. For `@every` this is
    /// `after` plus the interval.
    pub fn next_after<T: CronDateTime>(&self, after: &T) -> Option<T> {
        match &self.kind {
            Kind::Cron(cron) => cron.find_next_occurrence(after, false).ok(),
            Kind::Every(secs) => after.checked_add_seconds(i64::try_from(*secs).ok()?),
        }
    }
}

/// No valid crontab is longer (a 6-field spec listing every value of every field is ~400 bytes).
const MAX_CRONTAB_BYTES: usize = 1024;
fn descriptor(spec: &str) -> Option<&'static str> {
    Some(match spec {
        "@yearly" | "@annually" => "0 0 0 1 1 *",
        "@monthly" => "0 0 0 1 * *",
        "@weekly" => "0 0 0 * * 0",
        "@daily" | "@midnight" => "0 0 0 * * *",
        "@hourly" => "0 0 * * * *",
        _ => return None,
    })
}

fn six_fields(spec: &str) -> Result<String, CrontabError> {
    let fields: Vec<&str> = spec.split_whitespace().collect();
    let fields: Vec<String> = fields.iter().map(|f| f.replace('?', "*")).collect();
    match fields.len() {
        5 => Ok(format!("0 {}", fields.join(" "))),
        6 => Ok(fields.join(" ")),
        count => Err(CrontabError::FieldCount {
            count,
            spec: crate::quote::prefix(spec),
        }),
    }
}

/// A UTC instant in whole seconds since the Unix epoch; a time type for [`Crontab::next_after`]
/// that needs no date library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixTime(pub i64);

impl UnixTime {
    fn days_and_seconds(self) -> (i64, i64) {
        (self.0.div_euclid(86_400), self.0.rem_euclid(86_400))
    }
}

impl CronDateTime for UnixTime {
    fn to_civil(&self) -> CivilDateTime {
        let (days, secs) = self.days_and_seconds();
        let (y, m, d) = civil_from_days(days);
        let date = CivilDate::from_parts_unchecked(y as i32, m, d);
        let time = CivilTime::from_parts_unchecked(
            (secs / 3600) as u32,
            ((secs % 3600) / 60) as u32,
            (secs % 60) as u32,
        );
        CivilDateTime::new(date, time)
    }

    fn civil_weekday(&self) -> Weekday {
        let (days, _) = self.days_and_seconds();
        // 1970-01-01 was a Thursday (4 days after Sunday).
        Weekday::from_days_from_sunday((days + 4).rem_euclid(7) as u32)
    }

    fn resolve_civil(
        &self,
        civil: CivilDateTime,
    ) -> Result<Resolution<Self>, croner::errors::CronError> {
        let days = days_from_civil(i64::from(civil.year()), civil.month(), civil.day());
        let secs = i64::from(civil.hour()) * 3600
            + i64::from(civil.minute()) * 60
            + i64::from(civil.second());
        Ok(Resolution::Single(UnixTime(days * 86_400 + secs)))
    }

    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        self.0.checked_add(seconds).map(UnixTime)
    }

    fn cmp_instant(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0)
    }
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm).
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

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-03-01T12:00:00Z, a Friday.
    const NOON: UnixTime = UnixTime(1_709_294_400);

    fn next(spec: &str, from: UnixTime) -> i64 {
        Crontab::parse(spec).unwrap().next_after(&from).unwrap().0 - from.0
    }

    #[test]
    fn unix_time_round_trips_through_civil_dates() {
        let civil = NOON.to_civil();
        assert_eq!((civil.year(), civil.month(), civil.day()), (2024, 3, 1));
        assert_eq!(civil.hour(), 12);
        assert_eq!(NOON.civil_weekday(), Weekday::Friday);
        for t in [0, 86_399, 951_782_400, 4_102_444_800, -86_400] {
            let back = UnixTime(0).resolve_civil(UnixTime(t).to_civil()).unwrap();
            assert!(
                matches!(back, Resolution::Single(UnixTime(x)) if x == t),
                "{t}"
            );
        }
    }

    #[test]
    fn five_field_crontab_fires_on_minutes() {
        assert_eq!(next("*/5 * * * *", NOON), 300);
        assert_eq!(next("* * * * *", UnixTime(NOON.0 + 10)), 50);
    }

    #[test]
    fn schedule_with_six_fields_is_accepted_and_starts_with_seconds() {
        assert_eq!(next("*/10 * * * * *", NOON), 10);
        assert_eq!(next("0 */5 * * * *", NOON), 300);
    }

    #[test]
    fn descriptors_and_every_work() {
        assert_eq!(next("@hourly", NOON), 3600);
        assert_eq!(next("@daily", NOON), 12 * 3600);
        assert_eq!(next("@every 10s", NOON), 10);
        assert_eq!(next("@every 1m30s", NOON), 90);
        assert_eq!(next("@every 100ms", NOON), 1);
        assert_eq!(
            next("@every 0s", NOON),
            1,
            "rounded up like robfig/cron, never 0"
        );
        assert_eq!(next("@every 0", NOON), 1);
        assert_eq!(next("TZ=UTC */10 * * * * *", NOON), 10);
    }

    #[test]
    fn a_huge_crontab_is_rejected_with_a_short_quote() {
        let err = Crontab::parse(&"y".repeat(3_000_000))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("a crontab is at most 1024 bytes, this one has 3000000: yyy"));
        assert!(err.len() < 400, "{}", err.len());
        let err = Crontab::parse(&format!("{} 1", "x".repeat(1000)))
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("... (746 more bytes)"), "{err}");
    }

    #[test]
    fn question_mark_means_any() {
        assert_eq!(next("0 0 12 ? * *", UnixTime(NOON.0 - 1)), 1);
    }

    #[test]
    fn wrong_field_count_names_the_count() {
        let err = Crontab::parse("* * *").unwrap_err();
        assert_eq!(err.to_string(), "Expected 5 or 6 fields, found 3: * * *");
        assert!(Crontab::parse("* * * * * * *").is_err());
    }

    #[test]
    fn out_of_range_values_and_unknown_descriptors_are_rejected() {
        assert!(Crontab::parse("61 * * * *").is_err());
        assert!(Crontab::parse("@fortnightly").is_err());
        assert!(Crontab::parse("@every 10").is_err());
        assert!(Crontab::parse("TZ=Europe/Berlin * * * * *").is_err());
    }
}
