//! Tests of crontab parsing and of the ticker under paused tokio time.

use super::*;
use chrono::TimeZone;

fn cron(text: &str) -> Crontab {
    Crontab::parse(text).unwrap()
}

struct Ticker {
    clock: TokioClock,
    scheduler: Scheduler<&'static str>,
    events: mpsc::Receiver<&'static str>,
}

fn ticker() -> Ticker {
    let clock = TokioClock::starting_at(Utc.with_ymd_and_hms(2026, 1, 1, 10, 0, 0).unwrap());
    let (sender, events) = mpsc::channel(16);
    let scheduler = Scheduler::new(Arc::new(clock), sender);
    Ticker {
        clock,
        scheduler,
        events,
    }
}

impl Ticker {
    /// The next id and the wall time it fired at.
    async fn next(&mut self) -> (&'static str, String) {
        let id = self.events.recv().await.unwrap();
        (id, self.clock.now().format("%H:%M:%S").to_string())
    }
}

#[tokio::test(start_paused = true)]
async fn ids_fire_at_their_crontab_times() {
    let mut ticker = ticker();
    ticker.scheduler.start("every-20s", cron("*/20 * * * * *"));
    ticker.scheduler.start("every-minute", cron("* * * * *"));
    let mut fired = Vec::new();
    for _ in 0..5 {
        fired.push(ticker.next().await);
    }
    let fired: Vec<(&str, &str)> = fired.iter().map(|(id, at)| (*id, at.as_str())).collect();
    assert_eq!(
        fired,
        [
            ("every-20s", "10:00:20"),
            ("every-20s", "10:00:40"),
            ("every-20s", "10:01:00"),
            ("every-minute", "10:01:00"),
            ("every-20s", "10:01:20"),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn every_fires_at_fixed_intervals_from_the_start() {
    let mut ticker = ticker();
    ticker.scheduler.start("x", cron("@every 90s"));
    assert_eq!(ticker.next().await.1, "10:01:30");
    assert_eq!(ticker.next().await.1, "10:03:00");
}

#[tokio::test(start_paused = true)]
async fn a_stopped_id_no_longer_fires() {
    let mut ticker = ticker();
    ticker.scheduler.start("module-a", cron("*/10 * * * * *"));
    ticker.scheduler.start("module-b", cron("*/15 * * * * *"));
    assert_eq!(ticker.next().await, ("module-a", "10:00:10".to_string()));
    ticker.scheduler.stop("module-a");
    assert_eq!(ticker.next().await, ("module-b", "10:00:15".to_string()));
    assert_eq!(ticker.next().await, ("module-b", "10:00:30".to_string()));
    ticker.scheduler.stop_all();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(ticker.events.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn restarting_an_id_replaces_its_crontab() {
    let mut ticker = ticker();
    ticker.scheduler.start("x", cron("@hourly"));
    ticker.scheduler.start("x", cron("*/5 * * * * *"));
    assert_eq!(ticker.next().await, ("x", "10:00:05".to_string()));
}
