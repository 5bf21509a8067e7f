//! The private temp files of one hook run: unique names in the operator's tmp dir, mode 0600,
//! removed when the run is over unless kept for debugging (`DEBUG_KEEP_TMP_FILES`).

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
    #[error("cannot read the tmp file '{path}'", path = path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl TmpFileError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::CreateDir { .. } | Self::Create { .. } | Self::Write { .. } => "tmp_file_write",
            Self::Read { .. } => "tmp_file_read",
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
    /// Creates `dir` if needed.
    pub fn new(dir: &Path, keep: bool) -> Result<Self, TmpFileError> {
        std::fs::create_dir_all(dir).map_err(|source| TmpFileError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })?;
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
        content: &[u8],
    ) -> Result<PathBuf, TmpFileError> {
        let mut file = tempfile::Builder::new()
            .prefix(prefix)
            .suffix(suffix)
            .rand_bytes(RANDOM_CHARS)
            .tempfile_in(&self.dir)
            .map_err(|source| TmpFileError::Create {
                dir: self.dir.clone(),
                prefix: prefix.to_string(),
                suffix: suffix.to_string(),
                source,
            })?;
        let path = file.path().to_path_buf();
        if !content.is_empty() {
            std::io::Write::write_all(&mut file, content).map_err(|source| {
                TmpFileError::Write {
                    path: path.clone(),
                    source,
                }
            })?;
        }
        self.files.push(file.into_temp_path());
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

/// Reads an output file the hook may have written; a file the hook removed reads as empty.
pub fn read_output(path: &Path) -> Result<String, TmpFileError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(TmpFileError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slashes_in_hook_names_become_dashes() {
        assert_eq!(safe_name("hooks/sub dir/hook.sh"), "hooks-sub-dir-hook.sh");
        assert_eq!(safe_name("001-cert_manager"), "001-cert_manager");
    }

    #[test]
    fn files_are_removed_when_finished_unless_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = TmpFiles::new(dir.path(), false).unwrap();
        let path = files.create("a-", ".json", b"{}").unwrap();
        assert!(path.exists());
        files.finish();
        assert!(!path.exists());

        let mut kept = TmpFiles::new(dir.path(), true).unwrap();
        let path = kept.create("a-", ".json", b"{}").unwrap();
        kept.finish();
        assert_eq!(std::fs::read_to_string(path).unwrap(), "{}");
    }

    #[test]
    fn a_removed_output_file_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_output(&dir.path().join("gone")).unwrap(), "");
    }
}
