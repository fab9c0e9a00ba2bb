"""docs/cli.md lists every subcommand and option of `xrc`, and no page of the
documentation names an option that does not exist."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import tomllib

import pytest

from xrc.cli.parser import build as _parser

from .conftest import ROOT, load_script

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "algorithms").glob("*.md"))]


def _fuzz_options() -> set[str]:
    # `xrc fuzz` parses its own arguments (xrc.fuzz.main); read them off its help.
    from xrc.fuzz import main as fuzz_main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        fuzz_main(["--help"])
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", buf.getvalue()))


def subcommands() -> dict[str, set[str]]:
    subs = {}
    for action in _parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, p in action.choices.items():
                subs[name] = {o for a in p._actions for o in a.option_strings}
                # Options of nested actions (xrc kernel load|unload|status).
                for a in p._actions:
                    if isinstance(a, argparse._SubParsersAction):
                        for q in a.choices.values():
                            subs[name] |= {o for b in q._actions for o in b.option_strings}
    subs["fuzz"] = _fuzz_options()
    return subs


def _sections(text: str) -> dict[str, str]:
    """docs/cli.md's `## `xrc NAME ...`` sections by subcommand name."""
    parts = re.split(r"^## `xrc ([a-z-]+)[^\n]*\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_every_subcommand_and_each_of_its_options_is_in_docs_cli_md():
    sections = _sections((ROOT / "docs" / "cli.md").read_text())
    subs = subcommands()
    assert set(subs) == set(sections), "docs/cli.md: one section per subcommand"
    for name, options in subs.items():
        for o in sorted(options - {"-h", "--help"}):
            assert f"`{o}" in sections[name], f"docs/cli.md, xrc {name}: {o} is not listed"


def test_no_page_of_the_docs_names_an_option_a_subcommand_does_not_have():
    subs = subcommands()
    names = "|".join(map(re.escape, sorted(subs, key=len, reverse=True)))
    wrong = []
    for path in DOCS:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            # `xrc SUB ... --opt` up to the end of the inline code, a comment,
            # the next command (`+`, `;`, `&&`, a pipe) or a COMMAND after `--`
            # (which has options of its own).
            for m in re.finditer(rf"\bxrc ({names})\b([^`#\n;+]*)", line):
                rest = re.split(r" -- | \| |&&", m.group(2))[0]
                for o in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest):
                    if o not in subs[m.group(1)]:
                        wrong.append(f"{path.relative_to(ROOT)}:{i}: xrc {m.group(1)} {o}")
    assert not wrong, "\n".join(wrong)


def test_the_sweep_file_of_docs_cli_md_loads_as_written(tmp_path):
    from xrc.sweeps import load_sweep

    text = (ROOT / "docs" / "cli.md").read_text()
    (block,) = re.findall(r"```toml\n(.*?)```", text, flags=re.S)
    tomllib.loads(block)
    p = tmp_path / "my-sweep.toml"
    p.write_text(block)
    sweep = load_sweep(p)
    # Two grid fields of two values each, and one explicit run; two seeds.
    assert len(sweep.variants) == 5 and sweep.seeds == [1, 2]


def test_docs_algorithms_md_is_assembled_from_the_pages_the_package_ships():
    # The pages live in the package (`xrc doc NAME`); docs/algorithms is a
    # link to them, and docs/algorithms.md is built from them.
    from xrc import _core

    pages = ROOT / "python" / "xrc" / "docs" / "algorithms"
    link = ROOT / "docs" / "algorithms"
    assert link.is_symlink() and link.resolve() == pages.resolve()
    assert sorted(p.stem for p in pages.glob("*.md")) == sorted(_core.schemes())
    text = (ROOT / "docs" / "algorithms.md").read_text()
    assert load_script("build_algorithms_doc").assemble() == text, "run: python3 scripts/build_algorithms_doc.py"
