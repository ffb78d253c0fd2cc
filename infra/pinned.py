#!/usr/bin/env python3
"""Checks that a generated project's first resolution kept to the lock file it was given.

`a2a-local new` gives a project the kit's Cargo.lock (`--llm`: the LLM adapter's), so that its
first build uses the versions the kit was tested with and resolves none anew. Cargo rewrites that file
on the first build: it adds the project itself and drops what the project does not use, and
that is all it may do. A package the given file did not pin would be resolved to whatever is
newest that day (an untested version, and a build that needs the registry's index).

    infra/pinned.py GIVEN_LOCK PROJECT_LOCK PROJECT_NAME

Exits 1, naming each package of PROJECT_LOCK (but the project) that GIVEN_LOCK lacks at that
version.
"""
import re
import sys


def packages(path):
    """The (name, version) pairs of a Cargo.lock."""
    with open(path) as f:
        return set(re.findall(r'^name = "([^"]+)"\nversion = "([^"]+)"$', f.read(), re.M))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    given, project, name = sys.argv[1:]
    unpinned = sorted(p for p in packages(project) - packages(given) if p[0] != name)
    if unpinned:
        listed = ", ".join(f"{n} {v}" for n, v in unpinned)
        sys.exit(
            f"pinned: the project's first build resolved {len(unpinned)} package(s) its given "
            f"Cargo.lock did not pin: {listed}. Add them to the lock file `a2a-local new` "
            "copies (the kit's Cargo.lock; with --llm, shared/adapters/llm/Cargo.lock, which "
            "takes the kit's versions: cargo update -p <crate> --precise <the kit's version>)"
        )
    print(f"pinned: every package of {name}'s build is one the given Cargo.lock pinned")


if __name__ == "__main__":
    main()
