"""Real Claude Code, driven headless against a scripted model, with this repository's plugin.

    home = ClaudeHome.create(tmp_path / "claude-home")   # HOME and XDG_CONFIG_HOME live here
    home.install_plugin()                                # as `learning-memory claude install` does
    session = home.run_session(["fix the flaky test"], [call("Bash", command="pytest -q")],
                               env=lms_env, cwd=project)
    session.hook_contexts("PostToolUse:Bash")            # what the hooks put in front of the model
    session.hook_timings()                               # each hook's latency, from the debug log

The user's own ``~/.claude`` is never read or written: every ``claude`` process gets the
temporary home. Sessions run ``claude -p`` with ``--output-format json`` (one prompt) or
``--input-format stream-json`` (several prompts, one conversation), under a deadline.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from learning_memory.cli.claude import PLUGIN_ID, ClaudeCode, find_claude, install
from tests.support import REPO_ROOT
from tests.support.claude_debug_log import HookTiming, hook_timings, label_unnamed
from tests.support.scripted_model import Request, Script, ScriptedModel

CLAUDE_CODE_VERSION = "2.1.330"
SERVER = "plugin:learning-memory:learning-memory"
TOOL_PREFIX = "mcp__plugin_learning-memory_learning-memory__"
ALLOWED_TOOLS = ("Bash", "Write", "Edit", "mcp__plugin_learning-memory_learning-memory")
SESSION_TIMEOUT_S = 180
HOOKS_JSON = REPO_ROOT / "plugin" / "hooks" / "hooks.json"
# Variables of the caller's own Claude Code (or of a Claude Code session running these tests)
# that would point the child at a real account, model or settings.
_INHERITED_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "CLAUDECODE")
# "<Event> hook additional context: <text>" as Claude Code shows hook output to the model.
_CONTEXT_MARK = " hook additional context: "
_STOP_MARK = "Stop hook feedback:"
_NEXT_HOOK = re.compile(r"\n\n[\w:|-]+ hook [\w ]+:")


def tool(name: str) -> str:
    """The name the model calls one of this server's tools by, as a plugin provides it."""
    return f"{TOOL_PREFIX}{name}"


class ClaudeCodeMissing(RuntimeError):
    """No pinned Claude Code in ``.tools/claude`` (``make claude-code`` installs it)."""


def pinned_claude(repo: Path = REPO_ROOT) -> Path:
    """The checkout's pinned ``claude``; never one from PATH, whose version would vary."""
    found = find_claude({"PATH": ""}, repo)
    if found is None:
        raise ClaudeCodeMissing(f"no Claude Code in {repo}/.tools/claude: run `make claude-code`")
    return found


@dataclass
class Session:
    """One finished ``claude -p`` run and everything the scripted model received."""

    returncode: int
    stdout: str
    stderr: str
    requests: list[Request]
    debug_log: Path
    timed_out: bool = False
    script_errors: list[Exception] = field(default_factory=list)

    @property
    def result(self) -> dict[str, Any]:
        """The final ``result`` object Claude Code printed (its answer, turns, errors)."""
        for line in reversed(self.stdout.strip().splitlines()):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "result":
                return event
        return {}

    @property
    def results(self) -> list[dict[str, Any]]:
        """One ``result`` object per prompt (stream-json output); the single one otherwise."""
        found = []
        for line in self.stdout.strip().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "result":
                found.append(event)
        return found

    def main_requests(self) -> list[Request]:
        """Turns of the conversation, in order (side calls left out)."""
        return [r for r in self.requests if r.is_main]

    def last_body(self) -> dict[str, Any]:
        """The final turn's request: it carries the whole conversation."""
        turns = self.main_requests()
        return turns[-1].body if turns else {}

    def system_text(self, body: Mapping[str, Any] | None = None) -> str:
        """The system prompt of a request (the last turn's by default) as one string."""
        system = (self.last_body() if body is None else body).get("system", "")
        if isinstance(system, str):
            return system
        return "\n".join(block.get("text", "") for block in system if isinstance(block, dict))

    def texts(self, body: Mapping[str, Any] | None = None) -> list[str]:
        """Every text the model was shown in a request's messages: user and system messages,
        tool results, hook context, in order."""
        body = self.last_body() if body is None else body
        return [text for message in body.get("messages", []) for text in _texts(message.get("content"))]

    def everything_seen(self) -> str:
        """System prompt and all messages of every turn, one string: for "never shown" checks."""
        parts = []
        for request in self.main_requests():
            parts.append(self.system_text(request.body))
            parts.extend(self.texts(request.body))
        return "\n".join(parts)

    def hook_contexts(self, event: str | None = None) -> list[str]:
        """The additional context hooks gave the model, in the order it was shown, deduplicated
        across turns; ``event`` as Claude Code labels it: ``SessionStart``, ``UserPromptSubmit``,
        ``PostToolUse:Bash``, ``PostToolUseFailure:Bash``…"""
        found: list[str] = []
        for request in self.main_requests():
            for text in [self.system_text(request.body), *self.texts(request.body)]:
                for label, context in _hook_contexts(text):
                    if (event is None or label == event) and context not in found:
                        found.append(context)
        return found

    def stop_feedback(self) -> list[str]:
        """The reason of each "Stop hook feedback" the model was shown (one per blocked stop)."""
        found = []
        for text in self.texts():
            start = text.find(_STOP_MARK)
            while start != -1:
                body_start = start + len(_STOP_MARK)
                next_hook = _NEXT_HOOK.search(text, body_start)
                found.append(text[body_start : next_hook.start() if next_hook else None].strip())
                start = text.find(_STOP_MARK, body_start)
        return found

    def tool_results(self) -> list[str]:
        """The text of each tool result in the conversation, in order."""
        results = []
        for message in self.last_body().get("messages", []):
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.append("\n".join(_texts(block.get("content"))))
        return results

    def hook_timings(self) -> list[HookTiming]:
        """Each hook run with its latency as Claude Code measured or logged it, labelled."""
        timings = hook_timings(self.debug_log.read_text() if self.debug_log.exists() else "")
        label_unnamed(timings, json.loads(HOOKS_JSON.read_text()))
        return timings


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                texts.extend(_texts(block.get("content")))
    return texts


def _hook_contexts(text: str) -> list[tuple[str, str]]:
    """(label, context) pairs of "<label> hook additional context: <context>" in ``text``; a
    context runs to the end of its system reminder, or of the text."""
    pairs = []
    start = text.find(_CONTEXT_MARK)
    while start != -1:
        label_start = max(text.rfind(sep, 0, start) for sep in ("\n", ">", " ")) + 1
        label = text[label_start:start]
        body_start = start + len(_CONTEXT_MARK)
        end = text.find("</system-reminder>", body_start)
        following = text.find(_CONTEXT_MARK, body_start)
        # Claude Code joins several hooks' output with a blank line before each "<label> hook …".
        next_hook = _NEXT_HOOK.search(text, body_start)
        if next_hook is not None:
            end = next_hook.start() if end == -1 else min(end, next_hook.start())
        context = (text[body_start:] if end == -1 else text[body_start:end]).strip()
        pairs.append((label, context))
        start = following
    return pairs


@dataclass
class ClaudeHome:
    """A private Claude Code home: HOME, XDG_CONFIG_HOME and the pinned ``claude``."""

    root: Path
    claude: Path
    base_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path, claude: Path | None = None) -> ClaudeHome:
        root.mkdir(parents=True, exist_ok=True)
        return cls(root=root.resolve(), claude=claude or pinned_claude())

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of every ``claude`` run here: ``extra`` (default this process's own
        environment) minus the caller's Claude Code and Anthropic variables, with this home."""
        source = os.environ if extra is None else extra
        env = {k: v for k, v in source.items() if not k.startswith(_INHERITED_PREFIXES)}
        env.update(self.base_env)
        env.update(
            HOME=str(self.root),
            XDG_CONFIG_HOME=str(self.root / ".config"),
            PATH=os.pathsep.join([str(self.claude.parent), env.get("PATH", os.defpath)]),
        )
        return env

    def cli(self, env: Mapping[str, str] | None = None) -> ClaudeCode:
        return ClaudeCode(self.claude, self.env(env))

    def run_claude(
        self, *args: str, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``claude <args>`` in this home (e.g. ``plugin list``), not checked."""
        return self.cli(env).run(*args, check=False)

    def install_plugin(self, scope: str = "user", command: Path | None = None) -> str:
        """Install this repository's plugin as ``learning-memory claude install`` does; returns
        its report. ``command`` is recorded for the launcher (default: none recorded, so the
        plugin finds the checkout's venv, as it does for a user of this clone)."""
        import io

        out = io.StringIO()
        install(self.cli(), REPO_ROOT, scope, command, out)
        return out.getvalue()

    def plugin_listing(self) -> list[dict[str, Any]]:
        """``claude plugin list --json``: the installed plugins."""
        listed = self.cli().json("plugin", "list")
        return [p for p in listed if isinstance(p, dict)]

    def plugin_enabled(self) -> bool:
        return any(p.get("id") == PLUGIN_ID and p.get("enabled") for p in self.plugin_listing())

    def run_session(
        self,
        prompts: str | Sequence[str],
        script: Script = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path,
        timeout: float = SESSION_TIMEOUT_S,
        allowed_tools: Sequence[str] = ALLOWED_TOOLS,
        debug_log: Path | None = None,
        model: ScriptedModel | None = None,
    ) -> Session:
        """Run one headless session against a scripted model (``script``, or ``model`` when the
        caller keeps one across sessions); several ``prompts`` share one conversation."""
        prompts = [prompts] if isinstance(prompts, str) else list(prompts)
        debug = debug_log or self._next_debug_log()
        owned = model is None
        scripted = ScriptedModel(script) if model is None else model
        if owned:
            scripted.__enter__()
        first = len(scripted.requests)
        try:
            run_env = self.env(env)
            run_env.update(
                ANTHROPIC_BASE_URL=scripted.url,
                ANTHROPIC_API_KEY="sk-ant-dummy",
                CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            )
            args = [str(self.claude), "-p", "--debug-file", str(debug), "--allowedTools", *allowed_tools]
            if len(prompts) == 1:
                args[2:2] = [prompts[0]]
                args += ["--output-format", "json"]
            else:
                args += ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
            returncode, stdout, stderr, timed_out = _run(args, run_env, cwd, prompts, timeout)
            return Session(
                returncode=returncode,
                stdout=stdout,
                stderr=stderr,
                requests=list(scripted.requests[first:]),
                debug_log=debug,
                timed_out=timed_out,
                script_errors=list(scripted.script_errors),
            )
        finally:
            if owned:
                scripted.__exit__(None, None, None)

    def _next_debug_log(self) -> Path:
        logs = self.root / "debug-logs"
        logs.mkdir(exist_ok=True)
        return logs / f"session-{len(list(logs.iterdir())) + 1:03d}.log"


def _user_message(prompt: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}}


def _run(
    args: list[str], env: dict[str, str], cwd: Path, prompts: list[str], timeout: float
) -> tuple[int, str, str, bool]:
    """Run to the end or the deadline. With several prompts, each is written only once the
    previous one has its ``result``: one written earlier is folded into the running turn as a
    mid-turn message, not answered as a turn of its own. A session past its deadline is killed
    with its children (the MCP server, hooks), so nothing outlives a test."""
    proc = subprocess.Popen(
        args,
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout
    lines: queue.Queue[str | None] = queue.Queue()
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=_pump, args=(proc.stdout, out, lines), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, err, None), daemon=True),
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        if len(prompts) > 1:
            for prompt in prompts:
                proc.stdin.write(json.dumps(_user_message(prompt)) + "\n")
                proc.stdin.flush()
                if not _await_result(lines, deadline):
                    break
        proc.stdin.close()
        proc.wait(max(0.0, deadline - time.monotonic()))
    except (subprocess.TimeoutExpired, BrokenPipeError):
        timed_out = proc.poll() is None
    if proc.poll() is None:
        timed_out = True
        _kill_group(proc.pid)
        proc.wait()
    for reader in readers:
        reader.join(5)
    return proc.returncode, "".join(out), "".join(err), timed_out


def _pump(stream: IO[str], sink: list[str], lines: queue.Queue[str | None] | None) -> None:
    for line in stream:
        sink.append(line)
        if lines is not None:
            lines.put(line)
    if lines is not None:
        lines.put(None)


def _await_result(lines: queue.Queue[str | None], deadline: float) -> bool:
    """Read stdout lines until a ``result`` event (True) or the end/deadline (False)."""
    while True:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            return False
        if line is None:
            return False
        if line.startswith("{") and '"type":"result"' in line.replace(" ", ""):
            return True
        if time.monotonic() > deadline:
            return False


def _kill_group(pgid: int) -> None:
    import signal

    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
