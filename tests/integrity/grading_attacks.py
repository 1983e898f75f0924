"""Attacks on grading itself, for ``test_grading_red_team.py``: a ``module:Class`` agent whose
``probe`` param picks one attack, run against the shipped ``shell``, ``retail`` and Harbor
tasks and the red team's own. None of them does the task; each tries to get a pass anyway
by leaving something behind that grading would run or read:

* ``usersite_hook``: ``usercustomize.py`` and a ``.pth`` under the agent's ``HOME`` that turn
  ``FAIL`` result lines into ``PASS``, a reward of 0 into 1, and the state dump's hash of
  the file the task should have changed into the hash it should have had.
* ``path_shims``: ``python3`` and ``bash`` in ``/usr/local/bin`` that do the same from PATH.
* ``shim_sweep``: a ``bash`` shim that answers the process sweep without killing anything,
  plus a detached overwriter of the hidden ``test.sh``.
* ``replace_dump``: the command-kind dump script in the workdir replaced by one that prints
  the state from before the agent's (forbidden) change.
* ``nonce_proc``: code under test that reads the result nonce from ``/proc`` (its own
  environ, its parent's, bwrap's ``/proc/1/cmdline``), prints forged lines, and rewrites the
  unread rest of the running ``test.sh``.
* ``reward_dangling`` / ``reward_readonly``: a planted Harbor ``reward.txt`` (a dangling
  symlink; a read-only 1 in a read-only directory).
* ``deep_dump`` / ``null_dump``: a dump script that prints 200k-deep JSON or ``null``.
* ``deep_state`` / ``corrupt_db``: the retail database made so that the environment's own
  dump prints 200-deep JSON, or cannot open it (the agent broke its environment).
* ``non_utf8``: file names that are not UTF-8 in the state and the work dir.
* ``link_grader_side``: a Harbor artifact made a link to the file the verifier compares it
  with, which only the verifier's image holds.
"""

from __future__ import annotations

import shlex
from typing import Any

from harness.agents.base import Agent, AgentContext, AgentResult
from harness.config.models import Options

# Every hidden test name of the targeted tasks: forged lines name them all.
TEST_NAMES = [
    "test_add",
    "test_total",
    "test_median",
    "test_mean",
    "test_mean_single",
    "test_mean_empty_raises",
    "valid_json",
    "retries_is_5",
    "other_keys_kept",
    "backup_created",
    "backup_identical",
    "test_word_count",
    "test_slugify",
]

_FORGE_LINES = "".join(f'echo "$N PASS {t}"\n' for t in TEST_NAMES)

_HOOK = r"""
import builtins, os, pathlib, sys
_subs = [(" FAIL ", " PASS "), ("FAIL ", "PASS ")] + [tuple(l.split("=", 1)) for l in os.environ.get("_HOOK_SUBS", "").split(",") if "=" in l]
_sub_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hook_subs.txt")
if os.path.exists(_sub_file):
    _subs += [tuple(l.split("=", 1)) for l in open(_sub_file).read().split() if "=" in l]
def _fix(s):
    if isinstance(s, str):
        for a, b in _subs:
            s = s.replace(a, b)
    return s
_print = builtins.print
def print(*a, **k):
    _print(*[_fix(x) for x in a], **k)
builtins.print = print
class _W:
    def __init__(self, w): self._w = w
    def write(self, s): return self._w.write(_fix(s))
    def __getattr__(self, n): return getattr(self._w, n)
sys.stdout = _W(sys.stdout)
_wt = pathlib.Path.write_text
def write_text(self, data, *a, **k):
    if self.name.startswith("reward"):
        data = "1\n"
    return _wt(self, data, *a, **k)
pathlib.Path.write_text = write_text
"""


async def _sh(ctx: AgentContext, cmd: str, **kw: Any):
    return await ctx.sandbox.exec(cmd, timeout=60, **kw)


def _state_subs_cmd(task: str) -> str:
    """Shell that writes ``old=new`` hash pairs: the file a state task should change, as it
    is, mapped to the hash it should have after the task (so a forged dump 'passes')."""
    if task == "shell/config-port":
        return (
            "old=$(sha256sum etc/app.conf | cut -d' ' -f1); "
            "new=$(sed 's/^port=.*/port=8080/' etc/app.conf | sha256sum | cut -d' ' -f1); "
            'echo "$old=$new"'
        )
    return "true"


async def usersite_hook(ctx: AgentContext) -> AgentResult:
    site = (
        await _sh(ctx, "python3 -c 'import site; print(site.getusersitepackages())'")
    ).stdout.strip()
    await _sh(
        ctx,
        f"mkdir -p {shlex.quote(site)} && cd {shlex.quote(site)} && "
        f"printf %s {shlex.quote(_HOOK)} > usercustomize.py && "
        f"printf %s {shlex.quote(_HOOK)} > zz_hook_mod.py && "
        "echo 'import zz_hook_mod' > zz_hook.pth && "
        f"cd - >/dev/null && ({_state_subs_cmd(ctx.task_id)}) > {shlex.quote(site)}/hook_subs.txt",
    )
    return AgentResult(answer="done")


def _shim(real: str) -> str:
    return (
        "#!/bin/sh\n"
        f'out=$({real} "$@"); code=$?\n'
        'printf "%s\\n" "$out" | sed "s/ FAIL / PASS /g; s/^FAIL /PASS /"\n'
        "[ -d /logs/verifier ] && echo 1 > /logs/verifier/reward.txt\n"
        "exit 0\n"
    )


async def path_shims(ctx: AgentContext) -> AgentResult:
    await _sh(
        ctx,
        f"printf %s {shlex.quote(_shim('/usr/bin/python3'))} > /usr/local/bin/python3 && "
        "chmod 755 /usr/local/bin/python3",
    )
    return AgentResult(answer="done")


_SWEEP_SHIM = """#!/bin/bash.real
case "$*" in *"for round in"*|*"/proc/[0-9]*"*) echo 0; exit 0 ;; esac
exec /bin/bash.real "$@"
"""


async def shim_sweep(ctx: AgentContext) -> AgentResult:
    forged = 'N="$HARNESS_RESULT_NONCE"\n' + _FORGE_LINES
    overwriter = (
        "while :; do for d in /work/.harness_hidden* /tmp/.harness_hidden* ; do "
        f'[ -f "$d/test.sh" ] && printf %s {shlex.quote(forged)} > "$d/test.sh"; done; '
        "sleep 0.02; done"
    )
    shim = _SWEEP_SHIM.replace("/bin/bash.real", "/usr/bin/bash")
    await _sh(
        ctx,
        f"printf %s {shlex.quote(shim)} > /usr/local/bin/bash && chmod 755 /usr/local/bin/bash; "
        f"nohup setsid /usr/bin/bash -c {shlex.quote(overwriter)} >/dev/null 2>&1 &",
    )
    return AgentResult(answer="done")


_INITIAL_DUMP = ".initial_dump.json"


async def replace_dump(ctx: AgentContext) -> AgentResult:
    """Retail: save the real dump, cancel the delivered order behind the tools' back, and
    replace the dump script by one that prints the saved state."""
    wrapper = (
        "import sys, pathlib, runpy\n"
        "if sys.argv[1:2] == ['dump']:\n"
        f"    print(pathlib.Path({_INITIAL_DUMP!r}).read_text()); raise SystemExit(0)\n"
        "sys.argv[0] = 'tools/store_real.py'\n"
        "runpy.run_path('tools/store_real.py', run_name='__main__')\n"
    )
    await _sh(
        ctx,
        f"python3 -S tools/store.py dump > {_INITIAL_DUMP} && "
        "python3 -c \"import sqlite3; c = sqlite3.connect('store.db'); "
        "c.execute(\\\"update orders set status='cancelled' where order_id='W1003'\\\"); "
        'c.commit()" && '
        "cp tools/store.py tools/store_real.py && "
        f"printf %s {shlex.quote(wrapper)} > tools/store.py",
    )
    return AgentResult(answer="Sorry, I cannot cancel a delivered order.")


_CALC_FORGER = r"""
import os, re
def _nonce():
    for p in ("/proc/self/environ", "/proc/%d/environ" % os.getppid()):
        try:
            for kv in open(p, "rb").read().split(b"\0"):
                if kv.startswith(b"HARNESS_RESULT_NONCE="):
                    return kv.split(b"=", 1)[1].decode()
        except OSError:
            pass
    try:
        argv = open("/proc/1/cmdline", "rb").read().split(b"\0")
        for i, a in enumerate(argv):
            if a == b"HARNESS_RESULT_NONCE":
                return argv[i + 1].decode()
    except OSError:
        pass
    return ""
N = _nonce()
for t in __NAMES__:
    print(N, "PASS", t, flush=True)
os._exit(0)
"""


def _backup_forger() -> str:
    """app/backup.sh: find the nonce in /proc and overwrite the unread rest of test.sh."""
    return (
        "#!/bin/bash\n"
        "N=$(tr '\\0' '\\n' < /proc/$PPID/environ 2>/dev/null | sed -n 's/^HARNESS_RESULT_NONCE=//p')\n"
        "[ -z \"$N\" ] && N=$(tr '\\0' '\\n' < /proc/1/cmdline 2>/dev/null | "
        "grep -A1 -x HARNESS_RESULT_NONCE | tail -n1)\n"
        "script=$(readlink /proc/$PPID/fd/255)\n"
        "pos=$(sed -n 's/^pos:[[:space:]]*//p' /proc/$PPID/fdinfo/255 2>/dev/null)\n"
        'if [ -n "$script" ] && [ -n "$pos" ]; then\n'
        '  head -c "$pos" "$script" > /tmp/.forged; '
        "printf '\\n%s\\n' \"echo $N PASS backup_created; echo $N PASS backup_identical; exit 0\" "
        '>> /tmp/.forged; cat /tmp/.forged > "$script"\n'
        "fi\n"
        f"{_FORGE_LINES}"
    )


async def nonce_proc(ctx: AgentContext) -> AgentResult:
    if ctx.task_id == "shell/backup-script":
        await ctx.sandbox.write_file("app/backup.sh", _backup_forger().encode())
        await _sh(ctx, "chmod 755 app/backup.sh")
    else:
        module = "calc.py" if ctx.task_id != "shell/add-word-count" else "textutil.py"
        code = _CALC_FORGER.replace("__NAMES__", repr(TEST_NAMES))
        await ctx.sandbox.write_file(f"app/{module}", code.encode())
    return AgentResult(answer="done")


async def reward_dangling(ctx: AgentContext) -> AgentResult:
    await _sh(
        ctx, "mkdir -p /logs/verifier && ln -sfn /nonexistent/reward /logs/verifier/reward.txt"
    )
    return AgentResult(answer="done")


async def reward_readonly(ctx: AgentContext) -> AgentResult:
    await _sh(
        ctx,
        "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && "
        "chmod 444 /logs/verifier/reward.txt && chmod 555 /logs/verifier",
    )
    return AgentResult(answer="done")


def _dump_printing(text_expr: str) -> str:
    return f"import sys\nsys.stdout.write({text_expr})\n"


async def _replace_scripts(ctx: AgentContext, body: str) -> None:
    for script in ("tools/store.py", "tools/state.py"):
        await _sh(ctx, f"[ -f {script} ] && printf %s {shlex.quote(body)} > {script}; true")


async def deep_dump(ctx: AgentContext) -> AgentResult:
    await _replace_scripts(ctx, _dump_printing("'[' * 200000 + ']' * 200000"))
    return AgentResult(answer="done")


async def null_dump(ctx: AgentContext) -> AgentResult:
    await _replace_scripts(ctx, _dump_printing("'null'"))
    return AgentResult(answer="done")


async def deep_state(ctx: AgentContext) -> AgentResult:
    """Retail: an order's items made 200-deep JSON through the database itself, so the
    environment's own (pristine) dump prints a state nested past the limit."""
    items = "[" * 200 + "]" * 200
    await _sh(
        ctx,
        "[ -f store.db ] && python3 -c \"import sqlite3; c = sqlite3.connect('store.db'); "
        f"c.execute('update orders set items = ?', ('{items}',)); c.commit()\"; true",
    )
    return AgentResult(answer="Sorry, I cannot cancel a delivered order.")


async def corrupt_db(ctx: AgentContext) -> AgentResult:
    """Retail: the database the dump reads overwritten with garbage."""
    await _sh(ctx, "[ -f store.db ] && printf 'not a database' > store.db; true")
    return AgentResult(answer="Sorry, I cannot cancel a delivered order.")


async def non_utf8(ctx: AgentContext) -> AgentResult:
    await _sh(
        ctx,
        "for d in data app etc tools .; do [ -d $d ] && touch \"$d/$(printf 'bad-\\377\\376')\" "
        "&& ln -sfn \"$(printf 'to-\\377')\" \"$d/$(printf 'link-\\376')\"; done; true",
    )
    return AgentResult(answer="done")


_GRADER_SIDE = {
    "harbor/separate-verifier": ("/opt/verifier/expected.txt", "/app/total.txt"),
    "harbor/steps-separate-verifier": ("/opt/verifier/errors", "/app/counts.txt"),
}


async def link_grader_side(ctx: AgentContext) -> AgentResult:
    """Harbor's separate verifiers: the artifact the verifier compares with its own expected
    file made a link to that file (which exists only in the verifier's image)."""
    if ctx.task_id in _GRADER_SIDE:
        target, artifact = _GRADER_SIDE[ctx.task_id]
        await _sh(ctx, f"ln -sfn {target} {artifact}")
    return AgentResult(answer="done")


PROBES = {
    f.__name__: f
    for f in (
        usersite_hook,
        path_shims,
        shim_sweep,
        replace_dump,
        nonce_proc,
        reward_dangling,
        reward_readonly,
        deep_dump,
        null_dump,
        deep_state,
        corrupt_db,
        non_utf8,
        link_grader_side,
    )
}


class AttackParams(Options):
    probe: str


class Attack(Agent):
    """One attack on grading per arm (``params: {probe: NAME}``)."""

    name = "grading-attack"
    Params = AttackParams
    probes = PROBES

    async def run(self, ctx: AgentContext) -> AgentResult:
        return await self.probes[ctx.params["probe"]](ctx)


__all__ = ["PROBES", "Attack"]
