//! The cron ticker of `schedule` bindings: parsed crontabs (see `addon_core::hook_config::Crontab`)
//! started and stopped per id, evaluated in UTC, firing ids into a channel on tokio time.

use std::sync::Arc;
use std::time::Duration;

use addon_core::hook_config::{Crontab, UnixTime};
use chrono::{DateTime, Utc};
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
    pub fn new(clock: Arc<dyn WallClock>, events: mpsc::Sender<Id>) -> Self {
        let (commands, receiver) = mpsc::unbounded_channel();
        let driver = tokio::spawn(drive(clock, receiver, events));
        Self { commands, driver }
    }

    /// Starts (or restarts with a new crontab) the schedule of `id`.
    pub fn start(&self, id: Id, crontab: Crontab) {
        let _ = self.commands.send(Command::Start(id, crontab));
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

async fn drive<Id>(
    clock: Arc<dyn WallClock>,
    mut commands: mpsc::UnboundedReceiver<Command<Id>>,
    events: mpsc::Sender<Id>,
) where
    Id: Clone + PartialEq + std::fmt::Debug,
{
    let mut entries: Vec<Entry<Id>> = Vec::new();
    loop {
        let earliest = entries.iter().filter_map(|entry| entry.next).min();
        let sleep_for = earliest.map(|at| (at - clock.now()).to_std().unwrap_or(Duration::ZERO));
        tokio::select! {
            biased;
            command = commands.recv() => match command {
                None => return,
                Some(command) => apply(&mut entries, command, clock.now()),
            },
            () = sleep_or_forever(sleep_for) => {
                let now = clock.now();
                for entry in entries.iter_mut().filter(|entry| entry.next.is_some_and(|at| at <= now)) {
                    if events.send(entry.id.clone()).await.is_err() {
                        return;
                    }
                    entry.next = next_fire(&entry.crontab, now);
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

fn apply<Id>(entries: &mut Vec<Entry<Id>>, command: Command<Id>, now: DateTime<Utc>)
where
    Id: PartialEq + std::fmt::Debug,
{
    match command {
        Command::Start(id, crontab) => {
            let next = next_fire(&crontab, now);
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

/// The first fire time after `now`, in whole UTC seconds.
fn next_fire(crontab: &Crontab, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let next = crontab
        .next_after(&UnixTime(now.timestamp()))
        .and_then(|t| DateTime::from_timestamp(t.0, 0));
    if next.is_none() {
        tracing::warn!(crontab = crontab.source(), "schedule will not fire again");
    }
    next
}

#[cfg(test)]
mod tests;
