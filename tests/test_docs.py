"""Every printed example of README.md and docs/*.md, executed: its output must be what the page prints.

Sybil reads the pages as Markdown: a ```python block is a doctest session (ELLIPSIS and NORMALIZE_WHITESPACE), a
```console block's ``$ solkit ...`` lines run in-process and print the lines below them, and ``<!-- skip: next
"why" -->`` marks the few blocks that cannot run here. Each page runs in order in a temporary folder that links to the
checkout's ``data/`` and ``tests/``, so the pages read the shipped files by their usual paths and write nowhere else.
"""

from __future__ import annotations

import contextlib
import difflib
import doctest
import importlib.util
import io
import re
import shlex
from pathlib import Path
from unittest import SkipTest

import pytest
from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

from solkit import cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
LINKED = ("data", "tests")  # what the pages read from the checkout, linked into the folder they run in
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
EXIT_CODE = "; echo $?"  # a console command ending so prints its exit code as the last line of its output
FENCE = re.compile(r"^```(?P<lang>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
SKIP = re.compile(r'<!-- skip: (next "[^"]{10,}"|start if\(not CAPTURE, reason="[^"]{10,}"\)) -->')
#: whether capture's optional extras import: a page's capture examples run where they do (CI installs them, and
#: SOLKIT_REQUIRE_CAPTURE fails the suite without them), else skip with their reason
CAPTURE = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers") is not None
SHOWN_ONLY = ("bash", "text", "yaml")  # blocks of commands, formulas or file excerpts: never a prompt, never output


def _lines(text: str) -> str:
    """The text with each line's trailing blanks dropped (Markdown editors strip them) and one final newline."""
    return "".join(line.rstrip() + "\n" for line in text.strip("\n").splitlines())


def run_command(command: str) -> str:
    """What ``command`` (``solkit ...``, optionally ending ``; echo $?``) prints, stdout and stderr in order."""
    echo = command.endswith(EXIT_CODE)
    argv = shlex.split(command.removesuffix(EXIT_CODE))
    if argv[:1] != ["solkit"]:
        raise ValueError(f"a console block runs solkit commands only, got {command!r}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli.main(argv[1:])
    if echo:
        print(code, file=out)
    elif code != 0:
        print(f"[exited {code}; end the command with '{EXIT_CODE}' to show an exit code]", file=out)
    return out.getvalue()


def console_sessions(block: str) -> list[tuple[str, str]]:
    """The (command, printed lines) pairs of a console block: each ``$ `` line and the lines up to the next one."""
    sessions: list[tuple[str, str]] = []
    for line in block.splitlines(keepends=True):
        if line.startswith("$ "):
            sessions.append((line[2:].strip(), ""))
        elif not sessions:
            raise ValueError(f"a console block starts with a '$ ' command, got {line!r}")
        else:
            sessions[-1] = (sessions[-1][0], sessions[-1][1] + line)
    return sessions


def evaluate_console(example: Example) -> str | None:
    """Run each command of the block; the differences from the printed lines (``...`` matches any lines), or None."""
    checker, failures = doctest.OutputChecker(), []
    for command, shown in console_sessions(example.parsed):
        want, got = _lines(shown), _lines(run_command(command))
        if not checker.check_output(want, got, doctest.ELLIPSIS):
            diff = difflib.unified_diff(want.splitlines(), got.splitlines(), "page", "printed", lineterm="")
            failures.append(f"$ {command}\n" + "\n".join(diff))
    return "\n\n".join(failures) or None


def _namespace(namespace: dict) -> None:
    """What a page's skip conditions read (``CAPTURE``), set in each page's namespace before it runs."""
    namespace["CAPTURE"] = CAPTURE


DOCS = Sybil(parsers=[SkipParser(), PythonCodeBlockParser(doctest_optionflags=FLAGS),
                      CodeBlockParser("console", evaluate_console)])


def _blocks(page: Path) -> list[tuple[str, str, str]]:
    """(language, body, the line above) of each fenced block of a page."""
    text = page.read_text(encoding="utf-8")
    return [(m["lang"].strip(), m["body"], text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip())
            for m in FENCE.finditer(text)]


RUN_PAGES = tuple(p for p in PAGES if any(lang in ("python", "console") for lang, _, _ in _blocks(p)))


@pytest.mark.filterwarnings("ignore::solkit.errors.PerformanceWarning")  # stderr in a session; the pages show stdout
@pytest.mark.parametrize("page", RUN_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_page_prints_what_it_shows(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every example of the page, in order, prints exactly what the page shows (bar an explicit ``...``)."""
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    ran = 0
    document = DOCS.parse(page)
    _namespace(document.namespace)
    for example in document.examples():
        try:
            example.evaluate()
        except SkipTest:
            continue
        ran += 1
    assert ran > 0, f"{page.name}: no example ran"


def test_every_block_runs_or_says_why_not() -> None:
    """A python block is a doctest session, a console block runs solkit, any other shows no prompt; skips give a reason."""
    blocks = [(page, *block) for page in PAGES for block in _blocks(page)]
    assert len(RUN_PAGES) >= 10 and len(blocks) >= 50, (len(RUN_PAGES), len(blocks))
    for page, lang, body, above in blocks:
        where = f"{page.name}: a ```{lang} block starting {body[:40]!r}"
        skipped = SKIP.fullmatch(above) is not None
        if lang == "python":
            assert body.startswith(">>> ") or skipped, f"{where} is neither a session nor marked <!-- skip: next \"why\" -->"
        elif lang == "console":
            assert all(command.startswith("solkit") for command, _ in console_sessions(body)), where
        else:
            assert lang in SHOWN_ONLY, f"{where}: give it a language ({', '.join(('python', 'console') + SHOWN_ONLY)})"
            assert not re.search(r"^(>>> |\$ )", body, re.M), f"{where} shows a prompt: make it python or console"
            assert not skipped, f"{where}: only a python block can be skipped"


def test_readme_set_up_commands_are_what_ci_runs() -> None:
    """README's two set-up commands are its bash blocks, and CI runs the test command exactly."""
    commands = [body.strip() for lang, body, _ in _blocks(ROOT / "README.md") if lang == "bash"]
    assert commands == ["pip install . && solkit", "pip install -e '.[test]' && python -m pytest"]
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_console_sessions_split_commands_from_output() -> None:
    """Two commands: each gets the lines under it; a block not starting with a command is refused."""
    assert console_sessions("$ solkit gpus\na\nb\n$ solkit ops\nc\n") == [("solkit gpus", "a\nb\n"), ("solkit ops", "c\n")]
    with pytest.raises(ValueError, match="starts with a '\\$ ' command"):
        console_sessions("output first\n$ solkit gpus\n")


def test_run_command_prints_exit_codes_and_refuses_other_programs() -> None:
    """A bad argument exits 2 with one line on stderr, shown when asked; a non-solkit command is refused."""
    assert run_command("solkit mfu --flops -1 --seconds 1 --gpu h200; echo $?").splitlines()[-1] == "2"
    assert "[exited 2;" in run_command("solkit mfu --flops -1 --seconds 1 --gpu h200")
    with pytest.raises(ValueError, match="solkit commands only"):
        run_command("ls -l")
