//! Tests of crontab parsing and of the ticker under paused tokio time.

use super::*;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

fn next(crontab: &str, now: &str) -> DateTime<Utc> {
    Crontab::parse(crontab)
        .unwrap()
        .next_after(at(now), &Utc)
        .unwrap()
}

#[test]
fn five_field_crontabs_fire_on_minutes() {
    assert_eq!(
        next("*/5 * * * *", "2026-01-01T10:03:20Z"),
        at("2026-01-01T10:05:00Z")
    );
}

#[test]
fn six_field_crontabs_have_seconds_first() {
    assert_eq!(
        next("*/10 * * * * *", "2026-01-01T10:03:21Z"),
        at("2026-01-01T10:03:30Z")
    );
}

#[test]
fn nicknames_are_understood() {
    let now = "2026-01-01T10:03:21Z";
    assert_eq!(next("@hourly", now), at("2026-01-01T11:00:00Z"));
    assert_eq!(next("@daily", now), at("2026-01-02T00:00:00Z"));
    assert_eq!(next("@midnight", now), at("2026-01-02T00:00:00Z"));
    assert_eq!(next("@yearly", now), at("2027-01-01T00:00:00Z"));
}

#[test]
fn every_takes_a_go_duration() {
    assert_eq!(
        next("@every 1m30s", "2026-01-01T10:00:00.250Z"),
        at("2026-01-01T10:01:30Z")
    );
    assert_eq!(
        next("@every 1.5h", "2026-01-01T10:00:00Z"),
        at("2026-01-01T11:30:00Z")
    );
    assert_eq!(
        next("@every 500ms", "2026-01-01T10:00:00Z"),
        at("2026-01-01T10:00:00.500Z")
    );
}

#[test]
fn invalid_crontabs_are_rejected() {
    for crontab in [
        "* * *",
        "61 * * * *",
        "@every",
        "@every 0s",
        "@every 5x",
        "* * * * * * 2030",
    ] {
        let error = Crontab::parse(crontab).unwrap_err();
        assert_eq!(error.category(), "invalid_crontab", "{crontab}");
    }
}

#[test]
fn crontabs_are_read_in_the_given_time_zone() {
    let plus_two = chrono::FixedOffset::east_opt(2 * 3600).unwrap();
    let crontab = Crontab::parse("0 3 * * *").unwrap();
    let next = crontab
        .next_after(at("2026-01-01T00:00:00Z"), &plus_two)
        .unwrap();
    assert_eq!(next, at("2026-01-01T01:00:00Z"));
}

struct Ticker {
    clock: TokioClock,
    scheduler: Scheduler<&'static str>,
    events: mpsc::Receiver<&'static str>,
}

fn ticker() -> Ticker {
    let clock = TokioClock::starting_at(Utc.with_ymd_and_hms(2026, 1, 1, 10, 0, 0).unwrap());
    let (sender, events) = mpsc::channel(16);
    let scheduler = Scheduler::new(Arc::new(clock), Utc, sender);
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
    ticker
        .scheduler
        .start("every-20s", "*/20 * * * * *")
        .unwrap();
    ticker.scheduler.start("every-minute", "* * * * *").unwrap();
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
    ticker.scheduler.start("x", "@every 90s").unwrap();
    assert_eq!(ticker.next().await.1, "10:01:30");
    assert_eq!(ticker.next().await.1, "10:03:00");
}

#[tokio::test(start_paused = true)]
async fn a_stopped_id_no_longer_fires() {
    let mut ticker = ticker();
    ticker
        .scheduler
        .start("module-a", "*/10 * * * * *")
        .unwrap();
    ticker
        .scheduler
        .start("module-b", "*/15 * * * * *")
        .unwrap();
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
    ticker.scheduler.start("x", "@hourly").unwrap();
    ticker.scheduler.start("x", "*/5 * * * * *").unwrap();
    assert_eq!(ticker.next().await, ("x", "10:00:05".to_string()));
}

#[tokio::test(start_paused = true)]
async fn an_invalid_crontab_is_refused_at_start() {
    let ticker = ticker();
    assert!(ticker.scheduler.start("x", "not a crontab").is_err());
}
