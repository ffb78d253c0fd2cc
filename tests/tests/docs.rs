//! The docs cannot drift from the code: every file a page names exists, and every item an
//! anchor of `docs/architecture.md` names (`` `file.rs` (`Item`, `Type::method`) ``) is
//! defined in that file. Anchors never name lines (`file.rs:123`): lines move with every edit.

use std::collections::BTreeSet;
use std::path::Path;

use a2a_e2e::server::workspace_root;
use serde_json::Value;

/// The pages whose paths must exist.
const PAGES: &[&str] = &[
    "README.md",
    "docs/a2a-lite.md",
    "docs/agents-calling-agents.md",
    "docs/architecture.md",
    "docs/auth.md",
    "docs/aws-adapters.md",
    "docs/bounds.md",
    "docs/client.md",
    "docs/conformance.md",
    "docs/cost.md",
    "docs/lambda.md",
    "docs/llm-agents.md",
    "docs/local-server.md",
    "docs/operations.md",
    "docs/performance.md",
    "docs/push.md",
    "docs/tracing.md",
];

/// The backticked spans of `text`, in order.
fn code_spans(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else { break };
        spans.push(&after[..end]);
        rest = &after[end + 1..];
    }
    spans
}

/// Whether a code span is a path in this repository (not a URL, a command or a glob).
fn is_repo_path(span: &str) -> bool {
    let roots = [
        "shared/",
        "tests/",
        "infra/",
        "docs/",
        "functions/",
        "agent/",
    ];
    roots.iter().any(|r| span.starts_with(r))
        && !span.contains(' ')
        && !span.contains('*')
        && !span.contains('{')
        && !span.contains('<')
        && (span.ends_with('/')
            || span
                .rsplit('/')
                .next()
                .is_some_and(|last| last.contains('.')))
}

/// Whether `file`'s text defines `name` (the last segment of `Type::method`).
fn defines(text: &str, name: &str) -> bool {
    let name = name.rsplit("::").next().unwrap_or(name);
    let kinds = [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "const ",
        "static ",
        "mod ",
        "macro_rules! ",
    ];
    text.lines().any(|line| {
        kinds.iter().any(|kind| {
            line.find(kind).is_some_and(|at| {
                let rest = &line[at + kind.len()..];
                rest.starts_with(name)
                    && !rest[name.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            })
        })
    })
}

/// The anchors of a page: `` `path.rs` (`A`, `B`) ``, as (path, names).
fn anchors(text: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(".rs` (`") {
        let before = &rest[..at];
        let Some(open) = before.rfind('`') else {
            rest = &rest[at + 1..];
            continue;
        };
        let path = format!("{}.rs", &before[open + 1..]);
        let after = &rest[at + ".rs` (".len()..];
        let Some(close) = after.find(')') else { break };
        let names = code_spans(&after[..close])
            .into_iter()
            .map(str::to_owned)
            .collect();
        found.push((path, names));
        rest = &after[close..];
    }
    found
}

#[test]
fn every_path_a_page_names_exists() {
    let root = workspace_root();
    let mut missing = BTreeSet::new();
    for page in PAGES {
        let text = std::fs::read_to_string(root.join(page)).expect("the page exists");
        for span in code_spans(&text) {
            let path = span.trim_end_matches('/');
            if is_repo_path(span) && !root.join(path).exists() {
                missing.insert(format!("{page}: {span}"));
            }
        }
    }
    assert!(missing.is_empty(), "paths that do not exist: {missing:#?}");
}

#[test]
fn architecture_anchors_name_items_that_exist_and_never_lines() {
    let root = workspace_root();
    let page = std::fs::read_to_string(root.join("docs/architecture.md")).expect("the page");
    let line_anchors: Vec<&str> = page
        .split(|c: char| c.is_whitespace() || c == '`' || c == '(')
        .filter(|word| {
            word.split_once(".rs:")
                .is_some_and(|(_, line)| line.starts_with(|c: char| c.is_ascii_digit()))
        })
        .collect();
    assert!(
        line_anchors.is_empty(),
        "anchors name lines: {line_anchors:?}"
    );
    let anchors = anchors(&page);
    assert!(
        anchors.len() > 40,
        "the page has its anchors ({})",
        anchors.len()
    );
    let mut broken = Vec::new();
    for (path, names) in &anchors {
        let file = root.join(path);
        let Ok(text) = std::fs::read_to_string(&file) else {
            broken.push(format!("{path}: no such file"));
            continue;
        };
        for name in names {
            if !defines(&text, name) {
                broken.push(format!("{path}: no item {name}"));
            }
        }
    }
    assert!(broken.is_empty(), "broken anchors: {broken:#?}");
}

#[test]
fn the_anchor_reader_reads_what_it_should() {
    let page = "see `shared/x.rs` (`A`, `B::c`) and `y.rs` (`D`); not `z.rs` alone";
    assert_eq!(
        anchors(page),
        [
            (
                "shared/x.rs".to_owned(),
                vec!["A".to_owned(), "B::c".to_owned()]
            ),
            ("y.rs".to_owned(), vec!["D".to_owned()]),
        ]
    );
    assert!(defines("pub(crate) async fn run(x: u8) {", "run"));
    assert!(defines("pub struct Runner;", "Runner"));
    assert!(!defines("pub fn runner() {}", "run"));
    assert!(defines("impl A { fn c() {} }", "A::c"));
    assert!(Path::new("docs").is_relative());
}

/// Every test `docs/bounds.md` names (a file, then the test function, in one table cell)
/// exists in that file: the inventory of bounds cannot name a test that is not there.
#[test]
fn the_inventory_of_bounds_names_tests_that_exist() {
    let root = workspace_root();
    let page = std::fs::read_to_string(root.join("docs/bounds.md")).expect("the page");
    let mut named = 0;
    let mut missing = Vec::new();
    for row in page
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| **"))
    {
        let Some(cell) = row.trim_end_matches('|').rsplit('|').next() else {
            continue;
        };
        let spans = code_spans(cell);
        for pair in spans.windows(2) {
            let (file, test) = (pair[0], pair[1]);
            if !is_repo_path(file) || test.contains('/') || test.contains(' ') {
                continue;
            }
            named += 1;
            let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
            if !text.contains(&format!("fn {test}(")) {
                missing.push(format!("{file} {test}"));
            }
        }
    }
    assert!(named > 20, "the table names its tests: {named}");
    assert!(missing.is_empty(), "tests that do not exist: {missing:#?}");
}

/// The rows of the layer table of `docs/architecture.md`: each row's folder, in order.
fn layer_rows(page: &str) -> Vec<String> {
    let table = page
        .split("| folder | role | crates |")
        .nth(1)
        .expect("the page has its layer table");
    table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| {
            code_spans(line)
                .first()
                .map(|f| f.trim_end_matches('/').to_owned())
        })
        .collect()
}

/// `cargo metadata` of the workspace (`--no-deps` unless `resolve` is wanted).
fn cargo_metadata(resolve: bool) -> Value {
    let mut command = std::process::Command::new(env!("CARGO"));
    command
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(workspace_root());
    if resolve {
        // This machine's platform only: the others' crates need not be downloaded.
        let rustc = std::process::Command::new(std::env::var("RUSTC").unwrap_or("rustc".into()))
            .arg("-vV")
            .output()
            .expect("rustc -vV runs");
        let version = String::from_utf8_lossy(&rustc.stdout).into_owned();
        let host = version
            .lines()
            .find_map(|l| l.strip_prefix("host: "))
            .expect("rustc names its host");
        command.args(["--filter-platform", host]);
    } else {
        command.arg("--no-deps");
    }
    let out = command.output().expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// The layer table says which way the arrows point; the manifests must agree: a crate depends
/// (normal dependencies) only on workspace crates of its own row or an earlier one.
#[test]
fn the_layer_table_matches_the_manifests() {
    let root = workspace_root();
    let page = std::fs::read_to_string(root.join("docs/architecture.md")).expect("the page");
    let rows = layer_rows(&page);
    assert!(rows.len() >= 6, "the table has its rows: {rows:?}");
    let metadata = cargo_metadata(false);
    let packages = metadata["packages"].as_array().expect("packages");
    let row_of = |manifest: &str| -> Option<usize> {
        let dir = Path::new(manifest).parent()?.strip_prefix(&root).ok()?;
        rows.iter().position(|folder| dir.starts_with(folder))
    };
    let rows_by_name: std::collections::BTreeMap<&str, Option<usize>> = packages
        .iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap_or_default();
            (
                name,
                row_of(p["manifest_path"].as_str().unwrap_or_default()),
            )
        })
        .collect();
    let placed = rows_by_name.values().filter(|r| r.is_some()).count();
    assert!(
        placed >= 14,
        "the table places the shared crates: {rows_by_name:?}"
    );
    let mut backwards = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        let Some(Some(row)) = rows_by_name.get(name).copied() else {
            continue;
        };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let normal = dep["kind"].is_null();
            let dep_name = dep["name"].as_str().unwrap_or_default();
            if let Some(dep_row) = rows_by_name.get(dep_name).copied() {
                match dep_row {
                    Some(dep_row) if !normal || dep_row <= row => {}
                    _ => backwards.push(format!(
                        "{name} ({}) -> {dep_name} ({})",
                        rows[row],
                        dep_row.map_or("outside the table", |r| rows[r].as_str())
                    )),
                }
            }
        }
    }
    assert!(
        backwards.is_empty(),
        "arrows the table does not allow: {backwards:#?}"
    );
}

/// The core does no I/O: nothing it depends on, however indirectly, is an HTTP client, SQLite
/// or the AWS SDK.
#[test]
fn the_core_depends_on_no_io_crate() {
    let metadata = cargo_metadata(true);
    let nodes = metadata["resolve"]["nodes"]
        .as_array()
        .expect("the resolved graph");
    let node = |id: &str| nodes.iter().find(|n| n["id"] == id);
    let core = metadata["packages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "a2a-core"))
        .and_then(|p| p["id"].as_str())
        .expect("a2a-core");
    let mut seen = BTreeSet::new();
    let mut pending = vec![core.to_owned()];
    while let Some(id) = pending.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        for dep in node(&id)
            .and_then(|n| n["deps"].as_array())
            .into_iter()
            .flatten()
        {
            let normal = dep["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].is_null());
            if normal {
                pending.extend(dep["pkg"].as_str().map(str::to_owned));
            }
        }
    }
    let names: BTreeSet<String> = seen
        .iter()
        .filter_map(|id| {
            let package = metadata["packages"]
                .as_array()?
                .iter()
                .find(|p| p["id"] == id.as_str())?;
            package["name"].as_str().map(str::to_owned)
        })
        .collect();
    assert!(
        names.contains("serde_json"),
        "the walk sees the core's dependencies: {names:?}"
    );
    let io: Vec<&String> = names
        .iter()
        .filter(|n| {
            [
                "reqwest",
                "hyper",
                "rusqlite",
                "libsqlite3-sys",
                "aws-config",
            ]
            .contains(&n.as_str())
                || n.starts_with("aws-sdk-")
        })
        .collect();
    assert!(io.is_empty(), "the core depends on I/O crates: {io:?}");
}
