//! The private temp files of one hook run: unique names in the operator's private tmp dir (0700,
//! checked), mode 0600, created exclusively, read back with a size cap, removed when the run is
//! over unless kept for debugging (`DEBUG_KEEP_TMP_FILES`).

use std::fs::{DirBuilder, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use tempfile::TempPath;

/// Random characters in each file name (the place of upstream's UUID).
const RANDOM_CHARS: usize = 16;

/// A failed temp-file operation.
#[derive(Debug, thiserror::Error)]
pub enum TmpFileError {
    #[error("cannot create the tmp dir '{dir}'", dir = dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create a tmp file '{prefix}*{suffix}' in '{dir}'", dir = dir.display())]
    Create {
        dir: PathBuf,
        prefix: String,
        suffix: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the tmp file '{path}'", path = path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the thread that makes hook files ahead in '{dir}'", dir = dir.display())]
    StartPool {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("refuse the tmp dir '{dir}': {reason}", dir = dir.display())]
    UnsafeDir { dir: PathBuf, reason: UnsafeDir },
    #[error("cannot read the tmp file '{path}'", path = path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the file ${env} ('{path}') is larger than the limit of {limit} bytes",
        path = path.display()
    )]
    TooLarge {
        env: &'static str,
        path: PathBuf,
        limit: u64,
    },
    #[error("${env} ('{path}') is not a regular file", path = path.display())]
    NotAFile { env: &'static str, path: PathBuf },
}

impl TmpFileError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::CreateDir { .. }
            | Self::Create { .. }
            | Self::Write { .. }
            | Self::StartPool { .. } => "tmp_file_write",
            Self::UnsafeDir { .. } => "tmp_dir_unsafe",
            Self::Read { .. } | Self::NotAFile { .. } => "tmp_file_read",
            Self::TooLarge { .. } => "hook_output_too_large",
        }
    }
}

/// Makes a hook or module name usable inside a file name: `/` and other unusual characters
/// become `-`.
pub fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '-',
        })
        .collect()
}

/// The temp files of one run. Dropping it removes them.
#[derive(Debug)]
pub struct TmpFiles {
    dir: PathBuf,
    keep: bool,
    files: Vec<TempPath>,
}

impl TmpFiles {
    /// Creates `dir` if needed (see [`private_dir`]).
    pub fn new(dir: &Path, keep: bool) -> Result<Self, TmpFileError> {
        private_dir(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            keep,
            files: Vec::new(),
        })
    }

    /// A new file `<prefix><random><suffix>` holding `content`; returns its path.
    pub fn create(
        &mut self,
        prefix: &str,
        suffix: &str,
        content: Content<'_>,
    ) -> Result<PathBuf, TmpFileError> {
        let (file, temp) = create_unique(&self.dir, prefix, suffix)?;
        let path = temp.to_path_buf();
        self.files.push(temp);
        content.write(&file, &path)?;
        Ok(path)
    }

    /// Removes the files now, or keeps them (and says where) when debugging.
    pub fn finish(self) {
        if !self.keep {
            return;
        }
        for file in self.files {
            match file.keep() {
                Ok(path) => tracing::debug!(path = %path.display(), "kept hook tmp file"),
                Err(error) => tracing::debug!(%error, "cannot keep hook tmp file"),
            }
        }
    }
}

/// Fills a new file: writes through a buffer into it.
pub type Fill<'a> = &'a mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>;

/// What a new file holds.
pub enum Content<'a> {
    /// Bytes at hand: one write (none when empty).
    Bytes(&'a [u8]),
    /// What a filler writes, through a buffer (a binding context goes out object by object).
    Filled(Fill<'a>),
}

impl Content<'_> {
    /// Writes it into the new file at `path`.
    pub fn write(self, file: &std::fs::File, path: &Path) -> Result<(), TmpFileError> {
        match self {
            Content::Bytes(bytes) => write_content(file, path, bytes),
            Content::Filled(fill) => write_with(file, path, fill),
        }
    }
}

/// Fills the new file at `path` with what `fill` writes, through a buffer (a binding context
/// goes out object by object, never as one document in memory).
pub fn write_with(file: &std::fs::File, path: &Path, fill: Fill<'_>) -> Result<(), TmpFileError> {
    let mut buffered = GrowingBuffer {
        file,
        buffer: Vec::new(),
    };
    fill(&mut buffered)
        .and_then(|()| buffered.write_out())
        .map_err(|source| TmpFileError::Write {
            path: path.to_path_buf(),
            source,
        })
}

/// The most [`write_with`] holds before it writes: one write for a document up to this size.
const WRITE_BUFFER: usize = 64 * 1024;

/// A write buffer that grows with what is written, up to [`WRITE_BUFFER`], and is written out
/// whenever it is full: a small document costs a small allocation (a `BufWriter` allocates its
/// whole capacity, and an allocation of 64 KiB per run is the allocator's slow path).
struct GrowingBuffer<'a> {
    file: &'a std::fs::File,
    buffer: Vec<u8>,
}

impl GrowingBuffer<'_> {
    fn write_out(&mut self) -> std::io::Result<()> {
        if !self.buffer.is_empty() {
            std::io::Write::write_all(&mut self.file, &self.buffer)?;
            self.buffer.clear();
        }
        Ok(())
    }
}

impl std::io::Write for GrowingBuffer<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buffer.len() + data.len() > WRITE_BUFFER {
            self.write_out()?;
            if data.len() >= WRITE_BUFFER {
                return self.file.write(data);
            }
        }
        self.buffer.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.write_out()
    }
}

/// Writes `content` (nothing when empty: no syscall) into the new file at `path`.
pub fn write_content(
    mut file: &std::fs::File,
    path: &Path,
    content: &[u8],
) -> Result<(), TmpFileError> {
    if content.is_empty() {
        return Ok(());
    }
    std::io::Write::write_all(&mut file, content).map_err(|source| TmpFileError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Creates a new file `<prefix><random><suffix>` in `dir`, exclusively, mode 0600; it is
/// removed when the returned path is dropped (unless kept).
pub fn create_unique(
    dir: &Path,
    prefix: &str,
    suffix: &str,
) -> Result<(std::fs::File, TempPath), TmpFileError> {
    tempfile::Builder::new()
        .prefix(prefix)
        .suffix(suffix)
        .rand_bytes(RANDOM_CHARS)
        .tempfile_in(dir)
        .map_err(|source| TmpFileError::Create {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            suffix: suffix.to_string(),
            source,
        })
        .map(tempfile::NamedTempFile::into_parts)
}

/// Creates `dir` (and missing parents) with mode 0700, and refuses a dir another user could
/// plant files in: one owned by another user, or writable by its group or by others. A symlink
/// is followed only when the link itself belongs to the operator's user.
pub fn private_dir(dir: &Path) -> Result<(), TmpFileError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| TmpFileError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })?;
    let stat = |follow: bool| {
        let meta = if follow {
            std::fs::metadata(dir)
        } else {
            std::fs::symlink_metadata(dir)
        };
        meta.map_err(|source| TmpFileError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })
    };
    let link = stat(false)?;
    let unsafe_dir = |reason: UnsafeDir| TmpFileError::UnsafeDir {
        dir: dir.to_path_buf(),
        reason,
    };
    let uid = nix::unistd::geteuid().as_raw();
    if link.file_type().is_symlink() && link.uid() != uid {
        return Err(unsafe_dir(UnsafeDir::ForeignSymlink {
            owner: link.uid(),
            uid,
        }));
    }
    check_private(&stat(true)?, uid).map_err(unsafe_dir)
}

/// Why the tmp dir is not private to the operator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsafeDir {
    #[error("it is a symlink owned by uid {owner}, not by the operator's uid {uid}")]
    ForeignSymlink { owner: u32, uid: u32 },
    #[error("it is not a directory")]
    NotADirectory,
    #[error("it is owned by uid {owner}, not by the operator's uid {uid}")]
    ForeignOwner { owner: u32, uid: u32 },
    #[error(
        "it is writable by its group or by others (mode {mode:04o}); use a dir with mode 0700 \
         (in a pod, mount the emptyDir at its parent, e.g. /tmp)"
    )]
    Writable { mode: u32 },
}

fn check_private(meta: &Metadata, uid: u32) -> Result<(), UnsafeDir> {
    if !meta.is_dir() {
        return Err(UnsafeDir::NotADirectory);
    }
    if meta.uid() != uid {
        return Err(UnsafeDir::ForeignOwner {
            owner: meta.uid(),
            uid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(UnsafeDir::Writable { mode });
    }
    Ok(())
}

/// Size caps of the files a hook writes (documented in docs/limits.md).
pub mod limits {
    /// `$VALUES_JSON_PATCH_PATH`, `$CONFIG_VALUES_JSON_PATCH_PATH`, `$KUBERNETES_PATCH_PATH`.
    pub const PATCH_FILE_BYTES: u64 = 64 * 1024 * 1024;
    /// `$METRICS_PATH`.
    pub const METRICS_FILE_BYTES: u64 = 64 * 1024 * 1024;
    /// `$MODULE_ENABLED_RESULT` and `$MODULE_ENABLED_REASON` (the answer is `true` or `false`).
    pub const ENABLED_FILE_BYTES: u64 = 4 * 1024;
    /// A webhook's response file (addon-core refuses more than this too).
    pub const WEBHOOK_RESPONSE_BYTES: u64 = addon_core::webhook::MAX_RESPONSE_BYTES as u64;
}

/// Reads the output file `$env` the hook may have written, at most `limit` bytes: a larger file
/// is an error without reading it, a file the hook removed reads as empty. It is opened without
/// following a symlink and without blocking (a FIFO planted by the hook is refused). An empty
/// regular file (what most hooks leave most outputs) costs one `lstat` and is never opened.
pub fn read_output(path: &Path, env: &'static str, limit: u64) -> Result<String, TmpFileError> {
    let read_error = |source| TmpFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() == 0 => return Ok(String::new()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        _ => {}
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path);
    let file = match file {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(source) => return Err(read_error(source)),
    };
    let meta = file.metadata().map_err(read_error)?;
    if !meta.is_file() {
        return Err(TmpFileError::NotAFile {
            env,
            path: path.to_path_buf(),
        });
    }
    let too_large = || TmpFileError::TooLarge {
        env,
        path: path.to_path_buf(),
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    String::from_utf8(bytes)
        .map_err(|error| read_error(std::io::Error::new(std::io::ErrorKind::InvalidData, error)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_file_gets_every_piece_in_order_whatever_their_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("filled");
        let file = std::fs::File::create_new(&path).unwrap();
        let pieces: Vec<Vec<u8>> = [10, WRITE_BUFFER - 5, 7, 3 * WRITE_BUFFER, 1, WRITE_BUFFER]
            .iter()
            .enumerate()
            .map(|(index, len)| vec![b'a' + index as u8; *len])
            .collect();
        let mut fill =
            |out: &mut dyn std::io::Write| pieces.iter().try_for_each(|piece| out.write_all(piece));
        write_with(&file, &path, &mut fill).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), pieces.concat());
    }

    #[test]
    fn slashes_in_hook_names_become_dashes() {
        assert_eq!(safe_name("hooks/sub dir/hook.sh"), "hooks-sub-dir-hook.sh");
        assert_eq!(safe_name("001-cert_manager"), "001-cert_manager");
    }

    #[test]
    fn files_are_removed_when_finished_unless_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = TmpFiles::new(dir.path(), false).unwrap();
        let path = files.create("a-", ".json", Content::Bytes(b"{}")).unwrap();
        assert!(path.exists());
        files.finish();
        assert!(!path.exists());

        let mut kept = TmpFiles::new(dir.path(), true).unwrap();
        let path = kept.create("a-", ".json", Content::Bytes(b"{}")).unwrap();
        kept.finish();
        assert_eq!(std::fs::read_to_string(path).unwrap(), "{}");
    }

    #[test]
    fn an_empty_output_reads_as_empty_and_a_written_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("patch");
        std::fs::write(&path, "").unwrap();
        assert_eq!(
            read_output(&path, "VALUES_JSON_PATCH_PATH", 10).unwrap(),
            ""
        );
        std::fs::write(&path, "[1]").unwrap();
        assert_eq!(
            read_output(&path, "VALUES_JSON_PATCH_PATH", 10).unwrap(),
            "[1]"
        );
    }

    #[test]
    fn a_removed_output_file_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            read_output(&dir.path().join("gone"), "METRICS_PATH", 10).unwrap(),
            ""
        );
    }

    #[test]
    fn an_output_file_over_the_limit_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(1 << 40).unwrap();
        let error = read_output(&path, "METRICS_PATH", 1024).unwrap_err();
        assert_eq!(error.category(), "hook_output_too_large");
        let message = error.to_string();
        assert!(message.contains("$METRICS_PATH"), "{message}");
        assert!(message.contains("1024 bytes"), "{message}");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(
            read_output(&path, "METRICS_PATH", 10).unwrap(),
            "0123456789"
        );
        assert!(read_output(&path, "METRICS_PATH", 9).is_err());
    }

    #[test]
    fn an_output_file_replaced_by_a_fifo_or_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let error = read_output(&fifo, "VALUES_JSON_PATCH_PATH", 10).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        assert_eq!(
            read_output(&link, "VALUES_JSON_PATCH_PATH", 10)
                .unwrap_err()
                .category(),
            "tmp_file_read"
        );
    }

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn the_tmp_dir_is_created_private_and_files_in_it_are_0600() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("a/addon-operator");
        let mut files = TmpFiles::new(&dir, false).unwrap();
        assert_eq!(mode_of(&dir), 0o700);
        let path = files.create("x-", ".json", Content::Bytes(b"{}")).unwrap();
        assert_eq!(mode_of(&path), 0o600);
    }

    #[test]
    fn a_tmp_dir_writable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("shared");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let error = private_dir(&dir).unwrap_err();
        assert_eq!(error.category(), "tmp_dir_unsafe");
        assert!(error.to_string().contains("mode 0777"), "{error}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&dir).unwrap();
    }

    #[test]
    fn a_tmp_dir_owned_by_another_user_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let dir = if nix::unistd::geteuid().is_root() {
            let dir = base.path().join("theirs");
            std::fs::create_dir(&dir).unwrap();
            let nobody = nix::unistd::Uid::from_raw(65534);
            nix::unistd::chown(&dir, Some(nobody), None).unwrap();
            dir
        } else {
            PathBuf::from("/")
        };
        let error = private_dir(&dir).unwrap_err();
        assert!(error.to_string().contains("owned by uid"), "{error}");
    }

    #[test]
    fn a_symlinked_tmp_dir_is_followed_only_when_the_link_is_ours() {
        let base = tempfile::tempdir().unwrap();
        let target = base.path().join("target");
        std::fs::create_dir(&target).unwrap();
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        private_dir(&link).unwrap();
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
            let error = private_dir(&link).unwrap_err();
            assert!(
                error.to_string().contains("symlink owned by uid 65534"),
                "{error}"
            );
        }
    }
}
