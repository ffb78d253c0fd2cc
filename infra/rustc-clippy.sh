#!/usr/bin/env bash
# A RUSTC_WORKSPACE_WRAPPER that compiles a workspace's members with clippy's driver, warnings
# as errors: what `cargo clippy --all-targets -- -D warnings` checks, found by the build itself.
# `cargo clippy` checks every dependency in check mode, then the build compiles each again
# (infra/test-all.sh: 12 min 19 s from its start to the end of its build before, 10 min 50 s
# with this, idle; the lints themselves are most of clippy's time). Cargo runs a workspace
# wrapper for members only, so the dependencies are compiled as by a plain build and reused by
# one. Cargo calls it with the compiler's path first, which clippy-driver takes as its wrapper
# mode.
exec clippy-driver "$@" -D warnings
