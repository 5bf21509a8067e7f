//! The cron ticker of `schedule` bindings: crontabs (5 or 6 fields, `@hourly`-style nicknames,
//! `@every <duration>`) started and stopped per id, firing ids into a channel on tokio time.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The wall-clock time, so that tests can drive it together with tokio's paused time.
pub trait WallClock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl WallClock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A wall clock that advances with `tokio::time` from a fixed start: under
/// `tokio::time::pause()` it moves only when the test advances time.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    wall_at_start: DateTime<Utc>,
    start: tokio::time::Instant,
}

impl TokioClock {
    pub fn starting_at(wall_at_start: DateTime<Utc>) -> Self {
        Self {
            wall_at_start,
            start: tokio::time::Instant::now(),
        }
    }
}

impl WallClock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed =
            chrono::TimeDelta::from_std(self.start.elapsed()).unwrap_or(chrono::TimeDelta::MAX);
        self.wall_at_start
            .checked_add_signed(elapsed)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }
}

/// A crontab that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("invalid crontab '{crontab}'")]
    ParseCrontab {
        crontab: String,
        #[source]
        source: croner::errors::CronError,
    },
    #[error("invalid crontab '{crontab}': '@every' needs a positive duration like '1m30s'")]
    ParseEvery { crontab: String },
    #[error("crontab '{crontab}' never fires after {after}")]
    FindNextTime {
        crontab: String,
        after: DateTime<Utc>,
    },
}

impl ScheduleError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::ParseCrontab { .. } | Self::ParseEvery { .. } => "invalid_crontab",
            Self::FindNextTime { .. } => "crontab_exhausted",
        }
    }
}

/// A parsed crontab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Crontab {
    Cron {
        text: String,
        cron: Box<Cron>,
    },
    /// `@every 1m30s`: a fixed interval from the previous fire (or the start).
    Every {
        text: String,
        interval: Duration,
    },
}

impl Crontab {
    /// Parses 5 fields, 6 fields with seconds first, nicknames (`@yearly`, `@annually`,
    /// `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`) and `@every <duration>`.
    pub fn parse(text: &str) -> Result<Self, ScheduleError> {
        let trimmed = text.trim();
        if let Some(duration) = trimmed.strip_prefix("@every ") {
            return match parse_go_duration(duration.trim()) {
                Some(interval) if !interval.is_zero() => Ok(Self::Every {
                    text: text.to_string(),
                    interval,
                }),
                _ => Err(ScheduleError::ParseEvery {
                    crontab: text.to_string(),
                }),
            };
        }
        let pattern = if trimmed.eq_ignore_ascii_case("@midnight") {
            "@daily"
        } else {
            trimmed
        };
        let parser = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build();
        let cron = parser
            .parse(pattern)
            .map_err(|source| ScheduleError::ParseCrontab {
                crontab: text.to_string(),
                source,
            })?;
        Ok(Self::Cron {
            text: text.to_string(),
            cron: Box::new(cron),
        })
    }

    pub fn text(&self) -> &str {
        match self {
            Self::Cron { text, .. } | Self::Every { text, .. } => text,
        }
    }

    /// The first fire time strictly after `now`, evaluated in the time zone `tz`.
    pub fn next_after<Tz: TimeZone>(
        &self,
        now: DateTime<Utc>,
        tz: &Tz,
    ) -> Result<DateTime<Utc>, ScheduleError> {
        let never = || ScheduleError::FindNextTime {
            crontab: self.text().to_string(),
            after: now,
        };
        match self {
            Self::Cron { cron, .. } => cron
                .find_next_occurrence(&now.with_timezone(tz), false)
                .map(|next| next.with_timezone(&Utc))
                .map_err(|_| never()),
            Self::Every { interval, .. } => {
                let interval = chrono::TimeDelta::from_std(*interval).map_err(|_| never())?;
                let next = now.checked_add_signed(interval).ok_or_else(never)?;
                // Like robfig/cron: whole-second intervals fire on whole seconds.
                Ok(if interval >= chrono::TimeDelta::seconds(1) {
                    next.with_nanosecond_truncated()
                } else {
                    next
                })
            }
        }
    }
}

trait TruncateNanos {
    fn with_nanosecond_truncated(self) -> Self;
}

impl TruncateNanos for DateTime<Utc> {
    fn with_nanosecond_truncated(self) -> Self {
        chrono::Timelike::with_nanosecond(&self, 0).unwrap_or(self)
    }
}

/// Go's `time.ParseDuration` subset used in crontabs: `1h30m`, `90s`, `1.5h`, `500ms`.
fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut total = Duration::ZERO;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit_seconds = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += Duration::try_from_secs_f64(number * unit_seconds).ok()?;
    }
    Some(total)
}

enum Command<Id> {
    Start(Id, Crontab),
    Stop(Id),
    StopAll,
}

/// Fires ids into a channel at their crontabs' times. Ids due at the same moment fire in the
/// order they were started. Dropping the scheduler stops it.
pub struct Scheduler<Id> {
    commands: mpsc::UnboundedSender<Command<Id>>,
    driver: JoinHandle<()>,
}

impl<Id> Drop for Scheduler<Id> {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl<Id: Clone + PartialEq + Send + std::fmt::Debug + 'static> Scheduler<Id> {
    /// Starts the (empty) scheduler; `tz` is the time zone crontabs are read in (`chrono::Local`
    /// like upstream, `Utc` in tests). Must be called inside a tokio runtime.
    pub fn new<Tz>(clock: Arc<dyn WallClock>, tz: Tz, events: mpsc::Sender<Id>) -> Self
    where
        Tz: TimeZone + Send + Sync + 'static,
        Tz::Offset: Send + Sync,
    {
        let (commands, receiver) = mpsc::unbounded_channel();
        let driver = tokio::spawn(drive(clock, tz, receiver, events));
        Self { commands, driver }
    }

    /// Starts (or restarts with a new crontab) the schedule of `id`.
    pub fn start(&self, id: Id, crontab: &str) -> Result<(), ScheduleError> {
        let crontab = Crontab::parse(crontab)?;
        let _ = self.commands.send(Command::Start(id, crontab));
        Ok(())
    }

    /// Stops the schedule of `id`; unknown ids are ignored.
    pub fn stop(&self, id: Id) {
        let _ = self.commands.send(Command::Stop(id));
    }

    pub fn stop_all(&self) {
        let _ = self.commands.send(Command::StopAll);
    }
}

struct Entry<Id> {
    id: Id,
    crontab: Crontab,
    next: Option<DateTime<Utc>>,
}

async fn drive<Id, Tz>(
    clock: Arc<dyn WallClock>,
    tz: Tz,
    mut commands: mpsc::UnboundedReceiver<Command<Id>>,
    events: mpsc::Sender<Id>,
) where
    Id: Clone + PartialEq + std::fmt::Debug,
    Tz: TimeZone,
{
    let mut entries: Vec<Entry<Id>> = Vec::new();
    loop {
        let earliest = entries.iter().filter_map(|entry| entry.next).min();
        let sleep_for = earliest.map(|at| (at - clock.now()).to_std().unwrap_or(Duration::ZERO));
        tokio::select! {
            biased;
            command = commands.recv() => match command {
                None => return,
                Some(command) => apply(&mut entries, command, clock.now(), &tz),
            },
            () = sleep_or_forever(sleep_for) => {
                let now = clock.now();
                for entry in entries.iter_mut().filter(|entry| entry.next.is_some_and(|at| at <= now)) {
                    if events.send(entry.id.clone()).await.is_err() {
                        return;
                    }
                    entry.next = next_fire(&entry.crontab, now, &tz);
                }
            }
        }
    }
}

async fn sleep_or_forever(duration: Option<Duration>) {
    match duration {
        Some(duration) => tokio::time::sleep(duration).await,
        None => std::future::pending().await,
    }
}

fn apply<Id, Tz>(entries: &mut Vec<Entry<Id>>, command: Command<Id>, now: DateTime<Utc>, tz: &Tz)
where
    Id: PartialEq + std::fmt::Debug,
    Tz: TimeZone,
{
    match command {
        Command::Start(id, crontab) => {
            let next = next_fire(&crontab, now, tz);
            match entries.iter_mut().find(|entry| entry.id == id) {
                Some(entry) => {
                    entry.crontab = crontab;
                    entry.next = next;
                }
                None => entries.push(Entry { id, crontab, next }),
            }
        }
        Command::Stop(id) => entries.retain(|entry| entry.id != id),
        Command::StopAll => entries.clear(),
    }
}

fn next_fire<Tz: TimeZone>(
    crontab: &Crontab,
    now: DateTime<Utc>,
    tz: &Tz,
) -> Option<DateTime<Utc>> {
    match crontab.next_after(now, tz) {
        Ok(next) => Some(next),
        Err(error) => {
            tracing::warn!(crontab = crontab.text(), %error, "schedule will not fire again");
            None
        }
    }
}

#[cfg(test)]
mod tests;
