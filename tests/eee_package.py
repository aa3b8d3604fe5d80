"""every-eval-ever 0.3.0's own code for the tests that check fsxlt's Every Eval Ever
records against it (its schemas, its validator, its lm-eval converter).

The package needs Python >= 3.12 and fsxlt's machines run 3.11, so it is not installed:
its wheel (pure Python) is unpacked and put on ``sys.path``, where its validator and
converters run on the pydantic this environment has. ``.ci/run`` downloads the wheel
and names it in ``FSXLT_EEE_WHEEL``; elsewhere the tests download it with pip into a
cache, and skip where no registry answers (under CI a missing wheel fails instead).
The wheel's sha256 is pinned: another file of the same name is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

VERSION = "0.3.0"
WHEEL = f"every_eval_ever-{VERSION}-py3-none-any.whl"
SHA256 = "564b8bc624c1f822f749a769dc69dc058a736e83d920cbeb147c3a30d3152317"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fsxlt-tests"


def _wheel() -> Path | None:
    named = os.environ.get("FSXLT_EEE_WHEEL")
    if named:
        return Path(named)
    target = CACHE / WHEEL
    if not target.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", f"every-eval-ever=={VERSION}",
                        "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
                        "-d", str(CACHE), "-q"], capture_output=True, check=False, timeout=120)
    return target if target.is_file() else None


def eee_root() -> Path:
    """The unpacked package's folder, on ``sys.path``; skips (fails under CI) without it."""
    wheel = _wheel()
    if wheel is None or not wheel.is_file():
        message = f"every-eval-ever {VERSION}'s wheel: not downloadable here"
        if os.environ.get("CI"):
            pytest.fail(message + " (.ci/run downloads it into FSXLT_EEE_WHEEL)")
        pytest.skip(message)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert digest == SHA256, f"{wheel}: not every-eval-ever {VERSION}'s wheel ({digest})"
    root = CACHE / f"every_eval_ever-{VERSION}-{SHA256[:12]}"
    if not (root / "every_eval_ever" / "schemas").is_dir():
        partial = root.with_name(root.name + f".{os.getpid()}")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(partial)
        with contextlib.suppress(OSError):  # another worker unpacked it first
            partial.rename(root)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return root


def validate_tree(folder: Path) -> list[str]:
    """every-eval-ever's own validator (with its repository checks: the datastore path,
    the samples companion, score bounds, the model's folder) over every file below
    ``folder/data``, and jsonschema with the package's two JSON schemas over every
    aggregate record and samples row: each error and warning as ``path: message``."""
    import json

    from jsonschema import Draft7Validator

    root = eee_root()
    schemas = {name: Draft7Validator(json.loads(
        (root / "every_eval_ever/schemas" / f"{name}.schema.json").read_text()))
        for name in ("eval", "instance_level_eval")}
    from every_eval_ever.validator.validate import _LocalRepositoryFiles
    from every_eval_ever.validator.validation_core import validate_file

    repository = _LocalRepositoryFiles(folder)
    problems = []
    for path in sorted((folder / "data").rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(folder).as_posix()
        report = validate_file(path, repo_path=rel, available_files=repository,
                               read_repo_file=repository.read_text, run_semantic_checks=True)
        problems += [f"{rel}: {one}" for one in [*report.errors, *report.warnings]]
        lines = path.read_text(encoding="utf-8").splitlines() \
            if path.name.endswith("_samples.jsonl") else [path.read_text(encoding="utf-8")]
        schema = schemas["instance_level_eval" if path.name.endswith(".jsonl") else "eval"]
        problems += [f"{rel}: {error.message}" for line in lines
                     for error in schema.iter_errors(json.loads(line))]
        if not report.valid and not report.errors:
            problems.append(f"{rel}: invalid")
    return problems
