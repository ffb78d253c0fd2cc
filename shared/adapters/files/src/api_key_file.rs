//! The API key document in a file: what `a2a-local keys` writes and the local server reads.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use a2a_core::{ApiKeyDocument, ApiKeySource, ConfigError};
use async_trait::async_trait;

/// A file's (modification time, length): what says it changed.
type Stamp = (SystemTime, u64);

/// The API key document at a path. As an [`ApiKeySource`] it is checked on every request and
/// re-read whenever its modification time or size changes, so an issued or revoked key takes
/// effect on the next request. A missing file means no keys.
#[derive(Debug)]
pub struct ApiKeyFile {
    path: PathBuf,
    /// The stamp of the file last returned by [`ApiKeySource::load`] (`Some(None)`: it was
    /// missing); `None` before the first load.
    loaded: Mutex<Option<Option<Stamp>>>,
}

impl ApiKeyFile {
    /// The document at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            loaded: Mutex::new(None),
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the document; a missing file is an empty document.
    pub fn read(&self) -> Result<ApiKeyDocument, ConfigError> {
        let path = &self.path;
        let unreadable =
            |reason: String| ConfigError::unreadable(path.display().to_string(), reason);
        match std::fs::read_to_string(path) {
            Ok(text) => ApiKeyDocument::from_json(&text).map_err(|e| match e {
                ConfigError::Unreadable { reason, .. } => unreadable(reason),
                other => other,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ApiKeyDocument::default()),
            Err(e) => Err(unreadable(format!("cannot be read: {e}"))),
        }
    }

    /// Writes `doc` atomically (a temporary file, then a rename), readable by the owner only:
    /// it holds no key, but it decides who gets in.
    pub fn write(&self, doc: &ApiKeyDocument) -> Result<(), String> {
        let path = &self.path;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let tmp = path.with_extension("json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options
            .open(&tmp)
            .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::io::Write::write_all(&mut file, doc.to_json().as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))
    }

    fn stamp(&self) -> Option<Stamp> {
        std::fs::metadata(&self.path)
            .ok()
            .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()))
    }
}

#[async_trait]
impl ApiKeySource for ApiKeyFile {
    async fn load(&self) -> Result<Option<ApiKeyDocument>, String> {
        let stamp = self.stamp();
        if *self.loaded.lock().unwrap_or_else(|e| e.into_inner()) == Some(stamp) {
            return Ok(None);
        }
        let doc = self.read()?;
        *self.loaded.lock().unwrap_or_else(|e| e.into_inner()) = Some(stamp);
        Ok(Some(doc))
    }

    /// Asked on every request: a metadata read is cheap.
    fn refresh(&self) -> Duration {
        Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use a2a_core::Permissions;

    use super::*;

    #[tokio::test]
    async fn the_file_is_read_again_only_when_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let file = ApiKeyFile::new(dir.path().join("keys").join("api-keys.json"));
        assert_eq!(file.load().await.unwrap(), Some(ApiKeyDocument::default()));
        assert_eq!(file.load().await.unwrap(), None, "still missing");

        let mut doc = ApiKeyDocument::default();
        doc.issue(Permissions::all(), None, "test".into()).unwrap();
        file.write(&doc).unwrap();
        assert_eq!(file.read().unwrap(), doc);
        assert_eq!(file.load().await.unwrap(), Some(doc.clone()));
        assert_eq!(file.load().await.unwrap(), None, "unchanged");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
