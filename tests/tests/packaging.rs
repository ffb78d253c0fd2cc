//! The kit's library crates package on their own: nothing they compile is read from outside
//! their package directory (`include_str!`, `include_bytes!`, `#[path]`), which is what
//! `cargo package`'s verification would otherwise find only after a full build. The test command
//! also runs `cargo package --no-verify` on them, which checks their manifests.

use std::path::{Component, Path, PathBuf};

use a2a_e2e::server::workspace_root;

/// The crates that would be published: every workspace member that `cargo package` would take
/// (the ones without `publish = false`).
fn published_packages(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace");
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("the workspace's members");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root.join(m))
        .filter(|dir| {
            let text = std::fs::read_to_string(dir.join("Cargo.toml")).expect("a manifest");
            !text.contains("publish = false")
        })
        .collect()
}

/// The Rust files of a package that a build compiles (not its tests, benches or examples).
fn compiled_sources(package: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![package.join("src")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let build = package.join("build.rs");
    if build.exists() {
        files.push(build);
    }
    files
}

/// The relative paths a file's shipped code reads at compile time, before its test module.
fn compile_time_reads(text: &str) -> Vec<String> {
    let shipped = text.split("#[cfg(test)]").next().unwrap_or(text);
    let mut found = Vec::new();
    for marker in ["include_str!(\"", "include_bytes!(\"", "#[path = \""] {
        let mut rest = shipped;
        while let Some(at) = rest.find(marker) {
            let after = &rest[at + marker.len()..];
            let end = after.find('"').unwrap_or(after.len());
            found.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    found
}

/// `path` with `.` and `..` folded, without touching the disk.
fn normalised(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn published_crates_read_nothing_from_outside_their_package() {
    let root = workspace_root();
    let packages = published_packages(&root);
    assert!(
        packages.len() >= 10,
        "the kit's library crates: {packages:?}"
    );
    let mut outside = Vec::new();
    for package in &packages {
        for file in compiled_sources(package) {
            let text = std::fs::read_to_string(&file).expect("a source file");
            for read in compile_time_reads(&text) {
                // `concat!(env!("CARGO_MANIFEST_DIR"), …)` forms are caught by their marker
                // missing: only literal paths are followed, and a literal absolute path is
                // outside by definition.
                let target = normalised(&file.parent().expect("a directory").join(&read));
                if Path::new(&read).is_absolute() || !target.starts_with(normalised(package)) {
                    outside.push(format!("{}: {read}", file.display()));
                }
            }
            if text.contains("env!(\"CARGO_MANIFEST_DIR\")")
                && text
                    .split("#[cfg(test)]")
                    .next()
                    .is_some_and(|shipped| shipped.contains("include_str!(concat!"))
            {
                outside.push(format!("{}: include_str!(concat!(…))", file.display()));
            }
        }
    }
    assert!(
        outside.is_empty(),
        "compile-time reads from outside a package: {outside:#?}"
    );
}

#[test]
fn the_reader_finds_what_it_should() {
    let text = "const A: &str = include_str!(\"../x.json\");\n#[path = \"y.rs\"] mod y;\n\
                #[cfg(test)] mod t { const B: &str = include_str!(\"../../z\"); }";
    assert_eq!(compile_time_reads(text), ["../x.json", "y.rs"]);
    assert_eq!(
        normalised(Path::new("/a/b/src/../routes.json")),
        Path::new("/a/b/routes.json")
    );
}
