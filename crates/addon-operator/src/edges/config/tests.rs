//! Tests of the file config store against the real file system watcher.

use super::*;

const DEBOUNCE: Duration = Duration::from_millis(50);
const NO_EVENT_WAIT: Duration = Duration::from_millis(600);

async fn next_event(events: &mut broadcast::Receiver<ConfigEvent>) -> ConfigEvent {
    tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("no config event within 10 s")
        .unwrap()
}

/// The text of the next event, which must be a change by others.
async fn next_text(events: &mut broadcast::Receiver<ConfigEvent>) -> String {
    match next_event(events).await {
        ConfigEvent::Changed { text, .. } => text.unwrap(),
        other => panic!("expected a change, got {other:?}"),
    }
}

async fn assert_no_event(events: &mut broadcast::Receiver<ConfigEvent>) {
    if let Ok(event) = tokio::time::timeout(NO_EVENT_WAIT, events.recv()).await {
        panic!("unexpected event {event:?}");
    }
}

/// Replaces the whole text, as a save of a full rendering would.
async fn save(store: &FileConfigStore, text: &str) -> Result<(u64, String), ConfigFileError> {
    let text = text.to_string();
    store.apply(move |_| Ok(text.clone())).await
}

async fn store_with(text: &str) -> (tempfile::TempDir, PathBuf, FileConfigStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, text).unwrap();
    let store = FileConfigStore::open(&path, DEBOUNCE).await.unwrap();
    (dir, path, store)
}

#[tokio::test]
async fn load_returns_the_file_text() {
    let (_dir, _path, store) = store_with("global: {}\n").await;
    assert_eq!(store.load().await.unwrap().as_deref(), Some("global: {}\n"));
}

#[tokio::test]
async fn an_edit_in_place_is_announced_once() {
    let (_dir, path, store) = store_with("a: 1\n").await;
    let mut events = store.subscribe();
    std::fs::write(&path, "a: 2\n").unwrap();
    assert_eq!(next_text(&mut events).await, "a: 2\n");
    assert_no_event(&mut events).await;
}

#[tokio::test]
async fn a_replacement_by_rename_is_announced() {
    let (dir, path, store) = store_with("a: 1\n").await;
    let mut events = store.subscribe();
    let swap = dir.path().join(".config.yaml.swp");
    std::fs::write(&swap, "a: 3\n").unwrap();
    std::fs::rename(&swap, &path).unwrap();
    assert_eq!(next_text(&mut events).await, "a: 3\n");
}

#[tokio::test]
async fn touching_the_file_without_changing_it_is_not_announced() {
    let (_dir, path, store) = store_with("a: 1\n").await;
    let mut events = store.subscribe();
    std::fs::write(&path, "a: 1\n").unwrap();
    assert_no_event(&mut events).await;
}

#[tokio::test]
async fn our_own_save_is_not_announced_but_a_later_edit_is() {
    let (_dir, path, store) = store_with("a: 1\n").await;
    let mut events = store.subscribe();
    save(&store, "a: 5\n").await.unwrap();
    assert!(matches!(
        next_event(&mut events).await,
        ConfigEvent::OwnWrite
    ));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a: 5\n");
    assert_no_event(&mut events).await;
    std::fs::write(&path, "a: 6\n").unwrap();
    assert_eq!(next_text(&mut events).await, "a: 6\n");
}

#[tokio::test]
async fn a_file_created_after_start_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    let store = FileConfigStore::open(&path, DEBOUNCE).await.unwrap();
    let mut events = store.subscribe();
    assert_eq!(store.load().await.unwrap(), None);
    std::fs::write(&path, "b: 1\n").unwrap();
    assert_eq!(next_text(&mut events).await, "b: 1\n");
}

#[test]
fn a_failed_write_leaves_the_old_file_intact_and_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, "old\n").unwrap();
    let error =
        write_atomically(&path, "new\n", |_| Err(std::io::Error::other("disk full"))).unwrap_err();
    assert_eq!(error.to_string(), "disk full");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn an_atomic_write_keeps_the_file_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, "old\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    write_atomically(&path, "new\n", |_| Ok(())).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
}

#[tokio::test]
async fn a_failed_save_is_an_error_and_forgets_the_unsaved_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, "a: 1\n").unwrap();
    let store = FileConfigStore::open(&path, DEBOUNCE).await.unwrap();
    let mut events = store.subscribe();
    // A directory in the file's place makes the rename fail.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("keep"), "x").unwrap();
    let error = save(&store, "a: 2\n").await.unwrap_err();
    assert_eq!(error.category(), "config_read");
    std::fs::remove_dir_all(&path).unwrap();
    std::fs::write(&path, "a: 2\n").unwrap();
    assert_eq!(next_text(&mut events).await, "a: 2\n");
}

#[tokio::test]
async fn constant_activity_in_the_directory_does_not_delay_a_change_forever() {
    let (dir, path, store) = store_with("a: 1\n").await;
    let mut events = store.subscribe();
    let noise = dir.path().join("noise.log");
    let writer = tokio::spawn(async move {
        for i in 0..200 {
            std::fs::write(&noise, format!("{i}")).unwrap();
            tokio::time::sleep(DEBOUNCE / 5).await;
        }
    });
    std::fs::write(&path, "a: 7\n").unwrap();
    let started = std::time::Instant::now();
    assert_eq!(next_text(&mut events).await, "a: 7\n");
    assert!(started.elapsed() < DEBOUNCE * 40, "{:?}", started.elapsed());
    writer.abort();
}

#[tokio::test]
async fn a_save_edits_the_current_text_and_only_its_echo_is_reported() {
    let (_dir, path, store) = store_with("a: 1\n").await;
    let mut events = store.subscribe();
    let (version, text) = store
        .apply(|current| Ok(format!("{current}b: 2\n")))
        .await
        .unwrap();
    assert_eq!(text, "a: 1\nb: 2\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert!(matches!(
        next_event(&mut events).await,
        ConfigEvent::OwnWrite
    ));
    assert_no_event(&mut events).await;
    std::fs::write(&path, "a: 9\n").unwrap();
    match next_event(&mut events).await {
        ConfigEvent::Changed { version: v, text } => {
            assert!(v > version);
            assert_eq!(text.unwrap(), "a: 9\n");
        }
        other => panic!("expected a change, got {other:?}"),
    }
}

#[tokio::test]
async fn an_edit_landing_between_read_and_rename_is_kept() {
    let (_dir, path, store) = store_with("a: 1\n").await;
    let edits = std::sync::atomic::AtomicUsize::new(0);
    let (_, text) = store
        .apply(|current| {
            if edits.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                std::fs::write(&path, "a: 1\nuser: 1\n").unwrap();
            }
            Ok(format!("{current}ours: 1\n"))
        })
        .await
        .unwrap();
    assert_eq!(text, "a: 1\nuser: 1\nours: 1\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[tokio::test]
async fn text_that_is_not_utf8_is_reported_once() {
    let (_dir, path, store) = store_with("a: 1\n").await;
    let mut events = store.subscribe();
    std::fs::write(&path, b"a: \xff\xfe\n").unwrap();
    match next_event(&mut events).await {
        ConfigEvent::Changed { text: Err(e), .. } => assert_eq!(e.category(), "config_read"),
        other => panic!("expected an unusable text, got {other:?}"),
    }
    // Reading the file again (as the watcher or anyone else does) reports nothing more.
    let _ = store.load().await;
    let _ = std::fs::read(&path).unwrap();
    assert_no_event(&mut events).await;
}

#[tokio::test]
async fn a_fifo_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let opened = tokio::time::timeout(
        Duration::from_secs(5),
        FileConfigStore::open(&path, DEBOUNCE),
    )
    .await
    .expect("opening a FIFO does not block");
    let error = opened.err().expect("a FIFO is refused");
    assert!(error.to_string().contains("FIFO"), "{error}");
    assert!(error.to_string().contains("config.yaml"), "{error}");
}

#[test]
fn only_changes_of_the_file_itself_wake_the_watcher() {
    use notify::event::{AccessKind, CreateKind, ModifyKind, RenameMode};
    let name = std::ffi::OsStr::new("config.yaml");
    let event = |kind, paths: &[&str]| Event {
        kind,
        paths: paths.iter().map(PathBuf::from).collect(),
        attrs: Default::default(),
    };
    let file = "/etc/ao/config.yaml";
    assert!(!concerns_file(
        &event(EventKind::Access(AccessKind::Any), &[file]),
        Some(name)
    ));
    assert!(!concerns_file(
        &event(EventKind::Create(CreateKind::File), &["/etc/ao/other.log"]),
        Some(name)
    ));
    assert!(concerns_file(
        &event(EventKind::Create(CreateKind::File), &[file]),
        Some(name)
    ));
    assert!(concerns_file(
        &event(
            EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
            &["/etc/ao/.config-1.tmp", file]
        ),
        Some(name)
    ));
    assert!(concerns_file(
        &event(EventKind::Create(CreateKind::Any), &["/etc/ao/..data"]),
        Some(name)
    ));
}

#[test]
fn the_one_shot_reader_refuses_a_fifo_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let error = read_text(&path).unwrap_err();
    assert_eq!(error.category(), "config_read");
    assert!(error.to_string().contains("config.yaml"), "{error}");
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, "a: 1\n").unwrap();
    assert_eq!(read_text(&path).unwrap(), "a: 1\n");
}

#[tokio::test]
async fn the_watcher_reads_the_file_once_per_change_not_again_after_its_own_read() {
    let (_dir, path, store) = store_with("a: 1\n").await;
    let mut events = store.subscribe();
    std::fs::write(&path, "a: 2\n").unwrap();
    assert_eq!(next_text(&mut events).await, "a: 2\n");
    // Quiet for many debounce periods: a watcher woken by its own read would keep reading.
    tokio::time::sleep(DEBOUNCE * 20).await;
    let rereads = store.known.lock().await.rereads;
    assert!(rereads <= 2, "{rereads} re-reads for one edit");
}
