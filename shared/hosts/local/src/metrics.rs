//! `--metrics-file`: the metrics a Lambda function writes (CloudWatch EMF lines, see
//! [`a2a_core::emf`]) appended to a file, so a local run shows every failure it gives up on
//! (a task ended FAILED, a push dead-lettered, a broken execution) as a deployment's metrics
//! and alarms would.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use a2a_core::emf::{EmfObserver, DEFAULT_NAMESPACE};

/// The function name the lines carry: the whole server is one function.
const FUNCTION_NAME: &str = "a2a-local";

/// An observer appending one EMF line per event to `path` (created if missing). Each line is
/// one `write` under a lock, so lines never interleave, and a line written is on disk even if
/// the process is killed right after.
pub(crate) fn file_observer(path: &Path) -> Result<EmfObserver, String> {
    let file: Mutex<File> = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(Mutex::new)
        .map_err(|e| {
            format!(
                "cannot open the metrics file {}: {e}; give a writable path to --metrics-file",
                path.display()
            )
        })?;
    Ok(EmfObserver::with_sink(
        DEFAULT_NAMESPACE,
        FUNCTION_NAME,
        Arc::new(move |line: &str| {
            if let Ok(mut file) = file.lock() {
                let _ = file.write_all(format!("{line}\n").as_bytes());
            }
        }),
    ))
}
