//! The house's structure rules, held by the test command rather than by a reviewer's eye:
//! inside every crate the *files* form no import cycle (not only the crate's top modules), and
//! no shipped file passes 800 lines.
//!
//! A file imports another when it names a path into it: a `use`, or a `crate::`, `super::` or
//! `self::` path in its code. A facade's `pub use` is not an import of its own: a name used
//! through it is followed to the file that defines it, so `mod.rs` re-exporting its children
//! and a child using an item `mod.rs` defines make no cycle, while `mod.rs` *using* a child's
//! item and the child using one of `mod.rs`'s does. `mod x;` declares, it does not import.
//! Test modules (everything from the first `#[cfg(test)]`) and comments are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use a2a_e2e::server::workspace_root;

/// The most lines a shipped file may hold (its test module not counted).
const MAX_SHIPPED_LINES: usize = 800;

/// A module's path inside its crate: `["auth", "jwt"]`; the crate root is empty.
type Module = Vec<String>;

/// The source folders (`src/`) of every crate under `root`.
fn crate_sources(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() {
            found.push(dir.join("src"));
        }
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let skipped = ["target", "node_modules"].contains(&name.as_str());
            if entry.path().is_dir() && !name.starts_with('.') && !skipped {
                pending.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The module a file under `src` holds; `None` for binaries (`src/bin/`), which are crates of
/// their own.
fn module_of(src: &Path, file: &Path) -> Option<Module> {
    let relative = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Module = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    if parts
        .last()
        .is_some_and(|p| ["lib", "main", "mod"].contains(&p.as_str()))
    {
        parts.pop();
    }
    Some(parts)
}

/// A file's shipped code: before its first `#[cfg(test)]`, without `//` comments.
fn shipped(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `use` declarations of shipped code, each as (whether it is `pub`, its tree without
/// whitespace).
fn use_declarations(code: &str) -> Vec<(bool, String)> {
    let mut found = Vec::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let line = line.trim_start();
        let (public, rest) = if let Some(rest) = line.strip_prefix("pub") {
            let rest = match rest.strip_prefix('(') {
                Some(scoped) => scoped.split_once(')').map_or("", |(_, after)| after),
                None => rest,
            };
            (true, rest.trim_start())
        } else {
            (false, line)
        };
        let Some(tree) = rest.strip_prefix("use ") else {
            continue;
        };
        let mut tree = tree.to_owned();
        while !tree.contains(';') {
            let Some(next) = lines.next() else { break };
            tree.push_str(next);
        }
        let tree: String = tree
            .split(';')
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        found.push((public, tree));
    }
    found
}

/// The paths a use tree imports, each as (segments, the name it binds): `a::{b, c::D as E}`
/// is `a::b` bound as `b` and `a::c::D` bound as `E`; `a::{self}` is `a`; a glob binds no name.
fn flatten(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let prefix = tree[..open].trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut branches = Vec::new();
        let (mut depth, mut start) = (0, 0);
        for (at, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    branches.push(&inner[start..at]);
                    start = at + 1;
                }
                _ => {}
            }
        }
        branches.push(&inner[start..]);
        let mut paths = Vec::new();
        for branch in branches
            .into_iter()
            .map(str::trim)
            .filter(|b| !b.is_empty())
        {
            for (mut segments, name) in flatten(branch) {
                let mut full: Vec<String> = prefix
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                let name = if segments == ["self"] {
                    segments.clear();
                    full.last().cloned()
                } else {
                    name
                };
                full.append(&mut segments);
                paths.push((full, name));
            }
        }
        return paths;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path.trim(), Some(alias.trim().to_owned())),
        None => (tree, None),
    };
    let segments: Vec<String> = path
        .split("::")
        .filter(|s| !s.is_empty() && *s != "*")
        .map(str::to_owned)
        .collect();
    let name = if path.ends_with('*') {
        None
    } else {
        alias.or_else(|| segments.last().cloned())
    };
    vec![(segments, name)]
}

/// The `crate::`, `super::` and `self::` paths written in code outside `use` declarations.
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for root in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(root).map(|a| a + from) {
            from = at + root.len();
            let bounded = code[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            if !bounded {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| at + e);
            let path: Vec<String> = code[at..end]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            // `crate::{a, b}` of a use declaration names its modules in the braces, read
            // with the declaration.
            if path
                .iter()
                .any(|s| !["crate", "super", "self"].contains(&s.as_str()))
            {
                paths.push(path);
            }
        }
    }
    paths
}

/// One crate's files and what each imports.
struct Crate {
    modules: BTreeSet<Module>,
    /// Per module, the names its `pub use` declarations re-export, and from where.
    facades: BTreeMap<Module, BTreeMap<String, Vec<String>>>,
}

impl Crate {
    /// `segments` written in `module`, as a path from the crate root; `None` for paths into
    /// other crates.
    fn absolute(&self, module: &Module, segments: &[String]) -> Option<Module> {
        let first = segments.first()?;
        let mut base = module.clone();
        let rest = match first.as_str() {
            "crate" => {
                base.clear();
                &segments[1..]
            }
            "self" => &segments[1..],
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                base.truncate(base.len().saturating_sub(ups));
                &segments[ups..]
            }
            child => {
                // Since Rust 2018, a use path may start with a child module's name.
                let mut candidate = base.clone();
                candidate.push(child.to_owned());
                if !self.modules.contains(&candidate) {
                    return None;
                }
                segments
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file an absolute path leads to: the deepest module it names, or, when the next
    /// segment is a name that module re-exports, the file the re-export leads to.
    fn resolve(&self, path: &[String], depth: usize) -> Option<Module> {
        let split = (0..=path.len())
            .rev()
            .find(|&n| self.modules.contains(&path[..n]))?;
        let module = path[..split].to_vec();
        if depth < 8 {
            if let Some(target) = path
                .get(split)
                .and_then(|name| self.facades.get(&module)?.get(name))
            {
                let mut onward = self.absolute(&module, target)?;
                onward.extend(path[split + 1..].iter().cloned());
                if let Some(found) = self.resolve(&onward, depth + 1) {
                    return Some(found);
                }
            }
        }
        Some(module)
    }
}

/// The import graph of the crate whose sources are in `src`: which module's file names which.
fn import_graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let code: BTreeMap<Module, String> = rust_files(src)
        .iter()
        .filter_map(|file| {
            let module = module_of(src, file)?;
            Some((module, shipped(&std::fs::read_to_string(file).ok()?)))
        })
        .collect();
    let mut krate = Crate {
        modules: code.keys().cloned().collect(),
        facades: BTreeMap::new(),
    };
    for (module, text) in &code {
        let mut names = BTreeMap::new();
        for (_, tree) in use_declarations(text).into_iter().filter(|(p, _)| *p) {
            for (segments, name) in flatten(&tree) {
                names.extend(name.map(|n| (n, segments)));
            }
        }
        krate.facades.insert(module.clone(), names);
    }
    let mut graph = BTreeMap::new();
    for (module, text) in &code {
        let declarations = use_declarations(text);
        let mut paths: Vec<Vec<String>> = declarations
            .iter()
            .filter(|(public, _)| !public)
            .flat_map(|(_, tree)| flatten(tree).into_iter().map(|(s, _)| s))
            .collect();
        // The paths of the code itself, but not those of `pub use` lines (followed above).
        let body: String = text
            .lines()
            .filter(|l| {
                let l = l.trim_start();
                !(l.starts_with("pub use ") || l.starts_with("pub(crate) use "))
            })
            .collect::<Vec<_>>()
            .join("\n");
        paths.extend(inline_paths(&body));
        let imports: BTreeSet<Module> = paths
            .iter()
            .filter_map(|p| krate.resolve(&krate.absolute(module, p)?, 0))
            .filter(|target| target != module)
            .collect();
        graph.insert(module.clone(), imports);
    }
    graph
}

/// The import cycles of a graph: its strongly connected parts of more than one module.
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    // Kosaraju: finish order on the graph, then components on the reversed graph.
    fn finish(
        v: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        seen: &mut BTreeSet<Module>,
        order: &mut Vec<Module>,
    ) {
        if !seen.insert(v.clone()) {
            return;
        }
        for w in graph.get(v).into_iter().flatten() {
            finish(w, graph, seen, order);
        }
        order.push(v.clone());
    }
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for v in graph.keys() {
        finish(v, graph, &mut seen, &mut order);
    }
    let mut reversed: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (v, targets) in graph {
        for w in targets {
            reversed.entry(w.clone()).or_default().insert(v.clone());
        }
    }
    let mut assigned = BTreeSet::new();
    let mut found = Vec::new();
    for v in order.iter().rev() {
        let mut component = Vec::new();
        finish(v, &reversed, &mut assigned, &mut component);
        if component.len() > 1 {
            component.sort();
            found.push(component);
        }
    }
    found
}

fn show(module: &Module) -> String {
    if module.is_empty() {
        "(root)".to_owned()
    } else {
        module.join("::")
    }
}

#[test]
fn no_file_imports_itself_back_through_others() {
    let root = workspace_root();
    let sources = crate_sources(&root);
    assert!(sources.len() > 15, "the crates are found: {sources:?}");
    let mut found = Vec::new();
    for src in &sources {
        for cycle in cycles(&import_graph(src)) {
            let crate_dir = src
                .parent()
                .unwrap_or(src)
                .strip_prefix(&root)
                .unwrap_or(src);
            let files: Vec<String> = cycle.iter().map(show).collect();
            found.push(format!("{}: {}", crate_dir.display(), files.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "file-level import cycles: {found:#?}");
}

#[test]
fn no_shipped_file_passes_the_limit() {
    let root = workspace_root();
    let mut long = Vec::new();
    for src in crate_sources(&root) {
        for file in rust_files(&src) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let lines = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .lines()
                .count();
            let relative = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            let exempt = ["testing/", "tests/", "infra/"]
                .iter()
                .any(|p| relative.starts_with(p) || relative.contains(&format!("/{p}")));
            if lines > MAX_SHIPPED_LINES && !exempt {
                long.push(format!("{relative}: {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "shipped files over {MAX_SHIPPED_LINES} lines: {long:#?}"
    );
}

/// The reader finds a cycle it should, and none where a facade only re-exports.
#[test]
fn the_cycle_reader_reads_what_it_should() {
    let dir = tempfile::tempdir().expect("a temporary crate");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("auth")).expect("folders");
    let write = |path: &str, text: &str| std::fs::write(src.join(path), text).expect("a file");
    // A facade and a child using the facade's own item: no cycle.
    write(
        "lib.rs",
        "mod auth;\nmod store;\npub use store::Store;\npub const LIMIT: u8 = 1;\n",
    );
    write("store.rs", "use crate::LIMIT;\npub struct Store;\n");
    // mod.rs uses its child's item and the child uses mod.rs's: a cycle.
    write(
        "auth/mod.rs",
        "mod jwt;\nuse self::jwt::verify;\npub struct Principal;\n",
    );
    write(
        "auth/jwt.rs",
        "use super::{Principal};\npub fn verify() -> Principal { Principal }\n// use crate::store;\n",
    );
    let graph = import_graph(&src);
    let module = |s: &str| -> Module { s.split("::").map(str::to_owned).collect() };
    assert_eq!(graph[&module("store")], BTreeSet::from([Vec::new()]));
    assert!(graph[&Vec::new()].is_empty(), "a pub use is a facade");
    assert_eq!(
        cycles(&graph),
        vec![vec![module("auth"), module("auth::jwt")]]
    );
    // The same through an inline path, a rename and a group with self.
    write(
        "auth/jwt.rs",
        "use crate::{auth::{self as a}};\npub fn verify() -> a::Principal { crate::auth::Principal }\n",
    );
    assert_eq!(cycles(&import_graph(&src)).len(), 1);
    write(
        "auth/mod.rs",
        "mod jwt;\npub use jwt::verify;\npub struct Principal;\n",
    );
    assert!(
        cycles(&import_graph(&src)).is_empty(),
        "re-exporting is no import"
    );
}
