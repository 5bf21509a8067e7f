//! jq's date functions as gojq has them: broken-down time arrays, `strftime`/`strptime` in UTC, epoch seconds as numbers.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc};

use super::super::{Flow, err};
use super::describe;
use crate::jq::value::Val;

pub fn now() -> f64 {
    let t = Utc::now();
    t.timestamp() as f64 + f64::from(t.timestamp_subsec_nanos()) / 1e9
}

fn epoch_to_time(v: f64) -> Option<DateTime<Utc>> {
    let secs = v.floor();
    let nanos = ((v - secs) * 1e9) as u32;
    Utc.timestamp_opt(secs as i64, nanos).single()
}

/// `[year, month0, day, hours, minutes, seconds (with fraction), weekday, yearday0]`.
fn time_to_array(t: &DateTime<Utc>) -> Val {
    let seconds = f64::from(t.second()) + f64::from(t.nanosecond()) / 1e9;
    Val::arr(vec![
        Val::Int(i64::from(t.year())),
        Val::Int(i64::from(t.month0())),
        Val::Int(i64::from(t.day())),
        Val::Int(i64::from(t.hour())),
        Val::Int(i64::from(t.minute())),
        Val::Float(seconds),
        Val::Int(i64::from(t.weekday().num_days_from_sunday())),
        Val::Int(i64::from(t.ordinal0())),
    ])
}

pub fn gmtime(v: &Val) -> Result<Val, Flow> {
    let x = v
        .as_f64()
        .ok_or_else(|| err(format!("gmtime cannot be applied to: {}", describe(v))))?;
    let t = epoch_to_time(x)
        .ok_or_else(|| err(format!("gmtime cannot be applied to: {}", describe(v))))?;
    Ok(time_to_array(&t))
}

/// A broken-down time array to a time, normalising out-of-range fields as Go's `time.Date`
/// does (month 12 is January of the next year).
fn array_to_time(a: &[Val]) -> Option<DateTime<Utc>> {
    let mut fields = [0i64; 6];
    let mut nanos = 0i64;
    for (i, x) in a.iter().take(6).enumerate() {
        if i == 5 {
            let s = x.as_f64()?;
            fields[5] = s.floor() as i64;
            nanos = ((s - s.floor()) * 1e9) as i64;
        } else {
            fields[i] = x.as_int()?;
        }
    }
    for x in a.iter().skip(6).take(2) {
        x.as_int()?;
    }
    let [year, month, day, hour, minute, second] = fields;
    let months = year.checked_mul(12)?.checked_add(month)?;
    let (y, m) = (months.div_euclid(12), months.rem_euclid(12));
    let base = NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, (m + 1) as u32, 1)?;
    let offset = (day - 1)
        .checked_mul(86_400)?
        .checked_add(hour.checked_mul(3600)?)?
        .checked_add(minute.checked_mul(60)?)?
        .checked_add(second)?;
    let dt: NaiveDateTime = base.and_hms_opt(0, 0, 0)?
        + chrono::Duration::try_seconds(offset)?
        + chrono::Duration::nanoseconds(nanos);
    Some(Utc.from_utc_datetime(&dt))
}

fn epoch(t: &DateTime<Utc>) -> Val {
    let secs = t.timestamp() as f64 + f64::from(t.timestamp_subsec_nanos()) / 1e9;
    Val::Float(secs)
}

pub fn mktime(v: &Val) -> Result<Val, Flow> {
    let Val::Arr(a) = v else {
        return Err(err(format!("mktime cannot be applied to: {}", describe(v))));
    };
    let t = array_to_time(a).ok_or_else(|| {
        err(format!(
            "mktime cannot be applied to: {}: invalid time array",
            describe(v)
        ))
    })?;
    Ok(epoch(&t))
}

pub fn strftime(v: &Val, fmt: &Val) -> Result<Val, Flow> {
    let fail = || {
        err(format!(
            "strftime({}) cannot be applied to: {}",
            describe(fmt),
            describe(v)
        ))
    };
    let Val::Str(f) = fmt else {
        return Err(fail());
    };
    let t = match v {
        Val::Arr(a) => array_to_time(a).ok_or_else(fail)?,
        n if n.is_number() => epoch_to_time(n.as_f64().unwrap_or(0.0)).ok_or_else(fail)?,
        _ => return Err(fail()),
    };
    let mut out = String::new();
    use std::fmt::Write;
    write!(out, "{}", t.format(f)).map_err(|_| fail())?;
    Ok(Val::str(out))
}

pub fn strptime(v: &Val, fmt: &Val) -> Result<Val, Flow> {
    let fail = || {
        err(format!(
            "strptime({}) cannot be applied to: {}",
            describe(fmt),
            describe(v)
        ))
    };
    let (Val::Str(s), Val::Str(f)) = (v, fmt) else {
        return Err(fail());
    };
    let t = parse_time(s, f).ok_or_else(fail)?;
    Ok(time_to_array(&t))
}

/// Parses `s` with the strftime format `f`; fields the format leaves out take Go's defaults
/// (1900-01-01 00:00:00 UTC), and `%z` accepts `Z`.
fn parse_time(s: &str, f: &str) -> Option<DateTime<Utc>> {
    use chrono::format::{Parsed, StrftimeItems, parse};
    let fixed;
    let s = match s.strip_suffix('Z') {
        Some(rest) if f.ends_with("%z") => {
            fixed = format!("{rest}+0000");
            fixed.as_str()
        }
        _ => s,
    };
    let mut p = Parsed::new();
    parse(&mut p, s, StrftimeItems::new(f)).ok()?;
    if p.year().is_none() && p.year_div_100().is_none() && p.timestamp().is_none() {
        p.set_year(1900).ok()?;
    }
    if p.month().is_none()
        && p.ordinal().is_none()
        && p.isoweek().is_none()
        && p.timestamp().is_none()
    {
        p.set_month(1).ok()?;
    }
    if p.day().is_none() && p.ordinal().is_none() && p.timestamp().is_none() {
        p.set_day(1).ok()?;
    }
    if p.hour_div_12().is_none() && p.timestamp().is_none() {
        p.set_hour(0).ok()?;
    }
    if p.minute().is_none() && p.timestamp().is_none() {
        p.set_minute(0).ok()?;
    }
    if p.offset().is_none() {
        p.set_offset(0).ok()?;
    }
    p.to_datetime().ok().map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_timestamps_round_trip() {
        let arr = strptime(
            &Val::str("2024-01-02T03:04:05Z"),
            &Val::str("%Y-%m-%dT%H:%M:%S%z"),
        )
        .unwrap();
        let secs = mktime(&arr).unwrap();
        assert_eq!(secs.as_f64(), Some(1_704_164_645.0));
        let text = strftime(&secs, &Val::str("%Y-%m-%dT%H:%M:%SZ")).unwrap();
        assert_eq!(text.as_str(), Some("2024-01-02T03:04:05Z"));
    }

    #[test]
    fn fields_left_out_take_gos_defaults() {
        let arr = strptime(&Val::str("12:30"), &Val::str("%H:%M")).unwrap();
        let text = strftime(&arr, &Val::str("%Y-%m-%d %H:%M")).unwrap();
        assert_eq!(text.as_str(), Some("1900-01-01 12:30"));
    }

    #[test]
    fn months_out_of_range_roll_over_like_go() {
        let arr = Val::arr(
            [2023, 12, 1, 0, 0, 0]
                .iter()
                .map(|i| Val::Int(*i))
                .collect(),
        );
        let t = strftime(&arr, &Val::str("%Y-%m-%d")).unwrap();
        assert_eq!(t.as_str(), Some("2024-01-01"));
    }
}
