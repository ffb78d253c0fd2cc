#!/usr/bin/env python3
"""The README's walkthroughs, pasted as written: each shell block of the sections below runs,
command by command, in one bash in an empty directory (as a new user's checkout would be), and
what a command prints is checked against the lines the README shows under it (`#   …`: the
fragments between the `…`, in order; a remark in parentheses is not output).

What it adapts, and only that:
- `cargo run -p a2a-local --` and `cargo run --bin a2a --` are the test build's binaries
  (`A2A_BIN_DIR`, default `$CARGO_TARGET_DIR/debug`): the build is done, and cargo selecting
  one package would compile another feature set;
- the ports 9000, 9001 and 8765 are free ports, so that the check runs beside other suites;
- a server started in the foreground (the README says "in another terminal") runs in the
  background, and the next command waits until it answers;
- placeholders the README leaves to the reader are filled from what the commands before
  printed: `TASK_ID` (the last task a command printed), `a2a_…` (the key `keys issue` printed);
- the quick start's server is stopped before "Turn on authentication", as that section says;
- commands that need the internet (a real OpenID issuer: `--auth jwt`, `$TOKEN`) are skipped;
  the test command runs JWT auth against a local issuer elsewhere.

Run by infra/test-all.sh; alone: `cargo build --workspace && infra/walkthrough-check.py`.
"""

import os
import re
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(
    os.environ.get("A2A_BIN_DIR")
    or Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug"
)
# (section heading, which of its `sh` blocks, from 0)
BLOCKS = [
    ("Quick start", 0),
    ("Try it with curl", 0),
    ("Call any agent: the `a2a` command", 0),
    ("Turn on authentication", 0),
]
SKIP = ("--auth jwt", "$TOKEN")
COMMAND_SECONDS = 90


def say(text):
    print(f"walkthrough-check: {text}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def section_block(readme, heading, index):
    """The index-th ```sh block of the section `## heading`."""
    lines = readme.splitlines()
    start = lines.index(f"## {heading}")
    blocks, current = [], None
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if current is None and line.strip() == "```sh":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(line)
    if index >= len(blocks):
        raise SystemExit(f"README.md: section '{heading}' has no sh block {index}")
    return blocks[index]


def commands(block):
    """(command, expected fragments) pairs: continuation lines joined, comments dropped except
    the `#   ` lines under a command, which are what it prints."""
    out, pending = [], ""
    for line in block:
        if pending:
            pending += "\n" + line
        elif line.startswith("#   ") and out:
            text = re.sub(r"\([^)]*\)", "", line[4:])
            out[-1][1].extend(f.strip() for f in text.split("…") if f.strip())
            continue
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        else:
            pending = line
        if pending.endswith("\\"):
            continue
        out.append((pending, []))
        pending = ""
    return out


def moved(text, ports):
    for readme_port, port in ports.items():
        text = re.sub(rf"\b{readme_port}\b", str(port), text)
    return text


def adapt(command, ports):
    command = command.replace("cargo run -p a2a-local --", str(BIN / "a2a-local"))
    command = command.replace("cargo run -p a2a-local", str(BIN / "a2a-local"))
    command = command.replace("cargo run --bin a2a --", str(BIN / "a2a"))
    return moved(command, ports)


def filled(command, shell):
    """The README's placeholders, filled with what the commands before printed."""
    for placeholder, value in (("TASK_ID", shell.task_id), ("a2a_…", shell.api_key)):
        if placeholder in command.split("#")[0]:
            if value is None:
                raise SystemExit(f"nothing before printed what {placeholder} stands for in:\n  {command}")
            command = command.replace(placeholder, value)
    return command


def is_server(command):
    """An a2a-local that serves (not `keys`, not `new`), started in the foreground."""
    first = command.split("#")[0]
    return "a2a-local" in first and not re.search(r"a2a-local\s+(keys|new)\b", first)


def wait_for_card(url, server_out):
    # Straight to 127.0.0.1, whatever proxy the environment names.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + COMMAND_SECONDS
    while time.monotonic() < deadline:
        try:
            with opener.open(f"{url}/.well-known/agent-card.json", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"the server did not answer at {url}:\n{server_out.read_text()}")


def alive(pid):
    """Whether the process `pid` still runs (not gone, not a zombie). It may end between two
    reads of /proc: a status that cannot be read is a process gone."""
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return False


class Shell:
    """One bash, fed a command at a time; each command's output goes to a file of its own."""

    def __init__(self, cwd, addr):
        self.cwd = Path(cwd)
        self.bash = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            text=True,
            start_new_session=True,
        )
        # A thread reads bash's lines, so that waiting for one has a deadline.
        self.lines = queue.Queue()
        threading.Thread(target=self.read_lines, daemon=True).start()
        self.count = 0
        self.background = []
        self.task_id = self.api_key = None
        # The quick start's server listens on the first port instead of 9000.
        self.run(f"export A2A_ADDR={addr}")

    def run(self, command, background=False):
        self.count += 1
        out = self.cwd / f".out.{self.count}"
        if background:
            body = command.rstrip().rstrip("&")
            self.bash.stdin.write(f"{{ {body}\n}} >{out} 2>&1 </dev/null &\nrc=0\n")
            self.background.append(out)
        else:
            self.bash.stdin.write(f"{{ {command}\n}} >{out} 2>&1 </dev/null; rc=$?\n")
        self.bash.stdin.write(f'echo "done {self.count} $rc"\n')
        self.bash.stdin.flush()
        # Bash's own complaints come on the same pipe: read to our line, or the deadline.
        deadline = time.monotonic() + COMMAND_SECONDS
        line, noise = "", []
        while not line.startswith(f"done {self.count} "):
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = ""
            if not line:
                raise SystemExit(
                    f"no end within {COMMAND_SECONDS} s to:\n  {command}\n"
                    + "".join(noise)
                    + self.tail(out)
                )
            noise.append(line)
        if line.split()[2] != "0":
            raise SystemExit(f"exit status {line.split()[2]} from:\n  {command}\n{self.tail(out)}")
        # What the command printed fills the placeholders of the commands after it.
        if not background:
            text = out.read_text(errors="replace")
            tasks = re.findall(r"^task (\S+) ", text, re.M)
            self.task_id = tasks[-1] if tasks else self.task_id
            keys = re.findall(r"^a2a_[A-Za-z0-9_-]+$", text, re.M)
            self.api_key = keys[0] if keys else self.api_key
        return out

    def read_lines(self):
        for line in self.bash.stdout:
            self.lines.put(line)
        self.lines.put("")

    @staticmethod
    def tail(out):
        return out.read_text(errors="replace")[-3000:] if out.exists() else ""

    def stop_servers(self):
        """Ctrl-C to every a2a-local this shell started."""
        pids = subprocess.run(
            ["pgrep", "-s", str(self.bash.pid), "-f", str(BIN / "a2a-local")],
            capture_output=True,
            text=True,
        ).stdout.split()
        for pid in pids:
            os.kill(int(pid), signal.SIGINT)
        for pid in pids:
            while alive(pid):
                time.sleep(0.1)

    def close(self):
        try:
            os.killpg(self.bash.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        self.bash.wait()


def in_order(text, fragments):
    at = 0
    for fragment in fragments:
        found = text.find(fragment, at)
        if found < 0:
            return fragment
        at = found + len(fragment)
    return None


def check(command, out, expected, background):
    if not expected:
        return
    # A line under a command is what it prints, or what a listener it talks to prints.
    deadline = time.monotonic() + 30
    while True:
        missing = None
        for source in [out, *background]:
            missing = in_order(source.read_text(errors="replace"), expected)
            if missing is None:
                return
        if time.monotonic() > deadline:
            raise SystemExit(
                f"README.md shows '{missing}' under\n  {command}\nbut it printed:\n"
                + out.read_text(errors="replace")
            )
        time.sleep(0.2)


def main():
    for binary in ("a2a-local", "a2a"):
        if not (BIN / binary).exists():
            raise SystemExit(f"no {BIN / binary}: build first (cargo build --workspace)")
    readme = (ROOT / "README.md").read_text()
    ports = {9000: free_port(), 9001: free_port(), 8765: free_port()}
    work = Path(tempfile.mkdtemp(prefix="a2a-walkthrough-"))
    shell = Shell(work, f"127.0.0.1:{ports[9000]}")
    ran = 0
    try:
        for heading, index in BLOCKS:
            if heading == "Turn on authentication":
                # "Stop the quick start's server first (Ctrl-C)".
                shell.stop_servers()
            for command, expected in commands(section_block(readme, heading, index)):
                if any(s in command for s in SKIP):
                    say(f"skipped (needs the internet): {command.splitlines()[0]}")
                    continue
                adapted = filled(adapt(command, ports), shell)
                serves = is_server(adapted)
                say(f"$ {command.splitlines()[0]}")
                out = shell.run(adapted, background=serves or adapted.rstrip().endswith("&"))
                if serves:
                    port = ports[9001] if str(ports[9001]) in adapted else ports[9000]
                    wait_for_card(f"http://127.0.0.1:{port}", out)
                expected = [moved(fragment, ports) for fragment in expected]
                check(command, out, expected, shell.background)
                ran += 1
        say(f"ok: {ran} commands of {len(BLOCKS)} README blocks ran as written")
    finally:
        # The shell, its servers and listeners: one session.
        shell.close()
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
