"""The Ray executor: a sweep's groups as Ray tasks on a cluster that shares nothing but Ray.

One task per group (``num_cpus=cpus_per_task``, ``num_gpus=gpus_per_task``, fractions
allowed). Nothing travels as a path (:mod:`fsxlt.execution.shipping`): the group's
inputs go out through the object store, put once per content, and each run's record
(with its predictions and submission file) comes back as the task's next streamed
value; the driver writes it into RUNS_DIR under its writer lock, the record last, so
the runs directory exists on the driver only and the progress bar counts records
across the cluster.

A node lost mid-group (a preempted spot instance, a node the autoscaler removed)
ends the group's task with ``NodeDiedError``: the driver submits the runs it holds no
outcome of again, elsewhere (up to :data:`NODE_LOSS_RETRIES` times per group), and
says so in one line; a record already received is never run or written again. A task
that fails for its own reasons is not retried: each run it left gets an error record
(written by the driver). A worker that dies any other way (the OOM killer) leaves its
runs not run, as the local executor does: the next start runs them. Tasks waiting for
a node (an autoscaling cluster that grows) simply wait.
"""

from __future__ import annotations

import queue
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.execution.shipping import (
    Relocation,
    Shipper,
    take_outputs,
    unpack,
    write_outputs,
)
from fsxlt.execution.worker import Outcome, run_group, write_error

NODE_LOSS_RETRIES = 3


def ray_module() -> Any:
    """Ray, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise FsxltError("the ray executor needs Ray: pip install 'fsxlt[ray]'") from None
    return ray


# --------------------------------------------------------------------------- the worker

def ray_group(parcels: Sequence[Any], runs: Sequence[Any], out: str, device: str,
              threads: int, save_predictions: bool = False,
              ) -> Iterator[tuple[Outcome, list[tuple[str, bytes]]]]:
    """A Ray task: run one group on this node and yield each run's (outcome, files).

    The inputs are laid out from the object store, the runs relocated to them and to a
    scratch runs folder; each file a run writes there is sent back and removed."""
    import ray

    scratch = Path(tempfile.mkdtemp(prefix="fsxlt-ray-runs-"))
    try:
        relocation = Relocation({**unpack(parcels, ray.get), out: str(scratch)})
        moved = [relocation(run) for run in runs]
        records = {run.id: Path(run.record_path).relative_to(scratch).as_posix()
                   for run in moved}
        yield from _stream(moved, device, max(1, threads), save_predictions, scratch,
                           relocation, records)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _stream(runs: Sequence[Any], device: str, threads: int, save_predictions: bool,
            scratch: Path, relocation: Relocation, records: dict[str, str],
            ) -> Iterator[tuple[Outcome, list[tuple[str, bytes]]]]:
    """Run the group in a thread (``threads`` torch threads, set in that thread: OpenMP's
    count is per thread, and CPU numerics follow it); yield each outcome with the files
    its run wrote."""
    results: queue.Queue[Any] = queue.Queue()

    def on_result(outcome: Outcome) -> None:
        results.put((outcome, take_outputs(scratch, relocation, records.get(outcome.run_id))))

    def work() -> None:
        import torch

        try:
            torch.set_num_threads(threads)
            run_group(runs, device=device, on_result=on_result,
                      save_predictions=save_predictions)
            results.put(None)
        except BaseException as err:  # raised in the task, so the driver sees it
            results.put(err)

    thread = threading.Thread(target=work, name="fsxlt-group", daemon=True)
    thread.start()
    while True:
        item = results.get()
        if item is None:
            break
        if isinstance(item, BaseException):
            raise item
        yield item
    thread.join()


# --------------------------------------------------------------------------- the address

ADDRESS_TIMEOUT_S = 5.0  # ours: Ray's own connection retries take minutes on a dead port
CLIENT_PORT = 10001      # the Ray client's default (ray://HOST without a port)


def check_address(address: str | None, timeout: float = ADDRESS_TIMEOUT_S) -> None:
    """Refuse, in one line and within ``timeout`` seconds, a Ray ``address`` nothing
    answers at (before a sweep writes anything): ``auto`` with no running cluster to find
    (``RAY_ADDRESS``, or the one ``ray start`` left on this machine), an address that is no
    ``HOST:PORT``, a port no process listens on. ``None``/``local``: a local Ray is
    started, nothing to reach."""
    from fsxlt.identity import connection_problem

    if address in (None, "", "local"):
        return
    assert address is not None
    cure = ("start one with `ray start --head`, or give --address HOST:PORT of a running "
            "cluster's head (ray://HOST:PORT for a Ray client server)")
    target = _host_port(address)
    if target is None:
        raise FsxltError(f"--address {address}: " + ("no running Ray cluster found on this "
                         "machine (none in RAY_ADDRESS, none started with `ray start`); "
                         if address == "auto" else "not HOST:PORT, auto or ray://HOST:PORT; ")
                         + cure)
    why = connection_problem(*target, timeout)
    if why is not None:
        raise FsxltError(f"--address {address}: no Ray cluster answers at "
                         f"{target[0]}:{target[1]} ({why}, within {timeout:g} s); {cure}")


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a Ray address (``auto`` resolved as Ray resolves it), or None."""
    if address.startswith("ray://"):
        host, _, port = address[len("ray://"):].partition("/")[0].rpartition(":")
        if not host:
            host, port = port, str(CLIENT_PORT)
        return (host, int(port)) if port.isdigit() and host else None
    if address == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address
            address = canonicalize_bootstrap_address("auto") or ""
        except Exception:  # Ray's private API moved, or no cluster file: nothing found
            return None
    host, _, port = address.rpartition(":")
    return (host.strip("[]"), int(port)) if host and port.isdigit() else None


# --------------------------------------------------------------------------- the driver

def run_ray(groups: list[list[Any]], on_result: Callable[[Outcome], None], *, out: str,
            address: str | None, gpus_per_task: float, cpus_per_task: float, device: str,
            save_predictions: bool = False, say: Callable[[str], None] = print) -> None:
    """Run ``groups`` as Ray tasks (joining ``address``, an initialised Ray, or a local
    instance); write what comes back into RUNS_DIR ``out``; report each outcome."""
    ray = ray_module()
    started = False
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except Exception as err:  # the address answered, but is no Ray (or refused us)
            first = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
            raise FsxltError(f"--address {address}: Ray could not join it "
                             f"({type(err).__name__}: {first})") from None
        started = True
    try:
        if device == "auto":
            device = "cuda" if gpus_per_task > 0 else "cpu"
        remote = ray.remote(num_gpus=gpus_per_task, num_cpus=cpus_per_task,
                            max_retries=0)(ray_group)
        waiting = _waiting_note(ray.nodes(), cpus_per_task, gpus_per_task)
        if waiting:
            say(waiting)
        driver = _Driver(ray, groups, on_result, say, out)

        def submit(index: int) -> Any:
            runs = driver.left[index]
            return remote.remote(driver.shipper.parcels_for(runs), runs, str(Path(out)),
                                 device, max(1, int(cpus_per_task)), save_predictions)

        driver.run(submit)
    finally:
        if started:
            ray.shutdown()


class _Driver:
    """The driver's loop: one stream per group, read as values arrive."""

    def __init__(self, ray: Any, groups: list[list[Any]], on_result: Callable[[Outcome], None],
                 say: Callable[[str], None], out: str):
        self.ray, self.on_result, self.say, self.out = ray, on_result, say, out
        self.left = {index: list(group) for index, group in enumerate(groups)}
        self.losses = dict.fromkeys(self.left, 0)
        self.shipper = Shipper(ray.put)

    def run(self, submit: Callable[[int], Any]) -> None:
        from ray.exceptions import NodeDiedError, RayTaskError

        pending = {submit(index): index for index in self.left}
        while pending:
            ready, _ = self.ray.wait(list(pending), num_returns=1)
            stream = ready[0]
            index = pending[stream]
            try:
                outcome, files = self.ray.get(next(stream))
            except StopIteration:
                del pending[stream]
                continue
            except NodeDiedError as err:
                del pending[stream]
                if self._node_lost(index, err):
                    pending[submit(index)] = index
                continue
            except RayTaskError as err:  # the task's own failure: each run left, an error
                del pending[stream]
                self._failed(index, err)
                continue
            except Exception as err:  # the worker died otherwise: its runs are not run
                del pending[stream]
                self.say(f"a Ray worker of {self._name(index)} died "
                         f"({err.__class__.__name__}); {len(self.left[index])} runs not run")
                continue
            self._received(index, outcome, files)

    def _received(self, index: int, outcome: Outcome, files: list[tuple[str, bytes]]) -> None:
        if all(run.id != outcome.run_id for run in self.left[index]):
            return  # a value already written (never expected: a lost task sends no more)
        write_outputs(self.out, files)
        self.left[index] = [run for run in self.left[index] if run.id != outcome.run_id]
        self.on_result(outcome)

    def _node_lost(self, index: int, err: Exception) -> bool:
        """Say what was lost; True when the group's unfinished runs go out again."""
        left, name = len(self.left[index]), self._name(index)
        self.losses[index] += 1
        if self.losses[index] > NODE_LOSS_RETRIES:
            self.say(f"a Ray node was lost ({err.__class__.__name__}) for the "
                     f"{self.losses[index]}th time running {name}: its {left} unfinished "
                     "runs are not run (start the sweep again)")
            return False
        self.say(f"a Ray node was lost ({err.__class__.__name__}): the {left} unfinished "
                 f"runs of {name} run again elsewhere")
        return True

    def _failed(self, index: int, err: Exception) -> None:
        cause = getattr(err, "cause", None) or err
        for run in self.left[index]:
            self.on_result(write_error(run, cause, "ray"))
        self.left[index] = []

    def _name(self, index: int) -> str:
        first = self.left[index][0] if self.left[index] else None
        return f"the group {first.task}/{first.language}" if first else "a group"


def _waiting_note(nodes: list[dict[str, Any]], cpus: float, gpus: float) -> str | None:
    """One line when no live node has a task's CPUs and GPUs now (the tasks wait)."""
    alive = [node.get("Resources", {}) for node in nodes if node.get("Alive")]
    if any(found.get("CPU", 0) >= cpus and found.get("GPU", 0) >= gpus for found in alive):
        return None
    need = f"{cpus:g} CPUs" + (f" and {gpus:g} GPUs" if gpus else "")
    return (f"waiting for a Ray node with {need}: none of the {len(alive)} live nodes has "
            "them now (an autoscaling cluster adds one; Ctrl-C stops the sweep)")
