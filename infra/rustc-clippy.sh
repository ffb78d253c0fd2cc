#!/usr/bin/env bash
# A RUSTC_WORKSPACE_WRAPPER that compiles a workspace's members with clippy's driver, warnings
# as errors: what `cargo clippy --all-targets -- -D warnings` checks, found by the build itself.
# `cargo clippy` checks every dependency in check mode, then the build compiles each again
# (infra/test-all.sh reached its Rust tests at 12 min 19 s before, at 11 min 5 s with this,
# idle: the lints are most of clippy's time, the dependencies' check about a minute). Cargo
# runs a workspace wrapper for members only, so the dependencies are compiled as by a plain
# build and reused by one. Cargo calls it with the compiler's path first, which clippy-driver
# takes as its wrapper mode.
exec clippy-driver "$@" -D warnings
