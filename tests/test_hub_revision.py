"""A hub model is identified by the commit it loads, not by its name alone.

The hub is unreachable here, so these tests build a Hugging Face cache by hand, laid
out as huggingface_hub lays it out (``models--ORG--NAME/refs/main`` holding the commit
``main`` points at, ``snapshots/<commit>/`` its files) and run fsxlt with
``HF_HUB_CACHE`` pointing at it and ``HF_HUB_OFFLINE=1``: the same code path that
resolves and loads a hub model online, answered from the cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train_fixtures import make_encoder_dir, nli_data, write_bucket_set, write_pairs

NLI = ["entailment", "neutral", "contradiction"]
FIRST, SECOND = "1" * 40, "2" * 40


def add_snapshot(cache: Path, repo: str, commit: str, source: Path, main: bool = True) -> None:
    """Put ``source``'s files in the cache as ``repo`` at ``commit`` (main, if ``main``)."""
    folder = cache / ("models--" + repo.replace("/", "--"))
    shutil.copytree(source, folder / "snapshots" / commit)
    if main:
        (folder / "refs").mkdir(parents=True, exist_ok=True)
        (folder / "refs" / "main").write_text(commit, encoding="utf-8")


def fsxlt(cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(Path(__file__).parents[1])}
    return subprocess.run([sys.executable, "-m", "fsxlt", *args], capture_output=True,
                          text=True, env=env)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    cache = root / "cache"
    add_snapshot(cache, "org/tiny", FIRST, make_encoder_dir(root / "a", seed=0))
    bucket = write_bucket_set(root / "b", "xnli", "de", 1, [nli_data(3, seed=4)], NLI)
    dev = write_pairs(root / "dev-de.tsv", nli_data(6, seed=6))
    return root, cache, bucket, dev


def adapt(setup, start: str, out: str) -> dict:
    root, cache, bucket, dev = setup
    done = fsxlt(cache, "adapt", "--task", "xnli", "--lang", "de", "--bucket", str(bucket),
                 "--from", start, "--dev", str(dev), "--no-test", "--lr", "1e-3",
                 "--max-epochs", "1", "--device", "cpu", "--out", str(root / out))
    assert done.returncode == 0, done.stderr
    return json.loads(next((root / out).rglob("00.json")).read_text(encoding="utf-8"))


def test_a_hub_start_is_identified_by_the_commit_it_loaded(setup):
    root, cache, _bucket, _dev = setup
    first = adapt(setup, "org/tiny", "runs-main")
    assert first["run"]["identity"]["start"] == f"pretrained:hub:org/tiny@{FIRST}"
    assert first["model"]["start"]["id"] == f"pretrained:hub:org/tiny@{FIRST}"
    assert first["model"]["start"]["revision"] == FIRST
    # the hub's main moves on: the same name is another model now
    add_snapshot(cache, "org/tiny", SECOND, make_encoder_dir(root / "b2", seed=1))
    second = adapt(setup, "org/tiny", "runs-moved")
    assert second["run"]["identity"]["start"] == f"pretrained:hub:org/tiny@{SECOND}"
    assert second["run"]["hash"] != first["run"]["hash"]
    # NAME@REVISION loads that commit, with the first run's identity and scores
    pinned = adapt(setup, f"org/tiny@{FIRST}", "runs-pinned")
    assert pinned["run"]["hash"] == first["run"]["hash"]
    assert pinned["dev"] == first["dev"]


def test_a_name_the_hub_cannot_resolve_is_one_line(setup):
    root, cache, bucket, dev = setup
    done = fsxlt(cache, "adapt", "--task", "xnli", "--lang", "de", "--bucket", str(bucket),
                 "--from", "org/missing", "--dev", str(dev), "--no-test",
                 "--out", str(root / "runs-missing"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "org/missing" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (root / "runs-missing").exists()
