"""The graph IR shared by Symbol, hybridize, the compiler and the file formats."""
from .graph import Entry, Graph, GraphError, Node, replace_inputs, topo_order, transform  # noqa: F401
