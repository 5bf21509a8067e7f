//! The runtime `log.level` setting as upstream's runtime config keeps it: a lasting level and a
//! temporary one that reverts (`debug` lasts 30 minutes unless a duration is given).

use std::time::Duration;

/// How long `debug` stays in force when no duration is given (upstream's
/// `ForcedDurationForDebugLevel`).
pub const DEBUG_LEVEL_DURATION: Duration = Duration::from_secs(30 * 60);

/// The level in force: the lasting one, or a temporary one until it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelSetting {
    lasting: String,
    temporary: Option<Temporary>,
    generation: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Temporary {
    level: String,
    generation: u64,
}

/// A temporary level that must be expired after `after` by calling [`LevelSetting::expire`]
/// with `generation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    pub generation: u64,
    pub after: Duration,
}

impl LevelSetting {
    /// Starts with the level of `--log-level`.
    pub fn new(level: &str) -> Self {
        Self {
            lasting: level.to_string(),
            temporary: None,
            generation: 0,
        }
    }

    /// The level in force.
    pub fn current(&self) -> &str {
        self.temporary
            .as_ref()
            .map_or(self.lasting.as_str(), |t| t.level.as_str())
    }

    /// Sets `level`: for `duration` when given (non-zero), for [`DEBUG_LEVEL_DURATION`] when
    /// the level is `debug`, else lastingly (dropping any temporary level). Returns the expiry
    /// the caller must schedule, if any.
    pub fn set(&mut self, level: &str, duration: Option<Duration>) -> Option<Expiry> {
        let duration = duration
            .filter(|d| !d.is_zero())
            .or_else(|| (level == "debug").then_some(DEBUG_LEVEL_DURATION));
        self.generation = self.generation.wrapping_add(1);
        match duration {
            Some(after) => {
                self.temporary = Some(Temporary {
                    level: level.to_string(),
                    generation: self.generation,
                });
                Some(Expiry {
                    generation: self.generation,
                    after,
                })
            }
            None => {
                self.temporary = None;
                self.lasting = level.to_string();
                None
            }
        }
    }

    /// Ends the temporary level set as `generation`, if it is still the one in force; returns
    /// the level now in force when it changed.
    pub fn expire(&mut self, generation: u64) -> Option<String> {
        let temporary = self.temporary.as_ref()?;
        if temporary.generation != generation {
            return None;
        }
        let before = temporary.level.clone();
        self.temporary = None;
        (before != self.lasting).then(|| self.lasting.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_without_a_duration_reverts_after_thirty_minutes() {
        let mut setting = LevelSetting::new("info");
        let expiry = setting.set("debug", None).unwrap();
        assert_eq!(expiry.after, Duration::from_secs(1800));
        assert_eq!(setting.current(), "debug");
        assert_eq!(setting.expire(expiry.generation).as_deref(), Some("info"));
        assert_eq!(setting.current(), "info");
    }

    #[test]
    fn a_given_duration_makes_any_level_temporary() {
        let mut setting = LevelSetting::new("info");
        let expiry = setting.set("warn", Some(Duration::from_secs(5))).unwrap();
        assert_eq!(expiry.after, Duration::from_secs(5));
        assert_eq!(setting.current(), "warn");
        assert_eq!(setting.expire(expiry.generation).as_deref(), Some("info"));
    }

    #[test]
    fn a_lasting_level_replaces_the_temporary_one_and_its_expiry_does_nothing() {
        let mut setting = LevelSetting::new("info");
        let expiry = setting.set("debug", None).unwrap();
        assert_eq!(setting.set("error", None), None);
        assert_eq!(setting.expire(expiry.generation), None);
        assert_eq!(setting.current(), "error");
    }

    #[test]
    fn only_the_latest_temporary_level_expires() {
        let mut setting = LevelSetting::new("info");
        let first = setting.set("debug", None).unwrap();
        let second = setting.set("trace", Some(Duration::from_secs(60))).unwrap();
        assert_eq!(setting.expire(first.generation), None);
        assert_eq!(setting.current(), "trace");
        assert_eq!(setting.expire(second.generation).as_deref(), Some("info"));
    }
}
