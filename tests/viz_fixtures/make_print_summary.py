"""Makes print_summary_mxnet.txt: real MXNet 1.9.1's print_summary output for three symbols.

Run with the side venv:  /tmp/mxvenv/bin/python tests/viz_fixtures/make_print_summary.py \
    > tests/viz_fixtures/print_summary_mxnet.txt
tests/test_visualization.py runs the same code (SYMBOL_CODE) against hybridnet and compares.
"""
SYMBOL_CODE = '''
data = mx.sym.Variable('data')
bias = mx.sym.Variable('fc1_bias', lr_mult=1.0)
emb1 = mx.symbol.Embedding(data=data, name='emb1', input_dim=100, output_dim=28)
conv1 = mx.symbol.Convolution(data=emb1, name='conv1', num_filter=32, kernel=(3, 3), stride=(2, 2))
bn1 = mx.symbol.BatchNorm(data=conv1, name="bn1")
act1 = mx.symbol.Activation(data=bn1, name='relu1', act_type="relu")
mp1 = mx.symbol.Pooling(data=act1, name='mp1', kernel=(2, 2), stride=(2, 2), pool_type='max')
fc1 = mx.sym.FullyConnected(data=mp1, bias=bias, name='fc1', num_hidden=10, lr_mult=0)
fc2 = mx.sym.FullyConnected(data=fc1, name='fc2', num_hidden=10, wd_mult=0.5)
sc1 = mx.symbol.SliceChannel(data=fc2, num_outputs=10, name="slice_1", squeeze_axis=0)
mx.viz.print_summary(sc1)
mx.viz.print_summary(sc1, {"data": (1, 3, 28)})
x = mx.sym.Variable('x')
y = mx.sym.Variable('y')
net = mx.sym.FullyConnected(mx.sym.concat(x, y, dim=1), num_hidden=4, name='fc', no_bias=True)
net = mx.sym.BatchNorm(mx.sym.Convolution(mx.sym.reshape(net, shape=(0, 1, 2, 2)), num_filter=3,
                                          kernel=(1, 1), num_group=1, name='cv'), name='bn')
mx.viz.print_summary(net, {'x': (2, 3), 'y': (2, 5)}, line_length=80, positions=[30, 50, 60, 80])
'''

if __name__ == "__main__":
    import mxnet as mx  # noqa: F401  (real MXNet in the side venv)
    exec(SYMBOL_CODE)
