"""Every record path x everything that is not a record fsxlt wrote (issue 41, cases 6 and 7).

fsxlt writes a record as one JSON object, atomically: whatever else sits at a record path
(another JSON value, bytes that are not JSON, an empty file, a folder) was put there by
someone else. fsxlt 0.4.0 took a JSON array or string for a corrupt record and overwrote it
without ``--replace`` (exit 0, "1 runs completed"), and trained before failing on a folder
there. Each writer of records (``sweep``: adapt records and the K=0 record; ``adapt``;
``icl``; ``lm-adapt``) meets each content at its own record path: one line naming the path,
exit status 2, every file as it was; ``--replace`` replaces a file and names it on stderr.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from tests.icl_fixtures import make_causal_lm_dir
from tests.sweep_fixtures import build_study, sweep_config, write_config
from tests.test_faults_writers import adapt, icl, lm_adapt

# what is planted -> the words the refusal uses for it
CONTENTS: dict[str, tuple[bytes | None, str]] = {
    "array": (b"[1, 2, 3]\n", "a JSON array"),
    "string": (b'"my notes"\n', "a JSON string"),
    "number": (b"42\n", "a JSON number"),
    "boolean": (b"true\n", "a JSON true or false"),
    "null": (b"null\n", "a JSON null"),
    "object": (b'{"notes": "mine"}\n', "a JSON object with no record format"),
    "not-json": (b"{\"format\": \"fsxlt-adapt-run/1\", \"status\": \"o", "bytes that are not"),
    "binary": (b"\xff\xfe\x00garbage", "bytes that are not"),
    "empty": (b"", "an empty file"),
    "folder": (None, "a folder where the run's record file belongs"),
}


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("record-paths")
    found = build_study(root / "study")
    found["lm"] = make_causal_lm_dir(root / "lm")
    return found


def sweep(w: dict[str, Path], out: Path) -> list[str]:
    config = write_config(out.parent / "sweep.yaml", sweep_config(w, out))
    return ["sweep", str(config), "--workers", "0", "--lang", "de", "--k", "1"]


# writer -> (its argv, the record paths it writes, relative to the runs directory)
WRITERS: dict[str, tuple[Callable[[dict[str, Path], Path], list[str]], tuple[str, ...]]] = {
    "sweep": (sweep, ("xnli/de/k1/full/00.json", "xnli/de/k0/zero-shot.json")),
    "adapt": (adapt, ("xnli/de/k1/full/00.json",)),
    "icl": (icl, ("xnli/de/k1/icl/00.json",)),
    "lm-adapt": (lm_adapt, ("xnli/de/k1/lm-lora/00.json",)),
}
CASES = [(writer, where, content) for writer, (_, paths) in WRITERS.items()
         for where in paths for content in CONTENTS]


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*")) if p.name != ".fsxlt-writer.lock"}


def plant(path: Path, content: str) -> None:
    data = CONTENTS[content][0]
    path.parent.mkdir(parents=True, exist_ok=True)
    if data is None:
        path.mkdir()
        (path / "keep.txt").write_text("mine\n")
    else:
        path.write_bytes(data)


@pytest.mark.parametrize("writer, where, content", CASES)
def test_what_fsxlt_did_not_write_at_a_record_path_is_never_replaced_unasked(
        study, tmp_path, capsys, writer, where, content):
    runs = tmp_path / "runs"
    argv = WRITERS[writer][0](study, runs)
    runs.mkdir()
    path = runs / where
    plant(path, content)
    before = snapshot(tmp_path)
    capsys.readouterr()
    status = run_app(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1 and err[0].startswith("error:"), err
    assert str(path) in err[0] and CONTENTS[content][1] in err[0], err
    assert snapshot(tmp_path) == before, f"{writer} changed files over {content} at {where}"


@pytest.mark.parametrize("writer, where", [(w, p) for w, (_, paths) in WRITERS.items()
                                           for p in paths])
def test_replace_replaces_what_is_there_and_names_it(study, tmp_path, capsys, writer, where):
    runs = tmp_path / "runs"
    argv = WRITERS[writer][0](study, runs)
    runs.mkdir()
    path = runs / where
    plant(path, "array")
    capsys.readouterr()
    assert run_app([*argv, "--replace"]) == 0
    assert f"replacing {path}" in capsys.readouterr().err
    assert path.read_text().startswith("{")
