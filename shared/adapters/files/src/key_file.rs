//! The push signing key file: the key set document of [`KeySet::from_json`] in a file readable
//! by its owner only, generated with one new key on first use.

use std::path::{Path, PathBuf};

use a2a_core::KeyError;
use a2a_core::{KeySet, SigningAlgorithm};

/// The local key file: the [`KeySet::from_json`] format in a file readable by its owner only,
/// generated with one new key on first use.
#[derive(Debug, Clone)]
pub struct KeyFile {
    path: PathBuf,
    algorithm: SigningAlgorithm,
}

impl KeyFile {
    /// The usual name of the key file in a data directory.
    pub const FILE_NAME: &'static str = "push-signing-keys.json";

    /// The key file at `path`; a generated key uses `algorithm`.
    pub fn new(path: impl Into<PathBuf>, algorithm: SigningAlgorithm) -> Self {
        Self {
            path: path.into(),
            algorithm,
        }
    }

    /// The key file [`Self::FILE_NAME`] in `data_dir`.
    pub fn in_dir(data_dir: &Path, algorithm: SigningAlgorithm) -> Self {
        Self::new(data_dir.join(Self::FILE_NAME), algorithm)
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file, creating it first if it does not exist.
    pub fn load_or_create(&self) -> Result<KeySet, KeyError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => {
                warn_if_readable_by_others(&self.path);
                KeySet::from_json(&text)
                    .map_err(|e| KeyError::Invalid(format!("{}: {e}", self.path.display())))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.create(),
            Err(e) => Err(KeyError::Io(format!(
                "cannot read {}: {e}",
                self.path.display()
            ))),
        }
    }

    fn create(&self) -> Result<KeySet, KeyError> {
        let (keys, text) = KeySet::generate(self.algorithm)?;
        let key = keys.active();
        let text = text.expose();
        let io = |what: &str, e: std::io::Error| {
            KeyError::Io(format!("cannot {what} {}: {e}", self.path.display()))
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io("create the directory of", e))?;
        }
        // Written under a temporary name and linked into place, so that the file is never seen
        // half-written, and two processes starting at once cannot both create it: the loser of
        // the link reads the winner's file.
        let tmp = self
            .path
            .with_extension(format!("tmp.{}", std::process::id()));
        // A leftover of a process that died mid-write (same pid, much later) is stale.
        let _ = std::fs::remove_file(&tmp);
        write_private(&tmp, text.as_bytes()).map_err(|e| io("write", e))?;
        let linked = std::fs::hard_link(&tmp, &self.path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                tracing::info!(kid = %key.kid(), path = %self.path.display(), "generated a push signing key");
                Ok(keys)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => self.load_or_create(),
            Err(e) => Err(io("create", e)),
        }
    }
}

/// Creates `path` (which must not exist) readable and writable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn warn_if_readable_by_others(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.permissions().mode() & 0o077 != 0 {
                tracing::warn!(path = %path.display(), "the push signing key file is readable by other users; chmod 600 it");
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_created_once_and_private() {
        let dir = std::env::temp_dir().join(format!("a2a-keyfile-{}", uuid::Uuid::new_v4()));
        let file = KeyFile::in_dir(&dir, SigningAlgorithm::Es256);
        let first = file.load_or_create().unwrap();
        let again = file.load_or_create().unwrap();
        assert_eq!(first.active().kid(), again.active().kid());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
