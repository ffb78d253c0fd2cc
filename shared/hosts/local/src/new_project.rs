//! `a2a-local new <dir>`: writes a new agent project outside this repository, a Cargo package
//! with its own agent, a local-server binary, the Lambda binary, a test, a README, and the kit's
//! SAM template and samconfig, so the project deploys the same stack.
//!
//! The project's own files are real files under `shared/hosts/local/new-project/`, with `{{…}}`
//! placeholders, embedded at compile time. `template.yaml`, `samconfig.toml`, `Cargo.lock`,
//! `rust-toolchain.toml`, `.cargo/config.toml` and the build profiles are this repository's own,
//! read from the checkout when a project is written and adapted, so they never drift from the
//! kit's (and a2a-local compiles nothing from outside its package).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use clap::Args;

mod llm;

/// `a2a-local new <dir>`.
#[derive(Debug, Clone, Args)]
pub struct NewArgs {
    /// The project's directory: created if missing, refused if not empty. Its last component
    /// names the Cargo package (letters, digits, `-` and `_`, starting with a letter).
    pub dir: PathBuf,
    /// Depend on the kit's crates from this git repository instead of this checkout.
    #[arg(long, value_name = "URL")]
    pub kit_git: Option<String>,
    /// With `--kit-git`: the commit, tag or branch to build from (default: the default branch).
    #[arg(long, value_name = "REV", requires = "kit_git")]
    pub kit_rev: Option<String>,
    /// An LLM agent (the kit's a2a-llm adapter): a system prompt, a local tool and another
    /// agent as tools, its model from OPENAI_BASE_URL, OPENAI_API_KEY and A2A_LLM_MODEL.
    #[arg(long)]
    pub llm: bool,
}

/// Where the generated project gets the kit's crates from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KitSource {
    /// A checkout of this repository (its root directory).
    Path(PathBuf),
    /// A git repository, optionally at a revision.
    Git {
        /// The repository's URL.
        url: String,
        /// A commit, tag or branch; `None`: the default branch.
        rev: Option<String>,
    },
}

impl KitSource {
    /// The checkout this binary was built from.
    pub fn this_checkout() -> Self {
        Self::Path(kit_root())
    }

    /// The dependency's location, as the inside of a Cargo dependency table.
    fn location(&self, crate_dir: &str) -> String {
        match self {
            Self::Path(root) => format!(
                "path = {}",
                toml_string(&root.join(crate_dir).to_string_lossy())
            ),
            Self::Git { url, rev: None } => format!("git = {}", toml_string(url)),
            Self::Git {
                url,
                rev: Some(rev),
            } => {
                format!("git = {}, rev = {}", toml_string(url), toml_string(rev))
            }
        }
    }
}

/// Why no project was written.
#[derive(Debug)]
pub enum NewProjectError {
    /// The directory's name cannot name a Cargo package.
    BadName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The directory exists and holds files.
    NotEmpty(PathBuf),
    /// The path exists and is not a directory.
    NotADirectory(PathBuf),
    /// The kit's embedded template no longer has what the generator adapts (a kit bug, caught
    /// by the kit's own tests).
    Template(String),
    /// A file of the kit's checkout could not be read: `a2a-local new` runs from a checkout of
    /// the kit, whose `template.yaml`, `samconfig.toml`, `Cargo.lock` and build settings the
    /// project carries.
    KitFile {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// Reading or writing failed.
    Io {
        /// The path involved.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

impl fmt::Display for NewProjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadName { name, reason } => write!(
                f,
                "cannot name a project {name:?}: {reason} (the directory's name is the Cargo \
                 package's name: letters, digits, `-` and `_`, starting with a letter)"
            ),
            Self::NotEmpty(dir) => write!(
                f,
                "{} is not empty: give a new directory, or an empty one",
                dir.display()
            ),
            Self::NotADirectory(path) => {
                write!(f, "{} exists and is not a directory", path.display())
            }
            Self::Template(what) => write!(f, "the kit's project template is broken: {what}"),
            Self::KitFile { path, source } => write!(
                f,
                "cannot read the kit's {}: {source} (`a2a-local new` runs from a checkout of the \
                 kit, whose template, lock file and build settings the project carries)",
                path.display()
            ),
            Self::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for NewProjectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } | Self::KitFile { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The kit's crates a project depends on: (package, directory in this repository).
const KIT_DEPENDENCIES: &[(&str, &str)] = &[
    ("a2a-core", "shared/core"),
    ("a2a-protocol", "shared/protocol"),
    ("a2a-local", "shared/hosts/local"),
];

/// The kit's crates only the project's Lambda binary needs: optional, behind the project's
/// `lambda` feature, so that its first `cargo run` does not compile the Lambda runtime and
/// the AWS SDK (issue 50: 13 min 28 s where the kit's own server took 3 to 5).
const KIT_LAMBDA_DEPENDENCIES: &[(&str, &str)] = &[("a2a-lambda-glue", "shared/hosts/lambda")];

/// The kit's crates its test depends on.
const KIT_DEV_DEPENDENCIES: &[(&str, &str)] = &[("a2a-embedded", "shared/adapters/embedded")];

/// Names the generated `src/lib.rs` imports: the agent's type must not take one of them.
const IMPORTED_NAMES: &[&str] = &[
    "Agent",
    "AgentDescription",
    "AgentError",
    "AgentRequest",
    "AgentSkill",
    "Arc",
    "Artifact",
    "Emitter",
    "Part",
];

/// Crate names Rust or Cargo keep for themselves: a package cannot take them.
const RESERVED_NAMES: &[&str] = &[
    "abstract",
    "alloc",
    "as",
    "async",
    "await",
    "become",
    "box",
    "break",
    "const",
    "continue",
    "core",
    "crate",
    "do",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "proc_macro",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "std",
    "struct",
    "super",
    "test",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "unsafe",
    "unsized",
    "use",
    "virtual",
    "where",
    "while",
    "yield",
];

/// The repository's files a project carries, adapted: read from the checkout this binary was
/// built from when a project is written, not embedded, so that a2a-local packages on its own
/// (nothing it compiles lies outside its package) and a project always gets the kit's files as
/// they are now.
#[derive(Debug, Clone)]
struct KitFiles {
    template: String,
    samconfig: String,
    manifest: String,
    lock: String,
    /// The LLM adapter's lock file: the kit's, and rig's dependencies (`--llm`).
    llm_lock: String,
    toolchain: String,
    cargo_config: String,
}

impl KitFiles {
    /// The files of the kit checkout at `root`.
    fn read(root: &Path) -> Result<Self, NewProjectError> {
        let read = |name: &str| {
            let path = root.join(name);
            std::fs::read_to_string(&path)
                .map_err(|source| NewProjectError::KitFile { path, source })
        };
        Ok(Self {
            template: read("template.yaml")?,
            samconfig: read("samconfig.toml")?,
            manifest: read("Cargo.toml")?,
            lock: read("Cargo.lock")?,
            llm_lock: read(llm::LOCK)?,
            toolchain: read("rust-toolchain.toml")?,
            cargo_config: read(".cargo/config.toml")?,
        })
    }
}

/// The project's own files, with placeholders: (path in the project, text).
const PROJECT_FILES: &[(&str, &str)] = &[
    // Not `Cargo.toml` in this repository: cargo would take `new-project/` for a package.
    ("Cargo.toml", include_str!("../new-project/Cargo.toml.in")),
    ("src/lib.rs", include_str!("../new-project/src/lib.rs")),
    ("src/main.rs", include_str!("../new-project/src/main.rs")),
    (
        "src/bin/lambda.rs",
        include_str!("../new-project/src/bin/lambda.rs"),
    ),
    (
        "tests/agent.rs",
        include_str!("../new-project/tests/agent.rs"),
    ),
    ("README.md", include_str!("../new-project/README.md")),
    // Not `.gitignore` in this repository: it would apply to `new-project/` itself.
    (".gitignore", include_str!("../new-project/gitignore")),
];

/// The root of the checkout this binary was built from.
fn kit_root() -> PathBuf {
    // This crate is `shared/hosts/local` in the kit's checkout.
    let local = Path::new(env!("CARGO_MANIFEST_DIR"));
    local.ancestors().nth(3).unwrap_or(local).to_path_buf()
}

/// A validated project: its directory, package name, and where the kit comes from.
#[derive(Debug, Clone)]
pub struct NewProject {
    dir: PathBuf,
    name: String,
    kit: KitSource,
    llm: bool,
}

impl NewProject {
    /// A project in `dir`, named after its last component; a bad name is refused here, before
    /// anything is written.
    pub fn new(dir: impl Into<PathBuf>, kit: KitSource) -> Result<Self, NewProjectError> {
        let dir = dir.into();
        let name = match dir.file_name().map(|n| n.to_str()) {
            Some(Some(name)) => name.to_string(),
            Some(None) => {
                return Err(NewProjectError::BadName {
                    name: dir.display().to_string(),
                    reason: "it is not valid UTF-8".into(),
                })
            }
            None => {
                return Err(NewProjectError::BadName {
                    name: dir.display().to_string(),
                    reason: "the path has no last component to name it".into(),
                })
            }
        };
        validate_name(&name)?;
        Ok(Self {
            dir,
            name,
            kit,
            llm: false,
        })
    }

    /// The project's agent is an LLM agent (`--llm`).
    pub fn llm(mut self, llm: bool) -> Self {
        self.llm = llm;
        self
    }

    /// The Cargo package's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The project's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The name of the Lambda binary every function of the template runs.
    pub fn lambda_binary(&self) -> String {
        format!("{}-lambda", self.name)
    }

    /// Every file of the project: (path relative to its directory, contents).
    pub fn files(&self) -> Result<Vec<(PathBuf, String)>, NewProjectError> {
        self.files_from(&KitFiles::read(&kit_root())?)
    }

    /// [`Self::files`], from the kit's files `kit`.
    fn files_from(&self, kit: &KitFiles) -> Result<Vec<(PathBuf, String)>, NewProjectError> {
        let crate_name = self.name.replace('-', "_");
        let agent = agent_type_name(&self.name);
        let dependencies = |deps: &[(&str, &str)], extra: &str| {
            deps.iter()
                .map(|(package, dir)| {
                    format!("{package} = {{ {}{extra} }}", self.kit.location(dir))
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let placeholders = [
            ("{{kit_dependencies}}", dependencies(KIT_DEPENDENCIES, "")),
            (
                "{{kit_lambda_dependencies}}",
                dependencies(KIT_LAMBDA_DEPENDENCIES, ", optional = true"),
            ),
            (
                "{{kit_dev_dependencies}}",
                dependencies(KIT_DEV_DEPENDENCIES, ""),
            ),
            ("{{profiles}}", profiles(&kit.manifest)),
            (
                "{{kit_repository}}",
                env!("CARGO_PKG_REPOSITORY").to_string(),
            ),
            (
                "{{llm_dependencies}}",
                llm::dependencies(self.llm, &self.kit.location(llm::DIR)),
            ),
            ("{{about}}", llm::about(self.llm).to_string()),
            ("{{crate}}", crate_name),
            ("{{Agent}}", agent),
            ("{{name}}", self.name.clone()),
        ];
        let mut files = Vec::new();
        for (path, text) in PROJECT_FILES {
            let mut text = llm::file(self.llm, path).unwrap_or(text).to_string();
            for (placeholder, value) in &placeholders {
                text = text.replace(placeholder, value);
            }
            if *path == "Cargo.toml" {
                text = llm::manifest(self.llm, text)?;
            }
            if let Some(left) = text.split("{{").nth(1) {
                let left: String = left.chars().take(40).collect();
                return Err(NewProjectError::Template(format!(
                    "{path}: unknown placeholder {{{{{left}"
                )));
            }
            files.push((PathBuf::from(path), text));
        }
        files.push(("template.yaml".into(), self.template(&kit.template)?));
        files.push(("samconfig.toml".into(), self.samconfig(&kit.samconfig)?));
        // The kit's versions of every dependency: cargo prunes what the project does not use.
        let lock = if self.llm { &kit.llm_lock } else { &kit.lock };
        files.push(("Cargo.lock".into(), lock.clone()));
        // The kit's toolchain: the lock file's versions need it, and a shared target
        // directory is only reused by the same compiler.
        files.push(("rust-toolchain.toml".into(), kit.toolchain.clone()));
        // The kit's build settings (aws-lc without CPU jitter entropy: the functions' cold
        // start); the same settings also let a shared target directory reuse the kit's build.
        files.push((".cargo/config.toml".into(), kit.cargo_config.clone()));
        Ok(files)
    }

    /// The kit's SAM template for this project: every function builds the project's Lambda
    /// binary from the project's directory; the stack's names are the project's.
    fn template(&self, kit: &str) -> Result<String, NewProjectError> {
        if !kit.contains("A2A_FUNCTION") {
            return Err(NewProjectError::Template(
                "template.yaml does not set A2A_FUNCTION: the functions cannot share one binary"
                    .into(),
            ));
        }
        let binary = self.lambda_binary();
        let text = replace_values(kit, "Binary:", &binary)?;
        let text = replace_values(&text, "CodeUri:", ".")?;
        let text = set_parameter_default(&text, "AgentName", &self.name)?;
        let text = set_parameter_default(&text, "MetricsNamespace", &self.name)?;
        let text = llm::template(self.llm, &text)?;
        let text = text.replacen(
            "Description: >-\n  a2a-lambda:",
            &format!("Description: >-\n  {}:", self.name),
            1,
        );
        Ok(format!(
            "# Generated by `a2a-local new` from the template.yaml of a2a-lambda {}\n\
             # ({}); the docs/ it names are the kit's.\n{text}",
            env!("CARGO_PKG_VERSION"),
            env!("CARGO_PKG_REPOSITORY"),
        ))
    }

    /// The kit's `samconfig.toml`, with the project's stack name.
    fn samconfig(&self, kit: &str) -> Result<String, NewProjectError> {
        let line = kit
            .lines()
            .find(|l| l.trim_start().starts_with("stack_name"))
            .ok_or_else(|| NewProjectError::Template("samconfig.toml has no stack_name".into()))?;
        // CloudFormation stack names take letters, digits and `-` only.
        let stack = self.name.replace('_', "-");
        Ok(kit.replacen(line, &format!("stack_name = {}", toml_string(&stack)), 1))
    }

    /// Writes the project. The directory is created if missing; an existing one must be
    /// empty, and a bad name was refused by [`NewProject::new`]: bad input writes nothing.
    pub fn write(&self) -> Result<(), NewProjectError> {
        let files = self.files()?;
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| NewProjectError::Io { path, source }
        };
        match std::fs::metadata(&self.dir) {
            Ok(meta) if !meta.is_dir() => {
                return Err(NewProjectError::NotADirectory(self.dir.clone()))
            }
            Ok(_) => {
                let mut entries = std::fs::read_dir(&self.dir).map_err(io_err(&self.dir))?;
                if entries.next().is_some() {
                    return Err(NewProjectError::NotEmpty(self.dir.clone()));
                }
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(io_err(&self.dir)(err)),
        }
        for (path, text) in files {
            let path = self.dir.join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io_err(parent))?;
            }
            std::fs::write(&path, text).map_err(io_err(&path))?;
        }
        Ok(())
    }
}

/// Runs `a2a-local new`: writes the project and says what to do next.
pub fn run(args: &NewArgs) -> Result<(), NewProjectError> {
    let kit = match &args.kit_git {
        Some(url) => KitSource::Git {
            url: url.clone(),
            rev: args.kit_rev.clone(),
        },
        None => KitSource::this_checkout(),
    };
    let project = NewProject::new(&args.dir, kit)?.llm(args.llm);
    project.write()?;
    let dir = project.dir().display();
    eprintln!(
        "created the agent project {} in {dir}\n\n  cd {dir}\n  cargo run        # the local \
         server on 127.0.0.1:9000 (the first build: about 4 minutes on 2 cores)\n  cargo test\n  \
         sam build && sam deploy --guided\n\nThe agent is src/lib.rs; README.md says more.",
        project.name()
    );
    Ok(())
}

/// Refuses a name Cargo or Rust would refuse, or one of the kit's crates the project depends
/// on (a package cannot depend on its own name).
fn validate_name(name: &str) -> Result<(), NewProjectError> {
    let bad = |reason: &str| {
        Err(NewProjectError::BadName {
            name: name.to_string(),
            reason: reason.to_string(),
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > 64 {
        return bad("it is longer than 64 characters");
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return bad("it does not start with a letter");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return bad(&format!("{c:?} is not allowed"));
    }
    if RESERVED_NAMES.contains(&name.replace('-', "_").as_str()) {
        return bad("Rust or Cargo reserves it");
    }
    if KIT_DEPENDENCIES
        .iter()
        .chain(KIT_LAMBDA_DEPENDENCIES)
        .chain(KIT_DEV_DEPENDENCIES)
        .any(|(package, _)| package.replace('-', "_") == name.replace('-', "_"))
    {
        return bad("the project depends on a crate of that name");
    }
    Ok(())
}

/// The agent's type name: the package name in CamelCase (`my-agent` → `MyAgent`), prefixed
/// with `My` where it would shadow a name `src/lib.rs` imports.
fn agent_type_name(name: &str) -> String {
    let camel: String = name
        .split(['-', '_'])
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect();
    if IMPORTED_NAMES.contains(&camel.as_str()) {
        format!("My{camel}")
    } else {
        camel
    }
}

/// Replaces the value of every line whose first word is `key` (e.g. `Binary:`); at least one
/// must be there.
fn replace_values(text: &str, key: &str, value: &str) -> Result<String, NewProjectError> {
    let mut found = false;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        if line.trim_start().starts_with(key) {
            found = true;
            let end = if line.ends_with('\n') { "\n" } else { "" };
            out.push_str(&format!("{}{key} {value}{end}", &line[..indent]));
        } else {
            out.push_str(line);
        }
    }
    if found {
        Ok(out)
    } else {
        Err(NewProjectError::Template(format!(
            "template.yaml has no `{key}` line"
        )))
    }
}

/// Sets the `Default:` of a template parameter (`  Name:` under `Parameters:`).
fn set_parameter_default(
    text: &str,
    parameter: &str,
    value: &str,
) -> Result<String, NewProjectError> {
    let missing = || {
        NewProjectError::Template(format!(
            "template.yaml has no parameter {parameter} with a Default"
        ))
    };
    let header = format!("\n  {parameter}:\n");
    let start = text.find(&header).ok_or_else(missing)? + header.len();
    // The parameter's block ends at the next line indented two spaces or less.
    let block_len = text[start..]
        .split_inclusive('\n')
        .take_while(|line| line.starts_with("    ") || line.trim().is_empty())
        .map(str::len)
        .sum::<usize>();
    let block = &text[start..start + block_len];
    let default = block
        .split_inclusive('\n')
        .find(|line| line.trim_start().starts_with("Default:"))
        .ok_or_else(missing)?;
    let line = format!("    Default: {}\n", yaml_string(value));
    let block = block.replacen(default, &line, 1);
    Ok(format!(
        "{}{block}{}",
        &text[..start],
        &text[start + block_len..]
    ))
}

/// The `[profile.*]` sections of the kit's workspace manifest: the project builds the kit's
/// crates the same way (so a shared target directory reuses them, and the Lambda binary is as
/// small).
fn profiles(manifest: &str) -> String {
    let mut out = String::new();
    let mut keep = false;
    for line in manifest.split_inclusive('\n') {
        if line.starts_with('[') {
            keep = line.starts_with("[profile.");
            if keep {
                out.push('\n');
            }
        }
        if keep && !line.trim().is_empty() {
            out.push_str(line);
        }
    }
    out
}

/// A TOML basic string.
fn toml_string(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A YAML double-quoted string (the names it gets are validated package names).
fn yaml_string(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kit() -> KitSource {
        KitSource::Path(PathBuf::from("/kit"))
    }

    fn kit_files() -> KitFiles {
        KitFiles::read(&kit_root()).expect("the kit's files")
    }

    #[test]
    fn bad_names_are_refused_with_the_reason() {
        for (name, reason) in [
            ("1agent", "does not start with a letter"),
            ("-agent", "does not start with a letter"),
            ("my agent", "' ' is not allowed"),
            ("my.agent", "'.' is not allowed"),
            ("agént", "'é' is not allowed"),
            ("fn", "reserves it"),
            ("self", "reserves it"),
            ("test", "reserves it"),
            ("a2a-local", "depends on a crate of that name"),
            ("a2a_core", "depends on a crate of that name"),
        ] {
            let err = NewProject::new(Path::new("/tmp").join(name), kit())
                .expect_err(name)
                .to_string();
            assert!(err.contains(reason), "{name}: {err}");
            assert!(err.contains("letters, digits"), "{name}: {err}");
        }
        let long = "a".repeat(65);
        assert!(NewProject::new(Path::new("/tmp").join(long), kit()).is_err());
        assert!(NewProject::new("/", kit()).is_err());
        assert!(NewProject::new("/tmp/a2a-lambda_agent-2", kit()).is_ok());
    }

    #[test]
    fn the_agent_type_is_the_name_in_camel_case_and_shadows_no_import() {
        assert_eq!(agent_type_name("hello-agent"), "HelloAgent");
        assert_eq!(agent_type_name("my_bot2"), "MyBot2");
        assert_eq!(agent_type_name("x--y"), "XY");
        assert_eq!(agent_type_name("agent"), "MyAgent");
        assert_eq!(agent_type_name("part"), "MyPart");
    }

    #[test]
    fn files_carry_the_project_names_and_no_placeholder() {
        let project = NewProject::new("/tmp/hello-agent", kit()).expect("valid");
        let files = project.files().expect("renders");
        let file = |path: &str| {
            files
                .iter()
                .find(|(p, _)| p == Path::new(path))
                .map(|(_, text)| text.as_str())
                .unwrap_or_else(|| panic!("no {path}"))
        };
        for (path, text) in &files {
            assert!(!text.contains("{{"), "{}: placeholder left", path.display());
        }
        let manifest = file("Cargo.toml");
        assert!(manifest.contains("name = \"hello-agent\""), "{manifest}");
        assert!(
            manifest.contains("name = \"hello-agent-lambda\""),
            "{manifest}"
        );
        assert!(
            manifest.contains("a2a-core = { path = \"/kit/shared/core\" }"),
            "{manifest}"
        );
        assert!(manifest.contains("a2a-embedded = { path = \"/kit/shared/adapters/embedded\" }"));
        // The Lambda binary's dependencies only with its feature, which cargo-lambda (so
        // `sam build` and `cargo lambda watch`) turns on: `cargo run` compiles no AWS SDK.
        assert!(
            manifest.contains(
                "a2a-lambda-glue = { path = \"/kit/shared/hosts/lambda\", optional = true }"
            ),
            "{manifest}"
        );
        assert!(
            manifest.contains("lambda = [\"dep:a2a-lambda-glue\"]"),
            "{manifest}"
        );
        assert!(
            manifest.contains("path = \"src/bin/lambda.rs\"\nrequired-features = [\"lambda\"]"),
            "{manifest}"
        );
        for command in ["build", "watch"] {
            assert!(
                manifest.contains(&format!(
                    "[package.metadata.lambda.{command}]\nfeatures = [\"lambda\"]"
                )),
                "{manifest}"
            );
        }
        assert!(
            manifest.contains("[profile.dev.package.\"*\"]"),
            "{manifest}"
        );
        assert!(manifest.contains("[profile.release]"), "{manifest}");
        assert!(!manifest.contains("[workspace.dependencies]"), "{manifest}");
        let lib = file("src/lib.rs");
        assert!(lib.contains("struct HelloAgent;"), "{lib}");
        assert!(lib.contains("name: \"hello-agent\".into()"), "{lib}");
        assert!(lib.contains("pub fn agent() -> Arc<dyn Agent>"), "{lib}");
        assert!(file("src/main.rs").contains("hello_agent::agent()"));
        assert!(file("src/bin/lambda.rs").contains("a2a_lambda_glue::run(hello_agent::agent())"));
        assert!(file("tests/agent.rs").contains("hello_agent::agent()"));
        assert!(file("README.md").starts_with("# hello-agent\n"));
        let kit_files = kit_files();
        assert_eq!(file("Cargo.lock"), kit_files.lock);
        assert_eq!(file("rust-toolchain.toml"), kit_files.toolchain);
        assert_eq!(file(".cargo/config.toml"), kit_files.cargo_config);
        assert!(kit_files
            .cargo_config
            .contains("AWS_LC_SYS_NO_JITTER_ENTROPY"));
        assert!(file("samconfig.toml").contains("stack_name = \"hello-agent\""));

        let underscored = NewProject::new("/tmp/my_bot", kit()).expect("valid");
        let samconfig = underscored.samconfig(&kit_files.samconfig).expect("adapts");
        assert!(samconfig.contains("stack_name = \"my-bot\""), "{samconfig}");
    }

    #[test]
    fn the_template_is_the_kits_with_the_projects_binary_and_names() {
        let project = NewProject::new("/tmp/hello-agent", kit()).expect("valid");
        let kit_template = kit_files().template;
        let template = project.template(&kit_template).expect("adapts");
        let binaries: Vec<&str> = template
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Binary:"))
            .map(str::trim)
            .collect();
        assert!(!binaries.is_empty());
        assert!(
            binaries.iter().all(|b| *b == "hello-agent-lambda"),
            "{binaries:?}"
        );
        assert!(template
            .lines()
            .filter_map(|l| l.trim().strip_prefix("CodeUri:"))
            .all(|uri| uri.trim() == "."));
        assert!(template.contains("  AgentName:\n    Type: String\n    Default: \"hello-agent\"\n"));
        assert!(template
            .contains("  MetricsNamespace:\n    Type: String\n    Default: \"hello-agent\"\n"));
        // Everything else is the kit's, line for line.
        assert_eq!(template.lines().count(), kit_template.lines().count() + 2);
        for (ours, kits) in template.lines().skip(2).zip(kit_template.lines()) {
            let adapted = ours.trim_start().starts_with("Binary: hello-agent-lambda")
                || ours.trim_start().starts_with("CodeUri: .")
                || ours == "    Default: \"hello-agent\""
                || ours.starts_with("  hello-agent:");
            assert!(ours == kits || adapted, "{kits:?} became {ours:?}");
        }
    }

    #[test]
    fn a_template_without_what_the_generator_adapts_is_a_clear_error() {
        let project = NewProject::new("/tmp/hello-agent", kit()).expect("valid");
        let err = project
            .template("Resources: {}\n")
            .expect_err("one binary needed");
        assert!(err.to_string().contains("A2A_FUNCTION"), "{err}");
        let err =
            set_parameter_default("Parameters:\n  Other:\n    Default: x\n", "AgentName", "n")
                .expect_err("no such parameter");
        assert!(err.to_string().contains("AgentName"), "{err}");
        let err = project
            .samconfig("version = 0.1\n")
            .expect_err("no stack name");
        assert!(err.to_string().contains("stack_name"), "{err}");
    }

    #[test]
    fn git_sources_name_the_url_and_the_revision() {
        let git = KitSource::Git {
            url: "https://example.com/kit.git".into(),
            rev: Some("v0.1.0".into()),
        };
        let project = NewProject::new("/tmp/hello-agent", git).expect("valid");
        let files = project.files().expect("renders");
        let manifest = &files[0].1;
        assert!(
            manifest.contains(
                "a2a-local = { git = \"https://example.com/kit.git\", rev = \"v0.1.0\" }"
            ),
            "{manifest}"
        );
        assert!(!manifest.contains("{ path = "), "{manifest}");
    }

    #[test]
    fn the_command_takes_a_directory_and_optionally_a_git_source() {
        use clap::Parser;
        let cli = crate::Cli::try_parse_from([
            "a2a-local",
            "new",
            "../my-agent",
            "--kit-git",
            "https://example.com/kit.git",
            "--kit-rev",
            "abc123",
        ])
        .expect("parses");
        let Some(crate::Command::New(args)) = cli.command else {
            panic!("not the new command: {:?}", cli.command);
        };
        assert_eq!(args.dir, PathBuf::from("../my-agent"));
        assert_eq!(args.kit_git.as_deref(), Some("https://example.com/kit.git"));
        assert_eq!(args.kit_rev.as_deref(), Some("abc123"));
        let err = crate::Cli::try_parse_from(["a2a-local", "new", "x", "--kit-rev", "abc123"])
            .expect_err("a revision needs a repository");
        assert!(err.to_string().contains("--kit-git"), "{err}");
    }

    #[test]
    fn a_project_is_written_into_a_new_or_empty_directory_only() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("hello-agent");
        NewProject::new(&dir, kit())
            .expect("valid")
            .write()
            .expect("written");
        for path in [
            "Cargo.toml",
            "Cargo.lock",
            "src/lib.rs",
            "src/main.rs",
            "src/bin/lambda.rs",
            "tests/agent.rs",
            "template.yaml",
            "samconfig.toml",
            "README.md",
            ".gitignore",
            "rust-toolchain.toml",
            ".cargo/config.toml",
        ] {
            assert!(dir.join(path).is_file(), "{path} missing");
        }
        let before = std::fs::read_to_string(dir.join("src/lib.rs")).expect("read");

        let err = NewProject::new(&dir, kit())
            .expect("valid")
            .write()
            .expect_err("not empty");
        assert!(matches!(err, NewProjectError::NotEmpty(_)), "{err}");
        assert!(err.to_string().contains("is not empty"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.join("src/lib.rs")).expect("read"),
            before
        );

        let empty = root.path().join("empty_agent");
        std::fs::create_dir(&empty).expect("mkdir");
        NewProject::new(&empty, kit())
            .expect("valid")
            .write()
            .expect("an empty dir is fine");
        assert!(empty.join("Cargo.toml").is_file());

        let file = root.path().join("a_file");
        std::fs::write(&file, "x").expect("write");
        let err = NewProject::new(&file, kit())
            .expect("valid")
            .write()
            .expect_err("a file");
        assert!(matches!(err, NewProjectError::NotADirectory(_)), "{err}");

        let bad = root.path().join("9lives");
        assert!(NewProject::new(&bad, kit()).is_err());
        assert!(!bad.exists(), "a refused name writes nothing");
    }
}
