"""Validation of loaded optimizer states, before an Updater or Trainer accepts them.

A states file comes from a stranger: after the byte format is checked
(``formats.optimizer_states.loads``), the decoded optimizer must look like one this class builds
(same attributes, values of the same kinds, finite numbers, bounded counters), its LR scheduler
must pass its class's own constructor checks, and each per-parameter state must have the
structure, shapes and dtypes that the optimizer itself creates for that parameter. Finally a trial update runs on copies, so a file
whose first ``step()`` would fail is refused at load time. Nothing here mutates the caller's
objects.
"""
from __future__ import annotations

import copy
import inspect
import math
import warnings
from typing import Any, Dict, List, Optional, Sequence

from .. import ndarray as _nd
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..ndarray.sparse import wrap

__all__ = ["check_optimizer", "check_states", "check_against_params", "clone_state"]

_MAX_INT = 2 ** 62  # counters and sizes beyond this are not from a real run


def _fail(where: str, msg: str) -> MXNetError:
    return MXNetError(f"load_states: {where}: {msg}")


def _kind(v: Any) -> str:
    from ..lr_scheduler import LRScheduler
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "str"
    if isinstance(v, dict):
        return "dict"
    if isinstance(v, (list, tuple)):
        return "sequence"
    if isinstance(v, NDArray):
        return "NDArray"
    if isinstance(v, LRScheduler):
        return "LRScheduler"
    return type(v).__name__


# kinds a saved attribute may have when a freshly built optimizer holds the template's kind
_COMPATIBLE = {"None": {"None", "number", "LRScheduler"}}
_MAY_BE_NONE = {"lr", "clip_gradient", "lr_scheduler"}  # None when a scheduler drives lr, ...


def _check_plain(v: Any, where: str, depth: int = 0) -> None:
    """Numbers finite and bounded, containers only of plain values."""
    if depth > 8:
        raise _fail(where, "nested too deeply")
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return
    if isinstance(v, int):
        if abs(v) > _MAX_INT:
            raise _fail(where, f"integer {v:.3e} is out of range (at most 2**62)")
        return
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _fail(where, f"{v} is not a finite number")
        return
    if isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            _check_plain(x, f"{where}[{i}]", depth + 1)
        return
    if isinstance(v, dict):
        for k, x in v.items():
            _check_plain(k, f"{where} key {k!r}", depth + 1)
            _check_plain(x, f"{where}[{k!r}]", depth + 1)
        return
    from ..lr_scheduler import LRScheduler
    if isinstance(v, LRScheduler):
        return  # checked by _check_scheduler
    raise _fail(where, f"unexpected value of type {type(v).__name__}")


def _template(cls: type) -> Optional[Any]:
    """A default-constructed instance of ``cls``, or None when it needs arguments."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cls()
    except Exception:
        return None


def _check_against_template(attrs: Dict[str, Any], template: Any, where: str,
                            skip: Sequence[str] = ()) -> None:
    expected = {k: v for k, v in vars(template).items() if k not in skip}
    missing = sorted(set(expected) - set(attrs))
    if missing:
        raise _fail(where, f"attribute(s) {missing} are missing; the file was not written by "
                           f"{type(template).__name__}.save_states/get_states or is corrupt")
    extra = sorted(k for k in set(attrs) - set(expected) if k not in skip)
    if extra:
        raise _fail(where, f"unknown attribute(s) {extra[:10]} for {type(template).__name__}")
    for k, want in expected.items():
        got_kind, want_kind = _kind(attrs[k]), _kind(want)
        if got_kind == "None" and k in _MAY_BE_NONE:
            continue
        if got_kind != want_kind and got_kind not in _COMPATIBLE.get(want_kind, ()):
            raise _fail(where, f"attribute {k!r} is a {got_kind} ({attrs[k]!r:.60}), but "
                               f"{type(template).__name__} keeps a {want_kind} there")


def _counter_dict(v: Any, where: str) -> None:
    if not isinstance(v, dict):
        raise _fail(where, f"must be a dict, got {type(v).__name__}")
    for k, n in v.items():
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= _MAX_INT:
            raise _fail(where, f"update count for {k!r} must be a non-negative int, got {n!r:.40}")


def _check_scheduler(sched: Any, num_update: int, where: str) -> None:
    """The scheduler's constructor arguments pass its own checks; its counters are consistent."""
    cls = type(sched)
    attrs = vars(sched)
    _check_plain({k: v for k, v in attrs.items()}, where)
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        args = {n: attrs[n] for n in list(sig.parameters)[1:] if n in attrs}
        # attributes that do not keep their constructor value: schedules decay base_lr in place
        # (the base class keeps the original as warmup_final_lr); PolyScheduler stores pwr as power
        if "base_lr" in args and "warmup_final_lr" in attrs:
            args["base_lr"] = attrs["warmup_final_lr"]
        if "pwr" in sig.parameters and "power" in attrs:
            args["pwr"] = attrs["power"]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fresh = cls(**args)
        except TypeError:
            fresh = None  # a user scheduler with other constructor arguments: kinds only
        except (ValueError, ArithmeticError, AssertionError) as e:
            raise _fail(where, f"{cls.__name__} rejects the saved settings: {e}") from None
        if fresh is not None:
            _check_against_template(attrs, fresh, where)
    step, count = attrs.get("step"), attrs.get("count")
    if isinstance(step, (int, float)) and not isinstance(step, bool) and isinstance(count, (int, float)):
        # FactorScheduler catches up one step per loop iteration: refuse a count that would
        # make the first call loop for ages (a real run keeps num_update - count <= step)
        if count < 0 or (num_update - count) / max(step, 1e-12) > 1e7:
            raise _fail(where, f"{cls.__name__} counter count={count} with step={step} does not fit "
                               f"the optimizer's num_update={num_update}")


def check_optimizer(opt: Any, where: str = "optimizer") -> None:
    """Check a decoded optimizer against a freshly built one of its class."""
    from .optimizer import Optimizer
    if not isinstance(opt, Optimizer):
        raise _fail(where, f"expected an Optimizer, got {type(opt).__name__}")
    attrs = {k: v for k, v in vars(opt).items() if k != "param_dict"}
    sched = attrs.get("lr_scheduler")
    from ..lr_scheduler import LRScheduler
    if sched is not None and not isinstance(sched, LRScheduler):
        raise _fail(where, f"lr_scheduler must be None or an LRScheduler, got {type(sched).__name__}")
    _check_plain({k: v for k, v in attrs.items()}, where)
    template = _template(type(opt))
    if template is not None:
        _check_against_template(attrs, template, where, skip=("param_dict",))
    for k in ("num_update", "begin_num_update"):
        v = attrs.get(k)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _MAX_INT:
            raise _fail(where, f"{k} must be a non-negative int, got {v!r:.40}")
    counts = attrs.get("_all_index_update_counts")
    if not isinstance(counts, dict) or not counts:
        raise _fail(where, "_all_index_update_counts must be a non-empty dict of per-device counters")
    for dev, d in counts.items():
        if isinstance(dev, bool) or not isinstance(dev, int):
            raise _fail(where, f"device id {dev!r:.40} in _all_index_update_counts is not an int")
        _counter_dict(d, f"{where}._all_index_update_counts[{dev}]")
    if not any(d is attrs.get("_index_update_count") for d in counts.values()):
        raise _fail(where, "_index_update_count is not one of the per-device counters")
    for k in ("lr_mult", "wd_mult"):
        d = attrs.get(k)
        if not isinstance(d, dict) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                              for x in d.values()):
            raise _fail(where, f"{k} must map names/indices to numbers, got {d!r:.60}")
    if not isinstance(attrs.get("idx2name"), dict) or not all(
            isinstance(x, str) for x in attrs["idx2name"].values()):
        raise _fail(where, "idx2name must map indices to parameter names")
    aggregate = attrs.get("aggregate_num")
    if isinstance(aggregate, bool) or not isinstance(aggregate, int) or not 0 <= aggregate <= 1 << 20:
        raise _fail(where, f"aggregate_num must be a small non-negative int, got {aggregate!r:.40}")
    if sched is not None:
        _check_scheduler(sched, attrs["num_update"], f"{where}.lr_scheduler")
    elif not isinstance(attrs.get("lr"), (int, float)) or isinstance(attrs.get("lr"), bool):
        raise _fail(where, f"lr must be a number when there is no lr_scheduler, got {attrs.get('lr')!r:.40}")


def check_states(states: Any, where: str = "states") -> None:
    """The updater's ``states``: a dict of index -> state tree of NDArrays, None and tuples."""
    if not isinstance(states, dict):
        raise _fail(where, f"must be a dict of parameter index -> state, got {type(states).__name__}")
    for k, s in states.items():
        if isinstance(k, bool) or not isinstance(k, (int, str)):
            raise _fail(where, f"key {k!r:.40} is not a parameter index or name")
        _check_state_tree(s, f"{where}[{k!r}]", 0)


def _check_state_tree(s: Any, where: str, depth: int) -> None:
    if s is None or isinstance(s, NDArray):
        return
    if isinstance(s, (tuple, list)) and depth < 4:
        for i, x in enumerate(s):
            _check_state_tree(x, f"{where}[{i}]", depth + 1)
        return
    raise _fail(where, f"a state holds NDArrays, None or tuples of them, got {type(s).__name__}")


def _compare(saved: Any, fresh: Any, where: str) -> None:
    """Same structure, shapes and dtypes as the state the optimizer builds itself."""
    if isinstance(fresh, NDArray):
        if not isinstance(saved, NDArray):
            raise _fail(where, f"expected an array of shape {fresh.shape}, got {_describe(saved)}")
        if saved.shape != fresh.shape:
            raise _fail(where, f"saved state has shape {saved.shape} but the parameter needs "
                               f"{fresh.shape}; the states were saved for another network")
        if saved._t.dtype != fresh._t.dtype:
            raise _fail(where, f"saved state has dtype {str(saved._t.dtype)[6:]} but the parameter "
                               f"needs {str(fresh._t.dtype)[6:]}")
        return
    if isinstance(fresh, (tuple, list)):
        if not isinstance(saved, (tuple, list)) or len(saved) != len(fresh):
            raise _fail(where, f"expected a state of {len(fresh)} entries, got {_describe(saved)}")
        for i, (a, b) in enumerate(zip(saved, fresh)):
            _compare(a, b, f"{where}[{i}]")
        return
    if saved is not None:
        raise _fail(where, f"the optimizer keeps no state here, got {_describe(saved)}")


def _describe(v: Any) -> str:
    if isinstance(v, NDArray):
        return f"an array of shape {v.shape}"
    if isinstance(v, (tuple, list)):
        return f"a sequence of {len(v)} entries"
    return repr(v)[:40]


def _weight_like(param: Any) -> Optional[NDArray]:
    """The parameter's weight, or zeros of its shape when it is not initialized but fully known."""
    if getattr(param, "_data", None) is not None:
        return param._data[0]
    shape = getattr(param, "shape", None)
    if shape and all(isinstance(d, int) and d > 0 for d in shape):
        from .. import ndarray as nd
        return nd.zeros(shape, dtype=param.dtype)
    return None


def check_against_params(optimizer: Any, states: Dict[Any, Any], params: List[Any]) -> None:
    """Every state belongs to one of ``params`` (index into the list) and matches what
    ``optimizer`` creates for it; then a trial update on copies must succeed."""
    for idx in states:
        if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < len(params):
            raise _fail("states", f"there is a state for parameter index {idx!r:.40}, but the "
                                  f"Trainer has {len(params)} parameters (indices 0 to "
                                  f"{len(params) - 1}); the states were saved for another network")
    for idx, saved in states.items():
        param = params[idx]
        where = f"parameter {param.name!r} (index {idx}) state"
        weight = _weight_like(param)
        if weight is None:
            continue  # deferred shape: checked by the trial update once it is known
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                fresh = optimizer.create_state_multi_precision(idx, weight)
            except Exception as e:
                raise _fail(where, f"the loaded optimizer cannot create a state for a weight of "
                                   f"shape {weight.shape}: {type(e).__name__}: {e}") from None
        _compare(saved, fresh, where)
        _trial_update(optimizer, idx, saved, weight, where)


def _trial_update(optimizer: Any, idx: int, state: Any, weight: NDArray, where: str) -> None:
    """One update of a copy of the weight with a zero gradient, on copies of the optimizer and
    the state: what the first ``step()`` will do for this parameter."""
    from .optimizer import Updater
    trial = copy.copy(optimizer)
    trial.__dict__ = copy.deepcopy({k: v for k, v in vars(optimizer).items() if k != "param_dict"})
    trial.param_dict = getattr(optimizer, "param_dict", {})
    upd = Updater(trial)
    upd.states = {idx: clone_state(state)}
    upd.states_synced = {idx: False}
    w = wrap(weight._t.detach().clone())
    g = _nd.zeros(weight.shape, ctx=w.context, dtype=weight.dtype)  # dense even for a sparse weight
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            upd([idx], [g], [w])
    except Exception as e:
        raise _fail(where, f"a trial update with the loaded optimizer {type(optimizer).__name__} "
                           f"fails: {type(e).__name__}: {e}") from None


def clone_state(s: Any) -> Any:
    if isinstance(s, NDArray):
        return wrap(s._t.detach().clone())
    if isinstance(s, (tuple, list)):
        out = [clone_state(x) for x in s]
        return tuple(out) if isinstance(s, tuple) else out
    return s
