"""GluonCV / GluonNLP model zoos on hybridnet, from an unchanged MXNet program.

This file is plain MXNet 1.9.1 code (it never names hybridnet). Run it on hybridnet with

    python -m hybridnet examples/gluon_zoo_drop_in.py [MODEL ...] [--out DIR]

(install GluonCV / GluonNLP as README "Running unchanged MXNet code" says). For each model it
builds the zoo network with ``pretrained=False``, runs it eagerly, hybridizes it and runs it
again, exports it, loads the export back with ``SymbolBlock.imports`` and runs that; it prints
one JSON line per model with the largest differences between the three runs.
"""
import argparse
import json
import os

import numpy as np
import mxnet as mx


def _gluoncv(name, **kwargs):
    def build():
        from gluoncv import model_zoo
        return model_zoo.get_model(name, pretrained=False, **kwargs)
    return build


def _bert_small():
    import gluonnlp
    vocab = gluonnlp.Vocab(gluonnlp.data.count_tokens("the quick brown fox jumps".split()))
    net, _ = gluonnlp.model.get_model(
        "bert_12_768_12", dataset_name=None, vocab=vocab, pretrained=False, use_pooler=True,
        use_decoder=False, use_classifier=False, hparam_allow_override=True,
        num_layers=2, units=64, hidden_size=128, num_heads=4, max_length=32, embed_size=64)
    return net


def _transformer_encoder_small():
    from gluonnlp.model.transformer import get_transformer_encoder_decoder
    encoder, _, _ = get_transformer_encoder_decoder(
        num_layers=2, units=32, hidden_size=64, num_heads=4, max_src_length=16,
        max_tgt_length=16)
    return encoder


def _image(size):
    return lambda: [mx.nd.random.uniform(shape=(1, 3, size, size))]


def _tokens():
    return [mx.nd.array([[2, 3, 4, 5, 0]]), mx.nd.zeros((1, 5)), mx.nd.array([4])]


def _embedded_tokens():
    return [mx.nd.random.normal(shape=(1, 6, 32)), None, mx.nd.array([5])]


# name -> (build the network, make its inputs)
MODELS = {
    "resnet18_v1b": (_gluoncv("resnet18_v1b"), _image(64)),
    "yolo3_mobilenet1.0_coco": (_gluoncv("yolo3_mobilenet1.0_coco", pretrained_base=False),
                                _image(128)),
    "ssd_512_mobilenet1.0_voc": (_gluoncv("ssd_512_mobilenet1.0_voc", pretrained_base=False),
                                 _image(128)),
    "bert_small": (_bert_small, _tokens),
    "transformer_encoder_small": (_transformer_encoder_small, _embedded_tokens),
}


def _as_arrays(out):
    outs = out if isinstance(out, (list, tuple)) else [out]
    flat = []
    for o in outs:
        flat.extend(_as_arrays(o) if isinstance(o, (list, tuple)) else [o.asnumpy()])
    return flat


def _max_diff(a, b):
    assert len(a) == len(b), (len(a), len(b))
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


def check(name, out_dir):
    """Eager vs hybridized vs exported-and-reimported outputs of one zoo model."""
    build, make_inputs = MODELS[name]
    net = build()
    net.initialize()
    inputs = make_inputs()
    eager = _as_arrays(net(*inputs))
    net.hybridize()
    hybrid = _as_arrays(net(*inputs))
    prefix = os.path.join(out_dir, name)
    net.export(prefix)
    given = [x for x in inputs if x is not None]
    input_names = ["data"] if len(given) == 1 else ["data%d" % i for i in range(len(given))]
    loaded = mx.gluon.SymbolBlock.imports(prefix + "-symbol.json", input_names,
                                          prefix + "-0000.params")
    exported = _as_arrays(loaded(*given))
    return {"model": name, "outputs": [list(a.shape) for a in eager],
            "eager_vs_hybridized": _max_diff(eager, hybrid),
            "eager_vs_exported": _max_diff(eager, exported),
            "files": sorted(f for f in os.listdir(out_dir) if f.startswith(name + "-"))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", metavar="MODEL",
                        help="any of %s (default: all)" % ", ".join(sorted(MODELS)))
    parser.add_argument("--out", default="zoo-export")
    args = parser.parse_args()
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        parser.error("unknown model(s) %s; choose from %s" % (unknown, sorted(MODELS)))
    os.makedirs(args.out, exist_ok=True)
    mx.random.seed(0)
    for name in args.models or sorted(MODELS):
        print(json.dumps(check(name, args.out)), flush=True)


if __name__ == "__main__":
    main()
