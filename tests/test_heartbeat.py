"""Issue 62, item 5: long work off a terminal says where it stands in plain lines (runs
done of total, failed, elapsed, an estimate of what is left), at least every 30 s; work
that ends sooner says nothing; on a terminal the bar stays."""

from __future__ import annotations

import time

import pytest

from fsxlt.execution.heartbeat import Heartbeat, duration


def test_the_lines_count_estimate_and_end():
    lines, now = [], [0.0]
    beat = Heartbeat("sweep", 10, say=lines.append, every=0.05, clock=lambda: now[0])
    beat.start()
    now[0] = 20.0
    for ok in (True, True, False, True):
        beat.update(ok)
    time.sleep(0.2)
    now[0] = 40.0
    beat.stop()
    assert lines[0] == "sweep: 4/10 runs done, 1 failed, 20s elapsed, about 30s left"
    assert lines[-1] == "sweep: 4/10 runs done, 1 failed, 40s elapsed, about 1m00s left"
    quiet = []
    Heartbeat("sweep", 3, say=quiet.append, every=60).start().stop()
    assert quiet == []  # ended before its first line: nothing said


def test_durations_read_as_people_write_them():
    assert [duration(s) for s in (5, 75, 3600 * 2 + 300)] == ["5s", "1m15s", "2h05m"]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict:
    from tests.icl_fixtures import make_causal_lm_dir
    from tests.sweep_fixtures import build_study

    root = tmp_path_factory.mktemp("heartbeat")
    return {**build_study(root / "study"), "lm": make_causal_lm_dir(root / "lm", "llama")}


def test_a_sweep_whose_stderr_is_no_terminal_prints_progress_lines(study, tmp_path, capsys,
                                                                   monkeypatch):
    """A real sweep, its stderr captured (no terminal), the heartbeat every 0.01 s: plain
    lines, no bar."""
    import fsxlt.execution.heartbeat as heartbeat
    from fsxlt.cli import run_app
    from tests.sweep_fixtures import sweep_config, write_config

    monkeypatch.setattr(heartbeat, "EVERY", 0.01)
    config = write_config(tmp_path / "sweep.yaml", sweep_config(
        study, tmp_path / "runs", methods=["full"], n_buckets=2, max_epochs=2,
        tasks={"xnli": {"languages": ["de"], "k": [1, 2]}}))
    capsys.readouterr()
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    text = capsys.readouterr().err
    lines = [line for line in text.splitlines() if line.startswith("sweep: ")]
    assert lines and "\r" not in text and "it/s" not in text
    assert lines[-1].startswith("sweep: 4/4 runs done, 0 failed, ")
    assert all(" runs done, " in line and " elapsed" in line for line in lines)


@pytest.mark.parametrize("command", ["adapt", "icl", "lm-adapt"])
def test_adapt_icl_and_lm_adapt_over_a_bucket_set_print_progress_lines(study, tmp_path,
                                                                      capsys, monkeypatch,
                                                                      command):
    """The other long commands over a bucket set (5 runs), stderr no terminal: the same
    plain lines, counting the runs, the last one all 5 done; on a terminal none."""
    import fsxlt.execution.heartbeat as heartbeat
    from fsxlt.cli import run_app

    monkeypatch.setattr(heartbeat, "EVERY", 0.01)
    common = ["--task", "xnli", "--lang", "de", "--bucket",
              str(study["buckets"] / "xnli/de/k1"), "--out", str(tmp_path / "runs")]
    fast = ["--max-epochs", "2", "--patience", "1", "--lr", "1e-2"]
    argv = {"adapt": ["adapt", *common, "--from", str(study["checkpoint"]), "--data-dir",
                      str(study["data"]), "--device", "cpu", *fast],
            "icl": ["icl", *common, "--model", str(study["lm"]), "--test",
                    str(study["data"] / "test-de.tsv"), "--threads", "1"],
            "lm-adapt": ["lm-adapt", *common, "--model", str(study["lm"]), "--test",
                         str(study["data"] / "test-de.tsv"), "--dev-limit", "4",
                         "--threads", "1", *fast]}[command]
    capsys.readouterr()
    assert run_app(argv) == 0
    text = capsys.readouterr().err
    lines = [line for line in text.splitlines() if line.startswith(f"{command}: ")]
    assert lines and lines[-1].startswith(f"{command}: 5/5 runs done, 0 failed, ")
    assert all(line.startswith(f"{command}: ") and " runs done, " in line and " elapsed" in line
               for line in lines) and "\r" not in text


def test_evaluate_says_it_is_alive_while_it_scores(study, capsys, monkeypatch):
    """One long scoring pass has nothing to count: off a terminal it says what it scores
    and the time elapsed, and its JSON stays alone on stdout."""
    import json

    import fsxlt.execution.heartbeat as heartbeat
    from fsxlt.cli import run_app

    monkeypatch.setattr(heartbeat, "EVERY", 0.001)
    capsys.readouterr()
    assert run_app(["evaluate", str(study["checkpoint"]), "--task", "xnli", "--lang", "de",
                    "--split", "test", "--data-dir", str(study["data"]),
                    "--device", "cpu"]) == 0
    out, err = capsys.readouterr()
    n = json.loads(out)["n_examples"]
    lines = [line for line in err.splitlines() if line.startswith("evaluate: ")]
    assert lines and all(line.startswith(f"evaluate: scoring {n} examples, ")
                         and line.endswith(" elapsed") for line in lines), err


def test_no_heartbeat_on_a_terminal():
    from fsxlt.execution.heartbeat import watched

    with watched("adapt", 3, on_terminal=True) as beat:
        assert beat is None
    lines: list[str] = []
    with watched("adapt", 3, say=lines.append, on_terminal=False) as beat:
        assert beat is not None and beat.total == 3


def test_more_workers_than_groups_split_the_largest_groups():
    """Issue 62, item 7: one language's sweep on every worker; a multi group trained once
    is never split; every run stays in exactly one group, in order."""
    import random
    from types import SimpleNamespace

    from fsxlt.execution.executors import split_groups

    rng = random.Random(0)
    for _ in range(200):
        groups = [[SimpleNamespace(id=f"{g}-{i}", shared_languages=("de", "fr") if shared else ())
                   for i in range(rng.randint(1, 9))]
                  for g, shared in enumerate(rng.random() < 0.2 for _ in range(rng.randint(1, 4)))]
        workers = rng.randint(1, 8)
        split = split_groups(groups, workers)
        assert [run.id for group in split for run in group] == \
            [run.id for group in groups for run in group]
        assert all(split) and len(split) >= min(workers, len(groups))
        splittable = sum(len(g) if not g[0].shared_languages else 1 for g in groups)
        assert len(split) == min(max(workers, len(groups)), max(splittable, len(groups)))
        for group in split:
            if group[0].shared_languages:
                assert any(group == original for original in groups)


def test_a_tqdm_bar_off_a_terminal_writes_lines_not_carriage_returns():
    """Issue 62, item 5: source-train's bar in a log: plain lines, at most one per 30 s."""
    import io

    from tqdm import tqdm

    from fsxlt.terminal import bar_options

    log = io.StringIO()
    for _ in tqdm(range(500), desc="source-train xnli", unit="step", **bar_options(log)):
        pass
    text = log.getvalue()
    lines = text.splitlines()
    assert "\r" not in text and 1 <= len(lines) <= 3
    assert lines[-1].startswith("source-train xnli: 100%") and "500/500" in lines[-1]


def test_source_train_off_a_terminal_writes_no_line_per_epoch(tmp_path, capsys):
    """Issue 72, item 5: two learning rates of four epochs, in a few seconds, off a terminal:
    the bar's first and last line, not one per epoch and learning rate (0.11 wrote 8+)."""
    from fsxlt.training import source_train
    from tests.train_fixtures import make_encoder_dir, nli_data

    encoder = make_encoder_dir(tmp_path / "encoder")
    source_train("xnli", nli_data(24, seed=1), nli_data(6, seed=2), model_name=str(encoder),
                 lrs=[3e-3, 1e-3], epochs=4, batch_size=12, seed=5, device="cpu",
                 progress=True)
    lines = [line for line in capsys.readouterr().err.splitlines()
             if line.startswith("source-train xnli")]
    assert len(lines) == 2, lines  # tqdm's first draw and its last; no zero-shot bar: no test
    assert "16/16" in lines[-1] and "epoch=4" in lines[-1]
