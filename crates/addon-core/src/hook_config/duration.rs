//! Go-style duration strings (`30s`, `1m30s`, `1.5h`, `250ms`) used by `settings` and `@every`.

use std::time::Duration;

/// A Go duration string that does not parse; each message names the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration \"{text}\"")]
    Invalid { text: String },
    #[error("missing unit in duration \"{text}\"")]
    MissingUnit { text: String },
    #[error("unknown unit \"{unit}\" in duration \"{text}\"")]
    UnknownUnit { unit: String, text: String },
}

/// Parses a non-negative Go duration. `0` alone is allowed; otherwise every number needs a unit
/// (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`).
pub fn parse_go_duration(text: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid {
        text: text.to_string(),
    };
    let s = text.strip_prefix('+').unwrap_or(text);
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() || s.starts_with('-') {
        return Err(invalid());
    }
    let mut total_nanos: f64 = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(number_len);
        if number.is_empty() || number == "." {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let nanos_per_unit = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => {
                return Err(DurationError::MissingUnit {
                    text: text.to_string(),
                });
            }
            other => {
                return Err(DurationError::UnknownUnit {
                    unit: other.to_string(),
                    text: text.to_string(),
                });
            }
        };
        total_nanos += value * nanos_per_unit;
        rest = next;
    }
    if !total_nanos.is_finite() || total_nanos > u64::MAX as f64 {
        return Err(invalid());
    }
    Ok(Duration::from_nanos(total_nanos as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_and_compound_durations_parse() {
        assert_eq!(parse_go_duration("3s").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_go_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(
            parse_go_duration("1.5h").unwrap(),
            Duration::from_secs(5400)
        );
        assert_eq!(
            parse_go_duration("250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(parse_go_duration("0").unwrap(), Duration::ZERO);
    }

    #[test]
    fn bad_durations_are_rejected_with_the_text() {
        for bad in ["", "30ks", "10", "-1s", "s", "1.2.3s"] {
            let err = parse_go_duration(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn duration_errors_say_what_is_wrong() {
        let message = |text: &str| parse_go_duration(text).unwrap_err().to_string();
        assert_eq!(message("10"), "missing unit in duration \"10\"");
        assert_eq!(message("30ks"), "unknown unit \"ks\" in duration \"30ks\"");
        assert_eq!(message("-1s"), "invalid duration \"-1s\"");
    }
}
