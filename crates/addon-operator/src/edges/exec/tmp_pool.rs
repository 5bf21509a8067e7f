//! Hook files made ahead and removed behind: a background thread keeps a few empty private files
//! of each kind ready in the tmp dir and removes the files of finished runs, so a hook run's
//! critical path makes no change to the directory (no create, no unlink). Used by `start`; every
//! file is still unique to one run, exists empty when the run takes it, and is removed after it.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::tmp_files::{self, Content, TmpFileError, TmpFiles};

/// Ready files kept per kind. Runs in different queues may take files at the same time; the
/// thread refills every kind when it is woken.
const READY_PER_KIND: usize = 4;

/// Files handed back are removed when the next hook has been spawned (see [`TmpPool::wake`]), or
/// this long after the thread noticed them when no hook starts.
const IDLE_WORK_DELAY: Duration = Duration::from_millis(20);

/// While runs hold files, the thread looks for files handed back this often (a run hands its
/// files back without waking the thread: the next spawn does, or this check).
const FILES_OUT_CHECK: Duration = Duration::from_secs(1);

/// A kind of hook file: its name stem and suffix (`values` + `.json`: `values-<random>.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileKind {
    pub stem: &'static str,
    pub suffix: &'static str,
}

/// An empty file made by the pool, still open for writing.
#[derive(Debug)]
pub struct ReadyFile {
    pub path: PathBuf,
    pub file: File,
}

#[derive(Debug, Default)]
struct Stock {
    /// Ready files by kind; a kind is stocked once it was asked for.
    ready: HashMap<FileKind, Vec<ReadyFile>>,
    /// Files of finished runs, to be removed (and closed, by the thread: no `close` on a run's
    /// critical path).
    used: Vec<ReadyFile>,
    /// Set once the dir failed its check or a file could not be made: no more files are made
    /// (runs then make their own, and report the problem).
    broken: bool,
    /// Work now: a hook was just spawned, or a kind ran out.
    woken: bool,
    /// Files taken by runs and not handed back yet.
    out: usize,
    /// The thread waits with no time limit (no file was out): a hand-back must wake it.
    idle: bool,
    stop: bool,
}

#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    stock: Mutex<Stock>,
    work: Condvar,
}

impl Shared {
    fn stock(&self) -> MutexGuard<'_, Stock> {
        self.stock.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The pool of one tmp dir. [`TmpPool::shutdown`] removes every file it still holds.
#[derive(Debug)]
pub struct TmpPool {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl TmpPool {
    /// Checks `dir` (see [`tmp_files::private_dir`]) and starts the pool's thread.
    pub fn start(dir: &Path) -> Result<Arc<Self>, TmpFileError> {
        tmp_files::private_dir(dir)?;
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            stock: Mutex::new(Stock::default()),
            work: Condvar::new(),
        });
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("hook-files".into())
            .spawn(move || keep_stocked(&worker))
            .map_err(|source| TmpFileError::StartPool {
                dir: dir.to_path_buf(),
                source,
            })?;
        Ok(Arc::new(Self {
            shared,
            thread: Mutex::new(Some(thread)),
        }))
    }

    /// The tmp dir the files are in.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// A ready empty file of `kind`, or `None` when none is ready (the caller makes its own).
    pub fn take(&self, kind: FileKind) -> Option<ReadyFile> {
        let mut stock = self.shared.stock();
        let ready = stock.ready.entry(kind).or_default();
        // a file someone removed meanwhile (a tmp cleaner, an `rm -rf` of the dir) is skipped:
        // its path would not exist for the hook
        let taken = std::iter::from_fn(|| ready.pop()).find(still_linked);
        if taken.is_some() {
            stock.out += 1;
        }
        drop(stock);
        // A kind that ran out (or was never asked for) wakes the thread at once; otherwise it
        // works when the run's hook was spawned (see `wake`).
        if taken.is_none() {
            self.wake();
        }
        taken
    }

    /// Hands the files of a finished run over for removal: when the next hook is spawned, or
    /// within [`FILES_OUT_CHECK`] and [`IDLE_WORK_DELAY`] when none is. The thread, which waits
    /// with that time limit while files are out, is woken here only when it waits without one:
    /// the end of a run usually costs no wake-up of another thread.
    pub fn recycle(&self, used: Vec<ReadyFile>) {
        if used.is_empty() {
            return;
        }
        let mut stock = self.shared.stock();
        stock.out = stock.out.saturating_sub(used.len());
        if stock.stop {
            drop(stock);
            remove(used);
            return;
        }
        stock.used.extend(used);
        let idle = stock.idle;
        drop(stock);
        if idle {
            self.shared.work.notify_one();
        }
    }

    /// Called once a hook process has been spawned: the thread removes the files handed back and
    /// refills, while the hook runs (its disk work then does not compete with a spawn for the
    /// CPU, which costs the most on two cores and ext4).
    pub fn wake(&self) {
        self.shared.stock().woken = true;
        self.shared.work.notify_one();
    }

    /// Stops the thread and removes the ready files and the files handed over.
    pub fn shutdown(&self) {
        self.shared.stock().stop = true;
        self.shared.work.notify_one();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for TmpPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The files of one run: taken from the pool when it has one ready, else made by the run
/// (`<prefix><random><suffix>`, as without a pool). Dropping it removes them all.
#[derive(Debug)]
pub struct RunFiles {
    pool: Option<Arc<TmpPool>>,
    taken: Vec<ReadyFile>,
    own: Option<TmpFiles>,
    dir: PathBuf,
    keep: bool,
}

impl RunFiles {
    /// The files of a run in `dir` (through `pool`, whose dir it is, when given); `keep` leaves
    /// the run's own files in place for debugging.
    pub fn new(dir: &Path, keep: bool, pool: Option<&Arc<TmpPool>>) -> Result<Self, TmpFileError> {
        let own = match pool {
            Some(_) => None,
            None => Some(TmpFiles::new(dir, keep)?),
        };
        Ok(Self {
            pool: pool.cloned(),
            taken: Vec::new(),
            own,
            dir: dir.to_path_buf(),
            keep,
        })
    }

    /// A file of `kind` holding `content`: one from the pool when it has one, else a new one
    /// named `<prefix()><random><suffix>`; returns its path.
    pub fn file(
        &mut self,
        kind: FileKind,
        prefix: impl FnOnce() -> String,
        content: Content<'_>,
    ) -> Result<PathBuf, TmpFileError> {
        if let Some(ready) = self.pool.as_ref().and_then(|pool| pool.take(kind)) {
            let written = content.write(&ready.file, &ready.path);
            let path = ready.path.clone();
            // handed back (and removed) even when the write failed; kept open until then: the
            // pool's thread closes it when it removes it
            self.taken.push(ready);
            return written.map(|()| path);
        }
        let own = match &mut self.own {
            Some(own) => own,
            none => none.insert(TmpFiles::new(&self.dir, self.keep)?),
        };
        own.create(&prefix(), kind.suffix, content)
    }

    /// Removes the files (the run's own ones at once, the pool's by its thread), or keeps the
    /// run's own ones when debugging.
    pub fn finish(mut self) {
        if let Some(own) = self.own.take() {
            own.finish();
        }
    }
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        if let Some(pool) = &self.pool {
            pool.recycle(std::mem::take(&mut self.taken));
        }
    }
}

/// Whether the file still has a name (one `fstat`, no path lookup).
fn still_linked(ready: &ReadyFile) -> bool {
    use std::os::unix::fs::MetadataExt;
    ready.file.metadata().is_ok_and(|meta| meta.nlink() > 0)
}

/// The thread: removes used files and tops every asked-for kind up to [`READY_PER_KIND`].
fn keep_stocked(shared: &Shared) {
    loop {
        let Some((used, wanted)) = next_work(shared) else {
            let mut stock = shared.stock();
            let mut left = std::mem::take(&mut stock.used);
            left.extend(stock.ready.drain().flat_map(|(_, files)| files));
            drop(stock);
            remove(left);
            return;
        };
        remove(used);
        let made = make(shared, &wanted);
        let mut stock = shared.stock();
        match made {
            Ok(made) => {
                for (kind, file) in made {
                    stock.ready.entry(kind).or_default().push(file);
                }
            }
            Err(error) => {
                tracing::warn!(error = %addon_core::error::error_chain(&error), "hook files are no longer made ahead");
                stock.broken = true;
                // runs make their own files from now on, checking the dir each time
                let ready: Vec<ReadyFile> =
                    stock.ready.drain().flat_map(|(_, files)| files).collect();
                drop(stock);
                remove(ready);
            }
        }
    }
}

/// Waits until there is work and it is due: at once when woken (a hook was spawned, a kind ran
/// out), else [`IDLE_WORK_DELAY`] after it appeared. `None` when the pool stops.
fn next_work(shared: &Shared) -> Option<(Vec<ReadyFile>, Vec<FileKind>)> {
    let mut stock = shared.stock();
    let mut pending_since: Option<std::time::Instant> = None;
    loop {
        if stock.stop {
            return None;
        }
        if stock.used.is_empty() && missing(&stock).is_empty() {
            pending_since = None;
            stock.woken = false;
            // runs hand their files back without a wake-up: look for them now and then
            stock.idle = stock.out == 0;
            stock = match stock.idle {
                true => (shared.work.wait(stock)).unwrap_or_else(PoisonError::into_inner),
                false => {
                    (shared.work.wait_timeout(stock, FILES_OUT_CHECK))
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
            stock.idle = false;
            continue;
        }
        let since = *pending_since.get_or_insert_with(std::time::Instant::now);
        let left = IDLE_WORK_DELAY.saturating_sub(since.elapsed());
        if stock.woken || left.is_zero() {
            stock.woken = false;
            return Some((std::mem::take(&mut stock.used), missing(&stock)));
        }
        stock = (shared.work.wait_timeout(stock, left))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// One entry per file to make.
fn missing(stock: &Stock) -> Vec<FileKind> {
    if stock.broken {
        return Vec::new();
    }
    stock
        .ready
        .iter()
        .flat_map(|(kind, files)| {
            std::iter::repeat_n(*kind, READY_PER_KIND.saturating_sub(files.len()))
        })
        .collect()
}

/// Makes one file per entry of `wanted`, after checking the dir again (a run's own files get
/// the same check).
fn make(shared: &Shared, wanted: &[FileKind]) -> Result<Vec<(FileKind, ReadyFile)>, TmpFileError> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    tmp_files::private_dir(&shared.dir)?;
    wanted
        .iter()
        .map(|kind| {
            let prefix = format!("{}-", kind.stem);
            let (file, temp) = tmp_files::create_unique(&shared.dir, &prefix, kind.suffix)?;
            let path = temp.keep().map_err(|error| TmpFileError::Create {
                dir: shared.dir.clone(),
                prefix,
                suffix: kind.suffix.to_string(),
                source: error.error,
            })?;
            Ok((*kind, ReadyFile { path, file }))
        })
        .collect()
}

/// Removes the files, then closes them.
fn remove(files: Vec<ReadyFile>) {
    // `_open` is closed at the end of each turn, after the unlink
    for ReadyFile { path, file: _open } in files {
        if let Err(error) = std::fs::remove_file(&path)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::debug!(path = %path.display(), %error, "cannot remove a hook tmp file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use addon_operator_testkit::wait::wait_for;
    use std::time::Duration;

    const LIMIT: Duration = Duration::from_secs(10);
    const VALUES: FileKind = FileKind {
        stem: "values",
        suffix: ".json",
    };
    const OTHER: FileKind = FileKind {
        stem: "metrics",
        suffix: ".json",
    };

    fn files_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_kind_is_stocked_once_asked_for_and_every_file_is_new_empty_and_private() {
        let base = tempfile::tempdir().unwrap();
        let pool = TmpPool::start(base.path()).unwrap();
        assert!(
            pool.take(VALUES).is_none(),
            "nothing is made before it is asked for"
        );
        let listing = || format!("{:?}", files_in(base.path()));
        let stocked = || files_in(base.path()).len() == READY_PER_KIND;
        wait_for("the kind stocked", LIMIT, stocked, listing);
        let first = pool.take(VALUES).unwrap();
        let second = pool.take(VALUES).unwrap();
        assert_ne!(first.path, second.path);
        for taken in [&first, &second] {
            let name = taken
                .path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            assert!(
                name.starts_with("values-") && name.ends_with(".json"),
                "{name}"
            );
            let meta = std::fs::metadata(&taken.path).unwrap();
            assert_eq!(meta.len(), 0);
            use std::os::unix::fs::MetadataExt;
            assert_eq!(meta.mode() & 0o777, 0o600);
        }
        let paths = [first.path.clone(), second.path.clone()];
        pool.recycle(vec![first, second]);
        let gone = || paths.iter().all(|path| !path.exists());
        wait_for("the used files removed", LIMIT, gone, listing);
        // the run left its files open (no close on its path); the thread closed them too
        let points_at = |target: &PathBuf, path: &PathBuf| {
            (target.to_string_lossy()).starts_with(&*path.to_string_lossy())
        };
        let closed = || !(open_fd_targets().iter()).any(|t| paths.iter().any(|p| points_at(t, p)));
        wait_for("the used files closed", LIMIT, closed, || {
            format!("{:?}", open_fd_targets())
        });
        wait_for("the kind refilled", LIMIT, stocked, listing);
    }

    /// What this process's descriptors point at (`<path> (deleted)` for a removed file).
    fn open_fd_targets() -> Vec<PathBuf> {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .collect()
    }

    /// A pool in `dir` whose `kind` was asked for and is stocked.
    fn stocked_pool(dir: &Path, kind: FileKind) -> Arc<TmpPool> {
        let pool = TmpPool::start(dir).unwrap();
        assert!(pool.take(kind).is_none());
        let stocked = || files_in(dir).len() == READY_PER_KIND;
        wait_for("the kind stocked", LIMIT, stocked, String::new);
        pool
    }

    #[test]
    fn a_ready_file_removed_by_someone_else_is_never_handed_out() {
        let base = tempfile::tempdir().unwrap();
        let pool = stocked_pool(base.path(), VALUES);
        let stocked = || files_in(base.path()).len() == READY_PER_KIND;
        for name in files_in(base.path()) {
            std::fs::remove_file(base.path().join(name)).unwrap();
        }
        assert!(pool.take(VALUES).is_none(), "every ready file is gone");
        wait_for("the kind stocked again", LIMIT, stocked, String::new);
        let taken = pool.take(VALUES).unwrap();
        assert!(taken.path.exists());
    }

    #[test]
    fn shutdown_removes_every_file_the_pool_holds() {
        let base = tempfile::tempdir().unwrap();
        let pool = stocked_pool(base.path(), VALUES);
        let taken = pool.take(VALUES).unwrap();
        pool.recycle(vec![taken]);
        pool.shutdown();
        assert_eq!(files_in(base.path()), Vec::<String>::new());
    }

    #[test]
    fn a_dir_that_is_no_longer_private_stops_the_stocking() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("ao");
        let pool = stocked_pool(&dir, OTHER);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        pool.take(VALUES);
        let broken = || pool.shared.stock().broken;
        wait_for("the pool to give up", LIMIT, broken, String::new);
        assert!(pool.take(VALUES).is_none());
        assert!(pool.take(OTHER).is_none());
        assert_eq!(files_in(&dir), Vec::<String>::new());
    }
}
