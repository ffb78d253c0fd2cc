//! File adapters: what a host keeps on disk beside its store. Kept apart from the SQLite store
//! so a Lambda function that reads its keys from files (under `cargo lambda watch`) does not
//! link SQLite.
//!
//! - [`KeyFile`]: the push signing key set, generated on first use, readable by its owner only;
//! - [`ApiKeyFile`]: the API key document `a2a-local keys` writes, re-read when it changes.

mod api_key_file;
mod key_file;

pub use api_key_file::ApiKeyFile;
pub use key_file::KeyFile;
