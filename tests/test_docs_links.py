"""README.md and docs/: every relative link points at a file that exists, and every
``#anchor`` at a heading of that file (GitHub's anchor rules); the sweep config the
docs show in full parses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsxlt.execution import parse_config
from fsxlt.fileio import parse_yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def prose(text: str) -> str:
    """The text outside fenced code blocks and code spans (links there are not links)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor on a page, with GitHub's -1, -2 ... for repeated ones."""
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"^#{1,6} +(.+?) *#*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(prose(page.read_text(encoding="utf-8")))
            if not re.match(r"[a-z][a-z0-9+.-]*:", target)]  # http:, https:, mailto: ...


def broken(page: Path) -> list[str]:
    problems = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            problems.append(f"{target}: no such file")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
            problems.append(f"{target}: no heading #{anchor} in {file.name}")
    return problems


def test_there_are_pages_with_links():
    assert len(PAGES) > 5 and sum(len(links(page)) for page in PAGES) > 50


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    assert broken(page) == []


def test_readme_links_every_docs_page():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(ROOT / "README.md")}
    assert [page.name for page in PAGES[1:] if page.resolve() not in linked] == []


def test_the_checker_finds_a_missing_file_and_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## A `code` heading, too\n\n[ok](#a-code-heading-too) "
                    "[gone](other.md) [bad](#nowhere) `[not a link](x.md)`\n"
                    "```\n[in a fence](y.md)\n```\n", encoding="utf-8")
    assert broken(page) == ["other.md: no such file", "#nowhere: no heading #nowhere in page.md"]


def test_the_complete_sweep_example_parses():
    """docs/sweeps.md's my-sweep.yaml is a valid config (tasks, languages, methods, options)."""
    text = (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8")
    section = text[text.index("## A complete example"):]
    example = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    config = parse_config(parse_yaml(example, "my-sweep.yaml"), "my-sweep.yaml")
    plans = {plan.task: plan for plan in config.tasks}
    assert plans["panx"].methods == ("full", "lora") and plans["xnli"].methods == ("full",)
    assert plans["panx"].no_source["methods"] == ["full"] and plans["panx"].n_buckets == 10


def test_the_readme_sweep_config_parses():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    config = parse_config(parse_yaml(example, "my-sweep.yaml"), "my-sweep.yaml")
    assert [(plan.task, plan.languages, plan.k) for plan in config.tasks] == \
        [("panx", ("de",), (1, 2, 4))]
