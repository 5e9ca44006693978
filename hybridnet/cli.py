"""The ``hybridnet`` command: look at, convert and time MXNet model files without writing a
program (not an MXNet tool: MXNet never had one).

    hybridnet run script.py [args...]          # what `python -m hybridnet` does
    hybridnet inspect MODEL-symbol.json [MODEL-0000.params] [--shape data=1,3,224,224] [--json]
    hybridnet convert MODEL-symbol.json MODEL-0000.params --to onnx|torch|params [--check]
    hybridnet bench MODEL --shape data=1,3,224,224 [--batch 1,32] [--static] [--json]

A file the loaders reject ends the command with their message on stderr and exit status 1
(usage errors: status 2, as argparse gives them).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["main"]


class CommandError(Exception):
    """A failure the user can act on: printed without a traceback, exit status 1."""


def _shapes(specs: Optional[Sequence[str]]) -> Dict[str, Tuple[int, ...]]:
    out: Dict[str, Tuple[int, ...]] = {}
    for spec in specs or ():
        name, sep, dims = spec.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            raise CommandError(f"--shape {spec!r}: expected NAME=D1,D2,... such as data=1,3,224,224") from None
    return out


def _version_text(v: Any) -> str:
    try:
        v = int(v)
    except (TypeError, ValueError):
        return "unknown"
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def _raw_json(path: str) -> dict:
    """The file's JSON object, or {} when it is not one (``sym.load`` then gives the error)."""
    try:
        with open(path, "rb") as f:
            raw = json.loads(f.read().decode("utf-8"))
        return raw if isinstance(raw, dict) else {}
    except (OSError, ValueError):
        return {}


def _unsupported(raw: dict) -> Dict[str, List[str]]:
    """operator -> node names, for the operators of a symbol file hybridnet has no kernel for."""
    from .base import MXNetError
    from .ops import registry
    out: Dict[str, List[str]] = {}
    nodes = raw.get("nodes")
    for n in nodes if isinstance(nodes, list) else ():
        op = n.get("op") if isinstance(n, dict) else None
        if not isinstance(op, str) or op == "null":
            continue
        try:
            registry.get(op)
        except MXNetError:
            out.setdefault(op, []).append(str(n.get("name")))
    return out


def _load(symbol_file: str, params_file: Optional[str]) -> Tuple[Any, dict]:
    from . import symbol as sym
    from .deploy import load_params
    s = sym.load(symbol_file)
    return s, (load_params(params_file) if params_file else {})


def _data_names(s: Any, params: dict) -> List[str]:
    aux = set(s.list_auxiliary_states())
    return [n for n in s.list_arguments() if n not in params and n not in aux]


def _table(rows: List[List[str]], header: List[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def _size(shape: Optional[Sequence[int]]) -> int:
    """Elements of ``shape``; 0 while it is unknown."""
    if shape is None:
        return 0
    n = 1
    for d in shape or ():
        n *= int(d)
    return n


# -- inspect ------------------------------------------------------------------------------------
def inspect_model(symbol_file: str, params_file: Optional[str], shapes: Dict[str, Tuple[int, ...]]) -> dict:
    """What ``hybridnet inspect`` reports, as a dict (the ``--json`` form)."""
    raw = _raw_json(symbol_file)
    version = _version_text((raw.get("attrs") or {}).get("mxnet_version", [None, None])[1]
                            if isinstance((raw.get("attrs") or {}).get("mxnet_version"), list) else None)
    unsupported = _unsupported(raw)
    if unsupported:
        shown = "; ".join(f"{op} (nodes {', '.join(names[:5])})" for op, names in sorted(unsupported.items()))
        raise CommandError(f"{symbol_file}: written by MXNet {version}, uses operators hybridnet cannot "
                           f"run: {shown}")
    s, params = _load(symbol_file, params_file)
    data = _data_names(s, params)
    arg_shapes: Dict[str, Any] = {k: tuple(v.shape) for k, v in params.items()}
    out_shapes: Dict[str, Any] = {}
    unknown = [n for n in shapes if n not in s.list_arguments()]
    if unknown:
        raise CommandError(f"--shape names {unknown} are not inputs of {symbol_file}; its data inputs are {data}")
    if shapes:
        internals = s.get_internals()
        given = {**{k: v for k, v in arg_shapes.items() if k in set(internals.list_arguments())}, **shapes}
        a, o, x = internals.infer_shape_partial(**given)
        for name, shp in zip(internals.list_arguments(), a or ()):
            arg_shapes.setdefault(name, tuple(shp) if shp else None)
        for name, shp in zip(internals.list_auxiliary_states(), x or ()):
            arg_shapes.setdefault(name, tuple(shp) if shp else None)
        out_shapes = {name: (tuple(shp) if shp else None) for name, shp in zip(internals.list_outputs(), o or ())}
    graph = s._graph()
    pset = set(params) | (set(s.list_arguments()) - set(data)) | set(s.list_auxiliary_states())
    nodes, ops = [], {}
    for n in graph.nodes:
        if n.op is None:
            continue
        ops[n.op.name] = ops.get(n.op.name, 0) + 1
        owned = [src.name for src, _ in n.inputs if src.op is None and src.name in pset]
        nodes.append({"name": n.name, "op": n.op.name,
                      "output_shapes": [out_shapes.get(o) for o in n.output_names()] if shapes else None,
                      "params": sum(_size(arg_shapes.get(p)) for p in owned), "param_names": owned})
    outputs = s.list_outputs()
    return {
        "symbol_file": symbol_file, "params_file": params_file, "mxnet_version": version,
        "inputs": [{"name": d, "shape": list(shapes[d]) if d in shapes else None} for d in data],
        "outputs": [{"name": o, "shape": list(out_shapes[o]) if out_shapes.get(o) else None} for o in outputs],
        "nodes": nodes, "operators": dict(sorted(ops.items())),
        "parameters": {"count": len([p for p in pset if p in arg_shapes or p in params]),
                       "elements": sum(_size(arg_shapes.get(p)) for p in pset if arg_shapes.get(p))},
        "unsupported_operators": {},
    }


def _print_inspect(info: dict) -> None:
    rows = [[str(i), n["name"], n["op"],
             " ".join("x".join(map(str, s)) if s else "?" for s in n["output_shapes"]) if n["output_shapes"] is not None else "-",
             f"{n['params']:,}" if n["params"] else ""] for i, n in enumerate(info["nodes"])]
    print(f"{info['symbol_file']}  (written by MXNet {info['mxnet_version']})")
    print(_table(rows, ["#", "node", "operator", "output shape", "params"]))
    print()
    shape = lambda s: "x".join(map(str, s)) if s else "?"  # noqa: E731
    print("inputs:  " + ", ".join(f"{i['name']} {shape(i['shape'])}" for i in info["inputs"]))
    print("outputs: " + ", ".join(f"{o['name']} {shape(o['shape'])}" for o in info["outputs"]))
    p = info["parameters"]
    print(f"parameters: {p['count']} arrays, {p['elements']:,} values")
    print("operators: " + ", ".join(f"{k} x{v}" for k, v in info["operators"].items()))
    print("unsupported operators: none")


def _cmd_inspect(args: argparse.Namespace) -> int:
    info = inspect_model(args.symbol, args.params, _shapes(args.shape))
    if args.json:
        print(json.dumps(info, indent=1))
    else:
        _print_inspect(info)
    return 0


# -- convert ------------------------------------------------------------------------------------
def _examples(s: Any, params: dict, shapes: Dict[str, Tuple[int, ...]], what: str) -> Tuple[List[str], list]:
    import numpy as np
    data = _data_names(s, params)
    missing = [d for d in data if d not in shapes]
    if missing:
        raise CommandError(f"{what} needs the shape of every data input: add --shape for {missing} "
                           f"(e.g. --shape {missing[0]}=1,3,224,224)")
    rng = np.random.default_rng(0)
    return data, [rng.standard_normal(shapes[d]).astype(np.float32) for d in data]


def _reference(symbol_file: str, params_file: str, data: List[str], inputs: list) -> list:
    """hybridnet's outputs (hybridized, predict mode) as NumPy arrays."""
    from . import ndarray as nd
    from .gluon import SymbolBlock
    block = SymbolBlock.imports(symbol_file, data, params_file)
    block.hybridize()
    out = block(*[nd.array(x) for x in inputs])
    return [o.asnumpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def _largest_difference(ref: list, got: list) -> float:
    import numpy as np
    if len(ref) != len(got):
        raise CommandError(f"--check: hybridnet gives {len(ref)} outputs, the converted model {len(got)}")
    return max((float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)))) if np.size(a) else 0.0
                for a, b in zip(ref, got)), default=0.0)


def _default_output(symbol_file: str, to: str) -> str:
    base = symbol_file[:-len("-symbol.json")] if symbol_file.endswith("-symbol.json") else os.path.splitext(symbol_file)[0]
    return {"onnx": base + ".onnx", "torch": base + ".pt2", "params": base + "-resaved-0000.params"}[to]


def _cmd_convert(args: argparse.Namespace) -> int:
    import numpy as np
    shapes = _shapes(args.shape)
    out = args.output or _default_output(args.symbol, args.to)
    s, params = _load(args.symbol, args.params)
    got = None
    if args.to == "params":
        from . import ndarray as nd
        aux = set(s.list_auxiliary_states())
        nd.save(out, {("aux:" if k in aux else "arg:") + k: v for k, v in params.items()})
        if args.check:
            again = nd.load(out)
            again = {k[4:]: v for k, v in again.items()}
            diff = _largest_difference([params[k].asnumpy() for k in sorted(params)],
                                       [again[k].asnumpy() for k in sorted(params)])
            print(f"largest difference: {diff:.3g} (over {len(params)} arrays)")
        print(f"wrote {out}")
        return 0
    data, inputs = _examples(s, params, shapes, f"--to {args.to}")
    if args.to == "onnx":
        from .onnx import export_model
        export_model(args.symbol, args.params, [x.shape for x in inputs], np.float32, out, dynamic=True)
        if args.check:
            import onnxruntime as ort
            sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
            feed = {i.name: x for i, x in zip(sess.get_inputs(), inputs)}
            got = sess.run(None, feed)
    else:
        import torch
        from .deploy import to_torch
        module = to_torch(s, params)
        if args.dynamic_batch:  # torch.export takes a size-1 axis for a constant: export at batch 2
            inputs = [np.concatenate([x, x]) if x.ndim and x.shape[0] == 1 else x for x in inputs]
        example = tuple(torch.from_numpy(x) for x in inputs)
        batch = torch.export.Dim("batch", min=1, max=1 << 16)
        dynamic = {name: {0: batch} for name in module.input_names} if args.dynamic_batch else None
        program = torch.export.export(module, example, dynamic_shapes=dynamic)
        torch.export.save(program, out)
        if args.check:
            loaded = torch.export.load(out).module()
            with torch.no_grad():
                res = loaded(*example)
            got = [t.numpy() for t in (res if isinstance(res, (list, tuple)) else [res])]
    if got is not None:
        diff = _largest_difference(_reference(args.symbol, args.params, data, inputs), got)
        print(f"largest difference: {diff:.3g} (hybridnet vs {args.to}, inputs {', '.join(f'{d}={x.shape}' for d, x in zip(data, inputs))})")
    print(f"wrote {out}")
    return 0


# -- bench --------------------------------------------------------------------------------------
def _progress(done: int, total: int, what: str) -> None:
    width = 24
    fill = width * done // max(total, 1)
    sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} {what:<40}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _time(fn: Any, repeat: int) -> float:
    fn()  # warm up: compiles, builds plans
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def _bench_model(model: str, params_file: Optional[str]) -> Tuple[Any, List[str], Optional[Any]]:
    """(block factory, data names, graph-for-eager) of a symbol file or a model-zoo name."""
    from .gluon import SymbolBlock
    if os.path.exists(model) or model.endswith(".json"):
        if params_file is None and model.endswith("-symbol.json"):
            cand = model[:-len("-symbol.json")] + "-0000.params"
            params_file = cand if os.path.exists(cand) else None
        s, params = _load(model, params_file)
        data = _data_names(s, params)

        def make() -> Any:
            block = SymbolBlock.imports(model, data, params_file)
            if params_file is None:
                block.collect_params().initialize()
            return block
        return make, data, s
    from .gluon.model_zoo import vision
    try:
        vision.get_model(model)
    except (ValueError, KeyError) as e:
        raise CommandError(f"{model}: neither a -symbol.json file nor a model-zoo network ({e})") from None

    def make_zoo() -> Any:
        net = vision.get_model(model)
        net.initialize()
        return net
    return make_zoo, ["data"], None


def bench(model: str, params_file: Optional[str], shapes: Dict[str, Tuple[int, ...]], batches: List[int],
          static: bool, tiers: List[str], repeat: int, progress: bool = True) -> List[dict]:
    """Rows {variant, batch, latency_ms, throughput}: eager, hybridized, static (with
    ``static``) and each lowered tier, at each batch size."""
    import numpy as np

    from . import autograd
    from . import ndarray as nd
    make, data, s = _bench_model(model, params_file)
    missing = [d for d in data if d not in shapes]
    if missing:
        raise CommandError(f"bench needs the shape of every data input: add --shape for {missing}")
    variants: List[Tuple[str, dict]] = [("eager", {}), ("hybridized", {"active": True})]
    if static:
        variants.append(("static", {"static_alloc": True, "static_shape": True}))
    variants += [(f"tier {t}", {"backend": t, "static_alloc": True, "static_shape": True}) for t in tiers]
    rows = []
    total, done = len(variants) * len(batches), 0
    rng = np.random.default_rng(0)
    for b in batches:
        inputs = [nd.array(rng.standard_normal((b,) + tuple(shapes[d][1:])).astype(np.float32)) for d in data]
        for name, declared in variants:
            flags = dict(declared)
            if progress:
                _progress(done, total, f"{name}, batch {b}")
            block = make()
            if name == "eager" and s is not None:  # a graph file: node by node, as imperative calls run
                from .ir.interpreter import Interpreter
                from .ndarray.sparse import dense_tensor
                with autograd.predict_mode():
                    block(*inputs)  # finishes deferred initialization (a graph without .params)
                graph = s._graph()
                values = {n: dense_tensor(p.data()) for n, p in block.collect_params().items()}
                values.update({d: dense_tensor(x) for d, x in zip(data, inputs)})
                order = [v for v in graph.variables()]
                interp = Interpreter(graph, order)
                tensors = [values[v.name] for v in order]

                def call(interp: Any = interp, tensors: list = tensors) -> Any:
                    import torch
                    with torch.no_grad():
                        return interp.run(*tensors, _train=False)
            else:
                if flags:
                    backend = flags.pop("backend", None)
                    block.hybridize(**flags) if backend is None else block.optimize_for(*inputs, backend=backend, **flags)

                def call(block: Any = block) -> Any:
                    with autograd.predict_mode():
                        out = block(*inputs)
                    (out[0] if isinstance(out, (list, tuple)) else out).wait_to_read()
                    return out
            sec = _time(call, repeat)
            rows.append({"variant": name, "batch": b, "latency_ms": sec * 1e3, "throughput": b / sec})
            done += 1
    if progress:
        _progress(done, total, "done")
    return rows


def _cmd_bench(args: argparse.Namespace) -> int:
    try:
        batches = [int(b) for b in args.batch.split(",")]
    except ValueError:
        raise CommandError(f"--batch {args.batch!r}: expected sizes such as 1,32") from None
    tiers = [t for t in (args.tiers or "").split(",") if t]
    from .compiler.tiers import check_backend
    from .base import MXNetError
    for t in tiers:
        try:
            check_backend(t)
        except MXNetError as e:
            raise CommandError(f"--tiers: {e}") from None
    if args.params_file and args.params and args.params_file != args.params:
        raise CommandError(f"two parameter files given: {args.params_file!r} and --params {args.params!r}")
    rows = bench(args.model, args.params_file or args.params, _shapes(args.shape), batches, args.static, tiers, args.repeat,
                 progress=not args.json)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    base = {r["batch"]: r["latency_ms"] for r in rows if r["variant"] == "eager"}
    print(_table([[r["variant"], str(r["batch"]), f"{r['latency_ms']:.3f}", f"{r['throughput']:.1f}",
                   f"{base[r['batch']] / r['latency_ms']:.2f}x" if base.get(r["batch"]) else ""]
                  for r in rows], ["variant", "batch", "latency ms", "samples/s", "vs eager"]))
    return 0


# -- entry --------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hybridnet", description="Inspect, convert and time MXNet model files "
                                "(-symbol.json + .params) with hybridnet, or run an MXNet program.")
    sub = p.add_subparsers(dest="command", metavar="{run,inspect,convert,bench}")
    sub.required = True
    sub.add_parser("run", help="run an MXNet program with `import mxnet` resolved to hybridnet",
                   description="hybridnet run script.py [args...] | -m module [args...] | -c command: "
                   "what `python -m hybridnet` does", add_help=False)
    shape_help = "a data input's shape, NAME=D1,D2,... (repeat for several inputs)"
    i = sub.add_parser("inspect", help="nodes, shapes, parameters and operators of a model file",
                       description="A table of the nodes of MODEL-symbol.json with their operators, output "
                       "shapes (with --shape) and parameter counts; its inputs, outputs, operators, the "
                       "operators hybridnet cannot run and the MXNet version that wrote it.")
    i.add_argument("symbol", help="MODEL-symbol.json")
    i.add_argument("params", nargs="?", help="MODEL-0000.params")
    i.add_argument("--shape", action="append", help=shape_help)
    i.add_argument("--json", action="store_true", help="print JSON instead of a table")
    i.set_defaults(run=_cmd_inspect)
    c = sub.add_parser("convert", help="to ONNX, a torch.export archive (.pt2), or re-saved parameters",
                       description="Convert MODEL-symbol.json + MODEL-0000.params: --to onnx (an ONNX file), "
                       "torch (a torch.export ExportedProgram, .pt2; load with torch.export.load) or params "
                       "(the parameters re-saved by hybridnet). --check runs hybridnet and the result on the "
                       "same random inputs and prints the largest difference.")
    c.add_argument("symbol", help="MODEL-symbol.json")
    c.add_argument("params", help="MODEL-0000.params")
    c.add_argument("--to", required=True, choices=["onnx", "torch", "params"])
    c.add_argument("-o", "--output", help="output file (default: beside the model, .onnx/.pt2/-resaved-0000.params)")
    c.add_argument("--shape", action="append", help=shape_help + " (needed for onnx and torch)")
    c.add_argument("--static-batch", dest="dynamic_batch", action="store_false",
                   help="torch: export for the --shape batch size only (default: any batch size)")
    c.add_argument("--check", action="store_true", help="compare outputs with hybridnet's and print the largest difference")
    c.set_defaults(run=_cmd_convert)
    b = sub.add_parser("bench", help="latency and throughput: eager, hybridized, each tier",
                       description="Time MODEL (a -symbol.json file, its -0000.params found beside it, or a "
                       "model-zoo name such as resnet18_v1, randomly initialized) in predict mode: eager "
                       "(node by node), hybridized, static (--static) and each lowered tier (--tiers), at "
                       "each batch size. The median of --repeat calls after two warm-up calls.")
    b.add_argument("model", help="MODEL-symbol.json or a model-zoo name")
    b.add_argument("params_file", nargs="?", metavar="params",
                   help="MODEL-0000.params (default: the newest MODEL-*.params beside the symbol file)")
    b.add_argument("--params", help="the same, as an option")
    b.add_argument("--shape", action="append", help=shape_help + "; the batch axis is replaced by --batch")
    b.add_argument("--batch", default="1", help="batch sizes, comma-separated (default 1)")
    b.add_argument("--static", action="store_true", help="also time hybridize(static_alloc=True, static_shape=True)")
    b.add_argument("--tiers", default="MKLDNN", help="lowered tiers to time, comma-separated "
                   "(MKLDNN, inductor; '' for none; default MKLDNN)")
    b.add_argument("--repeat", type=int, default=10, help="timed calls per measurement (default 10)")
    b.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    b.set_defaults(run=_cmd_bench)
    return p


def main(argv: Optional[List[str]] = None) -> None:
    """The console script: ``hybridnet COMMAND ...``; exits with the command's status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        from . import __main__ as runner
        if argv[1:2] in (["-h"], ["--help"]):  # answered here: running aliases `mxnet` for the process
            print(runner.USAGE.replace("python -m hybridnet", "hybridnet run"))
            raise SystemExit(0)
        runner.main(argv[1:])
        return
    args = _parser().parse_args(argv)
    from .base import MXNetError
    try:
        status = args.run(args)
    except (CommandError, MXNetError, OSError) as e:
        sys.stderr.write(f"hybridnet {args.command}: error: {e}\n")
        raise SystemExit(1) from None
    raise SystemExit(status)


if __name__ == "__main__":
    main()
