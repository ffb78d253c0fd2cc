#!/usr/bin/env python3
"""Checks that a generated project's first resolution keeps to the lock file it was given.

`a2a-local new` gives a project the kit's Cargo.lock (`--llm`: the LLM adapter's), so that its
first build uses the versions the kit was tested with and resolves none anew. Cargo rewrites
that file on the first resolution: it adds the project itself and drops what the project does
not use, and that is all it may do. A package the given file did not pin would be resolved to
whatever is newest that day (an untested version, and a build that needs the registry's index).

    cd <a new project> && infra/pinned.py

Runs the project's first resolution (`cargo metadata`, which compiles nothing) and exits 1,
naming each package it added (but the project) that the given lock lacks at that version.
"""
import json
import re
import subprocess
import sys


def packages(text):
    """The (name, version) pairs of a Cargo.lock's text."""
    return set(re.findall(r'^name = "([^"]+)"\nversion = "([^"]+)"$', text, re.M))


def main():
    if len(sys.argv) != 1:
        sys.exit(__doc__)
    with open("Cargo.lock") as f:
        given = packages(f.read())
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1"],
            check=True,
            stdout=subprocess.PIPE,
        ).stdout
    )
    root = metadata["resolve"]["root"]
    name = next(p["name"] for p in metadata["packages"] if p["id"] == root)
    with open("Cargo.lock") as f:
        resolved = packages(f.read())
    unpinned = sorted(p for p in resolved - given if p[0] != name)
    if unpinned:
        listed = ", ".join(f"{n} {v}" for n, v in unpinned)
        sys.exit(
            f"pinned: the project's first resolution added {len(unpinned)} package(s) its given "
            f"Cargo.lock did not pin: {listed}. Add them to the lock file `a2a-local new` "
            "copies (the kit's Cargo.lock; with --llm, shared/adapters/llm/Cargo.lock, which "
            "takes the kit's versions: cargo update -p <crate> --precise <the kit's version>)"
        )
    print(f"pinned: every package of {name}'s build is one the given Cargo.lock pinned")


if __name__ == "__main__":
    main()
